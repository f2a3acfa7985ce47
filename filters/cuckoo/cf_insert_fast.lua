-- CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX on a filter whose shape the proxy knows (it cached the
-- fields a script answered: cf_layout.lua's cf_fields), for the common case: every sub-filter in
-- one data key, buckets of at most 6 bytes, and every item finding an empty slot in one of its
-- buckets. The proxy has done the arithmetic: each item's fingerprint and, per sub-filter, the
-- bit offsets of its two buckets, laid out as BITFIELD_RO arguments, so the script reads every
-- bucket with one call per sub-filter and its own work per item is a few comparisons. The same
-- steps as cf_insert.lua otherwise: NX checks every sub-filter, an insertion takes the first empty
-- slot of bucket 1 then bucket 2, newest sub-filter to oldest, one command after the other.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3..5] the filter the proxy computed for: id, g (cf_layout.lua), the number of items n
--   ARGV[6]    the number of members m; then per member: "1" for NX else "0", its item count
--   then       the n fingerprints, in order
--   then       per sub-filter i = 0 .. nf-1: 6 n arguments, GET <type> <bit offset of bucket 1>
--              GET <type> <bit offset of bucket 2> per item
--
-- Answers STALE when the name is not that filter (any more), SLOW when an item would need kicks,
-- a new sub-filter or a filter with 32 sub-filters (nothing written then: cf_insert.lua takes
-- over), the status WRONGTYPE, MISSING or DAMAGED <why>, else one array per member of 1 (inserted)
-- or 0 (already there, NX).
--@include cuckoo/cf_layout.lua

local state = cf_load(true)
if state ~= 'OK' then return {ok = state} end
if F.id ~= ARGV[3] or F.g ~= tonumber(ARGV[4]) then return {ok = 'STALE'} end
if F.nf >= 32 then return {ok = 'SLOW'} end

local n, m = tonumber(ARGV[5]), tonumber(ARGV[6])
local fp_at = 6 + 2 * m      -- ARGV[fp_at + k]: item k's fingerprint
local ops_at = fp_at + n     -- sub-filter i's arguments start at ops_at + 6 n i + 1
local bs, nf = F.bs, F.nf
local values, now = {}, {}   -- per sub-filter: the buckets read; the buckets written, by offset
for i = 0, nf - 1 do
  local first = ops_at + 6 * n * i + 1
  local v = {}
  for s = first, first + 6 * n - 1, 6000 do
    local got = redis.call('BITFIELD_RO', data_key(i, 0), unpack(ARGV, s,
                                                                 math.min(s + 5999, first + 6 * n - 1)))
    for q = 1, #got do v[#v + 1] = got[q] end
  end
  values[i], now[i] = v, {}
end

local POW = {}
for j = 1, bs do POW[j] = 256 ^ (bs - j) end
-- The first slot of bucket value v holding x (1-based), or nil.
local function find(v, x)
  local hit = nil
  for j = bs, 1, -1 do
    local byte = v % 256
    if byte == x then hit = j end
    v = (v - byte) / 256
  end
  return hit
end

-- Bucket b (1 or 2) of item k in sub-filter i: its offset (the argument itself) and its value.
local function bucket_of(i, k, b)
  local off = ARGV[ops_at + 6 * n * i + 6 * (k - 1) + 3 * b]
  local v = now[i][off]
  if v == nil then v = values[i][2 * (k - 1) + b] end
  return off, v
end

local out, inserted, k, a = {}, 0, 0, 7
for member = 1, m do
  local nx, count = ARGV[a] == '1', tonumber(ARGV[a + 1])
  a = a + 2
  local results = {}
  for r = 1, count do
    k = k + 1
    local fp = tonumber(ARGV[fp_at + k])
    local done = false
    if nx then
      for i = 0, nf - 1 do
        local _, v1 = bucket_of(i, k, 1)
        local _, v2 = bucket_of(i, k, 2)
        if find(v1, fp) or find(v2, fp) then done = true break end
      end
      if done then results[r] = 0 end
    end
    for i = nf - 1, 0, -1 do
      if done then break end
      for b = 1, 2 do
        local off, v = bucket_of(i, k, b)
        local j = find(v, 0)
        if j then
          now[i][off] = v + fp * POW[j]
          results[r], done = 1, true
          inserted = inserted + 1
          break
        end
      end
    end
    if not done then return {ok = 'SLOW'} end
  end
  out[member] = results
end

-- Everything fitted: the changed buckets, one BITFIELD per sub-filter.
local width = 'u' .. (8 * bs)
for i = 0, nf - 1 do
  local args = {}
  for off, v in pairs(now[i]) do
    args[#args + 1], args[#args + 2], args[#args + 3], args[#args + 4] = 'SET', width, off, v
  end
  for s = 1, #args, 6000 do
    redis.call('BITFIELD', data_key(i, 0), unpack(args, s, math.min(s + 5999, #args)))
  end
end
F.ni_hi, F.ni_lo = u64_add(F.ni_hi, F.ni_lo, inserted)
cf_save()
return out

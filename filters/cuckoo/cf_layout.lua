-- A cuckoo filter as the CF scripts see it (docs/cuckoo-filters.md has the whole layout):
--
--   KEYS[1]               hash    cf "1" (layout), id, nb (buckets of sub-filter 0), bs (bucket
--                                 size), mi (max iterations), ex (expansion), nf (sub-filters),
--                                 sh (bytes per data key), ni, nd (items, deletes: u64, 16 hex),
--                                 g (generation: + 1 whenever nf changes)
--   P:cf:<id>:<i>.<s>     string  sub-filter i's slots, bytes [s*sh, (s+1)*sh): one byte a slot,
--                                 bucket b = bytes [b*bs, (b+1)*bs), 0 = empty
--   P:cf:m:<name>         string  "1": the marker (TYPE, the key commands and the sweep read it)
--
-- Every script takes KEYS[1] (the name) and ARGV[1], ARGV[2] (the marker's name and the data-key
-- prefix P); its own arguments follow. Only the name is declared: the data keys and the marker
-- share its hash slot (filters/common/key_layout.h), which Redis Cluster allows a script to
-- touch, and a client with CLIENT TRACKING then tracks the name alone, as with RedisBloom.
local NAME, MARKER, PREFIX = KEYS[1], ARGV[1], ARGV[2]
local TWO32 = 4294967296
local FIELDS = {'cf', 'id', 'nb', 'bs', 'mi', 'ex', 'nf', 'sh', 'ni', 'nd', 'g'}
-- No filter reaches this many bytes of slots (filters/cuckoo/cuckoo.h, kCfMaxBytes): below it
-- every bucket index and byte offset is exact in Lua's doubles.
local MAX_BYTES = 2^47

-- u64 values (the counters) as two exact 32-bit halves.
local function u64_parse(s)
  if type(s) ~= 'string' or #s ~= 16 or not s:match('^%x+$') then return nil end
  return tonumber(s:sub(1, 8), 16), tonumber(s:sub(9, 16), 16)
end
local function u64_format(hi, lo) return string.format('%08x%08x', hi, lo) end
-- hi:lo + d (|d| < 2^32), wrapping modulo 2^64 as RedisBloom's uint64_t counters do.
local function u64_add(hi, lo, d)
  lo = lo + d
  local carry = math.floor(lo / TWO32)
  return (hi + carry) % TWO32, lo - carry * TWO32
end
-- An integer as decimal digits (tostring writes 2^47 as 1.4073748835533e+14).
local function num(x) return string.format('%.0f', x) end
-- The double C gets from (double)u64: one rounding of the exact value.
local function u64_double(hi, lo) return hi * TWO32 + lo end

local F = nil  -- the filter, once cf_load found one

-- Data key s of sub-filter i, its name made once per script (a bucket read costs less than a
-- string concatenation).
local key_names = {}
local function data_key(i, s)
  local names = key_names[i]
  if not names then
    names = {}
    key_names[i] = names
  end
  local k = names[s]
  if not k then
    k = PREFIX .. ':cf:' .. F.id .. ':' .. i .. '.' .. s
    names[s] = k
  end
  return k
end
-- The data keys of sub-filter i and their sizes.
local function shards(i)
  local bytes = F.n[i] * F.bs
  local count = math.ceil(bytes / F.sh)
  return count, function(s) return math.min(F.sh, bytes - s * F.sh) end
end

local function whole_number(v, lo, hi)
  local x = tonumber(v)
  if not x or x ~= math.floor(x) or x < lo or x > hi then return nil end
  return x
end

-- Reads the name: 'MISSING', 'WRONGTYPE' (anything but a cuckoo filter), 'DAMAGED <why>', or
-- 'OK' with F set. With check_data, every data key must exist at its exact size, so that a write
-- never lands in a filter whose keys were deleted or overwritten behind the proxy's back.
local function cf_load(check_data)
  local t = redis.call('TYPE', NAME).ok
  if t == 'none' then return 'MISSING' end
  if t ~= 'hash' or redis.call('EXISTS', MARKER) == 0 then return 'WRONGTYPE' end
  local f = redis.call('HMGET', NAME, unpack(FIELDS))
  if f[1] ~= '1' then return 'WRONGTYPE' end
  F = {id = f[2], nb = whole_number(f[3], 1, 2^53), bs = whole_number(f[4], 1, 255),
       mi = whole_number(f[5], 1, 65535), ex = whole_number(f[6], 0, 32768),
       nf = whole_number(f[7], 1, 65535), sh = whole_number(f[8], 1, 2^53),
       g = whole_number(f[11], 0, 2^53), n = {}}
  F.ni_hi, F.ni_lo = u64_parse(f[9])
  F.nd_hi, F.nd_lo = u64_parse(f[10])
  if type(F.id) ~= 'string' or not F.id:match('^%x+$') or not F.nb or not F.bs or not F.mi or
     not F.ex or not F.nf or not F.sh or F.sh % F.bs ~= 0 or not F.ni_hi or not F.nd_hi or not F.g or
     (F.ex == 0 and F.nf > 1) then
    return 'DAMAGED its metadata does not parse'
  end
  local n = F.nb
  F.bytes = 0
  for i = 0, F.nf - 1 do
    F.n[i] = n
    F.bytes = F.bytes + n * F.bs
    if F.bytes >= MAX_BYTES then return 'DAMAGED its sub-filters are too large' end
    n = n * F.ex
  end
  if check_data then
    for i = 0, F.nf - 1 do
      local count, size = shards(i)
      for s = 0, count - 1 do
        local len = redis.call('STRLEN', data_key(i, s))
        if len ~= size(s) then
          return 'DAMAGED data key ' .. data_key(i, s) .. ' holds ' .. len .. ' bytes, not ' ..
                 size(s)
        end
      end
    end
  end
  return 'OK'
end

-- Creates sub-filter i's data keys at their full size, zeroed (SETRANGE of the last byte makes
-- Redis allocate exactly that), with the name's expiry when it has one.
local function create_subfilter(i, expire_at)
  local count, size = shards(i)
  for s = 0, count - 1 do
    local k = data_key(i, s)
    redis.call('SETRANGE', k, size(s) - 1, '\0')
    if expire_at and expire_at > 0 then redis.call('PEXPIREAT', k, expire_at) end
  end
end

-- A new filter at the (free) name: F from the arguments, every sub-filter created, the hash and
-- the marker written. Markers another structure left at this name (it was deleted behind the
-- proxy's back) go, so that TYPE answers MBbloomCF.
local function cf_create(id, nb, bs, mi, ex, nf, sh, ni, nd)
  F = {id = id, nb = tonumber(nb), bs = tonumber(bs), mi = tonumber(mi), ex = tonumber(ex),
       nf = tonumber(nf), sh = tonumber(sh), g = 0, n = {}}
  F.ni_hi, F.ni_lo = u64_parse(ni)
  F.nd_hi, F.nd_lo = u64_parse(nd)
  local n = F.nb
  F.bytes = 0
  for i = 0, F.nf - 1 do
    F.n[i] = n
    F.bytes = F.bytes + n * F.bs
    create_subfilter(i, nil)
    n = n * F.ex
  end
  redis.call('HSET', NAME, 'cf', '1', 'id', id, 'nb', nb, 'bs', bs, 'mi', mi, 'ex', ex, 'nf', nf,
             'sh', sh, 'ni', ni, 'nd', nd, 'g', '0')
  redis.call('UNLINK', PREFIX .. ':bf:m:' .. NAME, PREFIX .. ':cms:m:' .. NAME)
  redis.call('SET', MARKER, '1')
end

-- Writes the counters and the number of sub-filters back. Always a write to the name, as every
-- RedisBloom command that opens the filter for writing counts as a change of it (WATCH fires).
local function cf_save()
  redis.call('HSET', NAME, 'nf', F.nf, 'ni', u64_format(F.ni_hi, F.ni_lo), 'nd',
             u64_format(F.nd_hi, F.nd_lo), 'g', num(F.g))
end

-- The filter's shape, as the proxy caches it (filters/cuckoo/cf_meta.h): id g nb bs mi ex nf sh.
local function cf_fields()
  return {F.id, num(F.g), num(F.nb), num(F.bs), num(F.mi), num(F.ex), num(F.nf), num(F.sh)}
end

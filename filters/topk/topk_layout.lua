-- A Top-K sketch as the TOPK scripts see it (docs/topk.md has the whole layout):
--
--   KEYS[1]             hash    tk "1" (layout), id, k, width, depth, decay ("%.17g"), sh (bytes
--                               per bucket shard, a multiple of 8), v (updates so far)
--   P:tk:<id>:b.<s>     string  buckets 8 bytes each: u32 fp, u32 count (BITFIELD, big-endian);
--                               bucket j (row-major: row r holds [r*width, (r+1)*width)) is in
--                               shard floor(8j / sh)
--   P:tk:<id>:h         string  the heap's k slots, 8 bytes each: u32 fp, u32 count; slot 0 is
--                               the root
--   P:tk:<id>:i         hash    the heap's items: field "<slot>" -> the item's bytes; a slot that
--                               never held an item has no field
--   P:tk:m:<name>       string  "1": the marker (TYPE, the key commands and the sweep read it)
--
-- Every script takes KEYS[1] (the name) and ARGV[1], ARGV[2] (the marker's name and the data-key
-- prefix P); its own arguments follow. Only the name is declared: the other keys share its hash
-- slot (filters/common/key_layout.h).
--@include common/murmur2.lua
local NAME, MARKER, PREFIX = KEYS[1], ARGV[1], ARGV[2]
local FIELDS = {'tk', 'id', 'k', 'width', 'depth', 'decay', 'sh'}

local S = nil  -- the sketch, once tk_load found one

local function whole_number(v, lo, hi)
  local x = tonumber(v)
  if not x or x ~= math.floor(x) or x < lo or x > hi then return nil end
  return x
end

local function shard_key(s) return S.base .. 'b.' .. s end
-- The shards of the buckets: how many, and the bytes of shard s.
local function shard_count() return math.ceil(S.bytes / S.sh) end
local function shard_bytes(s) return math.min(S.sh, S.bytes - s * S.sh) end

-- Reads the name: 'MISSING', 'WRONGTYPE' (anything but a Top-K), 'DAMAGED <why>', or 'OK' with S
-- set. Every data key must be there at its exact size, so that no write lands in a sketch whose
-- keys were deleted or overwritten behind the proxy's back.
local function tk_load()
  local t = redis.call('TYPE', NAME).ok
  if t == 'none' then return 'MISSING' end
  if t ~= 'hash' or redis.call('EXISTS', MARKER) == 0 then return 'WRONGTYPE' end
  local f = redis.call('HMGET', NAME, unpack(FIELDS))
  if f[1] ~= '1' then return 'WRONGTYPE' end
  S = {id = f[2], k = whole_number(f[3], 1, TWO32 - 1), w = whole_number(f[4], 1, TWO32 - 1),
       d = whole_number(f[5], 1, TWO32 - 1), decay = tonumber(f[6]), decay_text = f[6],
       sh = whole_number(f[7], 8, 2^40)}
  if not S.id or not S.k or not S.w or not S.d or not S.decay or not S.sh or S.sh % 8 ~= 0 or
     not (S.decay > 0 and S.decay <= 1) or S.w * S.d > 2^44 then
    return 'DAMAGED fields'
  end
  S.bytes = 8 * S.w * S.d
  S.base = PREFIX .. ':tk:' .. S.id .. ':'
  S.heap, S.items = S.base .. 'h', S.base .. 'i'
  for s = 0, shard_count() - 1 do
    if redis.call('STRLEN', shard_key(s)) ~= shard_bytes(s) then return 'DAMAGED buckets' end
  end
  if redis.call('STRLEN', S.heap) ~= 8 * S.k then return 'DAMAGED heap' end
  return 'OK'
end

-- The sketch's parameters, the last element of every answer: the proxy keeps the id and depth to
-- send each item's hashes with the next command (topk/topk_meta.h).
local function tk_fields()
  return {S.id, tostring(S.k), tostring(S.w), tostring(S.d), S.decay_text}
end

-- Each item's fingerprint and bucket indexes. ARGV[3] is the id the proxy believes the sketch
-- has and ARGV[4] the number of hashes it sent after each item (1 + depth, or 0): they are used
-- when the id is this sketch's, else the script hashes the item itself (MULTI, a proxy that has
-- not seen the sketch yet, or one that saw an earlier sketch of that name).
local HASHES_SENT = tonumber(ARGV[4])
local function trust_hashes() return ARGV[3] == S.id and HASHES_SENT == 1 + S.d end
-- Row r (0-based) of hash h: bucket r*width + h % width. (The row start is RedisBloom's uint32
-- product; sketches the proxy makes are far below 2^32 buckets, where it does not wrap.)
local function item_hashes(item, at, trusted)
  local fp, idx = nil, {}
  if trusted then
    fp = tonumber(ARGV[at])
    for r = 0, S.d - 1 do idx[r + 1] = r * S.w + tonumber(ARGV[at + 1 + r]) % S.w end
  else
    local m = mix(item)
    fp = row_hash(m, 1919)
    for r = 0, S.d - 1 do idx[r + 1] = r * S.w + row_hash(m, r) % S.w end
  end
  return fp, idx
end

-- Buckets: read once per script, kept in BK[j] = {fp, count}, written back by tk_flush_buckets.
-- A shard that is small next to the buckets wanted from it is read whole (GET) and written whole
-- (SETRANGE at 0, which keeps the key's TTL): one Redis call costs about what copying 2 KB does,
-- and BITFIELD's arguments and replies cross into Lua one number at a time. Other shards are
-- read and written with BITFIELD, only the buckets wanted.
local BK, BK_DIRTY, BK_LISTED = {}, {}, {}
local WHOLE = {}  -- shard -> its bytes, for shards read whole
local BYTES_PER_CALL = 2048
-- A read-only script (EVAL_RO) reads with BITFIELD_RO.
local BITFIELD_GET = 'BITFIELD'
-- Bucket j's shard and byte offset in it.
local function bucket_place(j)
  local byte = 8 * j
  local s = math.floor(byte / S.sh)
  return s, byte - s * S.sh
end
local function read_bitfield(s, t)
  for from = 1, #t, 1600 do
    local args, js = {}, {}
    for a = from, math.min(from + 1599, #t), 2 do
      js[#js + 1] = t[a]
      local bit_off = 8 * t[a + 1]
      for _, v in ipairs({'GET', 'u32', bit_off, 'GET', 'u32', bit_off + 32}) do
        args[#args + 1] = v
      end
    end
    local v = redis.call(BITFIELD_GET, shard_key(s), unpack(args))
    for i, j in ipairs(js) do BK[j] = {v[2 * i - 1], v[2 * i]} end
  end
end
-- The list of shard s in `groups`, made when missing.
local function group(groups, s)
  local t = groups[s]
  if not t then
    t = {}
    groups[s] = t
  end
  return t
end
-- Reads every listed bucket not read yet.
local function prefetch(list)
  local by_shard = {}
  for _, j in ipairs(list) do
    if not BK[j] then
      BK[j] = true
      local s, off = bucket_place(j)
      local t = group(by_shard, s)
      t[#t + 1] = j
      t[#t + 1] = off
    end
  end
  for s, t in pairs(by_shard) do
    if not WHOLE[s] and shard_bytes(s) <= BYTES_PER_CALL * #t / 2 then
      WHOLE[s] = redis.call('GET', shard_key(s))
    end
    local text = WHOLE[s]
    if text then
      for a = 1, #t, 2 do
        local fp, count = struct.unpack('>I4I4', text, t[a + 1] + 1)
        BK[t[a]] = {fp, count}
      end
    else
      read_bitfield(s, t)
    end
  end
end
local function bucket(j)
  if BK[j] == nil or BK[j] == true then
    BK[j] = nil
    prefetch({j})
  end
  return BK[j]
end
local function touch(j)
  if not BK_LISTED[j] then
    BK_LISTED[j] = true
    BK_DIRTY[#BK_DIRTY + 1] = j
  end
end
-- Shard s with the changed buckets js (in ascending order) patched in, written at offset 0.
local function write_whole(s, js)
  local text, pieces, prev = WHOLE[s], {}, 1
  for _, j in ipairs(js) do
    local _, off = bucket_place(j)
    pieces[#pieces + 1] = string.sub(text, prev, off)
    pieces[#pieces + 1] = struct.pack('>I4I4', BK[j][1], BK[j][2])
    prev = off + 9
  end
  pieces[#pieces + 1] = string.sub(text, prev)
  redis.call('SETRANGE', shard_key(s), 0, table.concat(pieces))
end
local function write_bitfield(s, js)
  local t = {}
  for _, j in ipairs(js) do
    local _, off = bucket_place(j)
    local b = BK[j]
    for _, v in ipairs({'SET', 'u32', 8 * off, b[1], 'SET', 'u32', 8 * off + 32, b[2]}) do
      t[#t + 1] = v
    end
  end
  for from = 1, #t, 6400 do
    redis.call('BITFIELD', shard_key(s), unpack(t, from, math.min(from + 6399, #t)))
  end
end
local function tk_flush_buckets()
  local by_shard = {}
  for _, j in ipairs(BK_DIRTY) do
    local js = group(by_shard, (bucket_place(j)))
    js[#js + 1] = j
  end
  for s, js in pairs(by_shard) do
    if WHOLE[s] and shard_bytes(s) <= BYTES_PER_CALL * #js then
      table.sort(js)
      write_whole(s, js)
    else
      write_bitfield(s, js)
    end
  end
end

-- A key made after the sketch (its items hash) expires when the sketch's other keys do.
local function tk_same_expiry(from, to)
  local ms = redis.call('PTTL', from)
  if ms > 0 then redis.call('PEXPIRE', to, ms) end
end

-- The heap: its slots string read once (HS), slots changed since kept in HO[slot] = {fp, count},
-- items read from the items hash when needed and kept in IT[slot] (false: none), changed ones
-- listed in IT_DIRTY; all written back by tk_flush_heap.
local HS, HO, IT, IT_DIRTY, IT_LISTED = nil, {}, {}, {}, {}
local function heap_text()
  if not HS then HS = redis.call('GET', S.heap) end
  return HS
end
local function slot(s)
  local o = HO[s]
  if o then return o[1], o[2] end
  return struct.unpack('>I4I4', heap_text(), 8 * s + 1)
end
local function slot_item(s)
  local v = IT[s]
  if v == nil then
    v = redis.call('HGET', S.items, s)
    IT[s] = v
  end
  return v
end
local function set_slot(s, fp, count, item)
  HO[s] = {fp, count}
  if item ~= nil then
    IT[s] = item
    if not IT_LISTED[s] then
      IT_LISTED[s] = true
      IT_DIRTY[#IT_DIRTY + 1] = s
    end
  end
end
local function heap_min()
  local _, c = slot(0)
  return c
end
-- The slot holding `item` (same fp and bytes), or nil. An item is in the heap at most once (it
-- enters only when not found), so the order of the search does not matter.
local function find_in_heap(fp, item)
  for s, o in pairs(HO) do
    if o[1] == fp and slot_item(s) == item then return s end
  end
  local text, pattern, from = heap_text(), struct.pack('>I4', fp), 1
  while true do
    local at = string.find(text, pattern, from, true)
    if not at then return nil end
    local s = (at - 1) / 8
    if s == math.floor(s) and not HO[s] and slot_item(s) == item then return s end
    from = at + 1
  end
end
-- RedisBloom's sift down from slot `start` (docs/topk.md, "sift-down only"): the smaller child
-- (ties go left) moves up unless it is strictly larger; then the entry keeps descending while
-- the smaller child is strictly smaller than it.
local function smaller_child(p)
  local c = 2 * p + 1
  if c + 1 < S.k then
    local _, a = slot(c)
    local _, b = slot(c + 1)
    if a > b then return c + 1 end
  end
  return c
end
local function sift_down(start)
  local k = S.k
  if k < 2 or math.floor((k - 2) / 2) < start then return end
  local child = smaller_child(start)
  local mfp, mcount = slot(start)
  local _, ccount = slot(child)
  if ccount > mcount then return end
  local mitem = slot_item(start)
  local hole = start
  repeat
    local cfp, cc = slot(child)
    set_slot(hole, cfp, cc, slot_item(child))
    hole = child
    if math.floor((k - 2) / 2) < child then break end
    child = smaller_child(child)
    local _, next_count = slot(child)
  until not (next_count < mcount)
  set_slot(hole, mfp, mcount, mitem)
end
local function tk_flush_heap()
  for s, o in pairs(HO) do redis.call('SETRANGE', S.heap, 8 * s, struct.pack('>I4I4', o[1], o[2])) end
  -- A slot can lose its item: sift-down moves an empty slot (count 0) up past an entry of count 0.
  local set, gone = {}, {}
  for _, s in ipairs(IT_DIRTY) do
    if IT[s] then
      set[#set + 1] = s
      set[#set + 1] = IT[s]
    else
      gone[#gone + 1] = s
    end
  end
  local created = #set > 0 and redis.call('EXISTS', S.items) == 0
  for from = 1, #set, 6000 do
    redis.call('HSET', S.items, unpack(set, from, math.min(from + 5999, #set)))
  end
  if created then tk_same_expiry(S.heap, S.items) end
  for from = 1, #gone, 6000 do
    redis.call('HDEL', S.items, unpack(gone, from, math.min(from + 5999, #gone)))
  end
end

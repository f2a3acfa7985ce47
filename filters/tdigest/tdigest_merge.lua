-- TDIGEST.MERGE: one script over the destination and every source, so that the whole merge (and
-- the compressions it leaves in each source, which RedisBloom keeps) is atomic.
--
--   KEYS[1]     the destination; KEYS[2..] the sources in argument order (repeats kept)
--   ARGV[1]     the id of the destination when it is created
--   ARGV[2]     the COMPRESSION given (a decimal integer), or ""
--   ARGV[3]     "1" when OVERRIDE was given
--   ARGV[4]     the largest compression a digest may have here (decimal)
--   ARGV[5..]   for each key in KEYS order: its marker, its data-key prefix (tdigest_layout.lua)
--
-- Answers the status OK; WRONGTYPE or DAMAGED <why> (the destination, or the first bad source);
-- MISSING (the first missing source); ALLOC (the new digest's compression is too large); or
-- OVERFLOW (the weights would pass INT64_MAX: the destination keeps its value, the digests
-- reached stay compressed).
--@include tdigest/tdigest_compress.lua
local DEST = KEYS[1]
local function open(i) return td_open(KEYS[i], ARGV[3 + 2 * i], ARGV[4 + 2 * i], true) end

local dest, why = open(1)
if not dest and why ~= 'MISSING' then return {ok = why} end
local opened, sources = {}, {}
for i = 2, #KEYS do
  local s = KEYS[i] == DEST and dest or opened[KEYS[i]]
  if not s then
    if KEYS[i] == DEST then return {ok = 'MISSING'} end
    s, why = open(i)
    if not s then return {ok = why} end
    opened[KEYS[i]] = s
  end
  sources[#sources + 1] = s
end

local c = 0
if ARGV[2] ~= '' then
  c = tonumber(ARGV[2])
elseif ARGV[3] == '1' or not dest then
  for _, s in ipairs(sources) do
    if s.C > c then c = s.C end
  end
else
  c = dest.C
end
if c > tonumber(ARGV[4]) then return {ok = 'ALLOC'} end

-- td_merge(into, from): both compressed in place, then every node of `from` added in order.
local function merge(into, from)
  td_compress(into)
  td_compress(from)
  for i = 1, from.M + from.U do
    if not td_add_node(into, from.mean[i], from.wh[i], from.wl[i]) then return false end
  end
  return true
end

local function store_reached()
  for _, s in pairs(opened) do
    if s.changed then td_store(s) end
  end
end

local T = td_new(c)
if dest and ARGV[3] ~= '1' then merge(T, dest) end
for _, s in ipairs(sources) do
  if not merge(T, s) then
    store_reached()
    if dest and dest.changed then td_store(dest) end
    return {ok = 'OVERFLOW'}
  end
end
store_reached()
local bytes = td_header(T) .. td_nodes(T)
if dest then
  -- The value is replaced: its TTL goes, as RedisBloom's new value has none.
  redis.call('SET', dest.data, bytes)
  redis.call('PERSIST', DEST)
  redis.call('PERSIST', dest.marker)
  redis.call('HINCRBY', DEST, 'v', 1)
else
  redis.call('SET', ARGV[6] .. ':td:' .. ARGV[1] .. ':d', bytes)
  redis.call('HSET', DEST, 'td', '1', 'id', ARGV[1], 'v', '1')
  redis.call('SET', ARGV[5], '1')
end
return {ok = 'OK'}

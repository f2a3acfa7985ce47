-- CF.SCANDUMP with an iterator of 1 or more (0, the header, is made of cf_info.lua's fields), as
-- RedisBloom's CF_GetEncodedChunk: offset = it - 1 is located in the sub-filters, oldest first;
-- a sub-filter of at most 16 MiB is answered whole from its first byte (whatever the offset),
-- a larger one from the offset, at most 16 MiB; the next iterator is it + the chunk's length.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3]    the iterator (>= 1)
--
-- Answers {next, chunk}, {0} past the last sub-filter or when the filter holds no item
-- (RedisBloom dumps nothing then), or the status MISSING, WRONGTYPE or DAMAGED <why>.
--@include cuckoo/cf_layout.lua

local MAX_CHUNK = 16777216

-- Bytes [from, from + len) of sub-filter i, across its data keys.
local function read_bytes(i, from, len)
  local parts = {}
  while len > 0 do
    local s = math.floor(from / F.sh)
    local off = from - s * F.sh
    local take = math.min(len, F.sh - off)
    parts[#parts + 1] = redis.call('GETRANGE', data_key(i, s), off, off + take - 1)
    from, len = from + take, len - take
  end
  return table.concat(parts)
end

local state = cf_load(true)
if state ~= 'OK' then return {ok = state} end
if F.ni_hi == 0 and F.ni_lo == 0 then return {0} end
local it = tonumber(ARGV[3])
local offset = it - 1
for i = 0, F.nf - 1 do
  local size = F.n[i] * F.bs
  if offset < size then
    if size <= MAX_CHUNK then return {it + size, read_bytes(i, 0, size)} end
    local len = math.min(size - offset, MAX_CHUNK)
    return {it + len, read_bytes(i, offset, len)}
  end
  offset = offset - size
end
return {0}

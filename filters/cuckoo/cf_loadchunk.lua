-- CF.LOADCHUNK with an iterator other than 1 (1, the header, is cf_create.lua), as RedisBloom's
-- CF_LoadEncodedChunk: offset = it - len - 1 is located in the sub-filters, oldest first; past
-- the last one it is reduced by the filter's size and lands in the last sub-filter; the chunk
-- must end inside that one sub-filter. Bytes are copied as they are; no counter changes.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3]    the offset (the proxy checked it - len - 1 >= 0), or "bad": an iterator or chunk
--              RedisBloom refuses whatever the filter (answered once the key is checked)
--   ARGV[4]    the chunk
--
-- Answers the status OK, BADCHUNK (RedisBloom's "Couldn't load chunk!"), MISSING, WRONGTYPE or
-- DAMAGED <why>.
--@include cuckoo/cf_layout.lua

local state = cf_load(true)
if state ~= 'OK' then return {ok = state} end
if ARGV[3] == 'bad' then return {ok = 'BADCHUNK'} end
local offset, data = tonumber(ARGV[3]), ARGV[4]
local i = 0
while i < F.nf - 1 and offset >= F.n[i] * F.bs do
  offset = offset - F.n[i] * F.bs
  i = i + 1
end
if offset >= F.n[i] * F.bs then
  -- Past the last sub-filter: RedisBloom's loop subtracts every sub-filter's size, the last
  -- one's too, and writes into the last one.
  offset = offset - F.n[i] * F.bs
end
if offset + #data > F.n[i] * F.bs then return {ok = 'BADCHUNK'} end
local from, at = offset, 1
while at <= #data do
  local s = math.floor(from / F.sh)
  local off = from - s * F.sh
  local take = math.min(#data - at + 1, F.sh - off)
  redis.call('SETRANGE', data_key(i, s), off, data:sub(at, at + take - 1))
  from, at = from + take, at + take
end
cf_save()
return {ok = 'OK'}

-- TDIGEST.CREATE: an empty digest, unless the name holds anything.
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (tdigest_layout.lua)
--   ARGV[3]     "check": only say what the name holds (the arguments were refused with an error
--               RedisBloom gives only when the name is free); "create": make the digest
--   ARGV[4..5]  create: the new id, the compression (a decimal integer)
--
-- Answers the status EXISTS (a t-digest is there), WRONGTYPE (any other key), FREE (check) or
-- OK (created).
--@include tdigest/tdigest_layout.lua
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' then
  local _, why = td_open(KEYS[1], ARGV[1], ARGV[2], false)
  return {ok = why == 'WRONGTYPE' and 'WRONGTYPE' or 'EXISTS'}
end
if ARGV[3] == 'check' then return {ok = 'FREE'} end
redis.call('SET', ARGV[2] .. ':td:' .. ARGV[4] .. ':d', td_header(td_new(tonumber(ARGV[5]))))
redis.call('HSET', KEYS[1], 'td', '1', 'id', ARGV[4], 'v', '0')
redis.call('SET', ARGV[1], '1')
return {ok = 'OK'}

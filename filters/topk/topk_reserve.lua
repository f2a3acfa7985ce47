-- TOPK.RESERVE: creates a sketch, every bucket and heap slot empty, unless the name holds anything.
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (topk_layout.lua)
--   ARGV[3]     "check": only say whether the name is free (the arguments were refused, and
--               RedisBloom says "key already exists" first); "create": make the sketch
--   ARGV[4..9]  create: id k width depth decay ("%.17g") sh
--
-- Answers the status EXISTS (the name holds a key of any type), FREE (check) or OK (created).
if redis.call('EXISTS', KEYS[1]) == 1 then return {ok = 'EXISTS'} end
if ARGV[3] == 'check' then return {ok = 'FREE'} end
local id, k, w, d, sh = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]),
                        tonumber(ARGV[9])
local base = ARGV[2] .. ':tk:' .. id .. ':'
local bytes = 8 * w * d
for s = 0, math.ceil(bytes / sh) - 1 do
  redis.call('SETRANGE', base .. 'b.' .. s, math.min(sh, bytes - s * sh) - 1, '\0')
end
redis.call('SETRANGE', base .. 'h', 8 * k - 1, '\0')
redis.call('HSET', KEYS[1], 'tk', '1', 'id', id, 'k', ARGV[5], 'width', ARGV[6], 'depth', ARGV[7],
           'decay', ARGV[8], 'sh', ARGV[9])
redis.call('SET', ARGV[1], '1')
return {ok = 'OK'}

-- The check of a hash command that writes (HSET, HDEL, HINCRBY, ...): whether the name is a
-- structure, by its markers MK (common/markers.lua), looked at with marked (common/marked.lua),
-- a write that changes nothing, so that a client's CLIENT TRACKING does not track the keys of its
-- own writes.
--
-- On a structure the command runs on its marker, a string key, in place of the name: Redis then
-- checks the arguments as it does for any key (HINCRBY's increment, HSCAN's cursor, HSET's pairs)
-- and answers WRONGTYPE, exactly as on RedisBloom's module key, changing nothing. On anything else
-- the command runs as sent. common/hash_read_check.lua and common/hash_write_check.lua differ only
-- in how they look at the markers.
--@include common/marked.lua
if (marked(MK[1]) or marked(MK[2]) or marked(MK[3]) or marked(MK[4]) or marked(MK[5])) and
   redis.call('TYPE', KEYS[1]).ok == 'hash' then
  local on = nil
  for _, m in ipairs(MK) do
    if not on and redis.call('TYPE', m).ok == 'string' then on = m end
  end
  if not on then
    return {err = 'WRONGTYPE Operation against a key holding the wrong kind of value'}
  end
  ARGV[2] = on
end

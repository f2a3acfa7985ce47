-- The check of a hash command that only reads (HGET, ... HSCAN): whether the name is a structure,
-- by its markers MK (common/markers.lua), with EXISTS and TYPE, which touch nothing.
--
-- On a structure the command runs on its marker, a string key, in place of the name: Redis then
-- checks the arguments as it does for any key (HINCRBY's increment, HSCAN's cursor, HSET's pairs)
-- and answers WRONGTYPE, exactly as on RedisBloom's module key, changing nothing. On anything else
-- the command runs as sent. common/hash_read_check.lua and common/hash_write_check.lua differ only
-- in how they look at the markers.
if redis.call('EXISTS', MK[1], MK[2]) > 0 and redis.call('TYPE', KEYS[1]).ok == 'hash' then
  if redis.call('TYPE', MK[1]).ok == 'string' then ARGV[2] = MK[1]
  elseif redis.call('TYPE', MK[2]).ok == 'string' then ARGV[2] = MK[2]
  else return {err = 'WRONGTYPE Operation against a key holding the wrong kind of value'} end
end

-- The check of a hash command that only reads (HGET, ... HSCAN): whether the name is a structure,
-- by its markers MK (common/markers.lua), with EXISTS and TYPE, which touch nothing.
--
-- On a structure the command runs on its marker, a string key, in place of the name: Redis then
-- checks the arguments as it does for any key (HINCRBY's increment, HSCAN's cursor, HSET's pairs)
-- and answers WRONGTYPE, exactly as on RedisBloom's module key, changing nothing. On anything else
-- the command runs as sent. common/hash_read_check.lua and common/hash_write_check.lua differ only
-- in how they look at the markers.
if redis.call('EXISTS', unpack(MK)) > 0 and redis.call('TYPE', KEYS[1]).ok == 'hash' then
  local on = nil
  for _, m in ipairs(MK) do
    if not on and redis.call('TYPE', m).ok == 'string' then on = m end
  end
  if not on then
    return {err = 'WRONGTYPE Operation against a key holding the wrong kind of value'}
  end
  ARGV[2] = on
end

-- HINCRBY (filters/common/key_scripts.h), as key_hash_write.lua, but a Lua number is a double: a
-- result beyond 2^53 is answered with the field's value, exact, as a bulk string.
--
-- KEYS[1]: the name. ARGV[1..5]: its markers (common/markers.lua); then the client's command, as
-- sent.
--
-- Returns the command's reply or error, Redis's own; on a structure WRONGTYPE (or Redis's error
-- about the arguments).

--@include common/markers.lua
--@include common/hash_write_check.lua
local r = redis.pcall(unpack(ARGV))
if type(r) == 'number' and (r >= 2^53 or r <= -2^53) then
  return redis.call('HGET', ARGV[2], ARGV[3])
end
return r

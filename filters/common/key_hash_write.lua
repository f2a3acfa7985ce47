-- A hash command that writes (HSET, HDEL, HINCRBYFLOAT, ... but HINCRBY;
-- filters/common/key_scripts.h): as on RedisBloom's module key on a structure, as sent on anything
-- else (common/hash_write_check.lua).
--
-- KEYS[1]: the name. ARGV[1..5]: its markers (common/markers.lua); then the client's command, as
-- sent.
--
-- Returns the command's reply or error, Redis's own; on a structure WRONGTYPE (or Redis's error
-- about the arguments).

--@include common/markers.lua
--@include common/hash_write_check.lua
return redis.pcall(unpack(ARGV))

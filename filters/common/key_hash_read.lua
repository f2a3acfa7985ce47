-- A hash command that only reads (HGET, HLEN, ... HSCAN; filters/common/key_scripts.h): as on
-- RedisBloom's module key on a structure, as sent on anything else (common/hash_read_check.lua).
-- Kept short: it goes with every HGET.
--
-- KEYS[1]: the name. ARGV[1..5]: its markers (common/markers.lua); then the client's command, as
-- sent.
--
-- Returns the command's reply or error, Redis's own; on a structure WRONGTYPE (or Redis's error
-- about the arguments).

--@include common/markers.lua
--@include common/hash_read_check.lua
return redis.pcall(unpack(ARGV))

-- OBJECT ENCODING (filters/common/key_scripts.h): "raw" for a filter, a sketch or a t-digest, as
-- for RedisBloom's module types; else Redis's answer. Touches nothing but what the command itself
-- touches.
--
-- KEYS[1]: the name. ARGV[1..5]: its markers (common/markers.lua); then the client's command, as
-- sent.

--@include common/markers.lua
if redis.call('TYPE', KEYS[1]).ok == 'hash' and redis.call('EXISTS', unpack(MK)) > 0 then
  return 'raw'
end
return redis.pcall(unpack(ARGV))

-- TYPE (filters/common/key_scripts.h): RedisBloom's module type names, "MBbloom--" for a Bloom
-- filter, "CMSk-TYPE" for a count-min sketch, "MBbloomCF" for a cuckoo filter, "TopK-TYPE" for a
-- Top-K sketch, "TDIS-TYPE" for a t-digest; else Redis's answer.
--
-- KEYS[1]: the name. ARGV[1..5]: its markers (common/markers.lua); then nothing.
--
-- Returns the type as a status reply.

--@include common/markers.lua
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  for i, m in ipairs(MK) do
    if redis.call('EXISTS', m) == 1 then return {ok = MODULE_TYPES[i]} end
  end
end
return {ok = t}

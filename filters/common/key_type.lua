-- TYPE (filters/common/key_scripts.h): RedisBloom's module type names, "MBbloom--" for a filter
-- and "CMSk-TYPE" for a count-min sketch; else Redis's answer.
--
-- KEYS[1]: the name. ARGV[1], ARGV[2]: its filter and sketch markers (common/markers.lua); then
-- nothing.
--
-- Returns the type as a status reply.

--@include common/markers.lua
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' and redis.call('EXISTS', MK[1]) == 1 then return {ok = 'MBbloom--'} end
if t == 'hash' and redis.call('EXISTS', MK[2]) == 1 then return {ok = 'CMSk-TYPE'} end
return {ok = t}

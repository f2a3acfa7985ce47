-- What a name holds, atomically (AddCmsFetch, filters/cms/cms_scripts.h). Touches nothing but
-- the hash, as RedisBloom's lookup would.
--
-- KEYS[1]: the name; KEYS[2]: its sketch marker (a hash without it is no sketch, whatever its
-- fields).
--
-- Returns 0 (nothing there), 1 (not a hash, or a hash without the marker), or HMGET of the
-- sketch's fields cms, id, width, depth, part (CmsMetaFromHmget).

local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return 0 end
if t ~= 'hash' or redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
return redis.call('HMGET', KEYS[1], 'cms', 'id', 'width', 'depth', 'part')

-- RENAMENX of a filter's metadata into its name, behind a sharding proxy that refuses RENAMENX
-- (AddPublishIfFree, filters/common/sharding_requests.h): the hash is written only if the name
-- does not exist, atomically.
--
-- KEYS[1]: the filter's name; ARGV: field value ... of its metadata.
--
-- Returns 1 (written) or 0, as RENAMENX's.

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1

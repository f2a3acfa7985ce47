-- SETRANGE of a temporary key and RENAMENX into a shard, behind a sharding proxy that refuses
-- RENAMENX (AddShardIfMissing, filters/common/sharding_requests.h): the shard is created, zeroed,
-- unless it exists (bits another proxy set stay set).
--
-- KEYS[1]: a shard; ARGV[1]: its last offset; ARGV[2]: one zero byte. SETRANGE of the last byte
-- makes Redis allocate exactly the shard's size, zeroed.
--
-- Returns the shard's length.

if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SETRANGE', KEYS[1], ARGV[1], ARGV[2]) end
return redis.call('STRLEN', KEYS[1])

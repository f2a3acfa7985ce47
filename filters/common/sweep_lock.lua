-- The lock that lets one proxy sweep an upstream per interval (AppendSweepLock,
-- filters/common/sweep.h): taken when free, renewed when already the caller's.
--
-- KEYS[1]: the lock; ARGV[1]: this proxy's id; ARGV[2]: the lock's time to live (ms).
--
-- Returns 1 when the caller holds the lock now, 0 when another proxy does.

local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1

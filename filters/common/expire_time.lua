-- PEXPIRETIME, behind a sharding proxy that refuses it (AddExpireTime,
-- filters/common/sharding_requests.h).
--
-- KEYS[1]: the key.
--
-- Returns PEXPIRETIME's reply.

return redis.call('PEXPIRETIME', KEYS[1])

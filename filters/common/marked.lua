-- marked(k), for the scripts that write: whether marker `k` exists, found without a read-only
-- command. A read-only command inside a script makes a client with CLIENT TRACKING track every
-- key of the script (Redis remembers the caller's keys), so a DEL or an HSET would track its own
-- key and get an invalidation for its own write, which Redis sends only after a read. SETRANGE of
-- nothing is a write command that changes nothing (no notification, no propagation) and answers
-- the length of a string key, 0 for none; on an error (a write refused under maxmemory, on a
-- read-only replica, from EVAL_RO) marked falls back to EXISTS.
local function marked(k)
  local n = redis.pcall('SETRANGE', k, 0, '')
  if type(n) == 'number' then return n > 0 end
  return redis.call('EXISTS', k) == 1
end

-- The leftover sweep's check-and-delete (filters/common/sweep.h; sent with SCRIPT LOAD, then
-- EVALSHA). Everything in one script, so a key is deleted only if nobody owns it at that very
-- moment.
--
-- KEYS: per entry, the key and then its owners' names. ARGV: per entry, its mode ('d': delete
-- the key if nobody owns it; 'c': only look), n (its owners), then n triples (mark, id, field):
-- the owner is a hash whose field `mark` is "1", whose id is `id` (any when empty) and that
-- has `field` (when not empty).
--
-- Returns one verdict per entry (SweepVerdict): 0 owned, 1 nobody's (kept), 2 nobody's and
-- deleted, 3 the key is gone.

local function owns(name, mark, id, field)
  if redis.call('TYPE', name).ok ~= 'hash' then return false end
  local f = redis.call('HMGET', name, mark, 'id', field)
  return f[1] == '1' and (id == '' or f[2] == id) and (field == '' or f[3] ~= false)
end
local out, k, a = {}, 1, 1
while a <= #ARGV do
  local remove, n = ARGV[a] == 'd', tonumber(ARGV[a + 1])
  local verdict = 1
  if redis.call('EXISTS', KEYS[k]) == 0 then
    verdict = 3
  else
    for i = 0, n - 1 do
      local b = a + 2 + 3 * i
      if owns(KEYS[k + 1 + i], ARGV[b], ARGV[b + 1], ARGV[b + 2]) then
        verdict = 0
        break
      end
    end
    if verdict == 1 and remove then
      redis.call('UNLINK', KEYS[k])
      verdict = 2
    end
  end
  out[#out + 1] = verdict
  k, a = k + 1 + n, a + 2 + 3 * n
end
return out

-- The check at the head of a windowed filter's lookup round (filters/bloom/window/window_check.h
-- builds the request): that the name is still the windowed filter, and that every live slot is
-- as the proxy knows it, so that the slots' bit reads sent right after it in the same step need
-- no validation and no STRLEN of their own (BfRequest::checked_outside).
--
-- KEYS[1]: the filter's name; KEYS[2..]: slot names and shards, by index.
-- ARGV[1], ARGV[2]: the marker field and value; ARGV[3]: the filter's id; ARGV[4]: its window
-- (ms); ARGV[5]: the number of slots, then per slot: its name (an index into KEYS), its id (""
-- when the proxy knows no such slot: it must not exist), l<links> (the first link the proxy does
-- not know), its shard count, and per shard its key (an index into KEYS) and length.
--
-- Returns 1 when all is as known. A slot the proxy knows that no longer exists is as known:
-- Redis dropped it at its end, and its reads find nothing. Otherwise -1 (the name is no longer
-- this filter, or a slot is missing, new, replaced or has a new link) or -2 (a shard of a live
-- slot has not its size): the proxy then reads the slots with their own checks.

local marker, mark = ARGV[1], ARGV[2]
local h = redis.pcall('HMGET', KEYS[1], marker, 'id', 'window')
if h.err or h[1] ~= mark or h[2] ~= ARGV[3] or tonumber(h[3]) ~= tonumber(ARGV[4]) then
  return -1
end
local a = 6
for _ = 1, tonumber(ARGV[5]) do
  local key, id, nxt, shards = KEYS[tonumber(ARGV[a])], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  a = a + 4
  local live = false
  if id == '' then
    if redis.call('EXISTS', key) == 1 then return -1 end
  else
    local m = redis.pcall('HMGET', key, marker, 'id', nxt)
    if m.err then return -1 end
    if m[1] or m[2] or m[3] or redis.call('EXISTS', key) == 1 then
      if m[1] ~= mark or m[2] ~= id or m[3] then return -1 end
      live = true
    end
  end
  for _ = 1, shards do
    if live and redis.call('STRLEN', KEYS[tonumber(ARGV[a])]) ~= tonumber(ARGV[a + 1]) then
      return -2
    end
    a = a + 2
  end
end
return 1

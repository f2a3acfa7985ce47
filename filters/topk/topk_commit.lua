-- An update the proxy worked out itself from a snapshot of the sketch (topk_read.lua's
-- "snapshot"), applied only if the sketch is still the one it read: the same id, and no update
-- since (v, which every update increments). Otherwise nothing is written and the proxy runs the
-- update as topk_add.lua, which reads and writes where it runs. Together the two steps are an
-- optimistic transaction: no update is lost, none applied twice, whatever the proxies do between
-- them (docs/topk.md, "Many proxies, one sketch").
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (topk_layout.lua)
--   ARGV[3..4]  the id and v the snapshot saw
--   ARGV[5]     the heap's new slots (8 * k bytes), or "" when they did not change
--   ARGV[6]     n: the number of slots whose item changed; then n pairs: slot, its new item
--   then        m: the number of slots that lost their item, and those slots
--   then        the changed bucket shards: shard index, its new bytes (whole), ...
--
-- Answers the status OK, or CONFLICT (nothing written).
local NAME, MARKER, PREFIX = KEYS[1], ARGV[1], ARGV[2]
if redis.call('EXISTS', MARKER) == 0 then return {ok = 'CONFLICT'} end
local f = redis.call('HMGET', NAME, 'tk', 'id', 'v')
if f[1] ~= '1' or f[2] ~= ARGV[3] or (f[3] or '0') ~= ARGV[4] then return {ok = 'CONFLICT'} end
local base = PREFIX .. ':tk:' .. ARGV[3] .. ':'
-- Every key written must still be the size it had (nothing overwrote it behind the proxies).
local n = tonumber(ARGV[6])
local m_at = 7 + 2 * n
local m = tonumber(ARGV[m_at])
local shards_at = m_at + 1 + m
if ARGV[5] ~= '' and redis.call('STRLEN', base .. 'h') ~= #ARGV[5] then return {ok = 'CONFLICT'} end
for a = shards_at, #ARGV, 2 do
  if redis.call('STRLEN', base .. 'b.' .. ARGV[a]) ~= #ARGV[a + 1] then return {ok = 'CONFLICT'} end
end
if ARGV[5] ~= '' then redis.call('SETRANGE', base .. 'h', 0, ARGV[5]) end
if n > 0 then
  -- The items hash made now expires when the sketch's other keys do.
  local created = redis.call('EXISTS', base .. 'i') == 0
  local set = {}
  for a = 7, m_at - 1, 2 do
    set[#set + 1] = ARGV[a]
    set[#set + 1] = ARGV[a + 1]
  end
  for from = 1, #set, 6000 do
    redis.call('HSET', base .. 'i', unpack(set, from, math.min(from + 5999, #set)))
  end
  local ms = created and redis.call('PTTL', base .. 'h') or -1
  if ms > 0 then redis.call('PEXPIRE', base .. 'i', ms) end
end
if m > 0 then redis.call('HDEL', base .. 'i', unpack(ARGV, m_at + 1, shards_at - 1)) end
for a = shards_at, #ARGV, 2 do redis.call('SETRANGE', base .. 'b.' .. ARGV[a], 0, ARGV[a + 1]) end
redis.call('HINCRBY', NAME, 'v', 1)
return {ok = 'OK'}

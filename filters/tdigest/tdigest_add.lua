-- TDIGEST.ADD (the commands of one batch on one digest, in order) and TDIGEST.RESET, each batch
-- one script: atomic whatever the number of proxies. Values that fit the buffer without a
-- compression (almost every call) are appended to the data key with its header rewritten; a
-- call that fills the buffer reads the whole digest and adds node by node, compressing where
-- RedisBloom does.
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (tdigest_layout.lua)
--   ARGV[3]     add | reset
--   add:
--   ARGV[4]     every value as a node, in order: 16 bytes each (the double, int64 weight 1)
--   ARGV[5..6]  the smallest and the largest value (8-byte doubles), as the library's strict
--               comparisons leave them over the values alone
--   ARGV[7..]   how many values each command has, in order
--
-- Answers the status MISSING, WRONGTYPE or DAMAGED <why>; OK (reset); or one 1 / 0 per command:
-- every value added, or "overflow detected" (the values before the refused one stay added).
--@include tdigest/tdigest_compress.lua
local D, why = td_open(KEYS[1], ARGV[1], ARGV[2], false)
if not D then return {ok = why} end
redis.call('HINCRBY', KEYS[1], 'v', 1)
if ARGV[3] == 'reset' then
  redis.call('SET', D.data, td_header(td_new(D.C)), 'KEEPTTL')
  return {ok = 'OK'}
end
local nodes = ARGV[4]
local count = #nodes / 16
local results = {}
if D.M + D.U + count <= D.cap - 1 and
   i64_double(D.MWh, D.MWl) + i64_double(D.UWh, D.UWl) + count < 2^53 then
  local low, high = struct.unpack('<d', ARGV[5]), struct.unpack('<d', ARGV[6])
  if low < D.min then D.min = low end
  if high > D.max then D.max = high end
  D.U = D.U + count
  D.UWh, D.UWl = i64_add(D.UWh, D.UWl, 0, count)
  redis.call('SETRANGE', D.data, 0, td_header(D))
  redis.call('APPEND', D.data, nodes)
  for m = 7, #ARGV do results[#results + 1] = 1 end
  return results
end
td_load_nodes(D)
local at = 0
for m = 7, #ARGV do
  local added = 1
  for _ = 1, tonumber(ARGV[m]) do
    if added == 1 and not td_add_node(D, struct.unpack('<d', nodes, 16 * at + 1), 0, 1) then
      added = 0
    end
    at = at + 1
  end
  results[#results + 1] = added
end
if D.changed then td_store(D) end
return results

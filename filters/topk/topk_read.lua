-- TOPK.QUERY, TOPK.COUNT, TOPK.LIST and TOPK.INFO: reads, run with EVAL_RO / EVALSHA_RO.
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (topk_layout.lua)
--   ARGV[3..4]  the id the proxy believes the sketch has, and the hashes sent per item (0, or
--               1 + depth; topk_add.lua)
--   ARGV[5]     query | count | list | info | snapshot
--   ARGV[6..]   QUERY, COUNT: the items, each followed by its hashes
--
-- Answers the status MISSING, WRONGTYPE or DAMAGED <why>, or {results, fields}: QUERY one 1 / 0
-- per item (whether the heap holds it), COUNT one count per item (RedisBloom's TopK_Count: the
-- largest count among the item's buckets holding its fingerprint, only buckets >= slot 0's count
-- when the item is in the heap), LIST every heap slot of count > 0 in slot order as count, item
-- pairs (the proxy sorts them as RedisBloom does), INFO nothing, SNAPSHOT the whole sketch for an
-- update the proxy works out itself (topk_commit.lua): {v, the heap's slots, its items as slot,
-- item pairs, then every bucket shard}; then the sketch's fields.
--@include topk/topk_layout.lua
BITFIELD_GET = 'BITFIELD_RO'

local state = tk_load()
if state ~= 'OK' then return {ok = state} end
local op, trusted, per_item = ARGV[5], trust_hashes(), 1 + HASHES_SENT
local results = {}
if op == 'query' or op == 'count' then
  local items, wanted = {}, {}
  for a = 6, #ARGV, per_item do
    local fp, idx = item_hashes(ARGV[a], a + 1, trusted)
    items[#items + 1] = {ARGV[a], fp, idx}
    if op == 'count' then
      for _, j in ipairs(idx) do wanted[#wanted + 1] = j end
    end
  end
  prefetch(wanted)
  for i, it in ipairs(items) do
    local in_heap = find_in_heap(it[2], it[1]) ~= nil
    if op == 'query' then
      results[i] = in_heap and 1 or 0
    else
      local hm, best = heap_min(), 0
      for _, j in ipairs(it[3]) do
        local b = bucket(j)
        if b[1] == it[2] and (not in_heap or b[2] >= hm) then best = math.max(best, b[2]) end
      end
      results[i] = best
    end
  end
elseif op == 'snapshot' then
  results[1] = redis.call('HGET', NAME, 'v') or '0'
  results[2] = redis.call('GET', S.heap)
  results[3] = redis.call('HGETALL', S.items)
  for s = 0, shard_count() - 1 do results[#results + 1] = redis.call('GET', shard_key(s)) end
elseif op == 'list' then
  for s = 0, S.k - 1 do
    local _, c = slot(s)
    if c > 0 then
      results[#results + 1] = c
      results[#results + 1] = slot_item(s) or ''
    end
  end
end
return {results, tk_fields()}

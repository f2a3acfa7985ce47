-- TOPK.ADD and TOPK.INCRBY: one or several commands on one sketch, in order, as one atomic step
-- (commands of many clients coalesced by the proxy come as several members). Each item sees the
-- buckets and heap the previous one left, exactly as in RedisBloom's TopK_Add.
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (topk_layout.lua)
--   ARGV[3..4]  the id the proxy believes the sketch has, and the hashes sent per item (0, or
--               1 + depth: fp, then MurmurHash2(item, seed r) for each row r)
--   ARGV[5..10] the seed of this call's random numbers (topk_random.lua)
--   ARGV[11]    the number of members; then per member: its number of items c, and c times:
--               the item, its increment n (0 .. 100000), its hashes
--
-- Answers the status MISSING, WRONGTYPE or DAMAGED <why>, or an array: per member, one element
-- per item (the item it expelled from the heap, or false: a null), then the sketch's fields.
--@include topk/topk_layout.lua
--@include topk/topk_random.lua

local state = tk_load()
if state ~= 'OK' then return {ok = state} end
local trusted = trust_hashes()
local per_item = 2 + HASHES_SENT
rand_seed(5)

-- One row's bucket meeting increment n of the item whose fingerprint is fp: what it offers the
-- item's count (RedisBloom: n for an empty bucket, the wrapped sum for its own fp, the steps left
-- after a takeover, 0 when a foreign bucket survives).
local function update_bucket(j, fp, n)
  local b = bucket(j)
  if b[2] == 0 then
    b[1], b[2] = fp, n
    touch(j)
    return n
  end
  if b[1] == fp then
    b[2] = (b[2] + n) % TWO32
    touch(j)
    return b[2]
  end
  if S.decay == 1 then
    -- Every step decrements (P = 1): n steps against count c leave c - n, or empty the bucket at
    -- step c and hand it the n - c + 1 steps left.
    touch(j)
    if n < b[2] then
      b[2] = b[2] - n
      return 0
    end
    b[1], b[2] = fp, n - b[2] + 1
    return b[2]
  end
  for r = n, 1, -1 do
    local p = decay_probability(b[2])
    -- P == 0 never wins a trial, and the count it depends on cannot change.
    if p == 0 then return 0 end
    if rand() < p then
      touch(j)
      b[2] = b[2] - 1
      if b[2] == 0 then
        b[1], b[2] = fp, r
        return r
      end
    end
  end
  return 0
end

-- One item: the buckets of every row, then the heap (RedisBloom's TopK_Add).
local function add_item(item, n, fp, idx)
  local heap_min = heap_min()
  local best = 0
  for r = 1, S.d do best = math.max(best, update_bucket(idx[r], fp, n)) end
  if best < heap_min then return false end
  local at = find_in_heap(fp, item)
  if at then
    -- Not the larger of the two counts: the count may go down, and the entry never sifts up.
    set_slot(at, fp, best, nil)
    sift_down(at)
    return false
  end
  local expelled = slot_item(0)
  set_slot(0, fp, best, item)
  sift_down(0)
  return expelled
end

-- Every bucket the items look at first, read in one go.
local wanted, hashes, a = {}, {}, 12
for _ = 1, tonumber(ARGV[11]) do
  local c = tonumber(ARGV[a])
  a = a + 1
  for _ = 1, c do
    local fp, idx = item_hashes(ARGV[a], a + 2, trusted)
    hashes[a] = {fp, idx}
    for _, j in ipairs(idx) do wanted[#wanted + 1] = j end
    a = a + per_item
  end
end
prefetch(wanted)

local out = {}
a = 12
for m = 1, tonumber(ARGV[11]) do
  local c = tonumber(ARGV[a])
  a = a + 1
  local results = {}
  for i = 1, c do
    local h = hashes[a]
    results[i] = add_item(ARGV[a], tonumber(ARGV[a + 1]), h[1], h[2])
    a = a + per_item
  end
  out[m] = results
end
tk_flush_buckets()
tk_flush_heap()
-- The name itself changes with every update, as a module key does: a client's WATCH on it, or
-- its CLIENT TRACKING, sees the write.
redis.call('HINCRBY', NAME, 'v', 1)
out[#out + 1] = tk_fields()
return out

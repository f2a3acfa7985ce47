-- Inserting a fingerprint, step for step as RedisBloom's CuckooFilter_InsertFP (src/cuckoo.c):
--   1. newest sub-filter to oldest: the first empty slot of bucket h1 % n, else of h2 % n;
--   2. else kicks in the newest sub-filter: from bucket h1 % n, victim slot 0, up to mi times:
--      swap the fingerprint with the victim, go to the victim's other bucket, store it in an
--      empty slot there if any (done), else take the next victim slot;
--   3. after mi failures the swaps are undone in reverse order (the filter is as before);
--   4. then, unless the expansion is 0 ("no space"), a new sub-filter of nb * ex^nf buckets is
--      added and the insertion starts again (and lands in it).
-- Everything happens in the bucket cache (cf_buckets.lua); cf_flush writes what changed.

-- The most bytes of slots a filter may grow to (the insert script sets it from sketch-max-bytes).
local GROW_LIMIT = MAX_BYTES

-- Where a new sub-filter stops being possible: RedisBloom's 16-bit count, its 2^56 - 1 buckets,
-- and an allocation that fails (past GROW_LIMIT).
local function can_grow()
  if F.nf >= 65535 then return false end
  local n = F.n[F.nf - 1] * F.ex
  return n <= 2^56 - 1 and F.bytes + n * F.bs < GROW_LIMIT
end

-- Adds sub-filter nf; its keys get the name's expiry (PEXPIRETIME: the same instant).
local function grow()
  local n = F.n[F.nf - 1] * F.ex
  F.n[F.nf] = n
  F.bytes = F.bytes + n * F.bs
  F.nf = F.nf + 1
  F.g = F.g + 1
  create_subfilter(F.nf - 1, redis.call('PEXPIRETIME', NAME))
end

-- The first empty slot of the item's bucket h1 % n, else of h2 % n, in sub-filter i: the bucket
-- and the slot, or nil.
local function find_available(i, h1hi, h1lo, h2hi, h2lo)
  local n = F.n[i]
  local b = mod64(h1hi, h1lo, n)
  local j = find_slot(bucket(i, b), 0)
  if j then return b, j end
  b = mod64(h2hi, h2lo, n)
  j = find_slot(bucket(i, b), 0)
  if j then return b, j end
  return nil
end

-- Puts fp in slot j of bucket b of sub-filter i; answers what was there.
local function swap_slot(i, b, j, fp)
  local old = slot_of(bucket(i, b), j)
  put_slot(i, b, j, fp)
  return old
end

-- Filter_KOInsert: true when fp found a place in the newest sub-filter by kicking others out.
local function kick_insert(fp, h1hi, h1lo)
  local i = F.nf - 1
  local n, bs, mi = F.n[i], F.bs, F.mi
  local victim, b = 0, mod64(h1hi, h1lo, n)
  for _ = 1, mi do
    fp = swap_slot(i, b, victim + 1, fp)
    b = alt_bucket(b, fp, n)
    local j = find_slot(bucket(i, b), 0)
    if j then
      put_slot(i, b, j, fp)
      return true
    end
    victim = (victim + 1) % bs
  end
  for _ = 1, mi do
    victim = (victim + bs - 1) % bs
    b = alt_bucket(b, fp, n)
    fp = swap_slot(i, b, victim + 1, fp)
  end
  return false
end

-- Inserts an item (its hash halves): 1 inserted, -1 no space (expansion 0), -2 no new
-- sub-filter possible (RedisBloom's "memory" status).
local function insert_item(hi, lo)
  local fp, h1hi, h1lo, h2hi, h2lo = item_hashes(hi, lo)
  while true do
    for i = F.nf - 1, 0, -1 do
      local b, j = find_available(i, h1hi, h1lo, h2hi, h2lo)
      if b then
        put_slot(i, b, j, fp)
        F.ni_hi, F.ni_lo = u64_add(F.ni_hi, F.ni_lo, 1)
        return 1
      end
    end
    if kick_insert(fp, h1hi, h1lo) then
      F.ni_hi, F.ni_lo = u64_add(F.ni_hi, F.ni_lo, 1)
      return 1
    end
    if F.ex == 0 then return -1 end
    if not can_grow() then return -2 end
    grow()
  end
end

-- Whether any sub-filter holds the item's fingerprint in one of its two buckets.
local function item_exists(hi, lo)
  local fp, h1hi, h1lo, h2hi, h2lo = item_hashes(hi, lo)
  for i = 0, F.nf - 1 do
    local n = F.n[i]
    if find_slot(bucket(i, mod64(h1hi, h1lo, n)), fp) or
       find_slot(bucket(i, mod64(h2hi, h2lo, n)), fp) then
      return true
    end
  end
  return false
end

-- CF.DEL: removes one copy of an item, as RedisBloom's CuckooFilter_Delete: sub-filters newest to
-- oldest, in the first that holds the fingerprint the first matching slot of bucket h1 % n, else
-- of h2 % n, is emptied; items - 1 and deletes + 1 (u64, wrapping). Then, when there are several
-- sub-filters and deletes > items * 0.10 (as doubles), a compaction that stops at the first
-- sub-filter it cannot empty (cf_compaction.lua).
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3..4] the item's hash halves (hi lo)
--
-- Answers 1 (deleted), 0 (not there), or the status NOTFOUND (no filter: RedisBloom's "Not
-- found") or DAMAGED <why>.
--@include cuckoo/cf_layout.lua
--@include cuckoo/cf_buckets.lua
--@include cuckoo/cf_compaction.lua

local state = cf_load(true)
if state == 'MISSING' or state == 'WRONGTYPE' then return {ok = 'NOTFOUND'} end
if state ~= 'OK' then return {ok = state} end

local fp, h1hi, h1lo, h2hi, h2lo = item_hashes(tonumber(ARGV[3]), tonumber(ARGV[4]))
local deleted = 0
for i = F.nf - 1, 0, -1 do
  local n = F.n[i]
  local b = mod64(h1hi, h1lo, n)
  local j = find_slot(bucket(i, b), fp)
  if not j then
    b = mod64(h2hi, h2lo, n)
    j = find_slot(bucket(i, b), fp)
  end
  if j then
    put_slot(i, b, j, 0)
    F.ni_hi, F.ni_lo = u64_add(F.ni_hi, F.ni_lo, -1)
    F.nd_hi, F.nd_lo = u64_add(F.nd_hi, F.nd_lo, 1)
    deleted = 1
    if F.nf > 1 and u64_double(F.nd_hi, F.nd_lo) > u64_double(F.ni_hi, F.ni_lo) * 0.10 then
      cf_compact(false)
    end
    break
  end
end
cf_flush()
cf_save()
return deleted

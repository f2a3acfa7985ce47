-- CF.EXISTS, CF.MEXISTS, CF.COUNT: reads only (EVALSHA_RO), one or several commands' items.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3]    "exists" or "count"
--   ARGV[4..]  the items' hash halves (hi lo), in order
--
-- Answers an array of one integer per item: exists 1 or 0 (any sub-filter holds the fingerprint
-- in one of the item's two buckets), count the copies of the fingerprint in both buckets of
-- every sub-filter (twice over when the two buckets are one). A name that holds no filter (or
-- nothing) answers 0 for every item, as RedisBloom does; DAMAGED <why> a damaged filter.
--@include cuckoo/cf_layout.lua
--@include cuckoo/cf_buckets.lua
--@include cuckoo/cf_insertion.lua

local items = (#ARGV - 3) / 2
local out = {}
local state = cf_load(true)
if state == 'MISSING' or state == 'WRONGTYPE' then
  for k = 1, items do out[k] = 0 end
  return out
end
if state ~= 'OK' then return {ok = state} end

local counting = ARGV[3] == 'count'
for k = 1, items do
  local hi, lo = tonumber(ARGV[2 + 2 * k]), tonumber(ARGV[3 + 2 * k])
  if counting then
    local fp, h1hi, h1lo, h2hi, h2lo = item_hashes(hi, lo)
    local c = 0
    for i = 0, F.nf - 1 do
      local n = F.n[i]
      for _, t in ipairs({bucket(i, mod64(h1hi, h1lo, n)), bucket(i, mod64(h2hi, h2lo, n))}) do
        for j = 1, #t do
          if t[j] == fp then c = c + 1 end
        end
      end
    end
    out[k] = c
  else
    out[k] = item_exists(hi, lo) and 1 or 0
  end
end
return out

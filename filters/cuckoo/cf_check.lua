-- CF.EXISTS, CF.MEXISTS, CF.COUNT: reads only (EVALSHA_RO), one or several commands' items.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3]    "exists" or "count"
--   ARGV[4..]  the items' hash halves (hi lo), in order
--
-- Answers an array of one integer per item: exists 1 or 0 (any sub-filter holds the fingerprint
-- in one of the item's two buckets), count the copies of the fingerprint in both buckets of
-- every sub-filter (twice over when the two buckets are one), then the filter's fields
-- (cf_fields), which the proxy caches for its direct reads. A name that holds no filter (or
-- nothing) answers 0 for every item, and no fields, as RedisBloom does; DAMAGED <why> a damaged
-- filter.
--@include cuckoo/cf_layout.lua
--@include cuckoo/cf_buckets.lua
--@include cuckoo/cf_lookup.lua

local items = (#ARGV - 3) / 2
local state = cf_load(true)
if state == 'MISSING' or state == 'WRONGTYPE' then
  local out = {}
  for k = 1, items do out[k] = 0 end
  return out
end
if state ~= 'OK' then return {ok = state} end
local out = lookup_items(4, items, ARGV[3] == 'count')
out[#out + 1] = cf_fields()
return out

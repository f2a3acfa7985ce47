-- CF.COMPACT: a compaction that goes on past a sub-filter it cannot empty (cf_compaction.lua);
-- on a filter of one sub-filter it only sets the deletes count to 0.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--
-- Answers the status OK, NOTFOUND (no filter: RedisBloom's "Cuckoo filter was not found") or
-- DAMAGED <why>.
--@include cuckoo/cf_layout.lua
--@include cuckoo/cf_buckets.lua
--@include cuckoo/cf_compaction.lua

local state = cf_load(true)
if state == 'MISSING' or state == 'WRONGTYPE' then return {ok = 'NOTFOUND'} end
if state ~= 'OK' then return {ok = state} end
cf_compact(true)
cf_save()
return {ok = 'OK'}

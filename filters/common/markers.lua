-- The markers of the key scripts that look at markers only (included first): ARGV[1] to ARGV[5]
-- are the name's Bloom filter, count-min sketch, cuckoo filter, Top-K and t-digest markers
-- (MarkerKey, CmsMarkerKey, CfMarkerKey, TopkMarkerKey, TdigestMarkerKey), taken out of ARGV into
-- MK, so that ARGV is then the client's command as sent; MODULE_TYPES[i] is RedisBloom's type
-- name of the structure MK[i] marks. The markers are not KEYS: Redis makes a client with CLIENT
-- TRACKING track every key a script declares, and its invalidations must name only keys the
-- client knows.
local MK = {}
for i = 1, 5 do MK[i] = table.remove(ARGV, 1) end
local MODULE_TYPES = {'MBbloom--', 'CMSk-TYPE', 'MBbloomCF', 'TopK-TYPE', 'TDIS-TYPE'}

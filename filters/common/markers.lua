-- The markers of the key scripts that look at markers only (included first): ARGV[1] to ARGV[4]
-- are the name's Bloom filter, count-min sketch, cuckoo filter and Top-K markers (MarkerKey,
-- CmsMarkerKey, CfMarkerKey, TopkMarkerKey), taken out of ARGV into MK, so that ARGV is then the
-- client's command as sent; MODULE_TYPES[i] is RedisBloom's type name of the structure MK[i]
-- marks. The markers are not KEYS: Redis makes a client with CLIENT TRACKING track every key a
-- script declares, and its invalidations must name only keys the client knows.
local MK = {table.remove(ARGV, 1), table.remove(ARGV, 1), table.remove(ARGV, 1),
            table.remove(ARGV, 1)}
local MODULE_TYPES = {'MBbloom--', 'CMSk-TYPE', 'MBbloomCF', 'TopK-TYPE'}

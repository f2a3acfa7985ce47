-- The markers of the key scripts that look at markers only (included first): ARGV[1], ARGV[2]
-- are the name's filter and sketch markers (MarkerKey, CmsMarkerKey), taken out of ARGV into MK,
-- so that ARGV is then the client's command as sent. The markers are not KEYS: Redis makes a
-- client with CLIENT TRACKING track every key a script declares, and its invalidations must name
-- only keys the client knows.
local MK = {table.remove(ARGV, 1), table.remove(ARGV, 1)}

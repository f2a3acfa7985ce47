-- Creates a sketch unless the name holds anything (AddCmsCreate, filters/cms/cms_scripts.h).
--
-- KEYS[1]: the name; KEYS[2]: its marker; KEYS[3..]: the parts. ARGV[1..4]: id, width, depth,
-- cells per part; ARGV[4 + p]: the size of part p - 2 (of KEYS[p]). SETRANGE of the last byte
-- makes Redis allocate each part at its exact size, zeroed.
--
-- Returns 1 created, 0 the name exists (nothing written).

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 3, #KEYS do redis.call('SETRANGE', KEYS[i], tonumber(ARGV[i + 2]) - 1, '\0') end
redis.call('HSET', KEYS[1], 'cms', '1', 'id', ARGV[1], 'width', ARGV[2], 'depth', ARGV[3],
           'part', ARGV[4])
redis.call('SET', KEYS[2], '1')
return 1

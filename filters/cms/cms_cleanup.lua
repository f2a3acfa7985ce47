-- Removes parts a plan wrote after its sketch went away, unless the name holds that sketch again
-- (AddCmsCleanup, filters/cms/cms_scripts.h): a removed sketch's keys must not stay behind.
--
-- KEYS[1]: the name; KEYS[2..]: parts of the sketch ARGV[1] (its id).
--
-- Returns 0 (the sketch is there: nothing removed) or 1 (the parts removed).

if redis.call('TYPE', KEYS[1]).ok == 'hash' and redis.call('HGET', KEYS[1], 'id') == ARGV[1] then
  return 0
end
for i = 2, #KEYS, 1000 do redis.call('UNLINK', unpack(KEYS, i, math.min(i + 999, #KEYS))) end
return 1

-- MERGE's check-and-write (AddCmsMergeCommit, filters/cms/cms_scripts.h): each sketch read must
-- be unchanged, then the destination's parts are written.
--
-- ARGV[1]: n, the sketches checked; KEYS[i], KEYS[n + i], ARGV[1 + i], ARGV[1 + n + i]: sketch
-- i's name, part 0, id and version (i = 1..n). KEYS[j] for j > 2n: a part written with
-- ARGV[j + 1] (SETRANGE from 0: the whole part, its expiry kept).
--
-- Returns 1, or 0 when a sketch changed (nothing written).

local n = tonumber(ARGV[1])
for i = 1, n do
  if redis.call('TYPE', KEYS[i]).ok ~= 'hash' then return 0 end
  if redis.call('HGET', KEYS[i], 'id') ~= ARGV[1 + i] then return 0 end
  if redis.call('GETRANGE', KEYS[n + i], 8, 15) ~= ARGV[1 + n + i] then return 0 end
end
for j = 2 * n + 1, #KEYS do redis.call('SETRANGE', KEYS[j], 0, ARGV[j + 1]) end
return 1

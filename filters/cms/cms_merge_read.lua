-- MERGE's read: every key at one instant (AddCmsMergeRead, filters/cms/cms_scripts.h).
--
-- KEYS: the keys to read; ARGV[i]: 'h' for the header of KEYS[i] (its first 16 bytes), anything
-- else for all of it.
--
-- Returns an array of bulk strings, in KEYS's order ('' for a missing key).

local out = {}
for i, k in ipairs(KEYS) do
  if ARGV[i] == 'h' then out[i] = redis.call('GETRANGE', k, 0, 15)
  else out[i] = redis.call('GET', k) end
  if not out[i] then out[i] = '' end
end
return out

-- DEL, UNLINK on whole structures (filters/common/key_scripts.h).
--
-- KEYS: the command's keys. ARGV[1]: DEL or UNLINK; ARGV[1 + i]: the data-key prefix of KEYS[i].
-- Key by key (a Lua call takes at most 8000 arguments), so a filter's data keys and marker go
-- with its name.
--
-- Returns the number of keys removed, or the command's error.

--@include common/marked.lua
--@include common/filter_at.lua
local removed = 0
for i, k in ipairs(KEYS) do
  local m, data = filter_at(k, ARGV[i + 1])
  local r = redis.pcall(ARGV[1], k)
  if type(r) == 'table' then return r end
  removed = removed + r
  if m and r == 1 then unlink_all(m, data or {}) end
end
return removed

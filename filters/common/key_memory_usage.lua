-- MEMORY USAGE of whole structures (filters/common/key_scripts.h). Only reads: EVAL_RO.
--
-- KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command (MEMORY USAGE key
-- [SAMPLES n]).
--
-- Returns the name's usage (or Redis's nil or error) plus, for a structure, every data key's and
-- the marker's, each asked with the same options.

--@include common/marked_by_exists.lua
--@include common/filter_at.lua
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if type(r) ~= 'number' or not data then return r end
data[#data + 1] = m
for _, d in ipairs(data) do
  local u = redis.pcall('MEMORY', 'USAGE', d, unpack(ARGV, 5))
  if type(u) == 'number' then r = r + u end
end
return r

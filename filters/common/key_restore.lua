-- RESTORE on whole structures (filters/common/key_scripts.h).
--
-- KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command.
--
-- Returns the command's reply. When it restored over a structure (REPLACE; without it the
-- name's existence gives Redis's BUSYKEY), the structure's data keys and marker are removed:
-- nothing of it is left. Removed after the RESTORE succeeded, so a payload Redis refuses changes
-- nothing.

--@include common/marked.lua
--@include common/filter_at.lua
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if type(r) == 'table' and r.ok and m then unlink_all(m, data or {}) end
return r

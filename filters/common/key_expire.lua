-- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST on whole structures
-- (filters/common/key_scripts.h).
--
-- KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command.
--
-- Returns the command's reply. When the key is a filter and the command changed its expiry, its
-- data keys and marker get the same (gone, persistent, or the same absolute time). A windowed
-- filter's slots keep their own end as their latest expiry, so the window still forgets on time:
-- a slot's hash gets the earlier of the name's new expiry and the slot's end (PERSIST: the
-- slot's end), and so do its data keys, as when the slot was created (common/live_slots.lua).

--@include common/marked.lua
--@include common/filter_at.lua
local m, data, slots = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if data and r == 1 then
  local at = redis.call('PEXPIRETIME', KEYS[1])
  local own = {}
  for _, s in ipairs(slots or {}) do
    local ends = s.ends
    if at >= 0 and at < ends then ends = at end
    own[s.name] = ends
    for _, d in ipairs(s.keys) do own[d] = ends end
  end
  data[#data + 1] = m
  for _, d in ipairs(data) do
    if at == -2 then redis.call('UNLINK', d)
    elseif own[d] then redis.call('PEXPIREAT', d, string.format('%d', own[d]))
    elseif at == -1 then redis.call('PERSIST', d)
    else redis.call('PEXPIREAT', d, at) end
  end
end
return r

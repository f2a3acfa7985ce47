-- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST on whole structures
-- (filters/common/key_scripts.h).
--
-- KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command.
--
-- Returns the command's reply. When the key is a filter and the command changed its expiry, its
-- data keys and marker get the same (gone, persistent, or the same absolute time).

--@include common/marked.lua
--@include common/filter_at.lua
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if data and r == 1 then
  data[#data + 1] = m
  local at = redis.call('PEXPIRETIME', KEYS[1])
  for _, d in ipairs(data) do
    if at == -2 then redis.call('UNLINK', d)
    elseif at == -1 then redis.call('PERSIST', d)
    else redis.call('PEXPIREAT', d, at) end
  end
end
return r

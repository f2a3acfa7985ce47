-- RENAME, RENAMENX on whole structures (filters/common/key_scripts.h).
--
-- KEYS[1], KEYS[2]: source and destination. ARGV[1], ARGV[2]: their data-key prefixes;
-- ARGV[3..]: the command.
--
-- Returns the command's reply. When it renamed: a filter the destination held loses its data
-- keys and marker; a filter at the source takes its data keys along under the destination's
-- prefix and its marker under the destination's name (RENAME keeps their expiry).

--@include common/marked.lua
--@include common/filter_at.lua
local ms, src = filter_at(KEYS[1], ARGV[1])
local md, dst = nil, nil
if KEYS[1] ~= KEYS[2] then md, dst = filter_at(KEYS[2], ARGV[2]) end
local r = redis.pcall(unpack(ARGV, 3))
if type(r) == 'table' and r.err then return r end
if KEYS[1] == KEYS[2] or (type(r) ~= 'table' and r ~= 1) then return r end
if md then unlink_all(md, dst or {}) end
if ms then
  if src then
    for _, d in ipairs(src) do
      local moved = ARGV[2] .. string.sub(d, #ARGV[1] + 1)
      if moved ~= d and redis.call('EXISTS', d) == 1 then redis.call('RENAME', d, moved) end
    end
    local kind = string.sub(ms, #ARGV[1] + 1, #ms - #KEYS[1])
    redis.call('RENAME', ms, ARGV[2] .. kind .. KEYS[2])
  else
    redis.call('UNLINK', ms)
  end
end
return r

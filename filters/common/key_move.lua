-- MOVE on whole structures (filters/common/key_scripts.h).
--
-- KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command (MOVE key db).
--
-- Returns the command's reply (Redis's errors, :0 when the destination database holds the name).
-- When it moved a structure, every data key and the marker follow it: MOVE each, or, where the
-- other database holds a key of that name (a leftover), COPY ... REPLACE and UNLINK; then the
-- other kinds' markers for the name, leftovers there, are removed (one would make the structure
-- look like another kind). The SELECT is the script's own (the caller's database is unchanged)
-- and comes last.

--@include common/marked.lua
--@include common/filter_at.lua
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if r ~= 1 or not m then return r end
if not data then redis.call('UNLINK', m) return r end
data[#data + 1] = m
local db = ARGV[4]
for _, d in ipairs(data) do
  if redis.call('MOVE', d, db) == 0 and redis.call('EXISTS', d) == 1 then
    redis.call('COPY', d, d, 'DB', db, 'REPLACE')
    redis.call('UNLINK', d)
  end
end
local others = {}
for _, kind in ipairs({':bf:m:', ':cms:m:', ':cf:m:', ':tk:m:', ':td:m:'}) do
  local other = ARGV[1] .. kind .. KEYS[1]
  if other ~= m then others[#others + 1] = other end
end
redis.call('SELECT', db)
redis.call('UNLINK', unpack(others))
return r

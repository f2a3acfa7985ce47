-- The first step of WATCH of a filter's or a sketch's name (filters/common/watch_plan.h): which
-- data keys every write of the structure touches, so that the WATCH watches them too.
--
-- KEYS: the watched names; ARGV: their data-key prefixes.
--
-- Returns the data keys of every name that is a filter (each link's count and shards) or a
-- sketch (its parts), as its marker says. For a windowed filter: the names of its live slots
-- (common/live_slots.lua), whether they exist or not (an add that creates a slot writes its
-- name), and the data keys of those that exist (a slot is a filter under its own name).

--@include common/live_slots.lua
-- The data keys of filter `f` (its hash's fields, HGETALL) whose prefix is `prefix`.
local function link_keys(out, prefix, f)
  local shard, l = tonumber(f.shard), 0
  while f.id and shard and f['l' .. l] do
    local bytes = tonumber(string.match(f['l' .. l], '^(%d+)'))
    local base = prefix .. ':bf:' .. f.id .. ':' .. l
    out[#out + 1] = base .. ':n'
    for s = 0, math.ceil((bytes or 0) / shard) - 1 do out[#out + 1] = base .. '.' .. s end
    l = l + 1
  end
end
local function fields(name)
  local m = redis.call('HGETALL', name)
  local f = {}
  for j = 1, #m, 2 do f[m[j]] = m[j + 1] end
  return f
end

local out = {}
for i, name in ipairs(KEYS) do
  local prefix = ARGV[i]
  if redis.call('EXISTS', prefix .. ':bf:m:' .. name) == 1 then
    local f = fields(name)
    if f.window then
      for _, s in ipairs(live_slots(prefix, f.id, f.window, f.slots) or {}) do
        out[#out + 1] = s.name
        if redis.call('TYPE', s.name).ok == 'hash' then link_keys(out, s.name, fields(s.name)) end
      end
    else
      link_keys(out, prefix, f)
    end
  elseif redis.call('EXISTS', prefix .. ':cms:m:' .. name) == 1 then
    local m = redis.call('HMGET', name, 'id', 'width', 'depth', 'part')
    local cells, part = (tonumber(m[2]) or 0) * (tonumber(m[3]) or 0), tonumber(m[4])
    if m[1] and part and part > 0 then
      for p = 0, math.ceil(cells / part) - 1 do out[#out + 1] = prefix .. ':cms:' .. m[1] .. ':' .. p end
    end
  end
end
return out

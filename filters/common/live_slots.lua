-- A windowed filter's slots as the key scripts find them (filters/bloom/window/window_slots.h,
-- the same integer arithmetic; Lua's numbers are doubles, exact for every integer here: times
-- and products stay far below 2^53).
--
-- live_slots(p, id, w, g): the names and ends of the slots that may exist at the upstream's
-- time t (TIME) of the windowed filter whose data-key prefix is `p`, id `id`, window `w` ms and
-- `g` slots: e from floor(t·(g−1)/W) (a slot ending at t exactly, which Redis still holds) to
-- ceil((t+W)·(g−1)/W) + 1 (LiveSlots, and one more: a slot written by a proxy whose estimate of
-- the upstream's clock runs a little ahead). Returns a list of {name = SlotName, ends =
-- SlotEnd(e)}, whether or not they exist; nil when `id`, `w` or `g` is not what a windowed
-- filter's hash holds (an id, 0 < W, 2 <= g <= 64). Every key of a slot carries PEXPIREAT `ends`
-- (filters/bloom/bf_plan_create.cc).
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function live_slots(p, id, w, g)
  w, g = tonumber(w), tonumber(g)
  if not id or not w or not g or w < 1 or w ~= math.floor(w) or g < 2 or g > 64 or
     g ~= math.floor(g) then
    return nil
  end
  local now = redis.call('TIME')
  local t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  local out = {}
  for e = floor_div(t * (g - 1), w), -floor_div(-(t + w) * (g - 1), w) + 1 do
    out[#out + 1] = {name = p .. ':bf:' .. id .. ':w' .. string.format('%d', e),
                     ends = -floor_div(-e * w, g - 1)}
  end
  return out
end

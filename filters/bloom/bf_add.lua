-- The set step of an add (BF.ADD, BF.MADD, BF.INSERT), atomically on the server holding the
-- filter (filters/bloom/add_script.h builds the request).
--
-- KEYS[1]: the filter's name; KEYS[2..]: its shards the items' bits are in.
-- ARGV[1], ARGV[2]: the marker field and value; ARGV[3]: the filter's id; ARGV[4]: l<links>,
-- the first link the proxy does not know; ARGV[5]: n, the items; ARGV[6]: the groups. Then per
-- group (older links first, the link to set last): its k, and for every item in order k pairs
-- (index into KEYS, bit offset).
--
-- Returns -1, having written nothing, when the name is no longer this filter or a link exists
-- after the ones the proxy knows. Otherwise one integer per item: 1 new (a bit changed), 0
-- every bit was already set, 2 another link holds it (nothing set).
--
-- BITFIELD commands of at most 1000 operations each: Lua's unpack() takes at most 8000 values.

if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return -1 end
local m = redis.call('HMGET', KEYS[1], ARGV[1], 'id', ARGV[4])
if m[1] ~= ARGV[2] or m[2] ~= ARGV[3] or m[3] then return -1 end
local n, groups, a = tonumber(ARGV[5]), tonumber(ARGV[6]), 7
local found, out = {}, {}
for g = 1, groups do
  local set = g == groups
  local k = tonumber(ARGV[a])
  a = a + 1
  local cmds, cur, wc, wp = {}, {}, {}, {}
  for j = 1, n do
    for b = 1, k do
      if not found[j] then
        local key = tonumber(ARGV[a])
        local c = cur[key]
        if c == nil or c.ops == 1000 then
          c = {args = {KEYS[key]}, len = 1, ops = 0}
          cmds[#cmds + 1] = c
          cur[key] = c
        end
        local args, len = c.args, c.len
        if set then
          args[len + 1], args[len + 2], args[len + 3], args[len + 4] = 'SET', 'u1', ARGV[a + 1], '1'
          c.len = len + 4
        else
          args[len + 1], args[len + 2], args[len + 3] = 'GET', 'u1', ARGV[a + 1]
          c.len = len + 3
        end
        c.ops = c.ops + 1
        local x = (j - 1) * k + b
        wc[x], wp[x] = c, c.ops
      end
      a = a + 2
    end
  end
  for _, c in ipairs(cmds) do c.bits = redis.call('BITFIELD', unpack(c.args)) end
  for j = 1, n do
    if found[j] then
      if set then out[j] = 2 end
    else
      local ones = true
      for x = (j - 1) * k + 1, j * k do
        if wc[x].bits[wp[x]] ~= 1 then
          ones = false
          break
        end
      end
      if set then out[j] = ones and 0 or 1 else found[j] = ones end
    end
  end
end
return out

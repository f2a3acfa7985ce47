-- BF.* inside MULTI on a key a bf-layout rule names (filters/guava/multi_guava.cc): the whole
-- command when EXEC runs (reading an expanding filter's cursor, setting the bits, rolling over to
-- its next key); the items' bit indexes come from the proxy.
--
-- KEYS: the key (NAME-0 for an expanding filter), the cursor key (expanding only).
-- ARGV: op (add, exists, counts, reserve), bits, k, items, NAME ("" unless expanding),
-- nocreate, then k indexes per item (reserve: the refusal when the parameters differ).
-- Errors of the commands (WRONGTYPE, ...) are answered as they are (pcall).
--
-- Answers: add/exists: 0/1 per item; counts: {found, BITCOUNT of each data key}.

local op, bits, k, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local name, nocreate, base = ARGV[5], ARGV[6] == '1', 6
local expanding = name ~= ''
local function key(i) if expanding then return name .. '-' .. i end return KEYS[1] end
local function call(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil, r end
  return r
end
local c, e, found, _ = 0, nil, false, nil
if expanding then
  local v
  v, e = call('GET', KEYS[2]); if e then return e end
  if v then
    c = tonumber(v)
    if c == nil or c < 0 or c > 65535 or c ~= math.floor(c) then
      return redis.error_reply('ERR bloomproxy: the cursor key of this expanding filter does not hold an integer in 0..65535')
    end
    found = true
  end
end
if not found then
  local x
  if op ~= 'exists' then
    _, e = call('STRLEN', key(0)); if e then return e end
  end
  x, e = call('EXISTS', key(0)); if e then return e end
  found = x == 1
end
if op == 'reserve' then
  if found then return redis.error_reply('ERR item exists') end
  if ARGV[7] ~= '' then return redis.error_reply(ARGV[7]) end
  _, e = call('SETBIT', key(0), bits - 1, 0); if e then return e end
  return redis.status_reply('OK')
end
local out = {found and 1 or 0}
if op == 'counts' then
  for i = 0, c do
    local b
    b, e = call('BITCOUNT', key(i)); if e then return e end
    out[#out + 1] = b
  end
  return out
end
if op == 'add' and nocreate and not found then return redis.error_reply('ERR not found') end
local function has(i, j)
  for h = 1, k do
    local b, err = call('GETBIT', key(i), ARGV[base + (j - 1) * k + h])
    -- RedisBloom answers EXISTS on a key of another type as on a missing one.
    if err and op == 'exists' and string.sub(err.err, 1, 9) == 'WRONGTYPE' then return false end
    if err then return nil, err end
    if b == 0 then return false end
  end
  return true
end
for j = 1, n do
  local present = false
  if op == 'exists' or expanding then
    for i = 0, c do
      local p
      p, e = has(i, j); if e then return e end
      if p then present = true break end
    end
  end
  if op == 'exists' or present then
    out[#out + 1] = present and op == 'exists' and 1 or 0
  else
    local changed = 0
    for h = 1, k do
      local old
      old, e = call('SETBIT', key(c), ARGV[base + (j - 1) * k + h], 1); if e then return e end
      if old == 0 then changed = 1 end
    end
    out[#out + 1] = changed
    if expanding then
      local b
      b, e = call('BITCOUNT', key(c)); if e then return e end
      if b * 2 > bits then
        c, e = call('INCR', KEYS[2]); if e then return e end
        _, e = call('SETBIT', key(c), bits - 1, 0); if e then return e end
      end
    end
  end
end
return out

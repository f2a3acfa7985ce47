-- The prelude of the script CMS.* commands run as inside MULTI (cms_multi.lua includes it), kept
-- apart so that tests can EVAL it with a few lines of their own appended
-- (tests/integration/test_multi_cms.py). It holds RedisBloom's hash, exact 64-bit arithmetic and
-- the layout of filters/cms/cms_meta.h. Redis's Lua numbers are doubles, so everything that must
-- be exact beyond 2^53 is done in 16- or 24-bit pieces: MurmurHash2's multiplications modulo
-- 2^32, and MERGE's int64 overflow checks (RedisBloom's __builtin_mul_overflow and add_overflow).
--
--@include common/murmur2.lua
local U32MAX = 4294967295

-- Signed integers of any size: little-endian 24-bit limbs and a sign (neg), no top zero limb.
-- Limb products stay below 2^48, so every step is exact in doubles.
local B = 16777216
local function bn_norm(a)
  while #a > 0 and a[#a] == 0 do a[#a] = nil end
  if #a == 0 then a.neg = false end
  return a
end
local function bn_mul_add(a, m, c)  -- a * m + c in place, a >= 0, m and c < 2^24
  for k = 1, #a do
    local x = a[k] * m + c
    a[k] = x % B
    c = (x - a[k]) / B
  end
  if c > 0 then a[#a + 1] = c end
  return a
end
local function bn_dec(s)  -- "-123" or "123": C++'s canonical decimal of an int64
  local a = {neg = false}
  local i = 1
  if string.sub(s, 1, 1) == '-' then i = 2 end
  for p = i, #s do bn_mul_add(a, 10, string.byte(s, p) - 48) end
  bn_norm(a)
  a.neg = i == 2 and #a > 0
  return a
end
local function bn_bytes(s)  -- a big-endian unsigned byte string
  local a = {neg = false}
  for p = 1, #s do bn_mul_add(a, 256, string.byte(s, p)) end
  return bn_norm(a)
end
local function bn_small(v)  -- 0 <= v < 2^48
  local a = {neg = false}
  while v > 0 do
    local l = v % B
    a[#a + 1] = l
    v = (v - l) / B
  end
  return a
end
local function cmp_mag(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  for k = #a, 1, -1 do
    if a[k] ~= b[k] then return a[k] < b[k] and -1 or 1 end
  end
  return 0
end
local function bn_add(a, b)
  local r, big, small = {}, a, b
  if a.neg ~= b.neg and cmp_mag(a, b) < 0 then big, small = b, a end
  local c, sign = 0, (a.neg == b.neg) and 1 or -1
  for k = 1, math.max(#a, #b) do
    local x = (big[k] or 0) + sign * (small[k] or 0) + c
    r[k] = x % B
    c = (x - r[k]) / B
  end
  if c > 0 then r[#r + 1] = c end
  r.neg = big.neg
  return bn_norm(r)
end
local function bn_mul(a, b)
  local r = {}
  for k = 1, #a + #b do r[k] = 0 end
  for i = 1, #a do
    local c = 0
    for j = 1, #b do
      local x = r[i + j - 1] + a[i] * b[j] + c
      r[i + j - 1] = x % B
      c = (x - r[i + j - 1]) / B
    end
    local k = i + #b
    while c > 0 do
      local x = r[k] + c
      r[k] = x % B
      c = (x - r[k]) / B
      k = k + 1
    end
  end
  r.neg = a.neg ~= b.neg
  return bn_norm(r)
end
local I64MAX = {B - 1, B - 1, 32767}  -- 2^63 - 1
local I64MIN = {0, 0, 32768}          -- the magnitude of -2^63
local CELLMAX = bn_small(U32MAX)
local function fits_i64(a) return cmp_mag(a, a.neg and I64MIN or I64MAX) <= 0 end
local function bn_u32(a) return (a[1] or 0) + (a[2] or 0) * B end  -- a in [0, 2^48)
local function bn_be8(a)  -- 0 <= a < 2^64: 8 big-endian bytes
  local out = {}
  for i = 8, 1, -1 do
    local limb = a[math.floor((8 - i) / 3) + 1] or 0
    out[i] = math.floor(limb / 256 ^ ((8 - i) % 3)) % 256
  end
  return string.char(unpack(out))
end

-- The sketch named KEYS[2i-1] (marker KEYS[2i], data-key prefix PREFIX[i]): a table, or nil and
-- the error code (1: missing, 2: another type, 7: metadata that does not parse).
local PREFIX = {}
local function is_count(s) return type(s) == 'string' and #s <= 19 and s:match('^[1-9]%d*$') end
local function sketch(i)
  local name = KEYS[2 * i - 1]
  local t = redis.call('TYPE', name).ok
  if t == 'none' then return nil, 1 end
  if t ~= 'hash' or redis.call('EXISTS', KEYS[2 * i]) == 0 then return nil, 2 end
  local f = redis.call('HMGET', name, 'cms', 'id', 'width', 'depth', 'part')
  if f[1] ~= '1' then return nil, 2 end
  if type(f[2]) ~= 'string' or #f[2] ~= 16 or not (is_count(f[3]) and is_count(f[4]) and
      is_count(f[5])) then
    return nil, 7
  end
  local s = {w = tonumber(f[3]), d = tonumber(f[4]), c = tonumber(f[5]), width = f[3],
             depth = f[4], base = PREFIX[i] .. ':cms:' .. f[2] .. ':'}
  s.cells = s.w * s.d
  if s.cells >= 2 ^ 53 or s.c > 134217724 then return nil, 7 end
  s.parts = math.ceil(s.cells / s.c)
  if s.parts > 16777216 then return nil, 7 end
  return s
end
local function part_cells(s, p) return math.min(s.c, s.cells - p * s.c) end
local function cell_of(s, m, row) return row_hash(m, row) % s.w + row * s.w end
local function cell_at(str, off)  -- cell `off` of a part's bytes (big-endian after the header)
  local b0, b1, b2, b3 = string.byte(str, 17 + 4 * off, 20 + 4 * off)
  return ((b0 * 256 + b1) * 256 + b2) * 256 + b3
end
local function be4(v)
  return string.char(math.floor(v / 16777216), math.floor(v / 65536) % 256,
                     math.floor(v / 256) % 256, v % 256)
end
-- BITFIELD on `key` of the operations args[first..] (`per` arguments each), at most about 6000
-- arguments a call (Lua's unpack stops near 8000), each call starting with `head`;
-- each(op, value) gets every operation's value in order.
local function bitfield(key, head, args, per, each)
  local i, op = 1, 0
  while i <= #args do
    local last = math.min(#args, i - 1 + per * 1500)
    local r
    if head then
      r = redis.call('BITFIELD', key, 'OVERFLOW', head, unpack(args, i, last))
    else
      r = redis.call('BITFIELD', key, unpack(args, i, last))
    end
    for _, v in ipairs(r) do
      op = op + 1
      each(op, v)
    end
    i = last + 1
  end
end

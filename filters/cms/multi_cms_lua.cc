// The Lua text of CMS.* inside MULTI (filters/cms/multi_cms.h): one script for every command, a
// prelude (RedisBloom's hash, exact 64-bit arithmetic, the layout of cms_meta.h) and a body that
// runs the command named by ARGV[1]. Redis's Lua numbers are doubles, so everything that must be
// exact beyond 2^53 is done in 16- or 24-bit pieces: MurmurHash2's multiplications modulo 2^32,
// and MERGE's int64 overflow checks (RedisBloom's __builtin_mul_overflow and add_overflow).
#include <string>

#include "filters/cms/multi_cms.h"

namespace bloomproxy::filters {
namespace {

// The prelude. murmur2(): MurmurHash2 (32-bit, Austin Appleby's reference, as RedisBloom uses
// it with seed = row); the per-block mixing does not depend on the seed, so mix() does it once
// per item and row_hash() runs the seeded part for each row.
constexpr std::string_view kPrelude = R"lua(
local bxor, rshift = bit.bxor, bit.rshift
local TWO32 = 4294967296
local U32MAX = 4294967295
-- bit's results are signed 32-bit integers: back to [0, 2^32).
local function u32(x) return x % TWO32 end
-- x * 0x5bd1e995 mod 2^32, for x in [0, 2^32): 16-bit halves keep every product below 2^34.
local function mulm(x)
  local lo = x % 65536
  local hi = (x - lo) / 65536
  return (lo * 0xe995 + ((hi * 0xe995 + lo * 0x5bd1) % 65536) * 65536) % TWO32
end
-- An item's seed-independent part: its mixed 4-byte blocks, its tail and its length.
local function mix(s)
  local n = #s
  local rem = n % 4
  local ks = {}
  for i = 1, n - rem, 4 do
    local b0, b1, b2, b3 = string.byte(s, i, i + 3)
    local k = mulm(b0 + b1 * 256 + b2 * 65536 + b3 * 16777216)
    ks[#ks + 1] = mulm(u32(bxor(k, rshift(k, 24))))
  end
  local tail = 0
  if rem == 3 then tail = string.byte(s, n) * 65536 end
  if rem >= 2 then tail = tail + string.byte(s, n - rem + 2) * 256 end
  if rem >= 1 then tail = tail + string.byte(s, n - rem + 1) end
  return {ks = ks, tail = tail, rem = rem, n = n}
end
local function row_hash(m, seed)
  local h = u32(bxor(seed % TWO32, m.n))
  local ks = m.ks
  for i = 1, #ks do h = u32(bxor(mulm(h), ks[i])) end
  if m.rem > 0 then h = mulm(u32(bxor(h, m.tail))) end
  h = mulm(u32(bxor(h, rshift(h, 13))))
  return u32(bxor(h, rshift(h, 15)))
end
local function murmur2(s, seed) return row_hash(mix(s), seed) end

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
)lua";

// The body. KEYS: (name, marker) pairs: the sketch, then MERGE's distinct sources. ARGV[1]: the
// command; ARGV[2]: 'e' when an argument error is the reply once the key check passes;
// ARGV[3 .. 2 + #KEYS/2]: each name's data-key prefix; then the command's own arguments (see
// filters/cms/multi_cms.cc). Answers: an integer code (0: OK; 1 key does not exist, 2 WRONGTYPE,
// 3 key already exists, 4 the argument error, 5 width/depth is not equal, 6 MERGE overflow,
// 7 damaged metadata, 8 a part of the wrong size), or the command's data.
constexpr std::string_view kBody = R"lua(
local op, pending = ARGV[1], ARGV[2] == 'e'
local names = #KEYS / 2
for i = 1, names do PREFIX[i] = ARGV[2 + i] end
local a = 3 + names

if op == 'init' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 3 end
  if pending then return 4 end
  local s = {w = tonumber(ARGV[a + 1]), d = tonumber(ARGV[a + 2]), c = tonumber(ARGV[a + 3]),
             base = PREFIX[1] .. ':cms:' .. ARGV[a] .. ':'}
  s.cells = s.w * s.d
  for p = 0, math.ceil(s.cells / s.c) - 1 do
    redis.call('SETRANGE', s.base .. p, 16 + 4 * part_cells(s, p) - 1, '\0')
  end
  redis.call('HSET', KEYS[1], 'cms', '1', 'id', ARGV[a], 'width', ARGV[a + 1], 'depth',
             ARGV[a + 2], 'part', ARGV[a + 3])
  redis.call('SET', KEYS[2], '1')
  return 0
end

local s, code = sketch(1)
if not s then return code end
if pending then return 4 end

if op == 'info' then
  local count = redis.call('GETRANGE', s.base .. '0', 0, 7)
  return {s.width, s.depth, count}
end

if op == 'incrby' or op == 'query' then
  -- Each item's cells grouped by part, in order: BITFIELD runs them one after the other, so an
  -- item sees the increments of the items before it, as RedisBloom's loop does.
  local write = op == 'incrby'
  local first = write and a + 1 or a
  local step = write and 2 or 1
  local groups, order, minima = {}, {}, {}
  for i = 1, (#ARGV - first + 1) / step do
    local at = first + (i - 1) * step
    local m = mix(ARGV[at])
    minima[i] = U32MAX
    for row = 0, s.d - 1 do
      local cell = cell_of(s, m, row)
      local off = cell % s.c
      local p = (cell - off) / s.c
      local g = groups[p]
      if not g then
        g = {items = {}, args = {}}
        groups[p] = g
        order[#order + 1] = p
      end
      g.items[#g.items + 1] = i
      local n = #g.args
      if write then
        g.args[n + 1], g.args[n + 2], g.args[n + 3], g.args[n + 4] =
            'INCRBY', 'u32', '#' .. (4 + off), ARGV[at + 1]
      else
        g.args[n + 1], g.args[n + 2], g.args[n + 3] = 'GET', 'u32', '#' .. (4 + off)
      end
    end
  end
  if write then
    redis.call('BITFIELD', s.base .. '0', 'OVERFLOW', 'WRAP', 'INCRBY', 'i64', 0, ARGV[a],
               'INCRBY', 'i64', 64, 1)
  end
  for _, p in ipairs(order) do
    local g = groups[p]
    bitfield(s.base .. p, write and 'SAT' or nil, g.args, write and 4 or 3, function(k, v)
      local i = g.items[k]
      if v < minima[i] then minima[i] = v end
    end)
  end
  return minima
end

if op ~= 'merge' then return redis.error_reply('ERR bloomproxy: unknown CMS operation') end

-- MERGE. ARGV[a]: the sources' count n; ARGV[a + 1]: the index (from 0) of the first weight
-- that does not parse, or -1; then per source, its name's index (into the pairs of KEYS) and
-- its weight. RedisBloom checks weight i, then source i, for i = 0 .. n - 1.
local n, bad = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
local src, wt = {}, {}
local sketches = {[1] = s}
for i = 1, n do
  if i - 1 == bad then return 4 end
  local j = tonumber(ARGV[a + 2 * i])
  if not sketches[j] then
    local t, e = sketch(j)
    if not t then return e end
    sketches[j] = t
  end
  local t = sketches[j]
  if t.w ~= s.w or t.d ~= s.d then return 5 end
  src[i], wt[i] = j, ARGV[a + 2 * i + 1]
end

-- Every source's parts and count, read before anything is written (the destination may be a
-- source).
local parts, counts = {}, {}
for i = 1, n do
  local j = src[i]
  if not parts[j] then
    local t, list = sketches[j], {}
    for p = 0, t.parts - 1 do
      list[p] = redis.call('GET', t.base .. p)
      if not list[p] or #list[p] ~= 16 + 4 * part_cells(t, p) then return 8 end
    end
    parts[j], counts[j] = list, bn_bytes(string.sub(list[0], 1, 8))
  end
end
local header = redis.call('GETRANGE', s.base .. '0', 0, 15)
if #header ~= 16 then return 8 end

-- The count: each count (u64) * weight must fit in an int64, and so must each partial sum; the
-- total must not be negative.
local total = bn_small(0)
local W, sum_w = {}, 0
for i = 1, n do
  W[i] = bn_dec(wt[i])
  local prod = bn_mul(counts[src[i]], W[i])
  if not fits_i64(prod) then return 6 end
  total = bn_add(total, prod)
  if not fits_i64(total) then return 6 end
  sum_w = sum_w + math.abs(tonumber(wt[i]))
end
if total.neg then return 6 end
local count = bn_be8(total)

-- Each cell: the same checks, then the total in [0, 2^32 - 1]. When sum(|weight|) * 2^32 stays
-- below 2^53, no product or partial sum can leave an int64 and doubles are exact.
local fast = sum_w <= 1048576
local wf = {}
for i = 1, n do wf[i] = tonumber(wt[i]) end
local function merged(cell)
  if fast then
    local v = 0
    for i = 1, n do
      local t = sketches[src[i]]
      local off = cell % t.c
      v = v + cell_at(parts[src[i]][(cell - off) / t.c], off) * wf[i]
    end
    if v < 0 or v > U32MAX then return nil end
    return v
  end
  local v = bn_small(0)
  for i = 1, n do
    local t = sketches[src[i]]
    local off = cell % t.c
    local prod = bn_mul(bn_small(cell_at(parts[src[i]][(cell - off) / t.c], off)), W[i])
    if not fits_i64(prod) then return nil end
    v = bn_add(v, prod)
    if not fits_i64(v) then return nil end
  end
  if v.neg or cmp_mag(v, CELLMAX) > 0 then return nil end
  return bn_u32(v)
end
local out = {}
for p = 0, s.parts - 1 do
  local bytes = {p == 0 and count .. string.sub(header, 9, 16) or string.rep('\0', 16)}
  for k = 0, part_cells(s, p) - 1 do
    local v = merged(p * s.c + k)
    if not v then return 6 end
    bytes[#bytes + 1] = be4(v)
  end
  out[p] = table.concat(bytes)
end
for p = 0, s.parts - 1 do redis.call('SETRANGE', s.base .. p, 0, out[p]) end
redis.call('BITFIELD', s.base .. '0', 'OVERFLOW', 'WRAP', 'INCRBY', 'i64', 64, 1)
return 0
)lua";

}  // namespace

std::string_view CmsMultiPrelude() { return kPrelude; }

const std::string& CmsMultiScript() {
  static const std::string* const script = new std::string(std::string(kPrelude).append(kBody));
  return *script;
}

}  // namespace bloomproxy::filters

-- The script every CMS.* command runs as inside MULTI (filters/cms/multi_cms.h): the prelude
-- (cms_multi_prelude.lua: RedisBloom's hash, exact 64-bit arithmetic, the sketch layout), then the
-- body, which runs the command named by ARGV[1].
--
-- KEYS: (name, marker) pairs: the sketch, then MERGE's distinct sources. ARGV[1]: the command;
-- ARGV[2]: 'e' when an argument error is the reply once the key check passes;
-- ARGV[3 .. 2 + #KEYS/2]: each name's data-key prefix; then the command's own arguments (see
-- filters/cms/multi_cms.cc).
--
-- Answers: an integer code (0: OK; 1 key does not exist, 2 WRONGTYPE, 3 key already exists, 4 the
-- argument error, 5 width/depth is not equal, 6 MERGE overflow, 7 damaged metadata, 8 a part of
-- the wrong size: CmsMultiCode), or the command's data.

--@include cms/cms_multi_prelude.lua

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

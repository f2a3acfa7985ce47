-- Buckets of the filter F (cf_layout.lua): RedisBloom's position arithmetic (src/cuckoo.c) done
-- exactly in Lua's doubles, and the buckets a script touches, read once (many at a time:
-- prefetch) and written back at the end (cf_flush), so a kick chain that fails and is undone
-- writes nothing.
--
-- An item comes from the proxy as its 64-bit MurmurHash64A h (seed 0) in two 32-bit halves. Its
-- fingerprint is h % 255 + 1 (2^32 % 255 == 1, so (hi + lo) % 255 is h % 255), its buckets in a
-- sub-filter of n buckets h % n and (h XOR fp * 0x5bd1e995) % n, and the other bucket of bucket
-- b for fingerprint fp is (b XOR fp * 0x5bd1e995) % n.
--
-- A bucket of at most SEG bytes is held as one number, its bytes big-endian (BITFIELD's u<8*bs>,
-- exact in a Lua double: u48 < 2^53), and read and written with BITFIELD_RO / BITFIELD, many
-- buckets per call: a call per bucket, or a table per bucket, would cost more than the rest of
-- the script together. A wider bucket (bucket size 7 to 255) is a table of its slots, read with
-- GETRANGE and written with SETRANGE.
local M = 0x5bd1e995
local SEG = 6
-- Arguments per redis.call (Lua's unpack stops at about 8000 values): a multiple of 3 and 4.
local CALL_ARGS = 6000

-- (hi * 2^32 + lo) % n, exact for n < 2^49 (every sub-filter: cf_layout.lua's MAX_BYTES).
local function mod64(hi, lo, n)
  if n <= TWO32 then
    if TWO32 % n == 0 then return lo % n end  -- a power of two: the low bits
    local r = hi % n
    if n <= 2097152 then return (r * TWO32 + lo) % n end  -- r * 2^32 < 2^53
    r = (r * 65536 + math.floor(lo / 65536)) % n
    return (r * 65536 + lo % 65536) % n
  end
  local high = n / TWO32
  if high == math.floor(high) and TWO32 % high == 0 then  -- a power of two above 2^32
    return (hi % high) * TWO32 + lo
  end
  local r = hi % n
  if n <= 137438953472 then  -- 2^37: r * 2^16 < 2^53
    r = (r * 65536 + math.floor(lo / 65536)) % n
    return (r * 65536 + lo % 65536) % n
  end
  for k = 7, 0, -1 do r = (r * 16 + math.floor(lo / 16 ^ k) % 16) % n end
  return r
end

-- (hi:lo XOR fp * M) as two halves. bit.bxor works on 32-bit values and answers a signed one.
local function xor_fp(hi, lo, fp)
  local x = fp * M
  local xhi = math.floor(x / TWO32)
  return bit.bxor(hi, xhi) % TWO32, bit.bxor(lo, x - xhi * TWO32) % TWO32
end

-- The other bucket of bucket b (< 2^53) for fingerprint fp in a sub-filter of n buckets.
local function alt_bucket(b, fp, n)
  local hi = math.floor(b / TWO32)
  local ahi, alo = xor_fp(hi, b - hi * TWO32, fp)
  return mod64(ahi, alo, n)
end

-- An item's fingerprint and its two hashes (h1 = h, h2 = h XOR fp * M), each as two halves.
local function item_hashes(hi, lo)
  local fp = (hi + lo) % 255 + 1
  local h2hi, h2lo = xor_fp(hi, lo, fp)
  return fp, hi, lo, h2hi, h2lo
end

-- ---------------------------------------------------------------------------------------------
-- Bucket values: a number (bs <= SEG) or a table of slots.

local POW = {}  -- POW[j]: the place of slot j in a bucket's number, 256^(bs - j)

local function slot_of(v, j)
  if type(v) == 'table' then return v[j] end
  return math.floor(v / POW[j]) % 256
end

-- The first slot (1-based) of bucket value v that holds x, or nil.
local function find_slot(v, x)
  if type(v) == 'table' then
    for j = 1, #v do
      if v[j] == x then return j end
    end
    return nil
  end
  local hit = nil
  for j = F.bs, 1, -1 do
    local byte = v % 256
    if byte == x then hit = j end
    v = (v - byte) / 256
  end
  return hit
end

-- The slots of bucket value v that hold x.
local function copies_in(v, x)
  local c = 0
  if type(v) == 'table' then
    for j = 1, #v do
      if v[j] == x then c = c + 1 end
    end
    return c
  end
  for _ = 1, F.bs do
    local byte = v % 256
    if byte == x then c = c + 1 end
    v = (v - byte) / 256
  end
  return c
end

-- ---------------------------------------------------------------------------------------------
-- The cache: cache[i][b] the bucket's value now, orig[i][b] when read (a number, or for a
-- table its bytes as a string), and the buckets written since (dirty: i, b, i, b, ...).

local cache, orig, dirty, marked = {}, {}, {}, {}
local WIDTH  -- BITFIELD's type of a bucket: u<8 * bs>

local function cache_of(i)
  local c = cache[i]
  if not c then
    c = {}
    cache[i], orig[i], marked[i] = c, {}, {}
    if not WIDTH then
      WIDTH = 'u' .. (8 * F.bs)
      for j = 1, F.bs do POW[j] = 256 ^ (F.bs - j) end
    end
  end
  return c
end

local function bucket_place(i, b)
  local off = b * F.bs
  if off < F.sh then return data_key(i, 0), off end
  local s = math.floor(off / F.sh)
  return data_key(i, s), off - s * F.sh
end

-- Bucket b of sub-filter i (its value).
local function bucket(i, b)
  local c = cache_of(i)
  local v = c[b]
  if v then return v end
  local k, off = bucket_place(i, b)
  if F.bs > SEG then
    local bytes = redis.call('GETRANGE', k, off, off + F.bs - 1)
    v = {string.byte(bytes, 1, F.bs)}
    orig[i][b] = bytes
  else
    v = redis.call('BITFIELD_RO', k, 'GET', WIDTH, off * 8)[1]
    orig[i][b] = v
  end
  c[b] = v
  return v
end

-- Sets slot j of bucket b of sub-filter i (read before) to x.
local function put_slot(i, b, j, x)
  local c = cache[i]
  local v = c[b]
  if type(v) == 'table' then
    v[j] = x
  else
    c[b] = v + (x - slot_of(v, j)) * POW[j]
  end
  local m = marked[i]
  if not m[b] then
    m[b] = true
    dirty[#dirty + 1], dirty[#dirty + 2] = i, b
  end
end

-- Reads the buckets `wanted` names (i1, b1, i2, b2, ...) that are not cached yet: one BITFIELD_RO
-- per data key for all of them.
local function prefetch(wanted)
  if F.bs > SEG then
    for k = 1, #wanted, 2 do bucket(wanted[k], wanted[k + 1]) end
    return
  end
  local groups = {}  -- data key -> {args, i, b, i, b, ...}
  for k = 1, #wanted, 2 do
    local i, b = wanted[k], wanted[k + 1]
    local c = cache_of(i)
    if not c[b] then
      c[b] = 0  -- taken: read below
      local key, off = bucket_place(i, b)
      local g = groups[key]
      if not g then
        g = {args = {}, at = {}}
        groups[key] = g
      end
      local a, at = g.args, g.at
      a[#a + 1], a[#a + 2], a[#a + 3] = 'GET', WIDTH, off * 8
      at[#at + 1], at[#at + 2] = i, b
    end
  end
  for key, g in pairs(groups) do
    local a, at = g.args, g.at
    for s = 1, #a, CALL_ARGS do
      local values = redis.call('BITFIELD_RO', key, unpack(a, s, math.min(s + CALL_ARGS - 1, #a)))
      local first = 2 * (s - 1) / 3
      for q = 1, #values do
        local i, b = at[first + 2 * q - 1], at[first + 2 * q]
        cache[i][b], orig[i][b] = values[q], values[q]
      end
    end
  end
end

-- Writes every bucket that changed since it was read: one BITFIELD per data key.
local function cf_flush()
  local groups = {}
  for k = 1, #dirty, 2 do
    local i, b = dirty[k], dirty[k + 1]
    local c = cache[i]
    if c then  -- (a dropped sub-filter's buckets are forgotten)
      local v = c[b]
      local now = type(v) == 'table' and string.char(unpack(v)) or v
      if now ~= orig[i][b] then
        orig[i][b] = now
        local key, off = bucket_place(i, b)
        if type(now) == 'string' then
          redis.call('SETRANGE', key, off, now)
        else
          local a = groups[key]
          if not a then
            a = {}
            groups[key] = a
          end
          a[#a + 1], a[#a + 2], a[#a + 3], a[#a + 4] = 'SET', WIDTH, off * 8, now
        end
      end
      marked[i][b] = nil
    end
  end
  dirty = {}
  for key, a in pairs(groups) do
    for s = 1, #a, CALL_ARGS do
      redis.call('BITFIELD', key, unpack(a, s, math.min(s + CALL_ARGS - 1, #a)))
    end
  end
end

-- Forgets sub-filter i's buckets (it was rewritten or dropped without the cache).
local function forget_subfilter(i) cache[i], orig[i], marked[i] = nil, nil, nil end

-- Adds to `wanted` (prefetch's list) both buckets of every item (hash halves at ARGV[first],
-- ARGV[first + 1], ..., `count` items) in every sub-filter.
local function want_items(wanted, first, count)
  for k = 0, count - 1 do
    local _, h1hi, h1lo, h2hi, h2lo = item_hashes(tonumber(ARGV[first + 2 * k]),
                                                  tonumber(ARGV[first + 2 * k + 1]))
    for i = 0, F.nf - 1 do
      local n = F.n[i]
      wanted[#wanted + 1], wanted[#wanted + 2] = i, mod64(h1hi, h1lo, n)
      wanted[#wanted + 1], wanted[#wanted + 2] = i, mod64(h2hi, h2lo, n)
    end
  end
end

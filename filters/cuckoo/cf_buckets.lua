-- Buckets of the filter F (cf_layout.lua): RedisBloom's position arithmetic (src/cuckoo.c) done
-- exactly in Lua's doubles, and the buckets a script touches, read once and written back at the
-- end (cf_flush), so a kick chain that fails and is undone writes nothing.
--
-- An item comes from the proxy as its 64-bit MurmurHash64A h (seed 0) in two 32-bit halves. Its
-- fingerprint is h % 255 + 1 (2^32 % 255 == 1, so (hi + lo) % 255 is h % 255), its buckets in a
-- sub-filter of n buckets h % n and (h XOR fp * 0x5bd1e995) % n, and the other bucket of bucket
-- b for fingerprint fp is (b XOR fp * 0x5bd1e995) % n.
local M = 0x5bd1e995

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

-- The buckets read so far: cache[i][b] = {slot bytes}, with the bytes as read in orig[i][b].
local cache, orig = {}, {}

local function bucket_place(i, b)
  local off = b * F.bs
  local s = math.floor(off / F.sh)
  return data_key(i, s), off - s * F.sh
end

-- Bucket b of sub-filter i as a table of its bs slots (numbers, 0 = empty).
local function bucket(i, b)
  local c = cache[i]
  if not c then
    c = {}
    cache[i], orig[i] = c, {}
  end
  local t = c[b]
  if t then return t end
  local k, off = bucket_place(i, b)
  local bytes = redis.call('GETRANGE', k, off, off + F.bs - 1)
  t = {string.byte(bytes, 1, F.bs)}
  c[b], orig[i][b] = t, bytes
  return t
end

-- The index (1-based) of the first slot of table t equal to v, or nil.
local function find_slot(t, v)
  for j = 1, #t do
    if t[j] == v then return j end
  end
  return nil
end

-- Writes every bucket that changed since it was read.
local function cf_flush()
  for i, c in pairs(cache) do
    for b, t in pairs(c) do
      local bytes = string.char(unpack(t))
      if bytes ~= orig[i][b] then
        local k, off = bucket_place(i, b)
        redis.call('SETRANGE', k, off, bytes)
        orig[i][b] = bytes
      end
    end
  end
end

-- Forgets sub-filter i's buckets (it was rewritten or dropped without the cache).
local function forget_subfilter(i) cache[i], orig[i] = nil, nil end

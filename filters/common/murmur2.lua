-- MurmurHash2 in Lua (32-bit, Austin Appleby's reference, as RedisBloom uses it), for the scripts
-- that hash items where they run: CMS.* inside MULTI (cms/cms_multi_prelude.lua) and Top-K scripts
-- that were sent no hashes (topk/topk_layout.lua). Redis's Lua numbers are doubles, so the
-- multiplications modulo 2^32 are done in 16-bit halves.
--
-- murmur2(): MurmurHash2 (32-bit, Austin Appleby's reference, as RedisBloom uses it with seed =
-- row); the per-block mixing does not depend on the seed, so mix() does it once per item and
-- row_hash() runs the seeded part for each row.

local bxor, rshift = bit.bxor, bit.rshift
local TWO32 = 4294967296
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

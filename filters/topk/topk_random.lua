-- The decay's random numbers: L'Ecuyer's MRG32k3a ("Good parameters and implementations for
-- combined multiple recursive random number generators", Operations Research 47(1), 1999), a
-- generator designed for exact double-precision arithmetic (every product below 2^53), seeded by
-- the proxy for each call with six numbers from its own generator (ARGV[at .. at + 5]: three in
-- [0, 4294967087), three in [0, 4294944443), neither triple all zero). Redis's own math.random is
-- not used: before Redis 7 it is reseeded identically for every script, so every call would
-- draw the same numbers.
--
-- decay_probability(c): RedisBloom's P(c) = decay^c, from its table of 256 powers and, past it,
-- pow(T[255], floor(c / 255)) * T[c % 255].
local M1, M2 = 4294967087, 4294944443
local R1, R2 = {}, {}
local function rand_seed(at)
  for i = 1, 3 do
    R1[i] = tonumber(ARGV[at + i - 1]) % M1
    R2[i] = tonumber(ARGV[at + i + 2]) % M2
  end
  if R1[1] + R1[2] + R1[3] == 0 then R1[1] = 12345 end
  if R2[1] + R2[2] + R2[3] == 0 then R2[1] = 12345 end
end
-- A uniform number in (0, 1).
local function rand()
  local p1 = (1403580 * R1[2] - 810728 * R1[1]) % M1
  R1[1], R1[2], R1[3] = R1[2], R1[3], p1
  local p2 = (527612 * R2[3] - 1370589 * R2[1]) % M2
  R2[1], R2[2], R2[3] = R2[2], R2[3], p2
  local x = p1 - p2
  if x <= 0 then x = x + M1 end
  return x / (M1 + 1)
end

local DECAY_TABLE = nil
local function decay_probability(c)
  if not DECAY_TABLE then
    DECAY_TABLE = {}
    for i = 0, 255 do DECAY_TABLE[i] = S.decay ^ i end
  end
  if c < 256 then return DECAY_TABLE[c] end
  return DECAY_TABLE[255] ^ math.floor(c / 255) * DECAY_TABLE[c % 255]
end

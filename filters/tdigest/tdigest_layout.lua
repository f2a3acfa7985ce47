-- A t-digest as the TDIGEST scripts see it (docs/tdigest.md has the whole layout):
--
--   name              hash    td "1" (layout), id, v (writes so far)
--   P:td:<id>:d       string  the digest, little-endian: double compression C, double min,
--                             double max, uint32 M (merged nodes), uint32 U (unmerged nodes),
--                             int64 MW (merged weight), int64 UW (unmerged weight), int64 TC
--                             (total compressions): 56 bytes; then the M + U nodes, 16 bytes each
--                             (double mean, int64 weight): the centroids sorted by mean, then the
--                             buffer in arrival order
--   P:td:m:<name>     string  "1": the marker (TYPE, the key commands and the sweep read it)
--
-- Only the names are declared keys: the other keys share their name's hash slot
-- (filters/common/key_layout.h). Lua's numbers are doubles, which hold no int64 past 2^53, so
-- every int64 (weights, MW, UW, TC) is kept as two numbers, hi and lo: hi * 2^32 + lo, hi signed
-- 32-bit, lo in [0, 2^32); converting one to a double rounds once, as C's cast does.
local TWO32 = 4294967296
local HEADER = 56
local HEADER_FORMAT = '<dddI4I4I4i4I4i4I4i4'
local NODE_FORMAT = '<dI4i4'
local DBL_MAX = 1.7976931348623157e308

-- hi:lo + bh:bl, and whether it overflowed int64 (as __builtin_add_overflow says).
local function i64_add(ah, al, bh, bl)
  local lo, hi = al + bl, ah + bh
  if lo >= TWO32 then lo, hi = lo - TWO32, hi + 1 end
  return hi, lo, hi >= 2147483648 or hi < -2147483648
end

local function i64_double(hi, lo) return hi * TWO32 + lo end

-- hi:lo + bh:bl wrapping as two's complement does (C's int64 arithmetic on x86-64).
local function i64_add_wrap(ah, al, bh, bl)
  local hi, lo = i64_add(ah, al, bh, bl)
  if hi >= 2147483648 then hi = hi - TWO32 elseif hi < -2147483648 then hi = hi + TWO32 end
  return hi, lo
end

-- C's (int64_t) cast of a double on x86-64: truncation; NaN and out of range give INT64_MIN.
local function i64_from_double(d)
  if d ~= d or d >= 9223372036854775808 or d < -9223372036854775808 then
    return -2147483648, 0
  end
  local t = d >= 0 and math.floor(d) or -math.floor(-d)
  local hi = math.floor(t / TWO32)
  return hi, t - hi * TWO32
end

-- A digest's fields from its header: nil when they make no sense.
local function td_parse_header(D, s)
  local c, mn, mx, m, u, mwl, mwh, uwl, uwh, tcl, tch = struct.unpack(HEADER_FORMAT, s)
  if not (c >= 1 and c == math.floor(c) and c <= 2^50) then return nil end
  D.C, D.min, D.max, D.M, D.U = c, mn, mx, m, u
  D.MWh, D.MWl, D.UWh, D.UWl, D.TCh, D.TCl = mwh, mwl, uwh, uwl, tch, tcl
  D.cap = 6 * c + 10
  return D
end

local function td_header(D)
  return struct.pack(HEADER_FORMAT, D.C, D.min, D.max, D.M, D.U, D.MWl, D.MWh, D.UWl, D.UWh,
                     D.TCl, D.TCh)
end

-- The nodes of data string s (after its header) into D.mean, D.wh, D.wl (1-based).
local function td_parse_nodes(D, s)
  local mean, wh, wl = {}, {}, {}
  local pos = HEADER + 1
  for i = 1, D.M + D.U do
    mean[i], wl[i], wh[i], pos = struct.unpack(NODE_FORMAT, s, pos)
  end
  D.mean, D.wh, D.wl = mean, wh, wl
end

local function td_nodes(D)
  local out, mean, wh, wl = {}, D.mean, D.wh, D.wl
  for i = 1, D.M + D.U do out[i] = struct.pack(NODE_FORMAT, mean[i], wl[i], wh[i]) end
  return table.concat(out)
end

-- Opens the digest at `name`: nil and 'MISSING', 'WRONGTYPE' (anything but a t-digest) or
-- 'DAMAGED <why>', or the digest D: its header's fields, and with `full` its nodes too. The data
-- key must be there at its exact size, so that nothing is written into a digest whose keys were
-- deleted or overwritten behind the proxy's back.
local function td_open(name, marker, prefix, full)
  local t = redis.call('TYPE', name).ok
  if t == 'none' then return nil, 'MISSING' end
  if t ~= 'hash' or redis.call('EXISTS', marker) == 0 then return nil, 'WRONGTYPE' end
  local f = redis.call('HMGET', name, 'td', 'id')
  if f[1] ~= '1' then return nil, 'WRONGTYPE' end
  if not f[2] then return nil, 'DAMAGED fields' end
  local D = {name = name, marker = marker, id = f[2], data = prefix .. ':td:' .. f[2] .. ':d'}
  local s
  if full then
    s = redis.call('GET', D.data)
  else
    s = redis.call('GETRANGE', D.data, 0, HEADER - 1)
  end
  if not s or #s < HEADER or not td_parse_header(D, s) then return nil, 'DAMAGED header' end
  local size = full and #s or redis.call('STRLEN', D.data)
  if size ~= HEADER + 16 * (D.M + D.U) or D.M + D.U > D.cap then return nil, 'DAMAGED nodes' end
  if full then td_parse_nodes(D, s) end
  return D
end

-- Reads D's nodes, when td_open read its header only.
local function td_load_nodes(D)
  td_parse_nodes(D, redis.call('GET', D.data))
end

-- Writes D back (its data key only; it keeps its TTL).
local function td_store(D)
  redis.call('SET', D.data, td_header(D) .. td_nodes(D), 'KEEPTTL')
end

-- An empty digest of compression c.
local function td_new(c)
  return {C = c, cap = 6 * c + 10, min = DBL_MAX, max = -DBL_MAX, M = 0, U = 0, MWh = 0, MWl = 0,
          UWh = 0, UWl = 0, TCh = 0, TCl = 0, mean = {}, wh = {}, wl = {}}
end

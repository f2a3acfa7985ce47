-- Several parts' BITFIELD calls, atomically: an increment that spans parts
-- (AddCmsMultiBitfield, filters/cms/cms_scripts.h).
--
-- KEYS: the parts. ARGV: groups of (index into KEYS, n, n arguments of BITFIELD).
--
-- Returns an array with one array of integers per call (BITFIELD's reply), in order.

local out, a = {}, 1
while a <= #ARGV do
  local k, n = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  out[#out + 1] = redis.call('BITFIELD', KEYS[k], unpack(ARGV, a + 2, a + 1 + n))
  a = a + 2 + n
end
return out

-- TDIGEST.MIN, MAX, INFO, QUANTILE, CDF, TRIMMED_MEAN, RANK, REVRANK, BYRANK, BYREVRANK, and the
-- key check of a command whose arguments RedisBloom refuses after it. One script per command, so
-- a read that compresses the digest (RedisBloom's QUANTILE, CDF, TRIMMED_MEAN, and RANK / BYRANK
-- when a value is in range) reads, compresses and writes it back atomically, whatever the number
-- of proxies; the write keeps the data key's TTL.
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (tdigest_layout.lua)
--   ARGV[3]     check | header | quantile | cdf | trimmed | rank | revrank | byrank | byrevrank
--   ARGV[4]     the arguments as 8-byte little-endian doubles (TRIMMED_MEAN: lo, hi; BYRANK:
--               each rank as C's (double) of it)
--
-- Answers the status MISSING, WRONGTYPE or DAMAGED <why>; OK (check); or {header, results}: the
-- digest's 56 header bytes as the command leaves it (MIN, MAX and INFO read them), and one
-- 8-byte double per result (RANK's too: the proxy casts them to int64 as C does).
--@include tdigest/tdigest_reads.lua
local op = ARGV[3]
local full = op ~= 'check' and op ~= 'header'
local D, why = td_open(KEYS[1], ARGV[1], ARGV[2], full)
if not D then return {ok = why} end
if op == 'check' then return {ok = 'OK'} end
local args, out = ARGV[4] or '', {}
local function arg(i) return (struct.unpack('<d', args, 8 * i - 7)) end
local n = #args / 8
if op == 'quantile' then
  td_compress(D)
  for i = 1, n do out[i] = td_quantile_of(D, arg(i)) end
elseif op == 'cdf' then
  for i = 1, n do out[i] = td_cdf(D, arg(i)) end
elseif op == 'trimmed' then
  out[1] = td_trimmed_mean(D, arg(1), arg(2))
elseif op == 'rank' or op == 'revrank' then
  local size, min, max = td_size(D), D.min, D.max
  for i = 1, n do out[i] = td_rank(D, arg(i), op == 'revrank', size, min, max) end
elseif op == 'byrank' or op == 'byrevrank' then
  local size, min, max = td_size(D), D.min, D.max
  for i = 1, n do out[i] = td_byrank(D, arg(i), op == 'byrevrank', size, min, max) end
end
if D.changed then td_store(D) end
for i = 1, #out do out[i] = struct.pack('<d', out[i]) end
return {td_header(D), table.concat(out)}

-- HSET, HMSET, HDEL, HMGET with more than kMaxScriptArgs arguments (filters/common/key_scripts.h;
-- Lua's unpack stops at 8000): run in parts of 6000 arguments, whose replies add up (HSET, HDEL
-- count each field once, in order, as one call does), are joined (HMGET) or are OK (HMSET). An odd
-- count of HSET's values gets the arity error from a 5-argument call, as Redis checks that before
-- anything else. ARGV: the command, its key ARGV[2] (the name, or a structure's marker).
local n = #ARGV
local c = string.lower(ARGV[1])
if (c == 'hset' or c == 'hmset') and n % 2 == 1 then
  return redis.pcall(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
end
local sum, joined, r = 0, {}, nil
for i = 3, n, 6000 do
  r = redis.pcall(ARGV[1], ARGV[2], unpack(ARGV, i, math.min(i + 5999, n)))
  if type(r) == 'table' and r.err then return r end
  if type(r) == 'number' then sum = sum + r
  elseif not r.ok then for j = 1, #r do joined[#joined + 1] = r[j] end end
end
if type(r) == 'number' then return sum end
if r.ok then return r end
return joined

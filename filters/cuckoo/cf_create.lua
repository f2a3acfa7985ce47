-- CF.RESERVE, and CF.LOADCHUNK's header (iterator 1): a new filter at the name, unless the name
-- holds anything (RedisBloom checks the key before it looks at a chunk's header).
--
--   KEYS[1]     the name
--   ARGV[1..2]  marker, data-key prefix (cf_layout.lua)
--   ARGV[3]     "create", or "check": a header RedisBloom refuses, answered once the key is
--               checked: ARGV[4] is the status to answer when the name is free (INVALIDHEADER,
--               CANNOTCREATE)
--   ARGV[4..12] create: id nb bs mi ex nf sh ni nd, the new filter (cf_layout.lua's fields); nf
--               sub-filters of nb * ex^i buckets are created, zeroed
--
-- Answers the status CREATED, ARGV[4] (check, nothing there), EXISTS (a cuckoo filter:
-- RedisBloom's "item exists") or WRONGTYPE (anything else).
--@include cuckoo/cf_layout.lua

local t = redis.call('TYPE', NAME).ok
if t ~= 'none' then
  if t == 'hash' and redis.call('EXISTS', MARKER) == 1 and redis.call('HGET', NAME, 'cf') == '1' then
    return {ok = 'EXISTS'}
  end
  return {ok = 'WRONGTYPE'}
end
if ARGV[3] == 'check' then return {ok = ARGV[4]} end
cf_create(ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12])
return {ok = 'CREATED'}

-- DUMP (filters/common/key_scripts.h). A structure is refused: what the proxy stores is not
-- RedisBloom's RDB format, so no payload could be one. The error is kDumpRefused of
-- filters/common/key_scripts.h, word for word (tests/unit/key_scripts_test.cc holds the two equal).
-- Anything else gets Redis's answer. Touches nothing of a structure.
--
-- KEYS[1]: the name. ARGV[1..5]: its markers (common/markers.lua); then the client's command, as
-- sent.

--@include common/markers.lua
if redis.call('EXISTS', unpack(MK)) > 0 and redis.call('TYPE', KEYS[1]).ok == 'hash' then
  return {err = 'ERR bloomproxy: DUMP of a Bloom filter, cuckoo filter, count-min sketch, Top-K sketch or t-digest is not supported (save a filter with BF.SCANDUMP or CF.SCANDUMP, restore it with BF.LOADCHUNK or CF.LOADCHUNK)'}
end
return redis.pcall(unpack(ARGV))

-- COPY (filters/common/key_scripts.h). A filter, a sketch or a t-digest cannot be copied
-- (RedisBloom's types have no copy callback), an error Redis gives only once the options parse,
-- the source is not the destination and the destination is free or REPLACE is given; before
-- that, Redis's own reply (COPY itself, which then copies nothing). A write: markers are looked
-- at with marked (common/marked.lua).
--
-- KEYS[1], KEYS[2]: source and destination; KEYS[3] to KEYS[7]: the source's Bloom filter,
-- count-min sketch, cuckoo filter, Top-K and t-digest markers. ARGV: the client's command, as
-- sent.
--
-- Returns COPY's reply, 0 (the destination exists, no REPLACE), or RedisBloom's "not supported
-- for this module key".

--@include common/marked.lua
if not (marked(KEYS[3]) or marked(KEYS[4]) or marked(KEYS[5]) or marked(KEYS[6]) or
        marked(KEYS[7])) or
   redis.call('TYPE', KEYS[1]).ok ~= 'hash' then
  return redis.pcall(unpack(ARGV))
end
local replace, db, i = false, nil, 4
while i <= #ARGV do
  local a = string.lower(ARGV[i])
  if a == 'replace' then replace, i = true, i + 1
  elseif a == 'db' and ARGV[i + 1] then db, i = ARGV[i + 1], i + 2
  else return redis.pcall(unpack(ARGV)) end
end
if db == nil and KEYS[1] == KEYS[2] then return redis.pcall(unpack(ARGV)) end
if not replace then
  if db then
    local selected = redis.pcall('SELECT', db)
    if type(selected) == 'table' and selected.err then return redis.pcall(unpack(ARGV)) end
  end
  if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
end
return {err = 'ERR not supported for this module key'}

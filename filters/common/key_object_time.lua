-- OBJECT IDLETIME, OBJECT FREQ of whole structures (filters/common/key_scripts.h). Only reads:
-- EVAL_RO.
--
-- KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command.
--
-- The name's own answer comes first, before its metadata is read: Redis's nil for a missing key,
-- its error when the eviction policy does not track the value asked for. For a structure: the
-- least idle time, or the highest frequency, of its data keys (which BF.ADD, BF.EXISTS,
-- CMS.INCRBY, CMS.QUERY read and write) and its marker (which hash commands on the structure
-- touch, as they touch a module key). Not its name's: the proxy reads the metadata there for its
-- own purposes (this script, a cold cache), which would reset it. Nor a key whose value is one of
-- Redis's shared small integers (OBJECT REFCOUNT 2147483647: the marker "1", a small count, when
-- maxmemory is 0 or the policy is neither LRU nor LFU): its clock is that of every key holding
-- the same number. Nor a windowed filter's slots' names: like its own name, a slot's hash is
-- metadata the proxy reads for its own purposes (its slots' data keys count). When no key is
-- left, the name's answer.

--@include common/marked_by_exists.lua
--@include common/filter_at.lua
local r = redis.pcall(unpack(ARGV, 2))
if type(r) ~= 'number' then return r end
local m, data, slots = filter_at(KEYS[1], ARGV[1])
if not data then return r end
data[#data + 1] = m
local metadata = {}
for _, s in ipairs(slots or {}) do metadata[s.name] = true end
local idle = string.lower(ARGV[3]) == 'idletime'
local best = nil
for _, d in ipairs(data) do
  if not metadata[d] and redis.call('OBJECT', 'REFCOUNT', d) == 1 then
    local v = redis.call('OBJECT', ARGV[3], d)
    if best == nil or (idle and v < best) or (not idle and v > best) then best = v end
  end
end
return best or r

-- filter_at(k, p): what lives at name `k`, whose data-key prefix is `p`
-- (filters/common/key_layout.h), for the key scripts that act on a whole structure. Returns its
-- marker's name when the marker exists (else nil), and the structure's data keys when `k` is a
-- filter's or a count-min sketch's hash whose fields parse: a filter's shards of each link and
-- each link's count; a sketch's parts (filters/cms/cms_meta.h); a cuckoo filter's sub-filters;
-- a Top-K sketch's bucket shards, heap and heap items; a t-digest's digest.
-- For a windowed filter (its hash has `window`; docs/bloom-filters.md "Windowed filters' keys")
-- the data keys are those of its live slots that exist (common/live_slots.lua): each slot's
-- name and the slot's own data keys (a slot is a filter whose prefix is its name), and a third
-- value lists the slots, {name, ends = the slot's own PEXPIREAT, keys = its data keys}, for the
-- scripts that must tell them apart (EXPIRE: a slot never expires later than its end; OBJECT:
-- a slot's hash is metadata). Without a marker nothing but the marker is looked at (marked:
-- touches nothing, and a plain key is not tracked for a client with CLIENT TRACKING); the hash
-- is read only when its marker says it is a structure, so no probe counts as a WRONGTYPE error
-- and no plain key is touched. unlink_all(m, keys) removes a structure's marker and data keys.
--
-- Needs marked(k): a script includes common/marked.lua (one that writes) or
-- common/marked_by_exists.lua (one that only reads) before this file.
--@include common/live_slots.lua
local function sketch_parts(p, id, width, depth, part)
  if not id or not width or not depth or not part or part < 1 then return nil end
  local keys = {}
  for i = 0, math.ceil(width * depth / part) - 1 do keys[#keys + 1] = p .. ':cms:' .. id .. ':' .. i end
  return keys
end
-- (below filter_at, so that no read comes before a marker check)
local window_keys
-- The markers looked at after a filter's and a count-min sketch's, in this order, each of a kind
-- whose data keys OWN_KEYS[kind](p, k) lists (set below filter_at, like window_keys).
local OWN_KINDS = {':cf:m:', ':tk:m:', ':td:m:'}
local OWN_KEYS = {}
local function unlink_all(m, keys)
  redis.call('UNLINK', m)
  for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
end
-- The fields a filter's data keys are named from, first in every HMGET of a filter's hash.
local LINK_FIELDS = {'bloomproxy', 'id', 'shard'}
for i = 0, 63 do LINK_FIELDS[#LINK_FIELDS + 1] = 'l' .. i end
-- The data keys of the filter whose prefix is `p`, from `f`, HMGET's reply to LINK_FIELDS (and
-- maybe more): each link's shards and count, up to the first missing link; nil when id, shard
-- or l0 is missing or a link does not parse.
local function link_keys(p, f)
  local shard = tonumber(f[3])
  if not f[2] or not shard or shard < 1 or not f[4] then return nil end
  local keys = {}
  for i = 0, 63 do
    local l = f[4 + i]
    if not l then break end
    local bytes = tonumber(string.match(l, '^%d+'))
    if not bytes then return nil end
    local base = p .. ':bf:' .. f[2] .. ':' .. i
    local shards = 1
    if bytes > 0 then shards = math.floor((bytes + shard - 1) / shard) end
    for s = 0, shards - 1 do keys[#keys + 1] = base .. '.' .. s end
    keys[#keys + 1] = base .. ':n'
  end
  return keys
end
local function filter_at(k, p)
  local m = p .. ':bf:m:' .. k
  if not marked(m) then
    m = p .. ':cms:m:' .. k
    if not marked(m) then
      for _, kind in ipairs(OWN_KINDS) do
        m = p .. kind .. k
        if marked(m) then
          if redis.call('TYPE', k).ok ~= 'hash' then return m, nil end
          return m, OWN_KEYS[kind](p, k)
        end
      end
      return nil, nil
    end
  end
  if redis.call('TYPE', k).ok ~= 'hash' then return m, nil end
  local names = {unpack(LINK_FIELDS)}
  for _, n in ipairs({'cms', 'width', 'depth', 'part', 'window', 'slots'}) do
    names[#names + 1] = n
  end
  local f = redis.call('HMGET', k, unpack(names))
  if f[68] == '1' then
    return m, sketch_parts(p, f[2], tonumber(f[69]), tonumber(f[70]), tonumber(f[71]))
  end
  if f[1] ~= '1' then return m, nil end
  if f[72] then return m, window_keys(p, f[2], f[72], f[73]) end
  return m, link_keys(p, f)
end
-- A windowed filter's keys: every live slot that exists, its name and its own data keys (a slot
-- whose hash does not parse still has its name listed: it is this filter's key).
window_keys = function(p, id, w, g)
  local live = live_slots(p, id, w, g)
  if not live then return nil end
  local keys, slots = {}, {}
  for _, s in ipairs(live) do
    if redis.call('EXISTS', s.name) == 1 then
      local own = nil
      if redis.call('TYPE', s.name).ok == 'hash' then
        own = link_keys(s.name, redis.call('HMGET', s.name, unpack(LINK_FIELDS)))
      end
      s.keys = own or {}
      keys[#keys + 1] = s.name
      for _, d in ipairs(s.keys) do keys[#keys + 1] = d end
      slots[#slots + 1] = s
    end
  end
  return keys, slots
end
-- A cuckoo filter's data keys (filters/cuckoo/cf_layout.lua): sub-filter i of nb * ex^i buckets
-- of bs bytes, in keys of sh bytes.
OWN_KEYS[':cf:m:'] = function(p, k)
  local f = redis.call('HMGET', k, 'cf', 'id', 'nb', 'bs', 'ex', 'nf', 'sh')
  local nb, bs, ex, nf, sh = tonumber(f[3]), tonumber(f[4]), tonumber(f[5]), tonumber(f[6]),
                             tonumber(f[7])
  if f[1] ~= '1' or not f[2] or not nb or not bs or not ex or not nf or not sh or sh < 1 or
     nf > 65535 then
    return nil
  end
  local keys, n = {}, nb
  for i = 0, nf - 1 do
    for s = 0, math.ceil(n * bs / sh) - 1 do
      keys[#keys + 1] = p .. ':cf:' .. f[2] .. ':' .. i .. '.' .. s
    end
    n = n * ex
  end
  return keys
end
-- A Top-K sketch's data keys (the layout filters/topk/'s scripts write): its width * depth
-- buckets, 8 bytes each, in shards of sh bytes; its heap; its heap's items, a hash that exists
-- only once an item was kept (listed only then).
OWN_KEYS[':tk:m:'] = function(p, k)
  local f = redis.call('HMGET', k, 'tk', 'id', 'width', 'depth', 'sh')
  local width, depth, sh = tonumber(f[3]), tonumber(f[4]), tonumber(f[5])
  if f[1] ~= '1' or not f[2] or not width or not depth or not sh or sh < 1 then return nil end
  local base = p .. ':tk:' .. f[2] .. ':'
  local keys = {}
  for s = 0, math.ceil(8 * width * depth / sh) - 1 do keys[#keys + 1] = base .. 'b.' .. s end
  keys[#keys + 1] = base .. 'h'
  if redis.call('EXISTS', base .. 'i') == 1 then keys[#keys + 1] = base .. 'i' end
  return keys
end
-- A t-digest's data key (the layout filters/tdigest/'s scripts write): the digest, one string.
OWN_KEYS[':td:m:'] = function(p, k)
  local f = redis.call('HMGET', k, 'td', 'id')
  if f[1] ~= '1' or not f[2] then return nil end
  return {p .. ':td:' .. f[2] .. ':d'}
end

-- filter_at(k, p): what lives at name `k`, whose data-key prefix is `p`
-- (filters/common/key_layout.h), for the key scripts that act on a whole structure. Returns its
-- marker's name when the marker exists (else nil), and the structure's data keys when `k` is a
-- filter's or a count-min sketch's hash whose fields parse: a filter's shards of each link and
-- each link's count; a sketch's parts (filters/cms/cms_meta.h); a cuckoo filter's sub-filters. Without a marker nothing but the
-- marker is looked at (marked: touches nothing, and a plain key is not tracked for a client with
-- CLIENT TRACKING); the hash is read only when its marker says it is a structure, so no probe
-- counts as a WRONGTYPE error and no plain key is touched. unlink_all(m, keys) removes a
-- structure's marker and data keys.
--
-- Needs marked(k): a script includes common/marked.lua (one that writes) or
-- common/marked_by_exists.lua (one that only reads) before this file.
local function sketch_parts(p, id, width, depth, part)
  if not id or not width or not depth or not part or part < 1 then return nil end
  local keys = {}
  for i = 0, math.ceil(width * depth / part) - 1 do keys[#keys + 1] = p .. ':cms:' .. id .. ':' .. i end
  return keys
end
local cuckoo_keys  -- (below filter_at, so that no hash read comes before a marker check)
local function unlink_all(m, keys)
  redis.call('UNLINK', m)
  for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
end
local function filter_at(k, p)
  local m = p .. ':bf:m:' .. k
  if not marked(m) then
    m = p .. ':cms:m:' .. k
    if not marked(m) then
      m = p .. ':cf:m:' .. k
      if not marked(m) then return nil, nil end
      if redis.call('TYPE', k).ok ~= 'hash' then return m, nil end
      return m, cuckoo_keys(p, k)
    end
  end
  if redis.call('TYPE', k).ok ~= 'hash' then return m, nil end
  local names = {'bloomproxy', 'id', 'shard'}
  for i = 0, 63 do names[#names + 1] = 'l' .. i end
  names[#names + 1] = 'cms'
  names[#names + 1] = 'width'
  names[#names + 1] = 'depth'
  names[#names + 1] = 'part'
  local f = redis.call('HMGET', k, unpack(names))
  if f[68] == '1' then
    return m, sketch_parts(p, f[2], tonumber(f[69]), tonumber(f[70]), tonumber(f[71]))
  end
  local shard = tonumber(f[3])
  if f[1] ~= '1' or not f[2] or not shard or shard < 1 or not f[4] then return m, nil end
  local keys = {}
  for i = 0, 63 do
    local l = f[4 + i]
    if not l then break end
    local bytes = tonumber(string.match(l, '^%d+'))
    if not bytes then return m, nil end
    local base = p .. ':bf:' .. f[2] .. ':' .. i
    local shards = 1
    if bytes > 0 then shards = math.floor((bytes + shard - 1) / shard) end
    for s = 0, shards - 1 do keys[#keys + 1] = base .. '.' .. s end
    keys[#keys + 1] = base .. ':n'
  end
  return m, keys
end
-- A cuckoo filter's data keys (filters/cuckoo/cf_layout.lua): sub-filter i of nb * ex^i buckets
-- of bs bytes, in keys of sh bytes.
cuckoo_keys = function(p, k)
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

-- The script a BF.* command runs as inside MULTI (filters/bloom/multi_bf.h): RedisBloom's
-- semantics over the filter layout of key_layout.h and bf_meta.h, in Lua, against whatever the
-- keys hold when EXEC runs. Bit positions follow bloom.h exactly: an item's two 64-bit hashes
-- come from the proxy (they depend on the item alone) as hex, and (a + i*b) mod 2^64 mod bits is
-- worked out in 16-bit limbs, exact in Lua's doubles for links below 2^45 bits. A new link's
-- parameters follow ChainLink (bloom.cc) with the server's log(), as RedisBloom's own use its
-- host's.
--
--   EVAL <script> 2 <name> <marker>  <op> <prefix> <deferred error> <creates>
--        <F> <field value>*F/2 <C> <count>*C <op arguments>
--
-- op: reserve | add | exists | counts (CARD, INFO, DEBUG, SCANDUMP 0) | dump <iter> |
-- load <iter> <data>.
-- F fields (with the id, error, capacity, ... and l0 .. of multi_bf.cc) make a new filter when the
-- name is free and <creates> is 1 (reserve, add, load 1), with the C counts of its links.
-- Answers: {"wrongtype"}, {"missing"}, {"deferred"}, {"exists"}, {"damaged", why}, {"ok"},
-- {"add", r...} (1 new, 0 present, 2 full), {"found", 0|1 ...}, {"counts", hgetall, counts},
-- {"chunk", next, data}, {"toobig"}, {"nolink"}.

local name, marker = KEYS[1], KEYS[2]
local op, prefix, deferred, creates = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local nf = tonumber(ARGV[5])
local nc = tonumber(ARGV[6 + nf])
local at = 7 + nf + nc
local LN2, LN2SQ, MAXBITS = 0.693147180559945, 0.480453013918201, 2^62

local function hex_double(h)
  local b = ''
  for i = 1, 15, 2 do b = b .. string.char(tonumber(h:sub(i, i + 1), 16)) end
  return struct.unpack('>d', b)
end
local function double_hex(x)
  local s, h = struct.pack('>d', x), ''
  for i = 1, 8 do h = h .. string.format('%02x', s:byte(i)) end
  return h
end
local function num(x) return string.format('%.0f', x) end

local function data_key(f, rest) return prefix .. ':bf:' .. f.id .. ':' .. rest end
local function bits_key(f, l, s) return data_key(f, (l - 1) .. '.' .. s) end
local function count_key(f, l) return data_key(f, (l - 1) .. ':n') end

local function parse_link(v)
  local p = {}
  for w in string.gmatch(v, '%S+') do p[#p + 1] = w end
  if #p ~= 7 or p[5] ~= '0' then return nil end
  local l = {field = v, bytes = tonumber(p[1]), bits = tonumber(p[2]), capacity = tonumber(p[3]),
             k = tonumber(p[4])}
  if not l.bytes or l.bytes < 1 or l.bits ~= l.bytes * 8 or not l.k or l.k < 1 or l.k >= 1000 or
     not l.capacity then
    return nil
  end
  return l
end

-- The filter from its fields (an HGETALL array); nil and why when damaged.
local function parse_meta(h)
  local m = {}
  for i = 1, #h, 2 do m[h[i]] = h[i + 1] end
  local f = {id = m.id, shard = tonumber(m.shard), fields = m, links = {}}
  if not f.id or not f.shard or f.shard < 1 then return nil, 'id or shard size missing' end
  local i = 0
  while m['l' .. i] do
    local l = parse_link(m['l' .. i])
    if not l then return nil, 'link ' .. i .. ' does not parse' end
    f.links[i + 1] = l
    i = i + 1
  end
  if i == 0 then return nil, 'no link' end
  return f
end

local function shard_len(f, l, s)
  return math.min(f.shard, f.links[l].bytes - s * f.shard)
end

-- 'missing', 'wrongtype', or the filter with its counts.
local function load()
  local t = redis.call('TYPE', name).ok
  if t == 'none' then return 'missing' end
  if t ~= 'hash' or redis.call('HGET', name, 'bloomproxy') ~= '1' then return 'wrongtype' end
  if redis.call('HEXISTS', name, 'window') == 1 then
    -- A windowed filter's items are in slots the proxy picks by the upstream's clock
    -- (docs/windowed-filters.md): not inside a transaction.
    error({err = 'ERR bloomproxy: BF commands on a windowed filter cannot run inside MULTI'})
  end
  local f, why = parse_meta(redis.call('HGETALL', name))
  if not f then return 'damaged', why end
  f.counts = {}
  for l = 1, #f.links do
    local c = tonumber(redis.call('GET', count_key(f, l)) or '')
    if not c or c < 0 then return 'damaged', 'count of link ' .. (l - 1) end
    f.counts[l] = c
  end
  return f
end

local checked = {}
local function shard(f, l, s)
  local key = bits_key(f, l, s)
  if not checked[key] then
    if redis.call('STRLEN', key) ~= shard_len(f, l, s) then
      error({err = 'ERR bloomproxy: shard ' .. s .. ' of link ' .. (l - 1) ..
             ' of the filter is missing or was overwritten'})
    end
    checked[key] = true
  end
  return key
end

local function new_link_keys(f, l, count, ttl)
  local shards = math.ceil(f.links[l].bytes / f.shard)
  for s = 0, shards - 1 do
    local key = bits_key(f, l, s)
    redis.call('SETRANGE', key, shard_len(f, l, s) - 1, '\0')
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
    checked[key] = true
  end
  redis.call('SET', count_key(f, l), count)
  if ttl > 0 then redis.call('PEXPIRE', count_key(f, l), ttl) end
end

-- A new filter from the fields passed (they hold l0 ..; each link's count follows them).
local function create()
  local fields = {}
  for i = 6, 5 + nf do fields[#fields + 1] = ARGV[i] end
  local f = parse_meta(fields)
  f.counts = {}
  for l = 1, #f.links do
    f.counts[l] = tonumber(ARGV[6 + nf + l])
    new_link_keys(f, l, f.counts[l], 0)
  end
  redis.call('HSET', name, unpack(fields))
  redis.call('SET', marker, '1')
  return f
end

-- Bit i of an item in a link of `bits` bits: (a + i*b) mod 2^64 mod bits, as a Redis offset.
local function limbs(h)
  return {tonumber(h:sub(13, 16), 16), tonumber(h:sub(9, 12), 16), tonumber(h:sub(5, 8), 16),
          tonumber(h:sub(1, 4), 16)}
end
local function offset(a, b, i, bits)
  local v, carry = {}, 0
  for j = 1, 4 do
    local t = a[j] + i * b[j] + carry
    v[j] = t % 65536
    carry = math.floor(t / 65536)
  end
  local r = 0
  for j = 4, 1, -1 do
    r = (r * 256 + math.floor(v[j] / 256)) % bits
    r = (r * 256 + v[j] % 256) % bits
  end
  return r - r % 8 + 7 - r % 8
end

local function bits_of(f, l, item, fn)
  local link = f.links[l]
  if link.bits >= 2^45 then
    error({err = 'ERR bloomproxy: a link of 2^45 bits or more cannot be used in a transaction'})
  end
  for i = 0, link.k - 1 do
    local o = offset(item.a, item.b, i, link.bits)
    local s = math.floor(o / (f.shard * 8))
    if fn(shard(f, l, s), o - s * f.shard * 8) == false then return false end
  end
  return true
end
local function has(f, l, item)
  return bits_of(f, l, item, function(key, o) return redis.call('GETBIT', key, o) == 1 end)
end
local function set(f, l, item)
  bits_of(f, l, item, function(key, o) redis.call('SETBIT', key, o, 1) end)
end

-- The next link of a scaling chain (ChainLink in bloom.cc), its keys given the name's TTL.
local function add_link(f)
  local m, index = f.fields, #f.links
  local e = math.min(hex_double(m.error), 0.25) * 0.5
  e = math.ldexp(e, -math.min(index, 2000))
  local cap, x = tonumber(m.capacity), tonumber(m.expansion)
  for _ = 1, index do
    local n = cap * x
    if n == cap then break end
    if n >= 2^53 then
      error({err = 'ERR bloomproxy: the filter\'s next link is too large to create'})
    end
    cap = n
  end
  local bpe = -(math.log(e) / LN2SQ)
  if bpe < 0 then bpe = -bpe end
  local want = cap * bpe
  local bits0 = want >= MAXBITS and MAXBITS or (want >= 1 and math.floor(want) or 0)
  if bits0 == 0 then bits0 = 1 end
  local bytes = bits0 % 64 ~= 0 and (math.floor(bits0 / 64) + 1) * 8 or bits0 / 8
  if bytes * 8 >= 2^45 then
    error({err = 'ERR bloomproxy: the filter\'s next link is too large to create'})
  end
  local field = num(bytes) .. ' ' .. num(bytes * 8) .. ' ' .. num(cap) .. ' ' ..
                num(math.ceil(LN2 * bpe)) .. ' 0 ' .. double_hex(e) .. ' ' .. double_hex(bpe)
  f.links[index + 1] = parse_link(field)
  f.counts[index + 1] = 0
  new_link_keys(f, index + 1, 0, redis.call('PTTL', name))
  redis.call('HSET', name, 'l' .. index, field)
end

local function items()
  local out, n = {}, tonumber(ARGV[at])
  for j = 1, n do
    out[j] = {a = limbs(ARGV[at + 2 * j - 1]), b = limbs(ARGV[at + 2 * j])}
  end
  at = at + 1 + 2 * n
  return out
end

-- Whether a link holds the item (RedisBloom looks from the newest link back).
local function held(f, item)
  for l = #f.links, 1, -1 do
    if has(f, l, item) then return true end
  end
  return false
end

local function add(f)
  local out, nonscaling = {'add'}, tonumber(f.fields.options or '0') % 16 >= 8
  -- RedisBloom's BF.ADD counts as a write of the name even when nothing changes: a WATCH of the
  -- name watches the counts (watch_plan.h).
  redis.call('INCRBY', count_key(f, #f.links), 0)
  for _, item in ipairs(items()) do
    if held(f, item) then
      out[#out + 1] = 0
    else
      local last = #f.links
      if f.counts[last] >= f.links[last].capacity then
        if nonscaling then
          out[#out + 1] = 2
          return out
        end
        add_link(f)
        last = #f.links
      end
      set(f, last, item)
      f.counts[last] = f.counts[last] + 1
      redis.call('INCRBY', count_key(f, last), 1)
      out[#out + 1] = 1
    end
  end
  return out
end

local function exists(f)
  local out = {'found'}
  for _, item in ipairs(items()) do
    out[#out + 1] = held(f, item) and 1 or 0
  end
  return out
end

-- SCANDUMP's chunk at iterator `iter` >= 1 (LocateDumpChunk in bloom.cc).
local function dump(f, iter)
  if iter < 1 then return {'chunk', 0, ''} end
  local pos = iter - 1
  for l = 1, #f.links do
    local bytes = f.links[l].bytes
    if pos < bytes then
      local len = math.min(bytes - pos, 16 * 1024 * 1024)
      local data, s = {}, math.floor(pos / f.shard)
      while s * f.shard < pos + len do
        local from = math.max(pos, s * f.shard) - s * f.shard
        local to = math.min(pos + len, (s + 1) * f.shard) - 1 - s * f.shard
        data[#data + 1] = redis.call('GETRANGE', shard(f, l, s), from, to)
        s = s + 1
      end
      return {'chunk', iter + len, table.concat(data)}
    end
    pos = pos - bytes
  end
  return {'chunk', 0, ''}
end

-- LOADCHUNK of data at iterator `iter` (bf_plan_dump.cc's LoadRound).
local function load_chunk(f, iter, data)
  local len = #data
  if iter <= 0 or iter < len then return {'baddata'} end
  local pos, l = iter - len - 1, 1
  if pos < 0 then return {'nolink'} end
  while l <= #f.links and pos >= f.links[l].bytes do
    pos = pos - f.links[l].bytes
    l = l + 1
  end
  if l > #f.links then return {'nolink'} end
  if len > f.links[l].bytes - pos then return {'toobig'} end
  local s, stop = math.floor(pos / f.shard), pos + len
  while s * f.shard < stop do
    local from, to = math.max(pos, s * f.shard), math.min(stop, (s + 1) * f.shard)
    redis.call('SETRANGE', shard(f, l, s), from - s * f.shard, data:sub(from - pos + 1, to - pos))
    s = s + 1
  end
  return {'ok'}
end

local f, why = load()
if f == 'damaged' then return {'damaged', why} end
if f == 'wrongtype' then
  if op == 'exists' then
    local out = {'found'}
    for j = 1, tonumber(ARGV[at]) do out[j + 1] = 0 end
    return out
  end
  return {'wrongtype'}
end
if f == 'missing' then
  if op == 'exists' then return exists({links = {}}) end
  if not creates then return {'missing'} end
  if deferred ~= '' then return {'deferred'} end
  f = create()
  if op == 'reserve' or op == 'load' then return {'ok'} end
  return add(f)
end
if op == 'reserve' then return {'exists'} end
if op == 'load' and creates then return {'baddata'} end
if deferred ~= '' then return {'deferred'} end
if op == 'add' then return add(f) end
if op == 'exists' then return exists(f) end
if op == 'dump' then return dump(f, tonumber(ARGV[at])) end
if op == 'load' then return load_chunk(f, tonumber(ARGV[at]), ARGV[at + 1]) end
local h, counts = redis.call('HGETALL', name), {}
for l = 1, #f.links do counts[l] = tostring(f.counts[l]) end
return {'counts', h, counts}

// The key scripts that act on a whole structure: they find its data keys and marker with
// filter_at (below), run the client's command, and then do the same to every key of the
// structure, in one script (filters/common/key_scripts.h).
#include <string>

#include "filters/common/key_scripts.h"

namespace bloomproxy::filters {
namespace {

// filter_at(k, p): what lives at name `k`, whose data-key prefix is `p` (key_layout.h). Returns
// its marker's name when the marker exists (else nil), and the structure's data keys when `k` is
// a filter's or a count-min sketch's hash whose fields parse: a filter's shards of each link and
// each link's count; a sketch's parts (cms_meta.h). Without a marker nothing but the marker is
// looked at (marked, key_scripts.h: touches nothing, and a plain key is not tracked for a
// client with CLIENT TRACKING); the hash is read only when its marker says it is a structure,
// so no probe counts as a WRONGTYPE error and no plain key is touched.
constexpr std::string_view kFilterAt = R"lua(
local function sketch_parts(p, id, width, depth, part)
  if not id or not width or not depth or not part or part < 1 then return nil end
  local keys = {}
  for i = 0, math.ceil(width * depth / part) - 1 do keys[#keys + 1] = p .. ':cms:' .. id .. ':' .. i end
  return keys
end
local function unlink_all(m, keys)
  redis.call('UNLINK', m)
  for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
end
local function filter_at(k, p)
  local m = p .. ':bf:m:' .. k
  if not marked(m) then
    m = p .. ':cms:m:' .. k
    if not marked(m) then return nil, nil end
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
)lua";

// DEL, UNLINK. KEYS: the command's keys. ARGV[1]: DEL or UNLINK; ARGV[1 + i]: the data-key
// prefix of KEYS[i]. Key by key (a Lua call takes at most 8000 arguments), so a filter's data
// keys and marker go with its name. Returns the number of keys removed, or the command's error.
constexpr std::string_view kDeleteBody = R"lua(
local removed = 0
for i, k in ipairs(KEYS) do
  local m, data = filter_at(k, ARGV[i + 1])
  local r = redis.pcall(ARGV[1], k)
  if type(r) == 'table' then return r end
  removed = removed + r
  if m and r == 1 then unlink_all(m, data or {}) end
end
return removed
)lua";

// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST. KEYS[1]: the key. ARGV[1]: its data-key prefix;
// ARGV[2..]: the command. Returns the command's reply. When the key is a filter and the command
// changed its expiry, its data keys and marker get the same (gone, persistent, or the same
// absolute time).
constexpr std::string_view kExpireBody = R"lua(
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if data and r == 1 then
  data[#data + 1] = m
  local at = redis.call('PEXPIRETIME', KEYS[1])
  for _, d in ipairs(data) do
    if at == -2 then redis.call('UNLINK', d)
    elseif at == -1 then redis.call('PERSIST', d)
    else redis.call('PEXPIREAT', d, at) end
  end
end
return r
)lua";

// RENAME, RENAMENX. KEYS[1], KEYS[2]: source and destination. ARGV[1], ARGV[2]: their data-key
// prefixes; ARGV[3..]: the command. Returns the command's reply. When it renamed: a filter the
// destination held loses its data keys and marker; a filter at the source takes its data keys
// along under the destination's prefix and its marker under the destination's name (RENAME
// keeps their expiry).
constexpr std::string_view kRenameBody = R"lua(
local ms, src = filter_at(KEYS[1], ARGV[1])
local md, dst = nil, nil
if KEYS[1] ~= KEYS[2] then md, dst = filter_at(KEYS[2], ARGV[2]) end
local r = redis.pcall(unpack(ARGV, 3))
if type(r) == 'table' and r.err then return r end
if KEYS[1] == KEYS[2] or (type(r) ~= 'table' and r ~= 1) then return r end
if md then unlink_all(md, dst or {}) end
if ms then
  if src then
    for _, d in ipairs(src) do
      local moved = ARGV[2] .. string.sub(d, #ARGV[1] + 1)
      if moved ~= d and redis.call('EXISTS', d) == 1 then redis.call('RENAME', d, moved) end
    end
    local kind = string.sub(ms, #ARGV[1] + 1, #ms - #KEYS[1])
    redis.call('RENAME', ms, ARGV[2] .. kind .. KEYS[2])
  else
    redis.call('UNLINK', ms)
  end
end
return r
)lua";

// MOVE. KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command (MOVE key db).
// Returns the command's reply (Redis's errors, :0 when the destination database holds the name).
// When it moved a structure, every data key and the marker follow it: MOVE each, or, where the
// other database holds a key of that name (a leftover), COPY ... REPLACE and UNLINK; then the
// other kind's marker for the name, a leftover there, is removed (it would make the structure
// look like the other kind). The SELECT is the script's own (the caller's database is
// unchanged) and comes last.
constexpr std::string_view kMoveBody = R"lua(
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if r ~= 1 or not m then return r end
if not data then redis.call('UNLINK', m) return r end
data[#data + 1] = m
local db = ARGV[4]
for _, d in ipairs(data) do
  if redis.call('MOVE', d, db) == 0 and redis.call('EXISTS', d) == 1 then
    redis.call('COPY', d, d, 'DB', db, 'REPLACE')
    redis.call('UNLINK', d)
  end
end
local other = ARGV[1] .. ':bf:m:' .. KEYS[1]
if m == other then other = ARGV[1] .. ':cms:m:' .. KEYS[1] end
redis.call('SELECT', db)
redis.call('UNLINK', other)
return r
)lua";

// RESTORE. KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command. Returns the
// command's reply. When it restored over a structure (REPLACE; without it the name's existence
// gives Redis's BUSYKEY), the structure's data keys and marker are removed: nothing of it is
// left. Removed after the RESTORE succeeded, so a payload Redis refuses changes nothing.
constexpr std::string_view kRestoreBody = R"lua(
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if type(r) == 'table' and r.ok and m then unlink_all(m, data or {}) end
return r
)lua";

// MEMORY USAGE. KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the command (MEMORY
// USAGE key [SAMPLES n]). Returns the name's usage (or Redis's nil or error) plus, for a
// structure, every data key's and the marker's, each asked with the same options.
constexpr std::string_view kMemoryUsageBody = R"lua(
local m, data = filter_at(KEYS[1], ARGV[1])
local r = redis.pcall(unpack(ARGV, 2))
if type(r) ~= 'number' or not data then return r end
data[#data + 1] = m
for _, d in ipairs(data) do
  local u = redis.pcall('MEMORY', 'USAGE', d, unpack(ARGV, 5))
  if type(u) == 'number' then r = r + u end
end
return r
)lua";

// OBJECT IDLETIME, OBJECT FREQ. KEYS[1]: the key. ARGV[1]: its data-key prefix; ARGV[2..]: the
// command. The name's own answer comes first, before its metadata is read: Redis's nil for a
// missing key, its error when the eviction policy does not track the value asked for. For a
// structure: the least idle time, or the highest frequency, of its data keys (which BF.ADD,
// BF.EXISTS, CMS.INCRBY, CMS.QUERY read and write) and its marker (which hash commands on the
// structure touch, as they touch a module key). Not its name's: the proxy reads the metadata
// there for its own purposes (this script, a cold cache), which would reset it. Nor a key whose
// value is one of Redis's shared small integers (OBJECT REFCOUNT 2147483647: the marker "1", a
// small count, when maxmemory is 0 or the policy is neither LRU nor LFU): its clock is that of
// every key holding the same number. When no key is left, the name's answer.
constexpr std::string_view kObjectTimeBody = R"lua(
local r = redis.pcall(unpack(ARGV, 2))
if type(r) ~= 'number' then return r end
local m, data = filter_at(KEYS[1], ARGV[1])
if not data then return r end
data[#data + 1] = m
local idle = string.lower(ARGV[3]) == 'idletime'
local best = nil
for _, d in ipairs(data) do
  if redis.call('OBJECT', 'REFCOUNT', d) == 1 then
    local v = redis.call('OBJECT', ARGV[3], d)
    if best == nil or (idle and v < best) or (not idle and v > best) then best = v end
  end
end
return best or r
)lua";

// A script that only reads goes with EVAL_RO, where SETRANGE is refused: it looks at markers
// with EXISTS (its command reads the name anyway).
constexpr std::string_view kMarkedByExists = R"lua(
local function marked(k) return redis.call('EXISTS', k) == 1 end
)lua";

// The script of `body`: marked, filter_at, body.
std::string WithFilterAt(std::string_view body, bool writes) {
  return std::string(writes ? kMarkedFunction : kMarkedByExists) + std::string(kFilterAt) +
         std::string(body);
}

}  // namespace

std::string_view DeleteScript() {
  static const std::string text = WithFilterAt(kDeleteBody, true);
  return text;
}

std::string_view ExpireScript() {
  static const std::string text = WithFilterAt(kExpireBody, true);
  return text;
}

std::string_view RenameScript() {
  static const std::string text = WithFilterAt(kRenameBody, true);
  return text;
}

std::string_view MoveScript() {
  static const std::string text = WithFilterAt(kMoveBody, true);
  return text;
}

std::string_view RestoreScript() {
  static const std::string text = WithFilterAt(kRestoreBody, true);
  return text;
}

std::string_view MemoryUsageScript() {
  static const std::string text = WithFilterAt(kMemoryUsageBody, false);
  return text;
}

std::string_view ObjectTimeScript() {
  static const std::string text = WithFilterAt(kObjectTimeBody, false);
  return text;
}

}  // namespace bloomproxy::filters

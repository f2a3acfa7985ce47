#include "filters/key_scripts.h"

#include "filters/key_layout.h"
#include "protocol/command_table.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// filter_at(k, p): what lives at name `k`, whose data-key prefix is `p` (key_layout.h). Returns
// its marker's name when the marker exists (else nil), and the structure's data keys when `k` is
// a filter's or a count-min sketch's hash whose fields parse: a filter's shards of each link and
// each link's count; a sketch's parts (cms_meta.h). Without a marker nothing but the marker is
// looked at (EXISTS touches nothing); the hash is read only when its marker says it is a
// structure, so no probe counts as a WRONGTYPE error and no plain key is touched.
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
  if redis.call('EXISTS', m) == 0 then
    m = p .. ':cms:m:' .. k
    if redis.call('EXISTS', m) == 0 then return nil, nil end
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

// TYPE. KEYS[1]: the key; KEYS[2], KEYS[3]: its filter and sketch markers. RedisBloom's module
// type names, "MBbloom--" for a filter and "CMSk-TYPE" for a count-min sketch; else Redis's
// answer. Touches nothing.
constexpr std::string_view kTypeScript = R"lua(
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' and redis.call('EXISTS', KEYS[2]) == 1 then return {ok = 'MBbloom--'} end
if t == 'hash' and redis.call('EXISTS', KEYS[3]) == 1 then return {ok = 'CMSk-TYPE'} end
return {ok = t}
)lua";

// COPY. KEYS[1], KEYS[2]: source and destination; KEYS[3], KEYS[4]: the source's filter and
// sketch markers. ARGV: the command. A filter or a count-min sketch cannot be copied
// (RedisBloom's types have no copy callback), an error Redis gives only once the options parse,
// the source is not the destination and the destination is free or REPLACE is given; before
// that, Redis's own reply (COPY itself, which then copies nothing).
constexpr std::string_view kCopyScript = R"lua(
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' or
   (redis.call('EXISTS', KEYS[3]) == 0 and redis.call('EXISTS', KEYS[4]) == 0) then
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
)lua";

// OBJECT ENCODING. KEYS[1]: the key; KEYS[2], KEYS[3]: its filter and sketch markers. ARGV: the
// command. "raw" for a filter or a sketch, as for RedisBloom's module types; else Redis's answer.
// Touches nothing but what the command itself touches.
constexpr std::string_view kEncodingScript = R"lua(
if redis.call('TYPE', KEYS[1]).ok == 'hash' and
   (redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1) then
  return 'raw'
end
return redis.pcall(unpack(ARGV))
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

const std::string& WithFilterAt(std::string_view body, std::string* storage) {
  if (storage->empty()) *storage = std::string(kFilterAt) + std::string(body);
  return *storage;
}

enum class Kind { kNone, kType, kDelete, kExpire, kRename, kCopy, kEncoding };

Kind KindOf(const std::vector<std::string_view>& args) {
  if (args.empty()) return Kind::kNone;
  const protocol::CommandInfo* info = protocol::LookupCommand(args[0]);
  // Wrong arity is the upstream's to report, as for any command.
  if (info == nullptr || !protocol::ArityOk(*info, args.size())) return Kind::kNone;
  const std::string_view name = info->name;
  if (name == "type") return Kind::kType;
  if (name == "del" || name == "unlink") return Kind::kDelete;
  if (name == "expire" || name == "pexpire" || name == "expireat" || name == "pexpireat" ||
      name == "persist") {
    return Kind::kExpire;
  }
  if (name == "rename" || name == "renamenx") return Kind::kRename;
  if (name == "copy") return Kind::kCopy;
  if (name == "object" && args.size() == 3) {
    const protocol::CommandInfo* sub = protocol::LookupSubcommand(*info, args[1]);
    if (sub != nullptr && sub->name == "object|encoding") return Kind::kEncoding;
  }
  return Kind::kNone;
}

}  // namespace

std::string_view TypeScript() { return kTypeScript; }

std::string_view DeleteScript() {
  static std::string text;
  return WithFilterAt(kDeleteBody, &text);
}

std::string_view ExpireScript() {
  static std::string text;
  return WithFilterAt(kExpireBody, &text);
}

std::string_view RenameScript() {
  static std::string text;
  return WithFilterAt(kRenameBody, &text);
}

std::vector<std::string_view> KeyCommandNames(const std::vector<std::string_view>& args) {
  switch (KindOf(args)) {
    case Kind::kNone:
      return {};
    case Kind::kDelete:
      return {args.begin() + 1, args.end()};
    case Kind::kRename:
    case Kind::kCopy:
      return {args[1], args[2]};
    case Kind::kType:
    case Kind::kExpire:
      return {args[1]};
    case Kind::kEncoding:
      return {};
  }
  return {};
}

bool KeyCommandRequest(const std::vector<std::string_view>& args, std::string* request,
                       protocol::UpstreamKind upstream) {
  const Kind kind = KindOf(args);
  if (kind == Kind::kNone) return false;
  std::vector<std::string> prefixes;
  std::vector<std::string_view> out;
  const std::string count_storage = std::to_string(kind == Kind::kDelete     ? args.size() - 1
                                                   : kind == Kind::kRename   ? 2
                                                   : kind == Kind::kCopy     ? 4
                                                   : kind == Kind::kEncoding ? 3
                                                   : kind == Kind::kType     ? 3
                                                                             : 1);
  std::string marker, cms_marker;
  auto markers_of = [&marker, &cms_marker](std::string_view name) {
    const std::string prefix = DataKeyPrefix(name);
    marker = MarkerKey(prefix, name);
    cms_marker = CmsMarkerKey(prefix, name);
  };
  switch (kind) {
    case Kind::kType:
      markers_of(args[1]);
      out = {upstream == protocol::UpstreamKind::kShardingProxy ? "EVAL" : "EVAL_RO",
             TypeScript(),
             count_storage,
             args[1],
             marker,
             cms_marker};
      break;
    case Kind::kDelete:
      for (size_t i = 1; i < args.size(); ++i) prefixes.push_back(DataKeyPrefix(args[i]));
      out = {"EVAL", DeleteScript(), count_storage};
      out.insert(out.end(), args.begin() + 1, args.end());
      out.push_back(args[0]);
      break;
    case Kind::kExpire:
      prefixes.push_back(DataKeyPrefix(args[1]));
      out = {"EVAL", ExpireScript(), count_storage, args[1]};
      break;
    case Kind::kRename:
      prefixes.push_back(DataKeyPrefix(args[1]));
      prefixes.push_back(DataKeyPrefix(args[2]));
      out = {"EVAL", RenameScript(), count_storage, args[1], args[2]};
      break;
    case Kind::kCopy:
      markers_of(args[1]);
      out = {"EVAL", kCopyScript, count_storage, args[1], args[2], marker, cms_marker};
      out.insert(out.end(), args.begin(), args.end());
      break;
    case Kind::kEncoding:
      markers_of(args[2]);
      out = {upstream == protocol::UpstreamKind::kShardingProxy ? "EVAL" : "EVAL_RO",
             kEncodingScript,
             count_storage,
             args[2],
             marker,
             cms_marker};
      out.insert(out.end(), args.begin(), args.end());
      break;
    case Kind::kNone:
      return false;
  }
  for (const std::string& p : prefixes) out.push_back(p);
  if (kind == Kind::kExpire || kind == Kind::kRename)
    out.insert(out.end(), args.begin(), args.end());
  protocol::AppendCommand(request, out);
  return true;
}

}  // namespace bloomproxy::filters

#include "filters/cms/cms_scripts.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "filters/common/key_layout.h"

namespace bloomproxy::filters {
namespace {

// KEYS[1]: the name; KEYS[2]: its sketch marker (a hash without it is no sketch, whatever its
// fields).
constexpr std::string_view kFetch = R"lua(
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return 0 end
if t ~= 'hash' or redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
return redis.call('HMGET', KEYS[1], 'cms', 'id', 'width', 'depth', 'part')
)lua";

// KEYS[1]: the name; KEYS[2]: its marker; KEYS[3..]: the parts. ARGV[1..4]: id, width, depth,
// cells per part; ARGV[4 + p]: the size of part p - 2 (of KEYS[p]). SETRANGE of the last byte
// makes Redis allocate each part at its exact size, zeroed.
constexpr std::string_view kCreate = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 3, #KEYS do redis.call('SETRANGE', KEYS[i], tonumber(ARGV[i + 2]) - 1, '\0') end
redis.call('HSET', KEYS[1], 'cms', '1', 'id', ARGV[1], 'width', ARGV[2], 'depth', ARGV[3],
           'part', ARGV[4])
redis.call('SET', KEYS[2], '1')
return 1
)lua";

// KEYS: the parts. ARGV: groups of (index into KEYS, n, n arguments of BITFIELD).
constexpr std::string_view kMultiBitfield = R"lua(
local out, a = {}, 1
while a <= #ARGV do
  local k, n = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  out[#out + 1] = redis.call('BITFIELD', KEYS[k], unpack(ARGV, a + 2, a + 1 + n))
  a = a + 2 + n
end
return out
)lua";

// KEYS[1]: the name; KEYS[2..]: parts of the sketch ARGV[1].
constexpr std::string_view kCleanup = R"lua(
if redis.call('TYPE', KEYS[1]).ok == 'hash' and redis.call('HGET', KEYS[1], 'id') == ARGV[1] then
  return 0
end
for i = 2, #KEYS, 1000 do redis.call('UNLINK', unpack(KEYS, i, math.min(i + 999, #KEYS))) end
return 1
)lua";

// KEYS: the keys to read; ARGV[i]: 'h' for the header of KEYS[i], anything else for all of it.
constexpr std::string_view kMergeRead = R"lua(
local out = {}
for i, k in ipairs(KEYS) do
  if ARGV[i] == 'h' then out[i] = redis.call('GETRANGE', k, 0, 15)
  else out[i] = redis.call('GET', k) end
  if not out[i] then out[i] = '' end
end
return out
)lua";

// ARGV[1]: n, the sketches checked; KEYS[i], KEYS[n + i], ARGV[1 + i], ARGV[1 + n + i]: sketch
// i's name, part 0, id and version (i = 1..n). KEYS[j] for j > 2n: a part written with
// ARGV[j + 1] (SETRANGE from 0: the whole part, its expiry kept).
constexpr std::string_view kMergeCommit = R"lua(
local n = tonumber(ARGV[1])
for i = 1, n do
  if redis.call('TYPE', KEYS[i]).ok ~= 'hash' then return 0 end
  if redis.call('HGET', KEYS[i], 'id') ~= ARGV[1 + i] then return 0 end
  if redis.call('GETRANGE', KEYS[n + i], 8, 15) ~= ARGV[1 + n + i] then return 0 end
end
for j = 2 * n + 1, #KEYS do redis.call('SETRANGE', KEYS[j], 0, ARGV[j + 1]) end
return 1
)lua";

// Lua's unpack takes at most about 8000 values: BITFIELD calls are split below that.
constexpr size_t kMaxArgsPerCall = 6000;

void AddEval(Requests* req, std::string_view command, std::string_view script,
             const std::vector<std::string>& keys, const std::vector<std::string>& argv) {
  std::vector<std::string_view> args = {command, script};
  const std::string count = U64(keys.size());
  args.push_back(count);
  for (const std::string& k : keys) args.push_back(k);
  for (const std::string& a : argv) args.push_back(a);
  req->Add(args);
}

}  // namespace

std::string_view CmsFetchScript() { return kFetch; }
std::string_view CmsCreateScript() { return kCreate; }
std::string_view CmsMultiBitfieldScript() { return kMultiBitfield; }
std::string_view CmsCleanupScript() { return kCleanup; }
std::string_view CmsMergeCommitScript() { return kMergeCommit; }
std::string_view CmsMergeReadScript() { return kMergeRead; }

void AddCmsMergeRead(Requests* req, const std::vector<std::string>& keys,
                     const std::vector<bool>& header, protocol::UpstreamKind upstream) {
  std::vector<std::string> argv;
  for (bool h : header) argv.emplace_back(h ? "h" : "g");
  AddEval(req, upstream == protocol::UpstreamKind::kShardingProxy ? "EVAL" : "EVAL_RO", kMergeRead,
          keys, argv);
}

void AddCmsFetch(Requests* req, std::string_view name, protocol::UpstreamKind upstream) {
  const bool ro = upstream != protocol::UpstreamKind::kShardingProxy;
  req->Add({ro ? "EVAL_RO" : "EVAL", kFetch, "2", name, CmsMarkerKey(DataKeyPrefix(name), name)});
}

void AddCmsCreate(Requests* req, std::string_view name, const CmsMeta& meta) {
  std::vector<std::string> keys = {std::string(name), CmsMarkerKey(meta.prefix, name)};
  std::vector<std::string> argv = {meta.id, U64(meta.width), U64(meta.depth), U64(meta.part_cells)};
  for (uint64_t p = 0; p < meta.Parts(); ++p) {
    keys.push_back(meta.PartKey(p));
    argv.push_back(U64(meta.PartBytes(p)));
  }
  AddEval(req, "EVAL", kCreate, keys, argv);
}

void AddCmsMultiBitfield(Requests* req, const std::vector<CmsPartOps>& parts) {
  std::vector<std::string> keys;
  std::vector<std::string> argv;
  for (const CmsPartOps& part : parts) {
    keys.push_back(part.key);
    // Split at operation boundaries (OVERFLOW, GET and INCRBY start one); a call after the first
    // starts with the overflow mode in force where the previous one stopped.
    std::string_view mode;
    size_t start = 0;
    while (start < part.args.size()) {
      size_t end = std::min(part.args.size(), start + kMaxArgsPerCall);
      while (end < part.args.size() && part.args[end] != "OVERFLOW" && part.args[end] != "GET" &&
             part.args[end] != "INCRBY") {
        ++end;
      }
      const bool restate = !mode.empty() && part.args[start] != "OVERFLOW";
      argv.push_back(U64(keys.size()));
      argv.push_back(U64(end - start + (restate ? 2 : 0)));
      if (restate) {
        argv.emplace_back("OVERFLOW");
        argv.emplace_back(mode);
      }
      for (size_t a = start; a < end; ++a) {
        argv.push_back(part.args[a]);
        if (part.args[a] == "OVERFLOW" && a + 1 < end) mode = part.args[a + 1];
      }
      start = end;
    }
  }
  AddEval(req, "EVAL", kMultiBitfield, keys, argv);
}

void AddCmsCleanup(Requests* req, std::string_view name, std::string_view id,
                   const std::vector<std::string>& parts) {
  std::vector<std::string> keys = {std::string(name)};
  keys.insert(keys.end(), parts.begin(), parts.end());
  AddEval(req, "EVAL", kCleanup, keys, {std::string(id)});
}

void AddCmsMergeCommit(Requests* req, const std::vector<CmsChecked>& checked,
                       const std::vector<std::pair<std::string, std::string>>& writes) {
  std::vector<std::string> keys;
  std::vector<std::string> argv = {U64(checked.size())};
  for (const CmsChecked& c : checked) keys.push_back(c.name);
  for (const CmsChecked& c : checked) keys.push_back(c.part0);
  for (const CmsChecked& c : checked) argv.push_back(c.id);
  for (const CmsChecked& c : checked) argv.push_back(c.version);
  for (const auto& [key, content] : writes) {
    keys.push_back(key);
    argv.push_back(content);
  }
  AddEval(req, "EVAL", kMergeCommit, keys, argv);
}

}  // namespace bloomproxy::filters

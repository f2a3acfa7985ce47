#include "filters/common/sweep.h"

#include "filters/common/key_layout.h"
#include "filters/common/sweep.lua.h"
#include "filters/common/sweep_lock.lua.h"
#include "protocol/encoder.h"
#include "protocol/internal_keys.h"
#include "protocol/key_slot.h"
#include "protocol/monitor_line.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kBf = ":bf:";
constexpr std::string_view kCms = ":cms:";
constexpr std::string_view kBfMarker = ":bf:m:";
constexpr std::string_view kCmsMarker = ":cms:m:";
constexpr std::string_view kCf = ":cf:";
constexpr std::string_view kCfMarker = ":cf:m:";
constexpr std::string_view kTk = ":tk:";
constexpr std::string_view kTkMarker = ":tk:m:";
constexpr std::string_view kTd = ":td:";
constexpr std::string_view kTdMarker = ":td:m:";
constexpr std::string_view kFilterMark = "bloomproxy";  // bf_meta.h kMarkerField
constexpr std::string_view kSketchMark = "cms";         // cms_meta.h
constexpr std::string_view kCuckooMark = "cf";          // cuckoo/cf_layout.lua
constexpr std::string_view kTopkMark = "tk";            // filters/topk/
constexpr std::string_view kTdigestMark = "td";         // filters/tdigest/
constexpr size_t kIdLength = 16;

bool HasTag(std::string_view s) {
  bool has_tag = false;
  protocol::HashTag(s, &has_tag);
  return has_tag;
}

// What follows "P:bf:": "H:D.D" and "H:D:n" (a link's bits and count: *field is "lD", the
// link's field in its owner), "H:wD" (a windowed filter's slot: *field is "window", which only a
// windowed filter's hash has), "H:D.D:H" and "H:new" (temporary: *field stays empty, no owner).
bool ParseBloomSuffix(std::string_view s, std::string_view* id, std::string* field) {
  if (s.size() <= kIdLength || !protocol::IsInternalKeyId(s.substr(0, kIdLength)) ||
      s[kIdLength] != ':')
    return false;
  *id = s.substr(0, kIdLength);
  s.remove_prefix(kIdLength + 1);
  if (s == "new") return true;
  if (!s.empty() && s[0] == 'w') {
    *field = "window";
    return protocol::IsKeyNumber(s.substr(1));
  }
  std::string_view l, rest, shard;
  if (protocol::SplitAt(s, ':', &l, &rest)) {
    if (rest == "n") {
      *field = "l" + std::string(l);
      return protocol::IsKeyNumber(l);
    }
    return protocol::IsInternalKeyId(rest) && protocol::SplitAt(l, '.', &l, &shard) &&
           protocol::IsKeyNumber(l) && protocol::IsKeyNumber(shard);
  }
  *field = "l" + std::string(s.substr(0, s.find('.')));
  return protocol::SplitAt(s, '.', &l, &shard) && protocol::IsKeyNumber(l) &&
         protocol::IsKeyNumber(shard);
}

// What follows "P:cf:": "H:D.D" (a cuckoo filter's sub-filter and data key).
bool ParseCuckooSuffix(std::string_view s, std::string_view* id) {
  std::string_view sub, key;
  if (s.size() <= kIdLength + 1 || !protocol::IsInternalKeyId(s.substr(0, kIdLength)) ||
      s[kIdLength] != ':' || !protocol::SplitAt(s.substr(kIdLength + 1), '.', &sub, &key) ||
      !protocol::IsKeyNumber(sub) || !protocol::IsKeyNumber(key)) {
    return false;
  }
  *id = s.substr(0, kIdLength);
  return true;
}

// What follows "P:tk:": "H:b.D" (a Top-K sketch's bucket shard), "H:h" (its heap) or "H:i" (its
// heap's items).
bool ParseTopkSuffix(std::string_view s, std::string_view* id) {
  if (s.size() <= kIdLength + 1 || !protocol::IsInternalKeyId(s.substr(0, kIdLength)) ||
      s[kIdLength] != ':') {
    return false;
  }
  const std::string_view rest = s.substr(kIdLength + 1);
  if (rest != "h" && rest != "i" &&
      (rest.substr(0, 2) != "b." || !protocol::IsKeyNumber(rest.substr(2)))) {
    return false;
  }
  *id = s.substr(0, kIdLength);
  return true;
}

// What follows "P:td:": "H:d" (a t-digest's data).
bool ParseTdigestSuffix(std::string_view s, std::string_view* id) {
  if (s.size() != kIdLength + 2 || !protocol::IsInternalKeyId(s.substr(0, kIdLength)) ||
      s.substr(kIdLength) != ":d") {
    return false;
  }
  *id = s.substr(0, kIdLength);
  return true;
}

bool ParseSketchSuffix(std::string_view s, std::string_view* id) {
  if (s.size() <= kIdLength + 1 || !protocol::IsInternalKeyId(s.substr(0, kIdLength)) ||
      s[kIdLength] != ':' || !protocol::IsKeyNumber(s.substr(kIdLength + 1))) {
    return false;
  }
  *id = s.substr(0, kIdLength);
  return true;
}

// The data-key readings of `key` (the last infix is the only split that can match: the
// suffix holds none).
bool AddDataOwners(std::string_view key, SweepKey* out) {
  bool found = false;
  std::string_view id;
  std::string field;
  size_t at = key.rfind(kBf);
  if (at != std::string_view::npos && ParseBloomSuffix(key.substr(at + kBf.size()), &id, &field) &&
      HasTag(key.substr(0, at))) {
    found = true;
    if (!field.empty()) {
      for (std::string& name : PrefixOwners(key.substr(0, at))) {
        out->owners.push_back({std::move(name), kFilterMark, std::string(id), field});
      }
    }
  }
  at = key.rfind(kCms);
  if (at != std::string_view::npos && ParseSketchSuffix(key.substr(at + kCms.size()), &id) &&
      HasTag(key.substr(0, at))) {
    found = true;
    for (std::string& name : PrefixOwners(key.substr(0, at))) {
      out->owners.push_back({std::move(name), kSketchMark, std::string(id), ""});
    }
  }
  // A cuckoo filter's data key belongs to the filter of its id: a sub-filter the filter dropped
  // has its keys removed by the same script.
  at = key.rfind(kCf);
  if (at != std::string_view::npos && ParseCuckooSuffix(key.substr(at + kCf.size()), &id) &&
      HasTag(key.substr(0, at))) {
    found = true;
    for (std::string& name : PrefixOwners(key.substr(0, at))) {
      out->owners.push_back({std::move(name), kCuckooMark, std::string(id), ""});
    }
  }
  // A Top-K sketch's keys belong to the sketch of their id (its shards never change).
  at = key.rfind(kTk);
  if (at != std::string_view::npos && ParseTopkSuffix(key.substr(at + kTk.size()), &id) &&
      HasTag(key.substr(0, at))) {
    found = true;
    for (std::string& name : PrefixOwners(key.substr(0, at))) {
      out->owners.push_back({std::move(name), kTopkMark, std::string(id), ""});
    }
  }
  // A t-digest's data key belongs to the digest of its id.
  at = key.rfind(kTd);
  if (at != std::string_view::npos && ParseTdigestSuffix(key.substr(at + kTd.size()), &id) &&
      HasTag(key.substr(0, at))) {
    found = true;
    for (std::string& name : PrefixOwners(key.substr(0, at))) {
      out->owners.push_back({std::move(name), kTdigestMark, std::string(id), ""});
    }
  }
  return found;
}

// The marker readings of `key`: any occurrence of the infix may be the split.
bool AddMarkerOwners(std::string_view key, std::string_view infix, std::string_view mark,
                     SweepKey* out) {
  bool found = false;
  for (size_t at = key.find(infix); at != std::string_view::npos; at = key.find(infix, at + 1)) {
    const std::string_view name = key.substr(at + infix.size());
    if (DataKeyPrefix(name) == key.substr(0, at)) {
      found = true;
      out->owners.push_back({std::string(name), mark, "", ""});
    }
  }
  return found;
}

}  // namespace

std::vector<std::string> PrefixOwners(std::string_view prefix) {
  std::vector<std::string> names;
  if (!HasTag(prefix)) return names;
  // DataKeyPrefix's three rules (key_layout.cc), each undone: the prefix itself (a name with a
  // tag), "{X}" without its braces, and "{TTTT}N" without its slot tag.
  constexpr size_t kTagged = 6;
  std::vector<std::string_view> candidates = {prefix};
  if (prefix.size() > 2 && prefix.front() == '{' && prefix.back() == '}') {
    candidates.push_back(prefix.substr(1, prefix.size() - 2));
  }
  if (prefix.size() >= kTagged && prefix.front() == '{' && prefix[kTagged - 1] == '}') {
    candidates.push_back(prefix.substr(kTagged));
  }
  for (std::string_view name : candidates) {
    bool seen = false;
    for (const std::string& n : names) seen = seen || n == name;
    if (!seen && DataKeyPrefix(name) == prefix) names.emplace_back(name);
  }
  return names;
}

bool ParseSweepKey(std::string_view key, SweepKey* out) {
  out->owners.clear();
  // Not short-circuited: a key that reads both ways gets both readings' owners.
  const bool data = AddDataOwners(key, out);
  const bool bf_marker = AddMarkerOwners(key, kBfMarker, kFilterMark, out);
  const bool cms_marker = AddMarkerOwners(key, kCmsMarker, kSketchMark, out);
  const bool cf_marker = AddMarkerOwners(key, kCfMarker, kCuckooMark, out);
  const bool tk_marker = AddMarkerOwners(key, kTkMarker, kTopkMark, out);
  const bool td_marker = AddMarkerOwners(key, kTdMarker, kTdigestMark, out);
  return data || bf_marker || cms_marker || cf_marker || tk_marker || td_marker;
}

std::string_view SweepScript() { return lua::kSweep.body; }

std::string_view SweepScriptSha1() { return lua::kSweep.sha1; }

void AppendSweepLoad(std::string* out) {
  protocol::AppendCommand(out, std::vector<std::string_view>{"SCRIPT", "LOAD", lua::kSweep.body});
}

void AppendSweepRequest(std::string* out, std::string_view sha,
                        const std::vector<SweepEntry>& entries) {
  std::vector<std::string_view> keys;
  std::vector<std::string> argv;
  for (const SweepEntry& e : entries) {
    keys.push_back(e.key);
    argv.emplace_back(e.remove ? "d" : "c");
    argv.push_back(std::to_string(e.parsed->owners.size()));
    for (const SweepOwner& o : e.parsed->owners) {
      keys.push_back(o.name);
      argv.emplace_back(o.mark);
      argv.push_back(o.id);
      argv.push_back(o.field);
    }
  }
  const std::string count = std::to_string(keys.size());
  std::vector<std::string_view> args = {"EVALSHA", sha, count};
  args.insert(args.end(), keys.begin(), keys.end());
  for (const std::string& a : argv) args.push_back(a);
  protocol::AppendCommand(out, args);
}

bool ParseSweepReply(const redisReply* r, size_t n, std::vector<SweepVerdict>* out) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != n) return false;
  out->clear();
  for (size_t i = 0; i < n; ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_INTEGER || e->integer < 0 || e->integer > 3) return false;
    out->push_back(static_cast<SweepVerdict>(e->integer));
  }
  return true;
}

bool ParseScanReply(const redisReply* r, std::string* cursor, std::vector<std::string_view>* keys) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
    return false;
  }
  cursor->assign(r->element[0]->str, r->element[0]->len);
  keys->clear();
  const redisReply* list = r->element[1];
  for (size_t i = 0; i < list->elements; ++i) {
    const redisReply* k = list->element[i];
    if (k->type != REDIS_REPLY_STRING) return false;
    keys->emplace_back(k->str, k->len);
  }
  return true;
}

std::vector<int> KeyspaceDatabases(std::string_view info) {
  std::vector<int> dbs;
  size_t pos = 0;
  while (pos < info.size()) {
    size_t end = info.find('\n', pos);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, 2) != "db") continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 2 || colon > 7) continue;
    int db = 0;
    bool digits = true;
    for (char c : line.substr(2, colon - 2)) {
      digits = digits && c >= '0' && c <= '9';
      db = db * 10 + (c - '0');
    }
    if (digits) dbs.push_back(db);
  }
  return dbs;
}

void AppendSweepLock(std::string* out, std::string_view owner, uint64_t ttl_ms) {
  const std::string ttl = std::to_string(ttl_ms);
  protocol::AppendCommand(out, std::vector<std::string_view>{"EVAL", lua::kSweepLock.body, "1",
                                                             kSweepLockKey, owner, ttl});
}

SweepTrace RecogniseSweep(const std::vector<std::string>& args) {
  using protocol::IsCommandName;
  if (args.empty()) return SweepTrace::kNone;
  const std::string& name = args[0];
  const bool eval = IsCommandName(name, "eval") || IsCommandName(name, "eval_ro");
  const bool evalsha = IsCommandName(name, "evalsha") || IsCommandName(name, "evalsha_ro");
  if ((eval || evalsha) && args.size() >= 4 && args[2] == "1" && args[3] == kSweepLockKey) {
    return SweepTrace::kLock;
  }
  if ((eval && args.size() >= 2 && args[1] == lua::kSweep.body) ||
      (evalsha && args.size() >= 2 && IsCommandName(args[1], lua::kSweep.sha1))) {
    return SweepTrace::kPass;
  }
  if (IsCommandName(name, "script") && args.size() == 3 && IsCommandName(args[1], "load") &&
      args[2] == lua::kSweep.body) {
    return SweepTrace::kPass;
  }
  if (IsCommandName(name, "scan")) {
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      if (IsCommandName(args[i], "match") &&
          (args[i + 1] == kSweepMatch || args[i + 1] == kSweepMatchBeforeTdigest ||
           args[i + 1] == kSweepMatchBeforeTopk)) {
        return SweepTrace::kPass;
      }
    }
  }
  return SweepTrace::kNone;
}

}  // namespace bloomproxy::filters

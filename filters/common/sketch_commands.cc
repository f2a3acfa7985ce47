#include "filters/common/sketch_commands.h"

#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/module_args.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

struct SketchCommandDoc {
  const char* name;
  int arity;
  std::initializer_list<const char*> flags;
  const char* category;  // @write or @read
  SketchFamily family;
  int last_key = 1;  // every sketch command names one key, its first argument
};

constexpr SketchFamily kBloom = SketchFamily::kBloom;
constexpr SketchFamily kCms = SketchFamily::kCms;
constexpr SketchFamily kCuckoo = SketchFamily::kCuckoo;

const SketchCommandDoc kDocs[] = {
    {"bf.reserve", -4, {"write", "denyoom"}, "@write", kBloom},
    {"bf.add", 3, {"write", "denyoom"}, "@write", kBloom},
    {"bf.madd", -3, {"write", "denyoom"}, "@write", kBloom},
    {"bf.insert", -4, {"write", "denyoom"}, "@write", kBloom},
    {"bf.exists", 3, {"readonly"}, "@read", kBloom},
    {"bf.mexists", -3, {"readonly"}, "@read", kBloom},
    {"bf.info", -2, {"readonly"}, "@read", kBloom},
    {"bf.card", 2, {"readonly"}, "@read", kBloom},
    {"bf.scandump", 3, {"readonly"}, "@read", kBloom},
    {"bf.loadchunk", 4, {"write", "denyoom"}, "@write", kBloom},
    {"cms.initbydim", 4, {"write", "denyoom"}, "@write", kCms},
    {"cms.initbyprob", 4, {"write", "denyoom"}, "@write", kCms},
    {"cms.incrby", -4, {"write", "denyoom"}, "@write", kCms},
    {"cms.query", -3, {"readonly"}, "@read", kCms},
    {"cms.merge", -4, {"write", "denyoom"}, "@write", kCms},
    {"cms.info", 2, {"readonly"}, "@read", kCms},
    {"cf.reserve", -3, {"write", "denyoom"}, "@write", kCuckoo},
    {"cf.add", 3, {"write", "denyoom"}, "@write", kCuckoo},
    {"cf.addnx", 3, {"write", "denyoom"}, "@write", kCuckoo},
    {"cf.insert", -4, {"write", "denyoom"}, "@write", kCuckoo},
    {"cf.insertnx", -4, {"write", "denyoom"}, "@write", kCuckoo},
    {"cf.exists", 3, {"readonly", "fast"}, "@read", kCuckoo},
    {"cf.mexists", -3, {"readonly", "fast"}, "@read", kCuckoo},
    {"cf.count", 3, {"readonly", "fast"}, "@read", kCuckoo},
    {"cf.del", 3, {"write", "fast"}, "@write", kCuckoo},
    // RedisBloom registers CF.COMPACT without command info (arity -1: the module checks 2) and
    // with the flags of a read, though it writes.
    {"cf.compact", -1, {"readonly", "fast"}, "@read", kCuckoo},
    {"cf.scandump", 3, {"readonly", "fast"}, "@read", kCuckoo},
    {"cf.loadchunk", 4, {"write", "denyoom"}, "@write", kCuckoo},
    {"cf.info", 2, {"readonly", "fast"}, "@read", kCuckoo},
    {"cf.debug", 2, {"readonly", "fast"}, "@read", kCuckoo},
};

std::string_view FamilyCategory(SketchFamily f) {
  switch (f) {
    case kBloom:
      return "bloom";
    case kCms:
      return "cms";
    case kCuckoo:
      return "cuckoo";
  }
  return "";
}

// Redis's addReplyCommandInfo: flags, ACL categories, tips, key specs and subcommands are sets
// (arrays in RESP2).
std::string EncodeEntry(const SketchCommandDoc& d, protocol::Resp resp) {
  std::string out;
  protocol::AppendArrayHeader(&out, 10);
  protocol::AppendBulk(&out, d.name);
  protocol::AppendInteger(&out, d.arity);
  protocol::AppendSetHeader(&out, static_cast<int64_t>(d.flags.size() + 1), resp);
  for (const char* f : d.flags) protocol::AppendSimple(&out, f);
  protocol::AppendSimple(&out, "module");
  protocol::AppendInteger(&out, 1);           // first key
  protocol::AppendInteger(&out, d.last_key);  // last key
  protocol::AppendInteger(&out, 1);           // step
  protocol::AppendSetHeader(&out, 2, resp);
  protocol::AppendSimple(&out, d.category);
  protocol::AppendSimple(&out, "@" + std::string(FamilyCategory(d.family)));
  protocol::AppendSetHeader(&out, 0, resp);  // tips
  protocol::AppendSetHeader(&out, 0, resp);  // key specs
  protocol::AppendSetHeader(&out, 0, resp);  // subcommands
  return out;
}

const SketchCommandDoc* Find(std::string_view name) {
  for (const SketchCommandDoc& d : kDocs) {
    std::string_view n = d.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = n[i] == static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    }
    if (same) return &d;
  }
  return nullptr;
}

}  // namespace

bool LookupSketchCommand(std::string_view name, SketchFamily* family) {
  const SketchCommandDoc* d = Find(name);
  if (d == nullptr) return false;
  *family = d->family;
  return true;
}

std::vector<SketchCommandName> SketchCommandNames() {
  std::vector<SketchCommandName> out;
  for (const SketchCommandDoc& d : kDocs) {
    out.push_back(
        {d.name, std::string_view(d.category) == "@write", d.family, FamilyCategory(d.family)});
  }
  return out;
}

std::vector<std::string> SketchCommandEntries(SketchFamilies families, protocol::Resp resp) {
  std::vector<std::string> out;
  for (const SketchCommandDoc& d : kDocs) {
    if (families & FamilyBit(d.family)) out.push_back(EncodeEntry(d, resp));
  }
  return out;
}

std::string SketchCommandEntry(std::string_view name, SketchFamilies families,
                               protocol::Resp resp) {
  const SketchCommandDoc* d = Find(name);
  return d != nullptr && (families & FamilyBit(d->family)) ? EncodeEntry(*d, resp) : std::string();
}

bool SketchArityOk(std::string_view name, size_t argc) {
  for (const SketchCommandDoc& d : kDocs) {
    if (!EqualsIgnoreCase(name, d.name)) continue;
    const auto n = static_cast<int64_t>(argc);
    return d.arity > 0 ? n == d.arity : n >= -d.arity;
  }
  return true;
}

std::vector<size_t> SketchCommandKeys(const std::vector<std::string_view>& args) {
  SketchFamily family;
  if (args.size() < 2 || !LookupSketchCommand(args[0], &family)) return {};
  std::vector<size_t> keys = {1};
  int64_t n = 0;
  if (family == SketchFamily::kCms && EqualsIgnoreCase(args[0], "cms.merge") && args.size() > 3 &&
      ParseLongLong(args[2], &n) && n > 0 && static_cast<uint64_t>(n) <= args.size() - 3) {
    for (int64_t i = 0; i < n; ++i) keys.push_back(3 + static_cast<size_t>(i));
  }
  return keys;
}

}  // namespace bloomproxy::filters

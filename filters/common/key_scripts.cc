// Which key commands become which script request (filters/common/key_scripts.h). The scripts are
// filters/common/key_*.lua, embedded at build time: those that only look at the name's markers
// (key_type.lua, key_encoding.lua, key_copy.lua, key_dump.lua, key_hash_*.lua) and those that act
// on every key of a structure (key_delete.lua, key_expire.lua, key_rename.lua, key_move.lua,
// key_restore.lua, key_memory_usage.lua, key_object_time.lua, which include filter_at.lua).
#include "filters/common/key_scripts.h"

#include "filters/common/key_copy.lua.h"
#include "filters/common/key_delete.lua.h"
#include "filters/common/key_dump.lua.h"
#include "filters/common/key_encoding.lua.h"
#include "filters/common/key_expire.lua.h"
#include "filters/common/key_hash_in_parts_read.lua.h"
#include "filters/common/key_hash_in_parts_write.lua.h"
#include "filters/common/key_hash_incrby.lua.h"
#include "filters/common/key_hash_read.lua.h"
#include "filters/common/key_hash_write.lua.h"
#include "filters/common/key_layout.h"
#include "filters/common/key_memory_usage.lua.h"
#include "filters/common/key_move.lua.h"
#include "filters/common/key_object_time.lua.h"
#include "filters/common/key_rename.lua.h"
#include "filters/common/key_restore.lua.h"
#include "filters/common/key_type.lua.h"
#include "protocol/command_table.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

enum class Kind {
  kNone,
  kType,
  kDelete,
  kExpire,
  kRename,
  kCopy,
  kEncoding,
  kHashRead,
  kHashWrite,
  kDump,
  kMove,
  kRestore,
  kMemoryUsage,
  kObjectTime,
};

// HSET, HMSET, HDEL, HMGET: the hash commands whose script runs them in parts when they have more
// arguments than one call can take.
bool RunsInParts(std::string_view name) {
  return name == "hset" || name == "hmset" || name == "hdel" || name == "hmget";
}

Kind HashKind(const protocol::CommandInfo& info, size_t argc) {
  if (argc > kMaxScriptArgs && !RunsInParts(info.name)) return Kind::kNone;
  return (info.flags & protocol::kFlagWrite) ? Kind::kHashWrite : Kind::kHashRead;
}

Kind SubcommandKind(const protocol::CommandInfo& info, const std::vector<std::string_view>& args) {
  const protocol::CommandInfo* sub = protocol::LookupSubcommand(info, args[1]);
  if (sub == nullptr || !protocol::ArityOk(*sub, args.size())) return Kind::kNone;
  if (sub->name == "object|encoding") return Kind::kEncoding;
  if (sub->name == "object|idletime" || sub->name == "object|freq") return Kind::kObjectTime;
  if (sub->name == "memory|usage") return Kind::kMemoryUsage;
  return Kind::kNone;
}

Kind KindOf(const std::vector<std::string_view>& args) {
  if (args.empty()) return Kind::kNone;
  const protocol::CommandInfo* info = protocol::LookupCommand(args[0]);
  // Wrong arity is the upstream's to report, as for any command.
  if (info == nullptr || !protocol::ArityOk(*info, args.size())) return Kind::kNone;
  const std::string_view name = info->name;
  if (info->categories & protocol::kCatHash) return HashKind(*info, args.size());
  if (name == "type") return Kind::kType;
  if (name == "del" || name == "unlink") return Kind::kDelete;
  if (name == "expire" || name == "pexpire" || name == "expireat" || name == "pexpireat" ||
      name == "persist") {
    return Kind::kExpire;
  }
  if (name == "rename" || name == "renamenx") return Kind::kRename;
  if (name == "copy") return Kind::kCopy;
  if (name == "dump") return Kind::kDump;
  if (name == "move") return Kind::kMove;
  if (name == "restore") return Kind::kRestore;
  if (name == "object" || name == "memory") return SubcommandKind(*info, args);
  return Kind::kNone;
}

// The name a command of one name acts on.
std::string_view NameOf(Kind kind, const std::vector<std::string_view>& args) {
  return kind == Kind::kEncoding || kind == Kind::kMemoryUsage || kind == Kind::kObjectTime
             ? args[2]
             : args[1];
}

// Whether the kind only reads: its script goes with EVAL_RO to Redis.
bool ReadOnly(Kind kind) {
  return kind == Kind::kType || kind == Kind::kEncoding || kind == Kind::kHashRead ||
         kind == Kind::kDump || kind == Kind::kMemoryUsage || kind == Kind::kObjectTime;
}

// The commands of one name whose script looks at the name's markers (KEYS: name; ARGV[1..5]: its
// Bloom filter, count-min sketch, cuckoo filter, Top-K and t-digest markers), and those whose
// script finds the whole structure (KEYS: name; ARGV[1]: its data-key prefix).
bool TakesMarkers(Kind kind) {
  return kind == Kind::kType || kind == Kind::kEncoding || kind == Kind::kHashRead ||
         kind == Kind::kHashWrite || kind == Kind::kDump;
}

std::string_view ScriptOf(Kind kind, const std::vector<std::string_view>& args) {
  switch (kind) {
    case Kind::kType:
      return TypeScript();
    case Kind::kEncoding:
      return EncodingScript();
    case Kind::kHashRead:
    case Kind::kHashWrite:
      if (args.size() > kMaxScriptArgs) return HashInPartsScript(kind == Kind::kHashWrite);
      return protocol::LookupCommand(args[0])->name == "hincrby"
                 ? HashIncrByScript()
                 : HashScript(kind == Kind::kHashWrite);
    case Kind::kDump:
      return DumpScript();
    case Kind::kExpire:
      return ExpireScript();
    case Kind::kMove:
      return MoveScript();
    case Kind::kRestore:
      return RestoreScript();
    case Kind::kMemoryUsage:
      return MemoryUsageScript();
    case Kind::kObjectTime:
      return ObjectTimeScript();
    default:
      return {};
  }
}

// The request of a command of one name: EVAL[_RO] <script> 1 <name> [markers] [prefix] [args].
void AppendOneName(Kind kind, const std::vector<std::string_view>& args,
                   protocol::UpstreamKind upstream, std::string* request) {
  const std::string_view name = NameOf(kind, args);
  const std::string prefix = DataKeyPrefix(name);
  const std::string marker = MarkerKey(prefix, name);
  const std::string cms_marker = CmsMarkerKey(prefix, name);
  const std::string cf_marker = CfMarkerKey(prefix, name);
  const std::string topk_marker = TopkMarkerKey(prefix, name);
  const std::string tdigest_marker = TdigestMarkerKey(prefix, name);
  const bool ro = ReadOnly(kind) && upstream != protocol::UpstreamKind::kShardingProxy;
  std::vector<std::string_view> out = {ro ? "EVAL_RO" : "EVAL", ScriptOf(kind, args)};
  if (TakesMarkers(kind)) {
    out.insert(out.end(), {"1", name, marker, cms_marker, cf_marker, topk_marker, tdigest_marker});
  } else {
    out.insert(out.end(), {"1", name, prefix});
  }
  // TYPE's script needs nothing more; every other runs the command as sent.
  if (kind != Kind::kType) out.insert(out.end(), args.begin(), args.end());
  protocol::AppendCommand(request, out);
}

// Whether a command added for issue 13 goes as it is behind a sharding proxy: no structure can
// live at a name that is not kept whole there (BF.* and CMS.* refuse it), and its markers could
// be longer than the proxy takes.
bool PlainBehindShardingProxy(Kind kind, const std::vector<std::string_view>& args,
                              protocol::UpstreamKind upstream) {
  if (upstream != protocol::UpstreamKind::kShardingProxy) return false;
  switch (kind) {
    case Kind::kHashRead:
    case Kind::kHashWrite:
    case Kind::kDump:
    case Kind::kMove:
    case Kind::kRestore:
    case Kind::kMemoryUsage:
    case Kind::kObjectTime:
      return !KeptWholeBehindShardingProxy(NameOf(kind, args));
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string_view> KeyCommandNames(const std::vector<std::string_view>& args) {
  switch (KindOf(args)) {
    case Kind::kDelete:
      return {args.begin() + 1, args.end()};
    case Kind::kRename:
    case Kind::kCopy:
      return {args[1], args[2]};
    case Kind::kType:
    case Kind::kExpire:
    case Kind::kMove:
    case Kind::kRestore:
      return {args[1]};
    default:
      // Reads, and hash writes (refused on a structure; a plain hash never becomes one).
      return {};
  }
}

bool KeyCommandRequest(const std::vector<std::string_view>& args, std::string* request,
                       protocol::UpstreamKind upstream) {
  const Kind kind = KindOf(args);
  if (kind == Kind::kNone || PlainBehindShardingProxy(kind, args, upstream)) return false;
  std::vector<std::string> prefixes;
  std::vector<std::string_view> out;
  switch (kind) {
    case Kind::kDelete: {
      for (size_t i = 1; i < args.size(); ++i) prefixes.push_back(DataKeyPrefix(args[i]));
      const std::string count = std::to_string(args.size() - 1);
      out = {"EVAL", DeleteScript(), count};
      out.insert(out.end(), args.begin() + 1, args.end());
      out.push_back(args[0]);
      out.insert(out.end(), prefixes.begin(), prefixes.end());
      protocol::AppendCommand(request, out);
      return true;
    }
    case Kind::kRename:
      prefixes = {DataKeyPrefix(args[1]), DataKeyPrefix(args[2])};
      out = {"EVAL", RenameScript(), "2", args[1], args[2], prefixes[0], prefixes[1]};
      break;
    case Kind::kCopy:
      prefixes = {DataKeyPrefix(args[1])};
      prefixes.push_back(MarkerKey(prefixes[0], args[1]));
      prefixes.push_back(CmsMarkerKey(prefixes[0], args[1]));
      prefixes.push_back(CfMarkerKey(prefixes[0], args[1]));
      prefixes.push_back(TopkMarkerKey(prefixes[0], args[1]));
      prefixes.push_back(TdigestMarkerKey(prefixes[0], args[1]));
      out = {"EVAL", CopyScript(), "7", args[1], args[2]};
      out.insert(out.end(), prefixes.begin() + 1, prefixes.end());
      break;
    default:
      AppendOneName(kind, args, upstream, request);
      return true;
  }
  out.insert(out.end(), args.begin(), args.end());
  protocol::AppendCommand(request, out);
  return true;
}

std::string_view TypeScript() { return lua::kKeyType.body; }
std::string_view CopyScript() { return lua::kKeyCopy.body; }
std::string_view EncodingScript() { return lua::kKeyEncoding.body; }
std::string_view HashScript(bool writes) {
  return writes ? lua::kKeyHashWrite.body : lua::kKeyHashRead.body;
}
std::string_view HashIncrByScript() { return lua::kKeyHashIncrby.body; }
std::string_view HashInPartsScript(bool writes) {
  return writes ? lua::kKeyHashInPartsWrite.body : lua::kKeyHashInPartsRead.body;
}
std::string_view DumpScript() { return lua::kKeyDump.body; }
std::string_view DeleteScript() { return lua::kKeyDelete.body; }
std::string_view ExpireScript() { return lua::kKeyExpire.body; }
std::string_view RenameScript() { return lua::kKeyRename.body; }
std::string_view MoveScript() { return lua::kKeyMove.body; }
std::string_view RestoreScript() { return lua::kKeyRestore.body; }
std::string_view MemoryUsageScript() { return lua::kKeyMemoryUsage.body; }
std::string_view ObjectTimeScript() { return lua::kKeyObjectTime.body; }

}  // namespace bloomproxy::filters

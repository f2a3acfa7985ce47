// The plain commands of tdigest_keyspace.h's model: TYPE, EXISTS, DEL, UNLINK, EXPIRE, TTL,
// PERSIST, RENAME, RENAMENX, COPY, OBJECT ENCODING, SET, GET, LPUSH, HSET, BF.ADD, BF.EXISTS and
// CMS.INITBYDIM (CMS.* otherwise only for WRONGTYPE): what the recorded vectors send.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/cms/cms_args.h"
#include "filters/common/sketch_resp3.h"
#include "tests/model/tdigest_keyspace.h"

namespace bloomproxy::filters {
namespace {

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  return out;
}
std::string WrongType() { return std::string(kTdigestErrWrongType); }

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }

}  // namespace

std::string TdigestKeyspace::Run(const std::vector<std::string>& args, bool resp3) {
  if (args.empty()) return "";
  TdigestCommand command;
  if (LookupTdigestCommand(args[0], &command)) return Digest(args, resp3);
  const std::string resp2 = Plain(args);
  if (!resp3 || resp2.empty()) return resp2;
  const std::vector<std::string_view> views(args.begin(), args.end());
  return ToResp3(Resp3ShapeOf(views), resp2);
}

TdigestKeyspace::Value* TdigestKeyspace::Find(std::string_view key) {
  auto it = keys_.find(std::string(key));
  return it == keys_.end() ? nullptr : &it->second;
}

const Tdigest* TdigestKeyspace::FindDigest(std::string_view key) {
  const Value* v = Find(key);
  return v == nullptr || v->type != kTdigestTypeName ? nullptr : &v->digest;
}

bool TdigestKeyspace::Upsert(const std::string& key, const std::string& type) {
  Value* v = Find(key);
  if (v == nullptr) v = &(keys_[key] = Value{type});
  return v->type == type;
}

std::string TdigestKeyspace::Plain(const std::vector<std::string>& args) {
  const std::string name = Upper(args[0]);
  const size_t argc = args.size();
  if (name == "BF.ADD" && argc == 3) {
    if (!Upsert(args[1], "MBbloom--")) return WrongType();
    return Int(Find(args[1])->bloom.insert(args[2]).second ? 1 : 0);
  }
  if (name == "BF.EXISTS" && argc == 3) {
    const Value* v = Find(args[1]);
    return Int(v != nullptr && v->type == "MBbloom--" && v->bloom.count(args[2]) > 0);
  }
  if (name.rfind("CMS.", 0) == 0 && argc >= 2) {
    const Value* v = Find(args[1]);
    if (name == "CMS.INITBYDIM") {
      if (v != nullptr) return std::string(kCmsErrKeyExists);
      keys_[args[1]] = Value{std::string(kCmsTypeName)};
      return Simple("OK");
    }
    if (v != nullptr && v->type != kCmsTypeName) return WrongType();
    return "";
  }
  const std::string keyspace = KeyCommand(name, args);
  if (!keyspace.empty()) return keyspace;
  return DataCommand(name, args);
}

// SET, GET, LPUSH, HSET: just enough for WRONGTYPE and TYPE.
std::string TdigestKeyspace::DataCommand(const std::string& name,
                                         const std::vector<std::string>& args) {
  const size_t argc = args.size();
  if (name == "SET" && argc == 3) {
    keys_[args[1]] = Value{"string", args[2]};
    return Simple("OK");
  }
  if (name == "GET" && argc == 2) {
    const Value* v = Find(args[1]);
    if (v == nullptr) return "$-1\r\n";
    return v->type == "string" ? Bulk(v->text) : WrongType();
  }
  if (name == "LPUSH" && argc >= 3) {
    if (!Upsert(args[1], "list")) return WrongType();
    return Int(static_cast<int64_t>(argc - 2));
  }
  if (name == "HSET" && argc >= 4 && argc % 2 == 0) {
    if (!Upsert(args[1], "hash")) return WrongType();
    return Int(static_cast<int64_t>(argc - 2) / 2);
  }
  return "";
}

// TYPE, EXISTS, DEL, UNLINK, EXPIRE, TTL, PERSIST, RENAME, RENAMENX, COPY, OBJECT ENCODING.
std::string TdigestKeyspace::KeyCommand(const std::string& name,
                                        const std::vector<std::string>& args) {
  const size_t argc = args.size();
  if (name == "TYPE" && argc == 2) {
    const Value* v = Find(args[1]);
    return Simple(v == nullptr ? "none" : v->type);
  }
  if ((name == "EXISTS" || name == "DEL" || name == "UNLINK") && argc >= 2) {
    int64_t n = 0;
    for (size_t i = 1; i < argc; ++i) {
      n += name == "EXISTS" ? Find(args[i]) != nullptr : static_cast<int64_t>(keys_.erase(args[i]));
    }
    return Int(n);
  }
  if (name == "EXPIRE" && argc == 3) {
    Value* v = Find(args[1]);
    if (v == nullptr) return Int(0);
    v->ttl = std::stoll(args[2]);  // time stands still in the model
    return Int(1);
  }
  if (name == "TTL" && argc == 2) {
    const Value* v = Find(args[1]);
    return Int(v == nullptr ? -2 : v->ttl);
  }
  if (name == "PERSIST" && argc == 2) {
    Value* v = Find(args[1]);
    if (v == nullptr || v->ttl == -1) return Int(0);
    v->ttl = -1;
    return Int(1);
  }
  if ((name == "RENAME" || name == "RENAMENX") && argc == 3) {
    auto it = keys_.find(args[1]);
    if (it == keys_.end()) return "-ERR no such key\r\n";
    if (name == "RENAMENX" && Find(args[2]) != nullptr) return Int(0);
    Value moved = std::move(it->second);  // with its TTL
    keys_.erase(it);
    keys_[args[2]] = std::move(moved);
    return name == "RENAME" ? Simple("OK") : Int(1);
  }
  if (name == "COPY" && argc == 3) {
    const Value* v = Find(args[1]);
    if (v == nullptr) return Int(0);
    if (v->type == kTdigestTypeName) return std::string(kTdigestErrCopyNotSupported);
    return "";
  }
  if (name == "OBJECT" && argc == 3 && Upper(args[1]) == "ENCODING") {
    const Value* v = Find(args[2]);
    if (v != nullptr && v->type == kTdigestTypeName) return Bulk("raw");
    return "";
  }
  return "";
}

}  // namespace bloomproxy::filters

// An in-memory keyspace answering TDIGEST.* as RedisBloom does, byte for byte: filters/tdigest/
// tdigest.h's maths and filters/tdigest/tdigest_args.h's parser, in the check order the parser's
// TdigestErrorOrder describes, plus the few plain Redis, BF and CMS commands the recorded vectors
// use (tests/fixtures/tdigest/). The reference the recordings (tests/unit/tdigest_model_test.cc)
// and the proxy's scripts (tests/integration/test_tdigest_model.py, through
// tests/model/tdigest_oracle.cc) are held to.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/tdigest/tdigest.h"
#include "filters/tdigest/tdigest_args.h"

namespace bloomproxy::filters {

class TdigestKeyspace {
 public:
  // The reply to `args` (command name first) in RESP2, or RESP3 when `resp3`; "" for a command
  // the model does not know.
  std::string Run(const std::vector<std::string>& args, bool resp3);
  // The digest at `key`, or null when the key is missing or holds another type.
  const Tdigest* FindDigest(std::string_view key);

 private:
  // A key. Only what the recordings look at is kept.
  struct Value {
    Value() = default;
    explicit Value(std::string t, std::string s = "") : type(std::move(t)), text(std::move(s)) {}

    std::string type;             // TYPE's answer: string, list, hash, MBbloom--, TDIS-TYPE, ...
    std::string text;             // a string's value
    std::set<std::string> bloom;  // a Bloom filter's items
    Tdigest digest;
    int64_t ttl = -1;  // time stands still in the model
  };

  Value* Find(std::string_view key);
  // Creates `key` as `type` when it is missing; false when it holds another type.
  bool Upsert(const std::string& key, const std::string& type);

  // tdigest_keyspace.cc: the plain commands.
  std::string Plain(const std::vector<std::string>& args);
  std::string DataCommand(const std::string& name, const std::vector<std::string>& args);
  std::string KeyCommand(const std::string& name, const std::vector<std::string>& args);

  // tdigest_keyspace_digest.cc: TDIGEST.*.
  std::string Digest(const std::vector<std::string>& args, bool resp3);
  std::string Merge(const TdigestRequest& req, const std::string& parse_error, Value* dest);

  std::map<std::string, Value> keys_;
};

}  // namespace bloomproxy::filters

// The recorded RedisBloom TDIGEST replies in tests/fixtures/tdigest/ (tdigest-cases.json /
// tdigest-expected.json, the format of the BF recordings: each case's commands run on a fresh key
// set, one raw RESP2 reply per command, base64-encoded; binary arguments as {"hex": ...}), and
// tdigest-resp3-expected.json, the same commands' replies after HELLO 3. BP_FIXTURES is the
// fixtures folder (a compile definition); the JSON reader and decoders are bf_fixtures.h's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters::fixtures {

inline const std::vector<Case>& TdigestCases() {
  static const std::vector<Case> cases = LoadCases("tdigest");
  return cases;
}

// The RESP3 recording: case name -> raw replies, one per command.
inline const std::map<std::string, std::vector<std::string>>& TdigestResp3Replies() {
  static const std::map<std::string, std::vector<std::string>> replies = [] {
    std::map<std::string, std::vector<std::string>> out;
    const Json root = ReadJsonFile(std::string(BP_FIXTURES) + "/tdigest-resp3-expected.json");
    for (const Json& c : root.items) {
      std::vector<std::string>& r = out[c.Get("name")->text];
      for (const Json& reply : c.Get("replies")->items) r.push_back(Base64Decode(reply.text));
    }
    return out;
  }();
  return replies;
}

}  // namespace bloomproxy::filters::fixtures

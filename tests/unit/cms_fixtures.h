// The recorded RedisBloom CMS replies in tests/fixtures/cms/ (cms-cases.json / cms-expected.json,
// the format of the BF recordings: each case's commands run on a fresh key set, one raw RESP2
// reply per command, base64-encoded; binary arguments as {"hex": ...}). BP_FIXTURES is the
// fixtures folder (a compile definition); the JSON reader and decoders are bf_fixtures.h's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters::fixtures {

inline const std::vector<Case>& CmsCases() {
  static const std::vector<Case> cases = [] {
    const Json specs = ReadJsonFile(std::string(BP_FIXTURES) + "/cms-cases.json");
    const Json expected = ReadJsonFile(std::string(BP_FIXTURES) + "/cms-expected.json");
    std::map<std::string, const Json*> replies;
    for (const Json& e : expected.items) replies[e.Get("name")->text] = e.Get("replies");
    std::vector<Case> out;
    for (const Json& spec : specs.items) {
      Case c;
      c.name = spec.Get("name")->text;
      for (const Json& cmd : spec.Get("cmds")->items) {
        std::vector<std::string> args;
        for (const Json& arg : cmd.items) {
          args.push_back(arg.type == Json::kObject ? HexDecode(arg.Get("hex")->text) : arg.text);
        }
        c.cmds.push_back(std::move(args));
      }
      for (const Json& r : replies.at(c.name)->items) c.replies.push_back(Base64Decode(r.text));
      EXPECT_EQ(c.cmds.size(), c.replies.size()) << c.name;
      out.push_back(std::move(c));
    }
    return out;
  }();
  return cases;
}

}  // namespace bloomproxy::filters::fixtures

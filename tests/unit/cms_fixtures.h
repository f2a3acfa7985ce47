// The recorded RedisBloom CMS replies in tests/fixtures/cms/ (cms-cases.json / cms-expected.json,
// the format of the BF recordings: each case's commands run on a fresh key set, one raw RESP2
// reply per command, base64-encoded; binary arguments as {"hex": ...}). BP_FIXTURES is the
// fixtures folder (a compile definition); the JSON reader and decoders are bf_fixtures.h's.
#pragma once

#include <string>
#include <vector>

#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters::fixtures {

inline const std::vector<Case>& CmsCases() {
  static const std::vector<Case> cases = LoadCases("cms");
  return cases;
}

}  // namespace bloomproxy::filters::fixtures

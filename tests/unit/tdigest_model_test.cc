// The whole recorded TDIGEST vector set replayed against the in-memory model of
// tests/model/tdigest_keyspace.h (a tiny keyspace that answers the few plain Redis, BF and CMS
// commands the recordings use, and TDIGEST.* with filters/tdigest/tdigest.h's maths). Every reply
// is compared byte for byte with RedisBloom's, in RESP2 and in RESP3 (no recorded reply is
// approximate).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "filters/tdigest/tdigest_args.h"
#include "tests/model/tdigest_keyspace.h"
#include "tests/unit/tdigest_fixtures.h"

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  return out;
}

struct ReplayCount {
  int commands = 0;
  int tdigest_commands = 0;
  int matched = 0;
};

// Replays every case in one protocol.
ReplayCount Replay(bool resp3) {
  ReplayCount count;
  for (const Case& c : TdigestCases()) {
    const std::vector<std::string>* resp3_replies = nullptr;
    if (resp3) {
      auto it = TdigestResp3Replies().find(c.name);
      if (it == TdigestResp3Replies().end()) {
        ADD_FAILURE() << "no RESP3 recording of case " << c.name;
        continue;
      }
      resp3_replies = &it->second;
      EXPECT_EQ(resp3_replies->size(), c.cmds.size()) << c.name;
    }
    TdigestKeyspace model;  // each case runs on a fresh key set
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const std::string got = model.Run(c.cmds[i], resp3);
      EXPECT_NE(got, "") << c.name << " command " << i << ": the model does not know "
                         << c.cmds[i][0];
      const std::string& want = resp3 ? resp3_replies->at(i) : c.replies[i];
      EXPECT_EQ(got, want) << c.name << " command " << i << " (" << c.cmds[i][0] << ")"
                           << (resp3 ? " RESP3" : " RESP2");
      count.matched += got == want;
      TdigestCommand command;
      count.tdigest_commands += LookupTdigestCommand(c.cmds[i][0], &command);
      ++count.commands;
    }
  }
  return count;
}

TEST(TdigestModelTest, RecordedVectorsByteForByteResp2) {
  EXPECT_EQ(TdigestCases().size(), 32u);
  const ReplayCount count = Replay(false);
  EXPECT_EQ(count.commands, 2404);
  EXPECT_EQ(count.tdigest_commands, 2352);
  EXPECT_EQ(count.matched, count.commands);
}

TEST(TdigestModelTest, RecordedVectorsByteForByteResp3) {
  EXPECT_EQ(TdigestResp3Replies().size(), 32u);
  const ReplayCount count = Replay(true);
  EXPECT_EQ(count.commands, 2404);
  EXPECT_EQ(count.matched, count.commands);
}

// The RESP3 recording differs from the RESP2 one exactly where the model says it should: the
// doubles and INFO's map (and the BF.ADD and BF.EXISTS booleans of the recordings' other keys).
TEST(TdigestModelTest, Resp3DiffersOnlyInTheShapesTheModelConverts) {
  std::set<std::string> changed;
  for (const Case& c : TdigestCases()) {
    const std::vector<std::string>& resp3 = TdigestResp3Replies().at(c.name);
    for (size_t i = 0; i < c.cmds.size() && i < resp3.size(); ++i) {
      if (resp3[i] != c.replies[i]) changed.insert(Upper(c.cmds[i][0]));
    }
  }
  EXPECT_EQ(changed,
            (std::set<std::string>{"TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.QUANTILE", "TDIGEST.CDF",
                                   "TDIGEST.TRIMMED_MEAN", "TDIGEST.BYRANK", "TDIGEST.BYREVRANK",
                                   "TDIGEST.INFO", "BF.ADD", "BF.EXISTS"}));
}

}  // namespace
}  // namespace bloomproxy::filters

// CF.* argument parsing against RedisBloom: every recorded reply that the parser must produce
// (the errors RedisBloom gives before it looks at the key), then the grammar and the check order
// one by one.
#include "filters/cuckoo/cf_args.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters {
namespace {

std::string ErrorOf(const std::vector<std::string>& args, CfRequest* req = nullptr) {
  CfRequest own;
  const std::vector<std::string_view> views(args.begin(), args.end());
  return ParseCfRequest(views, req != nullptr ? req : &own);
}

std::string Arity(std::string_view name) {
  return "-ERR wrong number of arguments for '" + std::string(name) + "' command\r\n";
}

// The errors only the arguments decide (LOADCHUNK's header and chunk errors come after the key).
bool ArgumentError(std::string_view reply) {
  for (std::string_view e : {kCfErrBadCapacity, kCfErrParseMaxIterations, kCfErrMaxIterationsRange,
                             kCfErrParseBucketSize, kCfErrBucketSizeRange, kCfErrParseExpansion,
                             kCfErrExpansionRange, kCfErrReserveCapacity, kCfErrInsertCapacity,
                             kCfErrUnknownArgument, kCfErrInvalidPosition}) {
    if (reply == e) return true;
  }
  return reply.rfind("-ERR wrong number of arguments for 'cf.", 0) == 0;
}

TEST(CfArgs, EveryRecordedArgumentError) {
  size_t checked = 0;
  for (const fixtures::Case& c : fixtures::LoadCases("cf")) {
    bool in_multi = false;
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const std::vector<std::string>& cmd = c.cmds[i];
      const std::string& reply = c.replies[i];
      CfCommand command;
      if (cmd[0] == "MULTI") in_multi = true;
      if (cmd[0] == "EXEC") in_multi = false;
      if (in_multi || !LookupCfCommand(cmd[0], &command)) continue;
      const std::string error = ErrorOf(cmd);
      if (!error.empty()) {
        EXPECT_EQ(error, reply) << c.name << " #" << i;
        ++checked;
      } else {
        EXPECT_FALSE(ArgumentError(reply)) << c.name << " #" << i << ": " << reply;
      }
    }
  }
  EXPECT_GE(checked, 60u);
}

TEST(CfArgs, ReserveOptionsAnywhereAndInOrder) {
  CfRequest req;
  ASSERT_EQ(
      ErrorOf({"CF.RESERVE", "k", "100", "expansion", "3", "bucketsize", "4", "maxiterations", "7"},
              &req),
      "");
  EXPECT_EQ(req.capacity, 100u);
  EXPECT_EQ(req.bucket_size, 4u);
  EXPECT_EQ(req.max_iterations, 7u);
  EXPECT_EQ(req.expansion, 4u);  // rounded up to a power of two
  // The first occurrence of a word counts; words that are not options are ignored.
  ASSERT_EQ(ErrorOf({"CF.RESERVE", "k", "100", "ExPaNsIoN", "2", "EXPANSION", "8"}, &req), "");
  EXPECT_EQ(req.expansion, 2u);
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "100", "FOO", "BAR"}), "");
  // MAXITERATIONS is checked first, then BUCKETSIZE, then EXPANSION, then the capacity.
  EXPECT_EQ(
      ErrorOf({"CF.RESERVE", "k", "1", "EXPANSION", "x", "BUCKETSIZE", "0", "MAXITERATIONS", "0"}),
      std::string(kCfErrMaxIterationsRange));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "1", "EXPANSION", "x", "BUCKETSIZE", "0"}),
            std::string(kCfErrBucketSizeRange));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "1", "EXPANSION", "x"}), std::string(kCfErrParseExpansion));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "1"}), std::string(kCfErrReserveCapacity));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "x", "MAXITERATIONS", "0"}),
            std::string(kCfErrBadCapacity));
  // A word that is the last argument has no value.
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "100", "x", "BUCKETSIZE"}),
            std::string(kCfErrParseBucketSize));
  // The search covers the key too: a key spelled like an option takes the next argument.
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "bucketsize", "100"}), std::string(kCfErrReserveCapacity));
  // Arity: at least 3, odd.
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k"}), Arity("cf.reserve"));
  EXPECT_EQ(ErrorOf({"cf.Reserve", "k", "100", "x"}), Arity("cf.reserve"));
  // Bounds.
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "1073741824"}), "");
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "1073741825"}), std::string(kCfErrReserveCapacity));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "510", "BUCKETSIZE", "255"}), "");
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "509", "BUCKETSIZE", "255"}),
            std::string(kCfErrReserveCapacity));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "100", "MAXITERATIONS", "65536"}),
            std::string(kCfErrMaxIterationsRange));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "100", "EXPANSION", "32769"}),
            std::string(kCfErrExpansionRange));
  EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", "100", "EXPANSION", "0"}, &req), "");
  EXPECT_EQ(req.expansion, 0u);
  // Redis's strict integers.
  for (std::string_view n : {"+5", "05", " 5", "1e3", "1.0", "-0", ""}) {
    EXPECT_EQ(ErrorOf({"CF.RESERVE", "k", std::string(n)}), std::string(kCfErrBadCapacity)) << n;
  }
}

TEST(CfArgs, InsertByFirstLetter) {
  CfRequest req;
  // The items are views into the arguments, so the arguments outlive the checks.
  const std::vector<std::string> insert{"CF.INSERT", "k",     "cap", "100",
                                        "nocreate",  "items", "a",   "b"};
  ASSERT_EQ(ErrorOf(insert, &req), "");
  EXPECT_EQ(req.capacity, 100u);
  EXPECT_TRUE(req.nocreate);
  EXPECT_EQ(req.items, (std::vector<std::string_view>{"a", "b"}));
  // Items start after the first word beginning with i; what follows is items, whatever it is.
  const std::vector<std::string> insert_nx{"CF.INSERTNX", "k", "I", "CAPACITY", "10"};
  ASSERT_EQ(ErrorOf(insert_nx, &req), "");
  EXPECT_EQ(req.items, (std::vector<std::string_view>{"CAPACITY", "10"}));
  EXPECT_TRUE(req.Nx());
  // The last CAPACITY wins; each is checked where it stands.
  ASSERT_EQ(ErrorOf({"CF.INSERT", "k", "C", "10", "C", "20", "ITEMS", "a"}, &req), "");
  EXPECT_EQ(req.capacity, 20u);
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "C", "3", "C", "20", "ITEMS", "a"}),
            std::string(kCfErrInsertCapacity));
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "C", "x", "ITEMS", "a"}), std::string(kCfErrBadCapacity));
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "C", "1073741825", "ITEMS", "a"}),
            std::string(kCfErrInsertCapacity));
  for (std::string_view word : {"", "ERROR", "EXPANSION", "BUCKETSIZE", "x"}) {
    EXPECT_EQ(ErrorOf({"CF.INSERT", "k", std::string(word), "ITEMS", "a"}),
              std::string(kCfErrUnknownArgument))
        << word;
  }
  // No ITEMS, nothing after it, or a CAPACITY without its value: arity.
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "NOCREATE", "NOCREATE"}), Arity("cf.insert"));
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "NOCREATE", "ITEMS"}), Arity("cf.insert"));
  EXPECT_EQ(ErrorOf({"CF.INSERTNX", "k", "ITEMS", "CAPACITY"}, &req), "");
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "NOCREATE", "CAPACITY"}), Arity("cf.insert"));
  EXPECT_EQ(ErrorOf({"CF.INSERT", "k", "ITEMS"}), Arity("cf.insert"));
}

TEST(CfArgs, ArityAndPositions) {
  EXPECT_EQ(ErrorOf({"CF.ADD", "k"}), Arity("cf.add"));
  EXPECT_EQ(ErrorOf({"CF.ADDNX", "k", "a", "b"}), Arity("cf.addnx"));
  EXPECT_EQ(ErrorOf({"CF.EXISTS", "k", "a", "b"}), Arity("cf.exists"));
  EXPECT_EQ(ErrorOf({"CF.MEXISTS", "k"}), Arity("cf.mexists"));
  EXPECT_EQ(ErrorOf({"CF.COUNT", "k"}), Arity("cf.count"));
  EXPECT_EQ(ErrorOf({"CF.DEL", "k"}), Arity("cf.del"));
  EXPECT_EQ(ErrorOf({"CF.COMPACT", "k", "x"}), Arity("cf.compact"));
  EXPECT_EQ(ErrorOf({"CF.INFO", "k", "x"}), Arity("cf.info"));
  EXPECT_EQ(ErrorOf({"CF.DEBUG"}), Arity("cf.debug"));
  EXPECT_EQ(ErrorOf({"CF.SCANDUMP", "k"}), Arity("cf.scandump"));
  EXPECT_EQ(ErrorOf({"CF.LOADCHUNK", "k", "1"}), Arity("cf.loadchunk"));
  // SCANDUMP: an integer >= 0; LOADCHUNK: an integer other than 0 (negative passes here).
  EXPECT_EQ(ErrorOf({"CF.SCANDUMP", "k", "-1"}), std::string(kCfErrInvalidPosition));
  EXPECT_EQ(ErrorOf({"CF.SCANDUMP", "k", "x"}), std::string(kCfErrInvalidPosition));
  EXPECT_EQ(ErrorOf({"CF.SCANDUMP", "k", "0"}), "");
  EXPECT_EQ(ErrorOf({"CF.LOADCHUNK", "k", "0", "x"}), std::string(kCfErrInvalidPosition));
  EXPECT_EQ(ErrorOf({"CF.LOADCHUNK", "k", "-5", "x"}), "");
}

TEST(CfArgs, LoadchunkVerdicts) {
  auto verdict = [](std::vector<std::string> args) {
    CfRequest req;
    const std::vector<std::string_view> views(args.begin(), args.end());
    EXPECT_EQ(ParseCfRequest(views, &req), "");
    return CheckCfLoad(req);
  };
  EXPECT_EQ(verdict({"CF.LOADCHUNK", "k", "1", "short"}).error, std::string(kCfErrInvalidHeader));
  EXPECT_EQ(verdict({"CF.LOADCHUNK", "k", "2", ""}).error, std::string(kCfErrCannotLoadChunk));
  EXPECT_EQ(verdict({"CF.LOADCHUNK", "k", "-5", "ab"}).error, std::string(kCfErrCannotLoadChunk));
  EXPECT_EQ(verdict({"CF.LOADCHUNK", "k", "2", "ab"}).error, std::string(kCfErrCannotLoadChunk));
  const CfLoadVerdict ok = verdict({"CF.LOADCHUNK", "k", "3", "ab"});
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.offset, 0u);
  EXPECT_EQ(verdict({"CF.LOADCHUNK", "k", "9223372036854775807", "ab"}).error,
            std::string(kCfErrCannotLoadChunk));
}

// Every field comes from the arguments of this parse alone: a request used before (items,
// NOCREATE, options, iterator, data) parses as a fresh one would.
TEST(CfArgs, ParseIntoAUsedRequestForgetsTheEarlierOne) {
  const std::vector<std::vector<std::string>> commands{
      {"CF.INSERTNX", "k", "CAPACITY", "100", "NOCREATE", "ITEMS", "a", "b"},
      {"CF.RESERVE", "k", "100", "BUCKETSIZE", "4", "MAXITERATIONS", "7", "EXPANSION", "0"},
      {"CF.LOADCHUNK", "k", "-5", "data"},
      {"CF.SCANDUMP", "k", "9"},
      {"CF.MEXISTS", "k", "a", "b", "c"},
      {"CF.INSERT", "k", "ITEMS", "x"},
      {"CF.ADD", "k", "y"},
      {"CF.INFO", "k"},
      {"CF.COMPACT", "k"},
  };
  for (const auto& first : commands) {
    for (const auto& second : commands) {
      CfRequest used;
      ASSERT_EQ(ErrorOf(first, &used), "");
      CfRequest fresh;
      ASSERT_EQ(ErrorOf(second, &fresh), "");
      ASSERT_EQ(ErrorOf(second, &used), "");
      const std::string what = first[0] + " then " + second[0];
      EXPECT_EQ(used.command, fresh.command) << what;
      EXPECT_EQ(used.key, fresh.key) << what;
      EXPECT_EQ(used.items, fresh.items) << what;
      EXPECT_EQ(used.capacity, fresh.capacity) << what;
      EXPECT_EQ(used.bucket_size, fresh.bucket_size) << what;
      EXPECT_EQ(used.max_iterations, fresh.max_iterations) << what;
      EXPECT_EQ(used.expansion, fresh.expansion) << what;
      EXPECT_EQ(used.nocreate, fresh.nocreate) << what;
      EXPECT_EQ(used.iterator, fresh.iterator) << what;
      EXPECT_EQ(used.data, fresh.data) << what;
    }
  }
  // And a refused parse leaves nothing of the earlier one either.
  CfRequest used;
  ASSERT_EQ(ErrorOf(commands[0], &used), "");
  ASSERT_NE(ErrorOf({"CF.INSERT", "k", "BOGUS", "ITEMS", "a"}, &used), "");
  EXPECT_TRUE(used.items.empty());
  EXPECT_FALSE(used.nocreate);
  EXPECT_EQ(used.capacity, kCfDefaultCapacity);
}

TEST(CfArgs, Writes) {
  CfRequest req;
  for (CfCommand c : {CfCommand::kExists, CfCommand::kMExists, CfCommand::kCount,
                      CfCommand::kScanDump, CfCommand::kInfo, CfCommand::kDebug}) {
    req.command = c;
    EXPECT_FALSE(req.Writes());
  }
  for (CfCommand c : {CfCommand::kReserve, CfCommand::kAdd, CfCommand::kDel, CfCommand::kCompact,
                      CfCommand::kLoadChunk, CfCommand::kInsertNx}) {
    req.command = c;
    EXPECT_TRUE(req.Writes());
  }
}

}  // namespace
}  // namespace bloomproxy::filters

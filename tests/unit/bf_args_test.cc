// BF.* argument parsing against RedisBloom: every recorded reply that depends only on the
// arguments, then the grammar, the check order and the number formats one by one.
#include "filters/bloom/bf_args.h"

#include "tests/unit/bf_fixtures.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

std::vector<std::string_view> Views(const std::vector<std::string>& args) {
  return std::vector<std::string_view>(args.begin(), args.end());
}

BfRequest MustParse(std::vector<std::string> args, const BfDefaults& defaults = BfDefaults{}) {
  static std::list<std::vector<std::string>> keep;  // the request's views point into these
  keep.push_back(std::move(args));
  BfRequest req;
  const std::string err = ParseBfRequest(Views(keep.back()), defaults, &req);
  EXPECT_EQ(err, "") << keep.back()[0];
  return req;
}

std::string ErrorOf(const std::vector<std::string>& args,
                    const BfDefaults& defaults = BfDefaults{}) {
  BfRequest req;
  return ParseBfRequest(Views(args), defaults, &req);
}

std::string Arity(std::string_view name) {
  return "-ERR wrong number of arguments for '" + std::string(name) + "' command\r\n";
}

// ---------------------------------------------------------------------------------------------
// Every recorded reply that depends only on the arguments.

bool IsKeyStateError(std::string_view reply) {
  return reply == "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n" ||
         reply == "-ERR not found\r\n" || reply == "-ERR item exists\r\n" ||
         reply == "-ERR non scaling filter is full\r\n";
}

TEST(BfArgsFixtureTest, RecordedArgumentErrors) {
  int errors = 0;
  int parsed = 0;
  std::set<std::string> distinct;
  for (const Case& c : Cases()) {
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      BfCommand command;
      if (!LookupBfCommand(c.cmds[i][0], &command)) continue;
      const std::string& reply = c.replies[i];
      const std::string err = ErrorOf(c.cmds[i]);
      if (!err.empty()) {
        EXPECT_EQ(err, reply) << c.name << " command " << i;
        distinct.insert(err);
        ++errors;
      } else {
        // Accepted arguments: RedisBloom either succeeded or objected to the key's state.
        EXPECT_TRUE(reply[0] != '-' || IsKeyStateError(reply))
            << c.name << " command " << i << ": " << reply;
        ++parsed;
      }
    }
  }
  EXPECT_GE(errors, 30);
  EXPECT_GE(distinct.size(), 20u);
  EXPECT_GT(parsed, 200);
}

TEST(BfArgsFixtureTest, RecordedSuccessfulCreations) {
  // The creation parameters of the recorded BF.RESERVE/BF.INSERT calls.
  BfRequest r = MustParse({"bf.reserve", "c1:f1", "1e-2", "100", "expansion", "2"});
  EXPECT_EQ(r.command, BfCommand::kReserve);
  EXPECT_EQ(r.key, "c1:f1");
  EXPECT_EQ(r.error_rate, 0.01);
  EXPECT_EQ(r.capacity, 100u);
  EXPECT_EQ(r.expansion, 2u);
  EXPECT_FALSE(r.nonscaling);

  r = MustParse({"BF.RESERVE", "c1:f2", ".05", "10", "nonscaling"});
  EXPECT_EQ(r.error_rate, 0.05);
  EXPECT_EQ(r.capacity, 10u);
  EXPECT_TRUE(r.nonscaling);

  r = MustParse({"bf.insert", "c1:i6", "capacity", "10", "error", "0.1", "items", "z"});
  EXPECT_EQ(r.command, BfCommand::kInsert);
  EXPECT_EQ(r.capacity, 10u);
  EXPECT_EQ(r.error_rate, 0.1);
  EXPECT_EQ(r.expansion, 2u);
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.items[0], "z");
}

// ---------------------------------------------------------------------------------------------
// Command names and arity.

TEST(BfArgsTest, LookupCommand) {
  const std::pair<std::string_view, BfCommand> names[] = {
      {"BF.RESERVE", BfCommand::kReserve},   {"bf.add", BfCommand::kAdd},
      {"Bf.MaDd", BfCommand::kMAdd},         {"bf.INSERT", BfCommand::kInsert},
      {"BF.EXISTS", BfCommand::kExists},     {"bf.mexists", BfCommand::kMExists},
      {"BF.INFO", BfCommand::kInfo},         {"bf.card", BfCommand::kCard},
      {"BF.SCANDUMP", BfCommand::kScanDump}, {"bf.loadchunk", BfCommand::kLoadChunk},
      {"Bf.Debug", BfCommand::kDebug},
  };
  for (const auto& [name, want] : names) {
    BfCommand got;
    ASSERT_TRUE(LookupBfCommand(name, &got)) << name;
    EXPECT_EQ(got, want) << name;
  }
  BfCommand got;
  const std::string_view others[] = {
      "",       "BF",  "BF.",       "BF.ADDX", "BF.AD",
      "CF.ADD", "GET", "BF.DEBUGX", " BF.ADD", std::string_view("BF.ADD\0", 7)};
  for (std::string_view other : others) {
    EXPECT_FALSE(LookupBfCommand(other, &got)) << other;
  }
}

TEST(BfArgsTest, ArityErrorsUseTheLowerCaseName) {
  const std::vector<std::vector<std::string>> bad = {
      {"BF.RESERVE", "k"},
      {"bf.reserve", "k", "0.01"},
      {"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "NONSCALING", "x"},
      {"BF.ADD", "k"},
      {"Bf.Add", "k", "a", "b"},
      {"BF.MADD", "k"},
      {"BF.INSERT", "k", "ITEMS"},
      {"BF.INSERT", "k"},
      {"BF.EXISTS", "k"},
      {"BF.EXISTS", "k", "a", "b"},
      {"BF.MEXISTS", "k"},
      {"BF.INFO"},
      {"BF.INFO", "k", "a", "b"},
      {"BF.CARD"},
      {"BF.CARD", "k", "x"},
      {"BF.SCANDUMP", "k"},
      {"BF.SCANDUMP", "k", "0", "x"},
      {"BF.LOADCHUNK", "k", "1"},
      {"BF.LOADCHUNK", "k", "1", "d", "e"},
  };
  for (const auto& args : bad) {
    std::string lower = args[0];
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(ErrorOf(args), Arity(lower)) << args[0] << " with " << args.size() << " args";
  }
  // Even with arguments that would be bad, arity is reported first.
  EXPECT_EQ(ErrorOf({"BF.SCANDUMP", "k"}), Arity("bf.scandump"));
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "abc"}), Arity("bf.reserve"));
}

// ---------------------------------------------------------------------------------------------
// BF.RESERVE.

TEST(BfReserveTest, CheckOrder) {
  // Error rate before capacity, both parse and range.
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "abc", "abc"}), "-ERR bad error rate\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "2", "abc"}),
            "-ERR error rate must be in the range (0.000000, 1.000000)\r\n");
  // Capacity before the options.
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "abc", "EXPANSION"}), "-ERR bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "0", "EXPANSION", "x"}),
            "-ERR capacity must be in the range [1, 1073741824]\r\n");
  // The expansion value before the NONSCALING conflict.
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION"}),
            "-ERR no expansion\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "x"}),
            "-ERR bad expansion\r\n");
  // The conflict before the range.
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "-1"}),
            "-Nonscaling filters cannot expand\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "40000", "NONSCALING"}),
            "-Nonscaling filters cannot expand\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "40000"}),
            "-ERR expansion must be in the range [0, 32768]\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "-1"}),
            "-ERR expansion must be in the range [0, 32768]\r\n");
  // The first EXPANSION word is the one that counts.
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "EXPANSION", "3"}),
            "-ERR bad expansion\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "EXPANSION"}), "");
}

TEST(BfReserveTest, ErrorRateNumbers) {
  const std::string kBad = "-ERR bad error rate\r\n";
  const std::string kRange = "-ERR error rate must be in the range (0.000000, 1.000000)\r\n";
  for (std::string_view ok : {"0.01", "1e-2", ".05", "+0.5", "0.999999", "1E-300", "5e-324"}) {
    BfRequest r = MustParse({"BF.RESERVE", "k", std::string(ok), "100"});
    EXPECT_EQ(r.error_rate, std::strtod(std::string(ok).c_str(), nullptr)) << ok;
  }
  for (std::string_view bad :
       {"abc", "", " 0.5", "0.5 ", "0.5x", "nan", "-nan", "1e-400", "1e400", "0,5"}) {
    EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", std::string(bad), "100"}), kBad) << bad;
  }
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", std::string("0.5\0", 4), "100"}), kBad);
  for (std::string_view range : {"0", "-0", "1", "1.0", "-0.5", "inf", "-inf", "2", "1e300"}) {
    EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", std::string(range), "100"}), kRange) << range;
  }
  // Above 0.25 is accepted here (the sizing caps it) and kept as given.
  EXPECT_EQ(MustParse({"BF.RESERVE", "k", "0.9", "100"}).error_rate, 0.9);
}

TEST(BfReserveTest, CapacityNumbers) {
  const std::string kBad = "-ERR bad capacity\r\n";
  const std::string kRange = "-ERR capacity must be in the range [1, 1073741824]\r\n";
  EXPECT_EQ(MustParse({"BF.RESERVE", "k", "0.01", "1"}).capacity, 1u);
  EXPECT_EQ(MustParse({"BF.RESERVE", "k", "0.01", "1073741824"}).capacity, 1073741824u);
  for (std::string_view bad : {"1.5", "abc", "", " 5", "5 ", "+5", "007", "1e3", "0x10", "-0", "-",
                               "99999999999999999999", "12345678901234567890123"}) {
    EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", std::string(bad)}), kBad) << bad;
  }
  for (std::string_view range :
       {"0", "-5", "1073741825", "2000000000", "9223372036854775807", "-9223372036854775808"}) {
    EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", std::string(range)}), kRange) << range;
  }
}

TEST(BfReserveTest, Options) {
  BfRequest r = MustParse({"BF.RESERVE", "k", "0.01", "100"});
  EXPECT_EQ(r.expansion, 2u);
  EXPECT_FALSE(r.nonscaling);
  EXPECT_TRUE(r.items.empty());

  r = MustParse({"BF.RESERVE", "k", "0.01", "100", "nonScaling"});
  EXPECT_TRUE(r.nonscaling);

  r = MustParse({"BF.RESERVE", "k", "0.01", "100", "Expansion", "32768"});
  EXPECT_EQ(r.expansion, 32768u);
  EXPECT_FALSE(r.nonscaling);

  // Expansion 0 means non-scaling, with or without the word.
  r = MustParse({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "0"});
  EXPECT_TRUE(r.nonscaling);
  r = MustParse({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "0"});
  EXPECT_TRUE(r.nonscaling);

  // The configured expansion is RESERVE's default; a default of 0 makes filters non-scaling.
  r = MustParse({"BF.RESERVE", "k", "0.01", "100"}, BfDefaults{0.05, 7, 5});
  EXPECT_EQ(r.expansion, 5u);
  EXPECT_EQ(r.error_rate, 0.01);
  EXPECT_EQ(r.capacity, 100u);
  r = MustParse({"BF.RESERVE", "k", "0.01", "100"}, BfDefaults{0.05, 7, 0});
  EXPECT_TRUE(r.nonscaling);

  // Other words are ignored, as RedisBloom ignores them.
  r = MustParse({"BF.RESERVE", "k", "0.01", "100", "whatever", "EXPANSION", "4"});
  EXPECT_EQ(r.expansion, 4u);
  // The key may be spelled like an option: it is not searched.
  r = MustParse({"BF.RESERVE", "NONSCALING", "0.01", "100"});
  EXPECT_FALSE(r.nonscaling);
  EXPECT_EQ(r.key, "NONSCALING");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "EXPANSION", "0.01", "100"}), "");
}

// ---------------------------------------------------------------------------------------------
// BF.INSERT.

TEST(BfInsertTest, Defaults) {
  BfRequest r = MustParse({"BF.INSERT", "k", "ITEMS", "a", "b"});
  EXPECT_EQ(r.error_rate, 0.01);
  EXPECT_EQ(r.capacity, 100u);
  EXPECT_EQ(r.expansion, 2u);
  EXPECT_FALSE(r.nonscaling);
  EXPECT_FALSE(r.nocreate);
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_EQ(r.items[0], "a");
  EXPECT_EQ(r.items[1], "b");

  r = MustParse({"BF.INSERT", "k", "ITEMS", "a"}, BfDefaults{0.02, 500, 4});
  EXPECT_EQ(r.error_rate, 0.02);
  EXPECT_EQ(r.capacity, 500u);
  EXPECT_EQ(r.expansion, 4u);
}

TEST(BfInsertTest, OptionCombinations) {
  BfRequest r = MustParse(
      {"bf.insert", "k", "capacity", "1000", "ERROR", "0.001", "Expansion", "3", "ITEMS", "x"});
  EXPECT_EQ(r.capacity, 1000u);
  EXPECT_EQ(r.error_rate, 0.001);
  EXPECT_EQ(r.expansion, 3u);
  EXPECT_FALSE(r.nonscaling);

  r = MustParse({"BF.INSERT", "k", "NONSCALING", "CAPACITY", "3", "ITEMS", "a", "b", "c", "d"});
  EXPECT_TRUE(r.nonscaling);
  EXPECT_EQ(r.capacity, 3u);
  EXPECT_EQ(r.items.size(), 4u);

  // NOCREATE with creation options is not an error (they are simply unused).
  r = MustParse({"BF.INSERT", "k", "NOCREATE", "CAPACITY", "10", "ERROR", "0.1", "ITEMS", "a"});
  EXPECT_TRUE(r.nocreate);
  EXPECT_EQ(r.capacity, 10u);

  // No conflict check in INSERT: NONSCALING with an EXPANSION is accepted.
  r = MustParse({"BF.INSERT", "k", "EXPANSION", "4", "NONSCALING", "ITEMS", "a"});
  EXPECT_TRUE(r.nonscaling);
  // Expansion 0 means non-scaling.
  r = MustParse({"BF.INSERT", "k", "EXPANSION", "0", "ITEMS", "a"});
  EXPECT_TRUE(r.nonscaling);

  // Repeated options: the last one wins.
  r = MustParse({"BF.INSERT", "k", "CAPACITY", "10", "CAPACITY", "20", "ITEMS", "a"});
  EXPECT_EQ(r.capacity, 20u);

  // After ITEMS everything is an item, option words and binary included.
  std::vector<std::string> args = {
      "BF.INSERT", "k", "ITEMS", "NOCREATE", "ITEMS", "", std::string("\0\r\n", 3)};
  r = MustParse(args);
  ASSERT_EQ(r.items.size(), 4u);
  EXPECT_EQ(r.items[0], "NOCREATE");
  EXPECT_EQ(r.items[1], "ITEMS");
  EXPECT_EQ(r.items[2], "");
  EXPECT_EQ(r.items[3], std::string_view("\0\r\n", 3));
  EXPECT_FALSE(r.nocreate);
}

TEST(BfInsertTest, Errors) {
  const std::string kArity = Arity("bf.insert");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "ERROR", "2", "ITEMS", "a"}), "-Bad error rate\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "ERROR", "0", "ITEMS", "a"}), "-Bad error rate\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "ERROR", "x", "ITEMS", "a"}), "-Bad error rate\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "ERROR", "nan", "ITEMS", "a"}), "-Bad error rate\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"}), "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAPACITY", "1.5", "ITEMS", "a"}), "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAPACITY", "-1", "ITEMS", "a"}), "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAPACITY", "1073741825", "ITEMS", "a"}),
            "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "EXPANSION", "0x", "ITEMS", "a"}), "-Bad expansion\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "EXPANSION", "-1", "ITEMS", "a"}), "-Bad expansion\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "EXPANSION", "32769", "ITEMS", "a"}), "-Bad expansion\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "BOGUS", "ITEMS", "a"}), "-Unknown argument received\r\n");
  // Whole words are required, not just RedisBloom's first letters.
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAP", "10", "ITEMS", "a"}),
            "-Unknown argument received\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "I", "a"}), "-Unknown argument received\r\n");
  // Options are read left to right: the first problem is the one reported.
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAPACITY", "0", "BOGUS", "ITEMS", "a"}),
            "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "BOGUS", "CAPACITY", "0", "ITEMS", "a"}),
            "-Unknown argument received\r\n");
  // Missing ITEMS, nothing after ITEMS, an option without its value: wrong arity.
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "CAPACITY", "10"}), kArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "ITEMS"}), kArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "NONSCALING"}), kArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "ITEMS", "a", "CAPACITY"}), "");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "CAPACITY"}), kArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "ERROR"}), kArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "EXPANSION"}), kArity);
}

// ---------------------------------------------------------------------------------------------
// The other commands.

TEST(BfArgsTest, AddAndExistsItems) {
  BfRequest r = MustParse({"BF.ADD", "k", ""});
  EXPECT_EQ(r.command, BfCommand::kAdd);
  EXPECT_EQ(r.key, "k");
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.items[0], "");
  // ADD/MADD carry the creation defaults.
  EXPECT_EQ(r.error_rate, 0.01);
  EXPECT_EQ(r.capacity, 100u);
  EXPECT_EQ(r.expansion, 2u);
  EXPECT_FALSE(r.nonscaling);

  r = MustParse({"BF.MADD", "k", "a", std::string("\0b", 2), "a"}, BfDefaults{0.001, 1000, 0});
  EXPECT_EQ(r.command, BfCommand::kMAdd);
  ASSERT_EQ(r.items.size(), 3u);
  EXPECT_EQ(r.items[1], std::string_view("\0b", 2));
  EXPECT_EQ(r.error_rate, 0.001);
  EXPECT_EQ(r.capacity, 1000u);
  EXPECT_TRUE(r.nonscaling);

  r = MustParse({"bf.exists", "k", "x"});
  EXPECT_EQ(r.command, BfCommand::kExists);
  EXPECT_EQ(r.items.size(), 1u);
  r = MustParse({"BF.MEXISTS", "k", "x", "y", "z"});
  EXPECT_EQ(r.command, BfCommand::kMExists);
  EXPECT_EQ(r.items.size(), 3u);
  r = MustParse({"BF.CARD", "k"});
  EXPECT_EQ(r.command, BfCommand::kCard);
  EXPECT_EQ(r.key, "k");
}

TEST(BfArgsTest, InfoFields) {
  EXPECT_EQ(MustParse({"BF.INFO", "k"}).info_field, InfoField::kAll);
  const std::pair<std::string, InfoField> fields[] = {
      {"CAPACITY", InfoField::kCapacity},   {"capacity", InfoField::kCapacity},
      {"Size", InfoField::kSize},           {"FILTERS", InfoField::kFilters},
      {"filters", InfoField::kFilters},     {"ITEMS", InfoField::kItems},
      {"iTeMs", InfoField::kItems},         {"EXPANSION", InfoField::kExpansion},
      {"expansion", InfoField::kExpansion},
  };
  for (const auto& [name, field] : fields) {
    EXPECT_EQ(MustParse({"BF.INFO", "k", name}).info_field, field) << name;
  }
  for (std::string bad : {"cap", "", "SIZE ", "Number of filters", "capacityx", "ITEM"}) {
    EXPECT_EQ(ErrorOf({"BF.INFO", "k", bad}), "-Invalid information value\r\n") << bad;
  }
  // The command and key are known even when the field is bad, so the caller can look the key
  // up first as RedisBloom does.
  BfRequest r;
  std::vector<std::string> args = {"BF.INFO", "missing", "cap"};
  EXPECT_NE(ParseBfRequest(Views(args), BfDefaults{}, &r), "");
  EXPECT_EQ(r.command, BfCommand::kInfo);
  EXPECT_EQ(r.key, "missing");
}

TEST(BfArgsTest, ScanDumpAndLoadChunkIterators) {
  EXPECT_EQ(MustParse({"BF.SCANDUMP", "k", "0"}).iterator, 0);
  EXPECT_EQ(MustParse({"BF.SCANDUMP", "k", "1385"}).iterator, 1385);
  EXPECT_EQ(MustParse({"BF.SCANDUMP", "k", "-3"}).iterator, -3);
  EXPECT_EQ(MustParse({"BF.SCANDUMP", "k", "9223372036854775807"}).iterator, INT64_MAX);
  for (std::string bad : {"abc", "", " 1", "1 ", "+1", "01", "1.0", "1e3", "9223372036854775808"}) {
    EXPECT_EQ(ErrorOf({"BF.SCANDUMP", "k", bad}), "-Second argument must be numeric\r\n") << bad;
    EXPECT_EQ(ErrorOf({"BF.LOADCHUNK", "k", bad, "data"}),
              "-ERR Second argument must be numeric\r\n")
        << bad;
  }
  std::vector<std::string> args = {"BF.LOADCHUNK", "k", "1097", std::string("\0\xff\r\n", 4)};
  BfRequest r = MustParse(args);
  EXPECT_EQ(r.command, BfCommand::kLoadChunk);
  EXPECT_EQ(r.iterator, 1097);
  EXPECT_EQ(r.data, std::string_view("\0\xff\r\n", 4));
}

}  // namespace
}  // namespace bloomproxy::filters

// The windowed filters' arguments (docs/windowed-filters.md): BF.RESERVE's WINDOW ms [SLOTS g],
// BF.INSERT's WINDOW ms [SLOTS g] and TTL ms, what they parse to, their errors and where those
// come among RedisBloom's. Commands without these words are bf_args_test's.
#include <gtest/gtest.h>

#include <list>
#include <string>
#include <vector>

#include "filters/bloom/bf_args.h"

namespace bloomproxy::filters {
namespace {

const std::string kBadWindow(kErrBadWindow);
const std::string kBadSlots(kErrBadSlots);
const std::string kBadTtl(kErrBadTtl);
const std::string kReserveArity = "-ERR wrong number of arguments for 'bf.reserve' command\r\n";
const std::string kInsertArity = "-ERR wrong number of arguments for 'bf.insert' command\r\n";

std::vector<std::string_view> Views(const std::vector<std::string>& args) {
  return std::vector<std::string_view>(args.begin(), args.end());
}

BfRequest MustParse(std::vector<std::string> args) {
  static std::list<std::vector<std::string>> keep;  // the request's views point into these
  keep.push_back(std::move(args));
  BfRequest req;
  EXPECT_EQ(ParseBfRequest(Views(keep.back()), BfDefaults{}, &req), "") << keep.back().size();
  return req;
}

std::string ErrorOf(const std::vector<std::string>& args) {
  BfRequest req;
  return ParseBfRequest(Views(args), BfDefaults{}, &req);
}

std::vector<std::string> Reserve(std::vector<std::string> options) {
  std::vector<std::string> args = {"BF.RESERVE", "k", "0.01", "1000"};
  args.insert(args.end(), options.begin(), options.end());
  return args;
}

std::vector<std::string> Insert(std::vector<std::string> options) {
  std::vector<std::string> args = {"BF.INSERT", "k"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"ITEMS", "a"});
  return args;
}

// ---------------------------------------------------------------------------------------------
// BF.RESERVE.

TEST(BfWindowReserveTest, Forms) {
  BfRequest r = MustParse(Reserve({"WINDOW", "60000"}));
  EXPECT_EQ(r.window_ms, 60000u);
  EXPECT_EQ(r.slots, 0u);  // the default, kDefaultWindowSlots, is the plan's to apply
  EXPECT_EQ(r.ttl_ms, 0u);
  EXPECT_EQ(r.capacity, 1000u);
  EXPECT_EQ(r.error_rate, 0.01);
  EXPECT_EQ(r.expansion, 2u);
  EXPECT_FALSE(r.nonscaling);

  r = MustParse(Reserve({"window", "1", "Slots", "2"}));
  EXPECT_EQ(r.window_ms, 1u);
  EXPECT_EQ(r.slots, 2u);

  // Every option at once: eleven arguments.
  r = MustParse(Reserve({"WINDOW", "86400000", "SLOTS", "64", "EXPANSION", "0", "NONSCALING"}));
  EXPECT_EQ(r.window_ms, 86400000u);
  EXPECT_EQ(r.slots, 64u);
  EXPECT_EQ(r.expansion, 0u);
  EXPECT_TRUE(r.nonscaling);
  r = MustParse(Reserve({"WINDOW", "86400000", "EXPANSION", "4"}));
  EXPECT_EQ(r.expansion, 4u);
  EXPECT_FALSE(r.nonscaling);

  // Words are searched for, as RedisBloom finds its own: any order.
  r = MustParse(Reserve({"SLOTS", "5", "EXPANSION", "0", "WINDOW", "3000"}));
  EXPECT_EQ(r.window_ms, 3000u);
  EXPECT_EQ(r.slots, 5u);
  EXPECT_TRUE(r.nonscaling);
  r = MustParse(Reserve({"NONSCALING", "WINDOW", std::to_string(kMaxWindowMs)}));
  EXPECT_EQ(r.window_ms, kMaxWindowMs);

  // The key is not searched; TTL is no RESERVE word and is ignored like any other.
  r = MustParse({"BF.RESERVE", "WINDOW", "0.01", "100"});
  EXPECT_EQ(r.window_ms, 0u);
  r = MustParse(Reserve({"TTL", "5"}));
  EXPECT_EQ(r.window_ms, 0u);
  EXPECT_EQ(r.ttl_ms, 0u);
}

TEST(BfWindowReserveTest, Arity) {
  // WINDOW ms makes room for 2 more arguments, SLOTS g with it for 2 more.
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "10", "x", "y", "z"})), "");
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "10", "x", "y", "z", "w"})), kReserveArity);
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "10", "SLOTS", "3", "EXPANSION", "0", "NONSCALING"})), "");
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "10", "SLOTS", "3", "EXPANSION", "0", "NONSCALING", "x"})),
            kReserveArity);
  // Without WINDOW, RedisBloom's limit of 7, SLOTS or not: its arity error comes first.
  EXPECT_EQ(ErrorOf(Reserve({"EXPANSION", "0", "NONSCALING", "x"})), kReserveArity);
  EXPECT_EQ(ErrorOf(Reserve({"SLOTS", "1", "EXPANSION", "x"})), kReserveArity);
  EXPECT_EQ(ErrorOf(Reserve({"SLOTS", "3", "x", "y"})), kReserveArity);
  EXPECT_EQ(ErrorOf(Reserve({"SLOTS", "3", "x"})), kBadSlots);
  // And the least stays 4.
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "WINDOW"}), kReserveArity);
}

TEST(BfWindowReserveTest, Errors) {
  for (const char* bad :
       {"0", "-1", "abc", "", "+5", "05", "1.5", "1e3", " 5", "5 ", "9223372036854775808"}) {
    EXPECT_EQ(ErrorOf(Reserve({"WINDOW", bad})), kBadWindow) << bad;
    EXPECT_EQ(ErrorOf(Reserve({"WINDOW", bad, "SLOTS", "3"})), kBadWindow) << bad;
  }
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", std::to_string(kMaxWindowMs + 1)})), kBadWindow);
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW"})), kBadWindow);                // no value
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "SLOTS", "3"})), kBadWindow);  // SLOTS is its value

  for (const char* bad : {"0", "1", "65", "-2", "x", "", "03", "2.0"}) {
    EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "1000", "SLOTS", bad})), kBadSlots) << bad;
  }
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "1000", "SLOTS"})), kBadSlots);
  // SLOTS without WINDOW: refused, not ignored.
  EXPECT_EQ(ErrorOf(Reserve({"SLOTS", "3"})), kBadSlots);
  EXPECT_EQ(ErrorOf(Reserve({"NONSCALING", "SLOTS", "3"})), kBadSlots);
}

TEST(BfWindowReserveTest, RedisBloomsErrorsComeFirst) {
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "x", "100", "WINDOW", "0"}), "-ERR bad error rate\r\n");
  EXPECT_EQ(ErrorOf({"BF.RESERVE", "k", "0.01", "0", "WINDOW", "0"}),
            "-ERR capacity must be in the range [1, 1073741824]\r\n");
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "0", "EXPANSION"})), "-ERR no expansion\r\n");
  EXPECT_EQ(ErrorOf(Reserve({"SLOTS", "1", "EXPANSION"})), "-ERR no expansion\r\n");
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "x", "EXPANSION", "3", "NONSCALING"})),
            "-Nonscaling filters cannot expand\r\n");
  EXPECT_EQ(ErrorOf(Reserve({"WINDOW", "x", "EXPANSION", "40000"})),
            "-ERR expansion must be in the range [0, 32768]\r\n");
  // WINDOW's value as EXPANSION's: RedisBloom's error.
  EXPECT_EQ(ErrorOf(Reserve({"EXPANSION", "WINDOW", "10"})), "-ERR bad expansion\r\n");
  // Then the window before its slots.
  EXPECT_EQ(ErrorOf(Reserve({"SLOTS", "1", "WINDOW", "0"})), kBadWindow);
}

// ---------------------------------------------------------------------------------------------
// BF.INSERT.

TEST(BfWindowInsertTest, Forms) {
  BfRequest r = MustParse(Insert({"WINDOW", "60000"}));
  EXPECT_EQ(r.window_ms, 60000u);
  EXPECT_EQ(r.slots, 0u);
  EXPECT_EQ(r.ttl_ms, 0u);
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.items[0], "a");

  r = MustParse(Insert({"CAPACITY", "5000", "ERROR", "0.001", "EXPANSION", "4", "NOCREATE",
                        "NONSCALING", "WINDOW", "60000", "SLOTS", "5", "TTL", "1000"}));
  EXPECT_EQ(r.capacity, 5000u);
  EXPECT_EQ(r.error_rate, 0.001);
  EXPECT_EQ(r.expansion, 4u);
  EXPECT_TRUE(r.nocreate);
  EXPECT_TRUE(r.nonscaling);
  EXPECT_EQ(r.window_ms, 60000u);
  EXPECT_EQ(r.slots, 5u);
  EXPECT_EQ(r.ttl_ms, 1000u);

  // Any order; a TTL may equal the window, and is checked against it after every option.
  r = MustParse(Insert({"ttl", "3000", "slots", "64", "window", "3000"}));
  EXPECT_EQ(r.window_ms, 3000u);
  EXPECT_EQ(r.slots, 64u);
  EXPECT_EQ(r.ttl_ms, 3000u);
  r = MustParse(Insert({"WINDOW", "10", "TTL", "1", "SLOTS", "2"}));
  EXPECT_EQ(r.ttl_ms, 1u);
  EXPECT_EQ(r.slots, 2u);

  // TTL alone: kept for the plan, which checks it against the filter's window.
  r = MustParse(Insert({"TTL", "5"}));
  EXPECT_EQ(r.window_ms, 0u);
  EXPECT_EQ(r.ttl_ms, 5u);
  r = MustParse(Insert({"TTL", std::to_string(kMaxWindowMs)}));
  EXPECT_EQ(r.ttl_ms, kMaxWindowMs);

  // Repeated options: the last one wins, and the TTL is checked against that window.
  r = MustParse(Insert({"WINDOW", "10", "TTL", "15", "WINDOW", "20"}));
  EXPECT_EQ(r.window_ms, 20u);
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", "20", "TTL", "15", "WINDOW", "10"})), kBadTtl);

  // After ITEMS the words are items.
  r = MustParse({"BF.INSERT", "k", "ITEMS", "WINDOW", "0", "TTL"});
  EXPECT_EQ(r.window_ms, 0u);
  EXPECT_EQ(r.items.size(), 3u);
}

TEST(BfWindowInsertTest, Errors) {
  for (const char* bad : {"0", "-1", "abc", "", "+5", "05", "1.5", "ITEMS"}) {
    EXPECT_EQ(ErrorOf(Insert({"WINDOW", bad})), kBadWindow) << bad;
    EXPECT_EQ(ErrorOf(Insert({"WINDOW", "100", "SLOTS", bad})), kBadSlots) << bad;
    EXPECT_EQ(ErrorOf(Insert({"WINDOW", "100", "TTL", bad})), kBadTtl) << bad;
    EXPECT_EQ(ErrorOf(Insert({"TTL", bad})), kBadTtl) << bad;
  }
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", std::to_string(kMaxWindowMs + 1)})), kBadWindow);
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", "100", "SLOTS", "1"})), kBadSlots);
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", "100", "SLOTS", "65"})), kBadSlots);
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", "100", "TTL", "101"})), kBadTtl);
  EXPECT_EQ(ErrorOf(Insert({"TTL", "101", "WINDOW", "100"})), kBadTtl);
  // No TTL outlives the longest window, with or without WINDOW.
  EXPECT_EQ(ErrorOf(Insert({"TTL", std::to_string(kMaxWindowMs + 1)})), kBadTtl);
  // SLOTS needs WINDOW in the same command.
  EXPECT_EQ(ErrorOf(Insert({"SLOTS", "3"})), kBadSlots);
  EXPECT_EQ(ErrorOf(Insert({"SLOTS", "3", "TTL", "5"})), kBadSlots);
}

TEST(BfWindowInsertTest, CheckOrder) {
  // Left to right: the first bad option is the one reported.
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", "0", "CAPACITY", "0"})), kBadWindow);
  EXPECT_EQ(ErrorOf(Insert({"CAPACITY", "0", "WINDOW", "0"})), "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf(Insert({"TTL", "0", "SLOTS", "0"})), kBadTtl);
  EXPECT_EQ(ErrorOf(Insert({"WINDOW", "5", "BOGUS"})), "-Unknown argument received\r\n");
  EXPECT_EQ(ErrorOf(Insert({"BOGUS", "WINDOW", "0"})), "-Unknown argument received\r\n");
  // Whole words only.
  EXPECT_EQ(ErrorOf(Insert({"WIN", "5"})), "-Unknown argument received\r\n");
  EXPECT_EQ(ErrorOf(Insert({"T", "5"})), "-Unknown argument received\r\n");
  // An option without its value, or no items: RedisBloom's arity error, as for CAPACITY.
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "WINDOW"}), kInsertArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "SLOTS"}), kInsertArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "NOCREATE", "TTL"}), kInsertArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "WINDOW", "10"}), kInsertArity);
  // Checks between options come after the arity: the command was incomplete first.
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "SLOTS", "3", "ITEMS"}), kInsertArity);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "WINDOW", "5", "TTL", "10", "ITEMS"}), kInsertArity);
  // In-option errors still come before a missing item, as Bad capacity does.
  EXPECT_EQ(ErrorOf({"BF.INSERT", "k", "WINDOW", "0", "ITEMS"}), kBadWindow);
}

// ---------------------------------------------------------------------------------------------
// Everything else: no window.

TEST(BfWindowArgsTest, PlainCommandsHaveNoWindow) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"BF.ADD", "k", "a"},
           {"BF.MADD", "k", "WINDOW", "5"},
           {"BF.EXISTS", "k", "a"},
           {"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "0", "NONSCALING"},
           {"BF.INSERT", "k", "CAPACITY", "10", "ITEMS", "a"},
       }) {
    const BfRequest r = MustParse(args);
    EXPECT_EQ(r.window_ms, 0u) << args[0];
    EXPECT_EQ(r.slots, 0u) << args[0];
    EXPECT_EQ(r.ttl_ms, 0u) << args[0];
    EXPECT_EQ(r.expire_at_ms, 0) << args[0];
  }
  // A request used before starts over.
  std::vector<std::string> windowed = Insert({"WINDOW", "10", "SLOTS", "4", "TTL", "5"});
  std::vector<std::string> plain = {"BF.ADD", "k", "a"};
  BfRequest r;
  ASSERT_EQ(ParseBfRequest(Views(windowed), BfDefaults{}, &r), "");
  r.expire_at_ms = 7;
  ASSERT_EQ(ParseBfRequest(Views(plain), BfDefaults{}, &r), "");
  EXPECT_EQ(r.window_ms, 0u);
  EXPECT_EQ(r.slots, 0u);
  EXPECT_EQ(r.ttl_ms, 0u);
  EXPECT_EQ(r.expire_at_ms, 0);
}

}  // namespace
}  // namespace bloomproxy::filters

#include "protocol/command_table.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <new>
#include <set>
#include <string>
#include <string_view>

// Counts heap allocations, to check that lookups make none.
static size_t g_allocations = 0;

void* operator new(size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace bloomproxy::protocol {
namespace {

TEST(CommandTableTest, LookupIsCaseInsensitive) {
  for (std::string_view name : {"get", "GET", "Get", "gEt"}) {
    const CommandInfo* info = LookupCommand(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, "get");
  }
  // Non-letters are left alone by the case folding.
  ASSERT_NE(LookupCommand("GEORADIUSBYMEMBER_RO"), nullptr);
  ASSERT_NE(LookupCommand("HOST:"), nullptr);
}

TEST(CommandTableTest, Arity) {
  EXPECT_EQ(LookupCommand("get")->arity, 2);
  EXPECT_EQ(LookupCommand("set")->arity, -3);
  EXPECT_EQ(LookupCommand("ping")->arity, -1);

  const CommandInfo& get = *LookupCommand("get");
  EXPECT_FALSE(ArityOk(get, 1));
  EXPECT_TRUE(ArityOk(get, 2));
  EXPECT_FALSE(ArityOk(get, 3));
  const CommandInfo& set = *LookupCommand("set");
  EXPECT_FALSE(ArityOk(set, 2));
  EXPECT_TRUE(ArityOk(set, 3));
  EXPECT_TRUE(ArityOk(set, 7));
  EXPECT_TRUE(ArityOk(*LookupCommand("ping"), 1));
}

TEST(CommandTableTest, Keys) {
  const CommandInfo& mset = *LookupCommand("mset");
  EXPECT_EQ(mset.first_key, 1);
  EXPECT_EQ(mset.last_key, -1);
  EXPECT_EQ(mset.key_step, 2);
  const CommandInfo& get = *LookupCommand("get");
  EXPECT_EQ(get.first_key, 1);
  EXPECT_EQ(get.last_key, 1);
  EXPECT_EQ(get.key_step, 1);
  EXPECT_EQ(LookupCommand("ping")->first_key, 0);
}

TEST(CommandTableTest, Flags) {
  EXPECT_TRUE(LookupCommand("get")->flags & kFlagReadonly);
  EXPECT_TRUE(LookupCommand("get")->flags & kFlagFast);
  EXPECT_FALSE(LookupCommand("get")->flags & kFlagWrite);
  EXPECT_TRUE(LookupCommand("set")->flags & kFlagWrite);
  EXPECT_TRUE(LookupCommand("set")->flags & kFlagDenyOom);
  EXPECT_TRUE(LookupCommand("blpop")->flags & kFlagBlocking);
  EXPECT_TRUE(LookupCommand("auth")->flags & kFlagNoAuth);
  EXPECT_TRUE(LookupCommand("subscribe")->flags & kFlagPubsub);
  EXPECT_TRUE(LookupCommand("xread")->flags & kFlagMovableKeys);
}

const Route& RouteOf(std::string_view name) {
  const CommandInfo* info = LookupFullName(name);
  EXPECT_NE(info, nullptr) << name;
  static const Route kMissing{};
  return info != nullptr ? info->route : kMissing;
}

TEST(CommandTableTest, EveryCommandHasExactlyOneRouteRow) {
  // The rows were written by reading what each command does to its connection: a command Redis
  // adds must get a row of its own, never fall back to a default unnoticed.
  std::vector<std::string_view> rows = RouteRowNames();
  std::set<std::string_view> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_TRUE(seen.insert(rows[i]).second) << "two rows for " << rows[i];
    if (i > 0) {
      EXPECT_LT(rows[i - 1], rows[i]) << "rows out of order at " << rows[i];
    }
  }
  std::set<std::string_view> commands;
  for (const CommandInfo* info : AllCommands()) commands.insert(info->name);
  for (std::string_view name : commands) EXPECT_TRUE(seen.count(name)) << "no row for " << name;
  for (std::string_view name : seen)
    EXPECT_TRUE(commands.count(name)) << "row for unknown " << name;
}

TEST(CommandTableTest, Routes) {
  for (std::string_view name : {"ping", "echo", "hello", "auth", "client", "quit", "reset", "info",
                                "client|id", "client|kill", "client|list", "client|setname"}) {
    EXPECT_EQ(RouteOf(name).conn, Conn::kLocal) << name;
  }
  for (std::string_view name :
       {"select", "multi", "watch", "subscribe", "psubscribe", "ssubscribe", "monitor",
        "client|tracking", "client|no-evict", "readonly", "asking"}) {
    EXPECT_EQ(RouteOf(name).conn, Conn::kPinned) << name;
  }
  for (std::string_view name :
       {"blpop",    "brpop",       "blmove",        "brpoplpush",     "blmpop",
        "bzpopmin", "bzpopmax",    "bzmpop",        "wait",           "eval",
        "evalsha",  "eval_ro",     "evalsha_ro",    "fcall",          "fcall_ro",
        "debug",    "script|kill", "function|kill", "client|unpause", "client|unblock",
        "shutdown"}) {
    EXPECT_EQ(RouteOf(name).conn, Conn::kDedicated) << name;
  }
  for (std::string_view name : {"sync", "psync", "replconf", "script|debug"}) {
    EXPECT_EQ(RouteOf(name).conn, Conn::kTunnel) << name;
  }
  for (std::string_view name : {"post", "POST", "host:", "Host:"}) {
    EXPECT_EQ(RouteOf(name).conn, Conn::kCloseClient) << name;
  }
  for (std::string_view name : {"get", "set", "command", "del", "config", "exec", "unwatch",
                                "unsubscribe", "xread", "client|pause", "publish"}) {
    EXPECT_EQ(RouteOf(name).conn, Conn::kShared) << name;
  }
}

TEST(CommandTableTest, RouteEffectsAndTraits) {
  EXPECT_EQ(RouteOf("select").effect, Effect::kSelect);
  EXPECT_EQ(RouteOf("select").in_multi, InMulti::kTrack);
  EXPECT_EQ(RouteOf("xreadgroup").effect, Effect::kBlockOption);
  EXPECT_EQ(RouteOf("subscribe").in_multi, InMulti::kTunnel);
  EXPECT_EQ(RouteOf("replconf").in_multi, InMulti::kTunnel);
  EXPECT_EQ(RouteOf("client|kill").in_multi, InMulti::kAtExec);
  EXPECT_EQ(RouteOf("get").in_multi, InMulti::kQueue);
  EXPECT_TRUE(RouteOf("eval").traits & kTraitMayReplicate);
  EXPECT_FALSE(RouteOf("eval_ro").traits & kTraitMayReplicate);
  EXPECT_TRUE(RouteOf("eval_ro").traits & kTraitStallsServer);
  for (std::string_view name : {"type", "del", "unlink", "expire", "pexpire", "expireat",
                                "pexpireat", "persist", "rename", "renamenx"}) {
    EXPECT_TRUE(RouteOf(name).traits & kTraitFilterKey) << name;
  }
  EXPECT_FALSE(RouteOf("get").traits & kTraitFilterKey);
}

TEST(CommandTableTest, FullNames) {
  ASSERT_NE(LookupFullName("Client|GetName"), nullptr);
  EXPECT_EQ(LookupFullName("Client|GetName")->name, "client|getname");
  EXPECT_EQ(LookupFullName("get")->name, "get");
  EXPECT_EQ(LookupFullName("client"), LookupCommand("client"));
  EXPECT_EQ(LookupFullName("client|nosuch"), nullptr);
  EXPECT_EQ(LookupFullName("get|x"), nullptr);
  EXPECT_EQ(LookupFullName("nosuch|id"), nullptr);
}

TEST(CommandTableTest, UnknownNames) {
  EXPECT_EQ(LookupCommand(""), nullptr);
  EXPECT_EQ(LookupCommand("nosuchcommand"), nullptr);
  EXPECT_EQ(LookupCommand("ge"), nullptr);
  EXPECT_EQ(LookupCommand("gett"), nullptr);
  EXPECT_EQ(LookupCommand(std::string_view("get\0", 4)), nullptr);
  EXPECT_EQ(LookupCommand("client setname"), nullptr);  // subcommands are not rows
}

TEST(CommandTableTest, VeryLongName) {
  EXPECT_EQ(LookupCommand(std::string(100000, 'a')), nullptr);
  // The longest real name, and one character more.
  EXPECT_NE(LookupCommand("GEORADIUSBYMEMBER_RO"), nullptr);
  EXPECT_EQ(LookupCommand("georadiusbymember_rox"), nullptr);
  EXPECT_EQ(LookupCommand(std::string(21, 'x')), nullptr);
}

TEST(CommandTableTest, LookupDoesNotAllocate) {
  ASSERT_NE(LookupCommand("get"), nullptr);  // builds the table
  const std::string long_name(1000, 'x');
  size_t before = g_allocations;
  for (std::string_view name : {"GET", "set", "ZRangeByScore", "nosuch", "host:"}) {
    LookupCommand(name);
  }
  LookupCommand(long_name);
  EXPECT_EQ(g_allocations, before);
}

TEST(CommandTableTest, Count) {
  // Redis 7.0 lists 240 top-level commands (more in later versions); POST and Host: are added
  // by the proxy.
  EXPECT_GE(CommandCount(), 242u);
  // Subcommands have rows of their own.
  const CommandInfo* client = LookupCommand("CLIENT");
  ASSERT_NE(client, nullptr);
  const CommandInfo* getname = LookupSubcommand(*client, "GetName");
  ASSERT_NE(getname, nullptr);
  EXPECT_EQ(getname->name, "client|getname");
  EXPECT_EQ(getname->arity, 2);
  EXPECT_EQ(LookupSubcommand(*client, "nosuch"), nullptr);
  EXPECT_EQ(LookupSubcommand(*LookupCommand("get"), "x"), nullptr);
}

}  // namespace
}  // namespace bloomproxy::protocol

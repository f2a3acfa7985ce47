// Per-user command rules (proxy/client/acl.h): order, subcommands, @all, and name checks.
#include "proxy/client/acl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bloomproxy::proxy {
namespace {

CommandAcl Compiled(const std::vector<std::string>& rules) {
  CommandAcl acl;
  std::string error;
  EXPECT_TRUE(CommandAcl::Compile(rules, &acl, &error)) << error;
  return acl;
}

TEST(CommandAclTest, RulesStartFromNoCommands) {
  CommandAcl acl = Compiled({"+get", "+bf.add"});
  EXPECT_TRUE(acl.Allows("get"));
  EXPECT_TRUE(acl.Allows("bf.add"));
  EXPECT_FALSE(acl.Allows("set"));
  EXPECT_FALSE(acl.Allows("bf.exists"));
  EXPECT_FALSE(acl.Allows("client|id"));
}

TEST(CommandAclTest, AllMinusSome) {
  CommandAcl acl = Compiled({"+@all", "-flushall", "-config|set"});
  EXPECT_TRUE(acl.Allows("get"));
  EXPECT_TRUE(acl.Allows("config|get"));
  EXPECT_FALSE(acl.Allows("config|set"));
  EXPECT_FALSE(acl.Allows("flushall"));
  EXPECT_TRUE(acl.Allows("json.get"));  // commands no rule names follow @all
}

TEST(CommandAclTest, LaterRulesWin) {
  CommandAcl acl = Compiled({"+@all", "-get", "+get"});
  EXPECT_TRUE(acl.Allows("get"));
  acl = Compiled({"+get", "-@all"});
  EXPECT_FALSE(acl.Allows("get"));  // @all clears what came before
  acl = Compiled({"-@all", "+get", "+@all", "-set"});
  EXPECT_TRUE(acl.Allows("get"));
  EXPECT_FALSE(acl.Allows("set"));
}

TEST(CommandAclTest, CommandRuleReplacesItsSubcommandRules) {
  CommandAcl acl = Compiled({"-@all", "+client|getname", "+config", "-config|set"});
  EXPECT_TRUE(acl.Allows("client|getname"));
  EXPECT_FALSE(acl.Allows("client|id"));
  EXPECT_FALSE(acl.Allows("client"));
  EXPECT_TRUE(acl.Allows("config|get"));
  EXPECT_FALSE(acl.Allows("config|set"));
  acl = Compiled({"+@all", "-config|set", "+config"});
  EXPECT_TRUE(acl.Allows("config|set"));
  acl = Compiled({"+@all", "-config", "+config|get"});
  EXPECT_TRUE(acl.Allows("config|get"));
  EXPECT_FALSE(acl.Allows("config|set"));
}

TEST(CommandAclTest, Categories) {
  CommandAcl acl = Compiled({"+@all", "-@dangerous", "+debug"});
  EXPECT_TRUE(acl.Allows("get"));
  EXPECT_FALSE(acl.Allows("flushall"));
  EXPECT_FALSE(acl.Allows("keys"));
  EXPECT_FALSE(acl.Allows("config|set"));
  EXPECT_TRUE(acl.Allows("debug"));  // the later rule wins
  EXPECT_TRUE(acl.Allows("json.get"));

  acl = Compiled({"nocommands", "+@read", "-@slow"});
  EXPECT_TRUE(acl.Allows("get"));
  EXPECT_TRUE(acl.Allows("bf.exists"));  // @read, as its COMMAND entry says
  EXPECT_FALSE(acl.Allows("keys"));      // @read but @slow
  EXPECT_FALSE(acl.Allows("set"));
  EXPECT_FALSE(acl.Allows("json.get"));  // unknown commands follow @all only

  acl = Compiled({"+@bloom", "-@write"});
  EXPECT_TRUE(acl.Allows("bf.exists"));
  EXPECT_TRUE(acl.Allows("bf.scandump"));
  EXPECT_TRUE(acl.Allows("bf.debug"));
  EXPECT_FALSE(acl.Allows("bf.add"));
  EXPECT_FALSE(acl.Allows("bf.loadchunk"));
  EXPECT_FALSE(acl.Allows("get"));

  // A subcommand is decided by its own categories.
  acl = Compiled({"+@all", "-@admin"});
  EXPECT_FALSE(acl.Allows("config|set"));
  EXPECT_TRUE(acl.Allows("client|getname"));
  EXPECT_FALSE(acl.Allows("client|kill"));
}

TEST(CommandAclTest, RedisBloomCategories) {
  // Each family is its own category, as RedisBloom registers them on Redis 7.4 and later.
  CommandAcl acl = Compiled({"+@all", "-@bloom"});
  EXPECT_FALSE(acl.Allows("bf.add"));
  EXPECT_FALSE(acl.Allows("bf.info"));
  EXPECT_TRUE(acl.Allows("cf.add"));
  EXPECT_TRUE(acl.Allows("cms.query"));
  acl = Compiled({"nocommands", "+@cuckoo"});
  EXPECT_TRUE(acl.Allows("cf.reserve"));
  EXPECT_TRUE(acl.Allows("cf.compact"));
  EXPECT_FALSE(acl.Allows("bf.add"));
  EXPECT_FALSE(acl.Allows("cms.incrby"));
  acl = Compiled({"nocommands", "+@cms"});
  EXPECT_TRUE(acl.Allows("cms.merge"));
  EXPECT_FALSE(acl.Allows("cf.add"));
  acl = Compiled({"nocommands", "+@topk"});
  for (const char* name : {"topk.reserve", "topk.add", "topk.incrby", "topk.query", "topk.count",
                           "topk.list", "topk.info"}) {
    EXPECT_TRUE(acl.Allows(name)) << name;
  }
  EXPECT_FALSE(acl.Allows("cf.add"));
  EXPECT_FALSE(acl.Allows("get"));
  // TOPK.* are @write or @read as RedisBloom registers them, none @fast.
  acl = Compiled({"+@all", "-@topk", "+@read"});
  EXPECT_FALSE(acl.Allows("topk.add"));
  EXPECT_TRUE(acl.Allows("topk.query"));
  EXPECT_TRUE(acl.Allows("topk.info"));
  acl = Compiled({"nocommands", "+@topk", "-@write"});
  EXPECT_FALSE(acl.Allows("topk.reserve"));
  EXPECT_FALSE(acl.Allows("topk.incrby"));
  EXPECT_TRUE(acl.Allows("topk.list"));
  acl = Compiled({"nocommands", "+@fast"});
  EXPECT_FALSE(acl.Allows("topk.info"));
  acl = Compiled({"+@all", "-@bloom", "-@cuckoo", "-@cms"});
  EXPECT_TRUE(acl.Allows("topk.add"));
  EXPECT_TRUE(acl.Allows("tdigest.add"));
  acl = Compiled({"nocommands", "+@tdigest"});
  for (const char* name :
       {"tdigest.create", "tdigest.add", "tdigest.reset", "tdigest.merge", "tdigest.min",
        "tdigest.max", "tdigest.quantile", "tdigest.byrank", "tdigest.byrevrank", "tdigest.rank",
        "tdigest.revrank", "tdigest.cdf", "tdigest.trimmed_mean", "tdigest.info"}) {
    EXPECT_TRUE(acl.Allows(name)) << name;
  }
  EXPECT_FALSE(acl.Allows("bf.add"));
  EXPECT_FALSE(acl.Allows("topk.add"));
  EXPECT_FALSE(acl.Allows("get"));
  // TDIGEST.* are @write (CREATE, ADD, RESET, MERGE) or @read, as RedisBloom registers them,
  // though some reads compress the digest; @fast all but ADD, MERGE and TRIMMED_MEAN.
  acl = Compiled({"+@all", "-@tdigest", "+@read"});
  EXPECT_FALSE(acl.Allows("tdigest.merge"));
  EXPECT_TRUE(acl.Allows("tdigest.quantile"));
  EXPECT_TRUE(acl.Allows("tdigest.trimmed_mean"));
  acl = Compiled({"nocommands", "+@tdigest", "-@write"});
  EXPECT_FALSE(acl.Allows("tdigest.create"));
  EXPECT_FALSE(acl.Allows("tdigest.add"));
  EXPECT_TRUE(acl.Allows("tdigest.cdf"));
  acl = Compiled({"nocommands", "+@fast"});
  EXPECT_TRUE(acl.Allows("tdigest.create"));
  EXPECT_TRUE(acl.Allows("tdigest.info"));
  EXPECT_FALSE(acl.Allows("tdigest.add"));
  EXPECT_FALSE(acl.Allows("tdigest.merge"));
  EXPECT_FALSE(acl.Allows("tdigest.trimmed_mean"));
  acl = Compiled({"+@all", "-@tdigest"});
  EXPECT_FALSE(acl.Allows("tdigest.info"));
  EXPECT_TRUE(acl.Allows("topk.info"));
  // @fast as RedisBloom sets it: BF.INFO and BF.CARD are, BF.EXISTS is not.
  acl = Compiled({"nocommands", "+@fast"});
  EXPECT_TRUE(acl.Allows("bf.info"));
  EXPECT_TRUE(acl.Allows("bf.card"));
  EXPECT_FALSE(acl.Allows("bf.exists"));
  EXPECT_FALSE(acl.Allows("bf.debug"));
}

TEST(CommandAclTest, ModuleCommandsNamedInRules) {
  CommandAcl acl = Compiled({"nocommands", "+json.get"});
  EXPECT_TRUE(acl.Allows("json.get"));
  EXPECT_FALSE(acl.Allows("json.set"));
  acl = Compiled({"+@all", "-json.set", "-@read"});
  EXPECT_FALSE(acl.Allows("json.set"));
  EXPECT_TRUE(acl.Allows("json.get"));  // not known to be @read
}

TEST(CommandAclTest, UnknownNamesAreErrors) {
  CommandAcl acl;
  std::string error;
  EXPECT_FALSE(CommandAcl::Compile({"+nosuch"}, &acl, &error));
  EXPECT_EQ(error, "rule '+nosuch': unknown command 'nosuch'");
  EXPECT_FALSE(CommandAcl::Compile({"-config|nosuch"}, &acl, &error));
  EXPECT_EQ(error, "rule '-config|nosuch': unknown subcommand 'nosuch' of 'config'");
  EXPECT_FALSE(CommandAcl::Compile({"+get|x"}, &acl, &error));
  EXPECT_EQ(error, "rule '+get|x': unknown subcommand 'x' of 'get'");
  EXPECT_FALSE(CommandAcl::Compile({"+nosuch|x"}, &acl, &error));
  EXPECT_EQ(error, "rule '+nosuch|x': unknown command 'nosuch'");
  EXPECT_FALSE(CommandAcl::Compile({"+@all", "-@nosuch"}, &acl, &error));
  EXPECT_EQ(error, "rule '-@nosuch': unknown category 'nosuch'");
}

TEST(AclTableTest, UsersWithoutRulesRunEverything) {
  conf::Options options;
  options.users = {{"a", "pw", {}}, {"b", "pw", {"-@all", "+ping"}}, {"c", "pw", {"+x.y"}}};
  AclTable table;
  std::vector<std::string> errors;
  ASSERT_TRUE(table.Compile(options, &errors));
  EXPECT_EQ(table.Find("a"), nullptr);
  EXPECT_EQ(table.Find("default"), nullptr);
  ASSERT_NE(table.Find("b"), nullptr);
  EXPECT_TRUE(table.Find("b")->Allows("ping"));
  EXPECT_FALSE(table.Find("b")->Allows("get"));
  EXPECT_TRUE(table.Find("c")->Allows("x.y"));
  options.users.push_back({"d", "pw", {"+nosuch"}});
  EXPECT_FALSE(table.Compile(options, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "user 'd': rule '+nosuch': unknown command 'nosuch'");
}

}  // namespace
}  // namespace bloomproxy::proxy

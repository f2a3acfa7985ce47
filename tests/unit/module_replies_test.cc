// The replies that show a loaded module: INFO's line, MODULE LIST's entry, and the proxy's COMMAND
// DOCS merged with the upstream's.
#include "protocol/module_replies.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {
namespace {

const ModuleFace kBf = {"bf", 999999, "handle-io-errors", "bloomproxy"};
constexpr std::string_view kBfLine =
    "module:name=bf,ver=999999,api=1,filters=0,usedby=[],using=[],options=[handle-io-errors]\r\n";

TEST(WithModuleLineTest, EndOfTheModulesSection) {
  EXPECT_EQ(WithModuleLine("# Modules\r\n", kBf), "# Modules\r\n" + std::string(kBfLine));
  // INFO's last section has no CRLF after its last line.
  EXPECT_EQ(WithModuleLine("# Modules\r\n\r\n# Errorstats\r\nerrorstat_ERR:count=1", kBf),
            "# Modules\r\n" + std::string(kBfLine) + "\r\n# Errorstats\r\nerrorstat_ERR:count=1");
  const std::string other =
      "# Modules\r\nmodule:name=search,ver=1,api=1,filters=0,usedby=[],using=[],options=[]";
  EXPECT_EQ(WithModuleLine(other, kBf), other + "\r\n" + std::string(kBfLine));
}

TEST(WithModuleLineTest, NoSectionOrAlreadyThere) {
  EXPECT_EQ(WithModuleLine("# Server\r\nredis_version:7.0.15\r\n", kBf),
            "# Server\r\nredis_version:7.0.15\r\n");
  const std::string own = "# Modules\r\nmodule:name=bf,ver=20802,api=1\r\n";
  EXPECT_EQ(WithModuleLine(own, kBf), own);
}

TEST(WithModuleEntryTest, AddedUnlessListed) {
  const std::string entry =
      "*8\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:999999\r\n$4\r\npath\r\n$10\r\nbloomproxy\r\n"
      "$4\r\nargs\r\n*0\r\n";
  EXPECT_EQ(WithModuleEntry("*0\r\n", kBf, Resp::k2), "*1\r\n" + entry);
  EXPECT_EQ(WithModuleEntry("*0\r\n", kBf, Resp::k3), "*1\r\n%4" + entry.substr(2));
  EXPECT_EQ(WithModuleEntry("*1\r\n" + entry, kBf, Resp::k2), "*1\r\n" + entry);
  EXPECT_EQ(WithModuleEntry("-ERR unknown command\r\n", kBf, Resp::k2), "-ERR unknown command\r\n");
}

std::string Local(std::string_view name) {
  return name == "bf.add" || name == "BF.ADD" ? "$6\r\nbf.add\r\n*0\r\n" : "";
}

TEST(MergeCommandDocsTest, InTheOrderAsked) {
  const std::string get = "$3\r\nget\r\n*0\r\n";
  const std::string set = "$3\r\nset\r\n*0\r\n";
  EXPECT_EQ(MergeCommandDocs("*4\r\n" + get + set, {"GET", "nosuch", "BF.ADD", "set"}, Local),
            "*6\r\n" + get + "$6\r\nbf.add\r\n*0\r\n" + set);
  EXPECT_EQ(MergeCommandDocs("%0\r\n", {"bf.add"}, Local), "%1\r\n$6\r\nbf.add\r\n*0\r\n");
  // An upstream with a bf.add of its own: the proxy's is the one shown.
  EXPECT_EQ(MergeCommandDocs("*2\r\n$6\r\nbf.add\r\n*2\r\n:1\r\n:2\r\n", {"bf.add"}, Local),
            "*2\r\n$6\r\nbf.add\r\n*0\r\n");
  EXPECT_EQ(MergeCommandDocs("-ERR x\r\n", {"bf.add"}, Local), "-ERR x\r\n");
}

TEST(AggregateTest, SplitAndAppend) {
  char type = 0;
  std::vector<std::string_view> elements;
  ASSERT_TRUE(SplitAggregate("%1\r\n$1\r\na\r\n*1\r\n:1\r\n", &type, &elements));
  EXPECT_EQ(type, '%');
  EXPECT_EQ(elements, (std::vector<std::string_view>{"$1\r\na\r\n", "*1\r\n:1\r\n"}));
  EXPECT_FALSE(SplitAggregate("*2\r\n:1\r\n", &type, &elements));
  EXPECT_EQ(AppendToAggregate("*1\r\n:1\r\n", {":2\r\n", ":3\r\n"}, 2), "*3\r\n:1\r\n:2\r\n:3\r\n");
}

}  // namespace
}  // namespace bloomproxy::protocol

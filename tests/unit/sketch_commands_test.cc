// The sketch command table's key positions (what a transaction's node is chosen by on a cluster).
#include "filters/common/sketch_commands.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string_view>;
using Keys = std::vector<size_t>;

TEST(SketchCommandKeysTest, TheNameOfEveryCommand) {
  EXPECT_EQ(SketchCommandKeys(Args{"BF.ADD", "f", "a"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"bf.info", "f"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"CMS.INCRBY", "c", "a", "1"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"cms.query", "c", "a"}), Keys{1});
}

TEST(SketchCommandKeysTest, MergeSourcesAsItsNumkeysSays) {
  EXPECT_EQ(SketchCommandKeys(Args{"CMS.MERGE", "d", "2", "a", "b"}), (Keys{1, 3, 4}));
  EXPECT_EQ(SketchCommandKeys(Args{"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "1", "2"}),
            (Keys{1, 3, 4}));
  // A numkeys that does not parse, is not positive, or names more keys than given: the
  // destination alone (the command's own error comes later).
  EXPECT_EQ(SketchCommandKeys(Args{"CMS.MERGE", "d", "x", "a"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"CMS.MERGE", "d", "0", "a"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"CMS.MERGE", "d", "3", "a", "b"}), Keys{1});
}

TEST(SketchCommandKeysTest, NoKeys) {
  EXPECT_TRUE(SketchCommandKeys(Args{"BF.ADD"}).empty());
  EXPECT_TRUE(SketchCommandKeys(Args{"GET", "k"}).empty());
  EXPECT_TRUE(SketchCommandKeys(Args{"TOPK.ADD", "k", "a"}).empty());
}

constexpr SketchFamilies kBloomAndCms =
    FamilyBit(SketchFamily::kBloom) | FamilyBit(SketchFamily::kCms);

TEST(SketchGetKeysTest, KeysFromTheKeySpecs) {
  EXPECT_EQ(SketchGetKeys(Args{"BF.ADD", "f", "x"}, false, kBloomAndCms), "*1\r\n$1\r\nf\r\n");
  // CMS.MERGE declares its destination alone.
  EXPECT_EQ(SketchGetKeys(Args{"cms.merge", "d", "2", "a", "b"}, false, kBloomAndCms),
            "*1\r\n$1\r\nd\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"bf.exists", "f", "x"}, true, kBloomAndCms),
            "*1\r\n*2\r\n$1\r\nf\r\n*1\r\n+RO\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"bf.add", "f", "x"}, true, kBloomAndCms, protocol::Resp::k3),
            "*1\r\n*2\r\n$1\r\nf\r\n~1\r\n+RW\r\n");
  // CF.COMPACT has RM_CreateCommand's key spec: full access.
  EXPECT_EQ(SketchGetKeys(Args{"CF.COMPACT", "c"}, true, FamilyBit(SketchFamily::kCuckoo)),
            "*1\r\n*2\r\n$1\r\nc\r\n*3\r\n+RW\r\n+access\r\n+update\r\n");
}

TEST(SketchGetKeysTest, RedisErrors) {
  const std::string arity = "-ERR Invalid number of arguments specified for command\r\n";
  EXPECT_EQ(SketchGetKeys(Args{"BF.ADD", "f"}, false, kBloomAndCms), arity);
  EXPECT_EQ(SketchGetKeys(Args{"BF.ADD", "f", "x", "y"}, false, kBloomAndCms), arity);
  EXPECT_EQ(SketchGetKeys(Args{"CF.COMPACT"}, false, FamilyBit(SketchFamily::kCuckoo)),
            "-ERR Invalid arguments specified for command\r\n");
  // Not a command of the emulated families: the upstream's to answer.
  EXPECT_EQ(SketchGetKeys(Args{"CF.ADD", "k", "x"}, false, kBloomAndCms), "");
  EXPECT_EQ(SketchGetKeys(Args{"GET", "k"}, false, kBloomAndCms), "");
}

TEST(SketchCommandListTest, Filters) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(
      SketchCommandList(FamilyBit(SketchFamily::kCms), ListFilter::kNone, ""),
      (V{"cms.initbydim", "cms.initbyprob", "cms.incrby", "cms.query", "cms.merge", "cms.info"}));
  EXPECT_EQ(SketchCommandList(kBloomAndCms, ListFilter::kModule, "bf").size(), 17u);
  EXPECT_TRUE(SketchCommandList(kBloomAndCms, ListFilter::kModule, "BF").empty());
  EXPECT_EQ(SketchCommandList(kBloomAndCms, ListFilter::kAclCat, "FAST"),
            (V{"bf.reserve", "bf.info", "bf.card"}));
  EXPECT_EQ(SketchCommandList(kBloomAndCms, ListFilter::kPattern, "CMS.IN*"),
            (V{"cms.initbydim", "cms.initbyprob", "cms.incrby", "cms.info"}));
  EXPECT_TRUE(SketchCommandList(kBloomAndCms, ListFilter::kAclCat, "cuckoo").empty());
}

TEST(SketchCommandEntryTest, RedisOrderOfFlagsAndCategories) {
  const std::string entry = SketchCommandEntry("BF.INFO", kBloomAndCms);
  const std::string head =
      "*10\r\n$7\r\nbf.info\r\n:-2\r\n*3\r\n+readonly\r\n+module\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
      "*3\r\n+@read\r\n+@fast\r\n+@bloom\r\n";
  EXPECT_EQ(entry.substr(0, head.size()), head);
  EXPECT_EQ(SketchCommandEntry("cf.add", kBloomAndCms), "");
  // CF.COMPACT: no command info, so COMMAND DOCS shows its group and module only.
  EXPECT_EQ(
      SketchCommandDocs("cf.compact", FamilyBit(SketchFamily::kCuckoo)),
      "$10\r\ncf.compact\r\n*4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$2\r\nbf\r\n");
}

}  // namespace
}  // namespace bloomproxy::filters

// The sketch command table's key positions (what a transaction's node is chosen by on a cluster).
#include "filters/common/sketch_commands.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace bloomproxy::filters

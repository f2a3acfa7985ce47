// The sketch command table: key positions (what a transaction's node is chosen by on a cluster),
// COMMAND INFO / DOCS / LIST / GETKEYS as RedisBloom's module reports them, arities.
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
  EXPECT_EQ(SketchCommandKeys(Args{"TOPK.INCRBY", "t", "a", "1", "b", "2"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"topk.list", "t"}), Keys{1});
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
  EXPECT_TRUE(SketchCommandKeys(Args{"TDIGEST.ADD", "k", "1"}).empty());
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

// --- Top-K: the seven TOPK.* rows, against what RedisBloom (master b28c2945 on Redis 7.0.15)
// reports: /work/shared/spec/topk-commands.md and src/cmd_info/topk_info.c.

constexpr SketchFamilies kTopkOnly = FamilyBit(SketchFamily::kTopk);

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

// A COMMAND entry of a TOPK command: one key at 1 (first/last/step 1/1/1), no tips, one key spec
// without notes (index 1, range 0 1 0), no subcommands.
std::string TopkEntry(std::string_view name, int arity, std::string_view flags,
                      std::string_view categories, std::string_view key_flag) {
  return "*10\r\n" + Bulk(name) + ":" + std::to_string(arity) + "\r\n" + std::string(flags) +
         ":1\r\n:1\r\n:1\r\n" + std::string(categories) + "*0\r\n*1\r\n*6\r\n" + Bulk("flags") +
         "*1\r\n+" + std::string(key_flag) + "\r\n" + Bulk("begin_search") + "*4\r\n" +
         Bulk("type") + Bulk("index") + Bulk("spec") + "*2\r\n" + Bulk("index") + ":1\r\n" +
         Bulk("find_keys") + "*4\r\n" + Bulk("type") + Bulk("range") + Bulk("spec") + "*6\r\n" +
         Bulk("lastkey") + ":0\r\n" + Bulk("keystep") + ":1\r\n" + Bulk("limit") + ":0\r\n*0\r\n";
}

TEST(TopkRowsTest, CommandInfoAsTheModuleReportsIt) {
  const std::string writes = "*3\r\n+write\r\n+denyoom\r\n+module\r\n";
  const std::string reads = "*2\r\n+readonly\r\n+module\r\n";
  const std::string write_cats = "*2\r\n+@write\r\n+@topk\r\n";
  const std::string read_cats = "*2\r\n+@read\r\n+@topk\r\n";
  struct Expected {
    const char* name;
    int arity;
    bool writes;
  };
  const Expected expected[] = {{"topk.reserve", -3, true}, {"topk.add", -3, true},
                               {"topk.incrby", -4, true},  {"topk.query", -3, false},
                               {"topk.count", -3, false},  {"topk.list", -2, false},
                               {"topk.info", 2, false}};
  for (const Expected& e : expected) {
    EXPECT_EQ(SketchCommandEntry(e.name, kTopkOnly),
              TopkEntry(e.name, e.arity, e.writes ? writes : reads,
                        e.writes ? write_cats : read_cats, e.writes ? "RW" : "RO"))
        << e.name;
  }
  // Any case finds the row; the entry names it in lower case, as Redis does.
  EXPECT_EQ(SketchCommandEntry("TopK.Add", kTopkOnly), SketchCommandEntry("topk.add", kTopkOnly));
  // Only while the family is emulated.
  EXPECT_EQ(SketchCommandEntry("topk.add", kBloomAndCms), "");
  // RESP3: flags, categories and key spec flags are sets, maps are maps.
  const std::string resp3 = SketchCommandEntry("topk.query", kTopkOnly, protocol::Resp::k3);
  const std::string head =
      "*10\r\n$10\r\ntopk.query\r\n:-3\r\n~2\r\n+readonly\r\n+module\r\n:1\r\n";
  EXPECT_EQ(resp3.substr(0, head.size()), head);
  EXPECT_NE(resp3.find("~2\r\n+@read\r\n+@topk\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~1\r\n+RO\r\n"),
            std::string::npos);
}

TEST(TopkRowsTest, EntriesInTableOrder) {
  const std::vector<std::string> entries = SketchCommandEntries(kTopkOnly);
  ASSERT_EQ(entries.size(), 7u);
  const char* names[] = {"topk.reserve", "topk.add",  "topk.incrby", "topk.query",
                         "topk.count",   "topk.list", "topk.info"};
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i], SketchCommandEntry(names[i], kTopkOnly)) << names[i];
  }
  // With every family: BF 11, CMS 6, CF 14, TOPK 7.
  const SketchFamilies all = kBloomAndCms | FamilyBit(SketchFamily::kCuckoo) | kTopkOnly;
  EXPECT_EQ(SketchCommandEntries(all).size(), 38u);
  EXPECT_EQ(SketchCommandDocsAll(all).size(), 38u);
  EXPECT_EQ(SketchCommandEntries(all ^ kTopkOnly).size(), 31u);
}

TEST(TopkRowsTest, Arity) {
  // COMMAND INFO's arity is what Redis checks (inside MULTI too); RESERVE's 3-or-6 and INCRBY's
  // even count are the module's own checks.
  EXPECT_FALSE(SketchArityOk("TOPK.RESERVE", 2));
  EXPECT_TRUE(SketchArityOk("TOPK.RESERVE", 3));
  EXPECT_TRUE(SketchArityOk("topk.reserve", 4));
  EXPECT_TRUE(SketchArityOk("topk.reserve", 6));
  EXPECT_FALSE(SketchArityOk("TOPK.ADD", 2));
  EXPECT_TRUE(SketchArityOk("TOPK.ADD", 3));
  EXPECT_TRUE(SketchArityOk("TOPK.ADD", 300));
  EXPECT_FALSE(SketchArityOk("TOPK.INCRBY", 3));
  EXPECT_TRUE(SketchArityOk("TOPK.INCRBY", 4));
  EXPECT_TRUE(SketchArityOk("TOPK.INCRBY", 5));
  EXPECT_FALSE(SketchArityOk("TOPK.QUERY", 2));
  EXPECT_TRUE(SketchArityOk("TOPK.QUERY", 3));
  EXPECT_FALSE(SketchArityOk("TOPK.COUNT", 2));
  EXPECT_TRUE(SketchArityOk("TOPK.COUNT", 4));
  EXPECT_FALSE(SketchArityOk("TOPK.LIST", 1));
  EXPECT_TRUE(SketchArityOk("TOPK.LIST", 2));
  EXPECT_TRUE(SketchArityOk("TOPK.LIST", 4));
  EXPECT_FALSE(SketchArityOk("TOPK.INFO", 1));
  EXPECT_TRUE(SketchArityOk("TOPK.INFO", 2));
  EXPECT_FALSE(SketchArityOk("TOPK.INFO", 3));
}

TEST(TopkRowsTest, FamilyNamesAndAclCategories) {
  SketchFamily family = SketchFamily::kBloom;
  EXPECT_TRUE(LookupSketchCommand("TOPK.LIST", &family));
  EXPECT_EQ(family, SketchFamily::kTopk);
  EXPECT_FALSE(LookupSketchCommand("topk.nosuch", &family));
  EXPECT_FALSE(LookupSketchCommand("TDIGEST.ADD", &family));
  using Cats = std::vector<std::string_view>;
  int seen = 0;
  for (const SketchCommandName& c : SketchCommandNames()) {
    if (c.family != SketchFamily::kTopk) continue;
    ++seen;
    const bool writes = c.name == "topk.reserve" || c.name == "topk.add" || c.name == "topk.incrby";
    EXPECT_EQ(c.writes, writes) << c.name;
    EXPECT_EQ(c.categories, writes ? (Cats{"write", "topk"}) : (Cats{"read", "topk"})) << c.name;
  }
  EXPECT_EQ(seen, 7);
  EXPECT_EQ(FamilyCategory(SketchFamily::kTopk), "topk");
}

TEST(TopkRowsTest, CommandList) {
  using V = std::vector<std::string_view>;
  const V all = {"topk.reserve", "topk.add",  "topk.incrby", "topk.query",
                 "topk.count",   "topk.list", "topk.info"};
  EXPECT_EQ(SketchCommandList(kTopkOnly, ListFilter::kNone, ""), all);
  EXPECT_EQ(SketchCommandList(kTopkOnly, ListFilter::kModule, "bf"), all);
  EXPECT_EQ(SketchCommandList(kTopkOnly, ListFilter::kAclCat, "TopK"), all);
  EXPECT_EQ(SketchCommandList(kTopkOnly, ListFilter::kAclCat, "write"),
            (V{"topk.reserve", "topk.add", "topk.incrby"}));
  EXPECT_EQ(SketchCommandList(kTopkOnly, ListFilter::kAclCat, "read"),
            (V{"topk.query", "topk.count", "topk.list", "topk.info"}));
  EXPECT_TRUE(SketchCommandList(kTopkOnly, ListFilter::kAclCat, "fast").empty());
  EXPECT_EQ(SketchCommandList(kTopkOnly, ListFilter::kPattern, "*.IN*"),
            (V{"topk.incrby", "topk.info"}));
  EXPECT_TRUE(SketchCommandList(kBloomAndCms, ListFilter::kAclCat, "topk").empty());
}

TEST(TopkRowsTest, GetKeys) {
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.ADD", "t", "a", "b"}, false, kTopkOnly), "*1\r\n$1\r\nt\r\n");
  // INCRBY's items are not keys, whatever they look like.
  EXPECT_EQ(SketchGetKeys(Args{"topk.incrby", "t", "t2", "1"}, false, kTopkOnly),
            "*1\r\n$1\r\nt\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.RESERVE", "t", "3"}, true, kTopkOnly),
            "*1\r\n*2\r\n$1\r\nt\r\n*1\r\n+RW\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.LIST", "t", "WITHCOUNT"}, true, kTopkOnly),
            "*1\r\n*2\r\n$1\r\nt\r\n*1\r\n+RO\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.INFO", "t"}, true, kTopkOnly, protocol::Resp::k3),
            "*1\r\n*2\r\n$1\r\nt\r\n~1\r\n+RO\r\n");
  const std::string arity = "-ERR Invalid number of arguments specified for command\r\n";
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.ADD", "t"}, false, kTopkOnly), arity);
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.INFO", "t", "x"}, false, kTopkOnly), arity);
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.INCRBY", "t", "a"}, false, kTopkOnly), arity);
  // Forwarded: the upstream's to answer.
  EXPECT_EQ(SketchGetKeys(Args{"TOPK.ADD", "t", "a"}, false, kBloomAndCms), "");
}

std::string KeyArg() {
  return "*6\r\n" + Bulk("name") + Bulk("key") + Bulk("type") + Bulk("key") +
         Bulk("key_spec_index") + ":0\r\n";
}

std::string DocsHead(std::string_view name, int pairs, std::string_view summary,
                     std::string_view complexity) {
  return Bulk(name) + "*" + std::to_string(2 * pairs) + "\r\n" + Bulk("summary") + Bulk(summary) +
         Bulk("since") + Bulk("2.0.0") + Bulk("group") + Bulk("module") + Bulk("complexity") +
         Bulk(complexity) + Bulk("module") + Bulk("bf");
}

TEST(TopkRowsTest, DocsOfEveryCommand) {
  const std::string items = "*6\r\n" + Bulk("name") + Bulk("item") + Bulk("type") + Bulk("string") +
                            Bulk("flags") + "*1\r\n+multiple\r\n";
  EXPECT_EQ(
      SketchCommandDocs("TOPK.RESERVE", kTopkOnly),
      DocsHead("topk.reserve", 6, "Initializes a Top-K sketch with specified parameters", "O(1)") +
          Bulk("arguments") + "*3\r\n" + KeyArg() + "*4\r\n" + Bulk("name") + Bulk("topk") +
          Bulk("type") + Bulk("integer") + "*8\r\n" + Bulk("name") + Bulk("params") + Bulk("type") +
          Bulk("block") + Bulk("flags") + "*1\r\n+optional\r\n" + Bulk("arguments") +
          "*3\r\n*4\r\n" + Bulk("name") + Bulk("width") + Bulk("type") + Bulk("integer") +
          "*4\r\n" + Bulk("name") + Bulk("depth") + Bulk("type") + Bulk("integer") + "*4\r\n" +
          Bulk("name") + Bulk("decay") + Bulk("type") + Bulk("double"));
  EXPECT_EQ(SketchCommandDocs("topk.add", kTopkOnly),
            DocsHead("topk.add", 6,
                     "Adds an item to a Top-k sketch. Multiple items can be added at the same "
                     "time.",
                     "O(n * k) where n is the number of items and k is the depth") +
                Bulk("arguments") + "*2\r\n" + KeyArg() + items);
  EXPECT_EQ(SketchCommandDocs("topk.incrby", kTopkOnly),
            DocsHead("topk.incrby", 6, "Increases the count of one or more items by increment",
                     "O(n * k * incr) where n is the number of items, k is the depth and incr "
                     "is the increment") +
                Bulk("arguments") + "*2\r\n" + KeyArg() + "*8\r\n" + Bulk("name") +
                Bulk("item_increment") + Bulk("type") + Bulk("block") + Bulk("flags") +
                "*1\r\n+multiple\r\n" + Bulk("arguments") + "*2\r\n*4\r\n" + Bulk("name") +
                Bulk("item") + Bulk("type") + Bulk("string") + "*4\r\n" + Bulk("name") +
                Bulk("increment") + Bulk("type") + Bulk("integer"));
  EXPECT_EQ(SketchCommandDocs("topk.query", kTopkOnly),
            DocsHead("topk.query", 6, "Checks whether one or more items are in a sketch",
                     "O(n) where n is the number of items") +
                Bulk("arguments") + "*2\r\n" + KeyArg() + items);
  // COUNT has a history (its deprecation), between module and arguments as Redis 7.0 puts it.
  EXPECT_EQ(SketchCommandDocs("topk.count", kTopkOnly),
            DocsHead("topk.count", 7, "Return the count for one or more items are in a sketch",
                     "O(n) where n is the number of items") +
                Bulk("history") + "*1\r\n*2\r\n" + Bulk("2.4.0") +
                Bulk("As of Bloom version 2.4, this command is regarded as deprecated. The "
                     "count value is not a representative of the number of appearances of an "
                     "item") +
                Bulk("arguments") + "*2\r\n" + KeyArg() + items);
  EXPECT_EQ(SketchCommandDocs("topk.list", kTopkOnly),
            DocsHead("topk.list", 6, "Return the full list of items in Top-K sketch.",
                     "O(k*log(k)) where k is the value of top-k") +
                Bulk("arguments") + "*2\r\n" + KeyArg() + "*8\r\n" + Bulk("name") +
                Bulk("withcount") + Bulk("type") + Bulk("pure-token") + Bulk("token") +
                Bulk("WITHCOUNT") + Bulk("flags") + "*1\r\n+optional\r\n");
  EXPECT_EQ(SketchCommandDocs("topk.info", kTopkOnly),
            DocsHead("topk.info", 6, "Returns information about a sketch", "O(1)") +
                Bulk("arguments") + "*1\r\n" + KeyArg());
  EXPECT_EQ(SketchCommandDocs("topk.info", kBloomAndCms), "");
}

TEST(TopkRowsTest, DocsHistoryInResp3) {
  const std::string docs = SketchCommandDocs("TOPK.COUNT", kTopkOnly, protocol::Resp::k3);
  const std::string head = "$10\r\ntopk.count\r\n%7\r\n$7\r\nsummary\r\n";
  EXPECT_EQ(docs.substr(0, head.size()), head);
  // Redis 7.0.15's history is a set of [since, changes] arrays (COMMAND DOCS SET shows ~4).
  EXPECT_NE(docs.find(Bulk("history") + "~1\r\n*2\r\n" + Bulk("2.4.0")), std::string::npos);
  EXPECT_NE(docs.find(Bulk("arguments") + "*2\r\n%3\r\n"), std::string::npos);
}

}  // namespace
}  // namespace bloomproxy::filters

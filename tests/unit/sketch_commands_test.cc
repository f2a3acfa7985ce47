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
  EXPECT_TRUE(SketchCommandKeys(Args{"TDIGEST.NOSUCH", "k", "1"}).empty());
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
  EXPECT_FALSE(LookupSketchCommand("TDIGEST.NOSUCH", &family));
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
                     std::string_view complexity, std::string_view since = "2.0.0") {
  return Bulk(name) + "*" + std::to_string(2 * pairs) + "\r\n" + Bulk("summary") + Bulk(summary) +
         Bulk("since") + Bulk(since) + Bulk("group") + Bulk("module") + Bulk("complexity") +
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

// --- T-digest: the fourteen TDIGEST.* rows, as RedisBloom (master b28c2945) registers them.
// Flags and ACL categories: src/rm_tdigest.c (RegisterCommand's mode and categories); arities,
// key specs and argument shapes: src/cmd_info/tdigest_info.c; summaries, complexities and the
// argument names: tests/flow/test_docs_help.py of the same module; MERGE's keynum spec (numkeys
// at index 2, RO sources) and its movablekeys flag: the module's COMMAND INFO.

constexpr SketchFamilies kTdigestOnly = FamilyBit(SketchFamily::kTdigest);

std::string SimpleArray(std::initializer_list<std::string_view> items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (std::string_view s : items) out += "+" + std::string(s) + "\r\n";
  return out;
}

// A key spec without notes: begin_search index `index`, then a range (lastkey 0, keystep 1,
// limit 0) or a keynum (keynumidx 0, firstkey 1, keystep 1).
std::string KeySpec(std::string_view flag, int index, bool keynum) {
  const std::string find =
      keynum ? Bulk("keynum") + Bulk("spec") + "*6\r\n" + Bulk("keynumidx") + ":0\r\n" +
                   Bulk("firstkey") + ":1\r\n" + Bulk("keystep") + ":1\r\n"
             : Bulk("range") + Bulk("spec") + "*6\r\n" + Bulk("lastkey") + ":0\r\n" +
                   Bulk("keystep") + ":1\r\n" + Bulk("limit") + ":0\r\n";
  return "*6\r\n" + Bulk("flags") + SimpleArray({flag}) + Bulk("begin_search") + "*4\r\n" +
         Bulk("type") + Bulk("index") + Bulk("spec") + "*2\r\n" + Bulk("index") + ":" +
         std::to_string(index) + "\r\n" + Bulk("find_keys") + "*4\r\n" + Bulk("type") + find;
}

// A COMMAND entry: first/last/step 1/1/1, no tips, the given key specs, no subcommands.
std::string TdEntry(std::string_view name, int arity, const std::string& flags,
                    const std::string& categories, const std::string& specs, int spec_count) {
  return "*10\r\n" + Bulk(name) + ":" + std::to_string(arity) + "\r\n" + flags +
         ":1\r\n:1\r\n:1\r\n" + categories + "*0\r\n*" + std::to_string(spec_count) + "\r\n" +
         specs + "*0\r\n";
}

TEST(TdigestRowsTest, CommandInfoAsTheModuleReportsIt) {
  struct Expected {
    const char* name;
    int arity;
    bool writes;
    bool fast;  // RedisBloom's @fast
  };
  const Expected expected[] = {
      {"tdigest.create", -2, true, true},  {"tdigest.add", -3, true, false},
      {"tdigest.reset", 2, true, true},    {"tdigest.min", 2, false, true},
      {"tdigest.max", 2, false, true},     {"tdigest.quantile", -3, false, true},
      {"tdigest.byrank", -3, false, true}, {"tdigest.byrevrank", -3, false, true},
      {"tdigest.rank", -3, false, true},   {"tdigest.revrank", -3, false, true},
      {"tdigest.cdf", -3, false, true},    {"tdigest.trimmed_mean", 4, false, false},
      {"tdigest.info", 2, false, true}};
  for (const Expected& e : expected) {
    const std::string flags = e.writes ? SimpleArray({"write", "denyoom", "module"})
                                       : SimpleArray({"readonly", "module"});
    const std::string_view rw = e.writes ? "@write" : "@read";
    const std::string categories =
        e.fast ? SimpleArray({rw, "@fast", "@tdigest"}) : SimpleArray({rw, "@tdigest"});
    EXPECT_EQ(
        SketchCommandEntry(e.name, kTdigestOnly),
        TdEntry(e.name, e.arity, flags, categories, KeySpec(e.writes ? "RW" : "RO", 1, false), 1))
        << e.name;
  }
  // MERGE: the destination's range spec, then the sources' keynum spec, which makes it
  // movablekeys; first/last/step still 1/1/1 (Redis's legacy range from the range spec alone).
  EXPECT_EQ(SketchCommandEntry("TDIGEST.MERGE", kTdigestOnly),
            TdEntry("tdigest.merge", -4, SimpleArray({"write", "denyoom", "module", "movablekeys"}),
                    SimpleArray({"@write", "@tdigest"}),
                    KeySpec("RW", 1, false) + KeySpec("RO", 2, true), 2));
  EXPECT_EQ(SketchCommandEntry("tdigest.merge", kBloomAndCms), "");
  // RESP3: sets and maps.
  const std::string resp3 = SketchCommandEntry("tdigest.merge", kTdigestOnly, protocol::Resp::k3);
  const std::string head =
      "*10\r\n$13\r\ntdigest.merge\r\n:-4\r\n~4\r\n+write\r\n+denyoom\r\n+module\r\n"
      "+movablekeys\r\n";
  EXPECT_EQ(resp3.substr(0, head.size()), head);
  EXPECT_NE(resp3.find("~2\r\n+@write\r\n+@tdigest\r\n~0\r\n~2\r\n%3\r\n"), std::string::npos);
  EXPECT_NE(resp3.find(Bulk("keynum") + Bulk("spec") + "%3\r\n" + Bulk("keynumidx") + ":0\r\n"),
            std::string::npos);
}

TEST(TdigestRowsTest, EntriesInTableOrder) {
  const char* names[] = {"tdigest.create",       "tdigest.add",     "tdigest.reset",
                         "tdigest.merge",        "tdigest.min",     "tdigest.max",
                         "tdigest.quantile",     "tdigest.byrank",  "tdigest.byrevrank",
                         "tdigest.rank",         "tdigest.revrank", "tdigest.cdf",
                         "tdigest.trimmed_mean", "tdigest.info"};
  const std::vector<std::string> entries = SketchCommandEntries(kTdigestOnly);
  ASSERT_EQ(entries.size(), 14u);
  const std::vector<std::string> docs = SketchCommandDocsAll(kTdigestOnly);
  ASSERT_EQ(docs.size(), 14u);
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i], SketchCommandEntry(names[i], kTdigestOnly)) << names[i];
    EXPECT_EQ(docs[i], SketchCommandDocs(names[i], kTdigestOnly)) << names[i];
  }
  // With every family: BF 11, CMS 6, CF 14, TOPK 7, TDIGEST 14.
  const SketchFamilies all = kBloomAndCms | FamilyBit(SketchFamily::kCuckoo) |
                             FamilyBit(SketchFamily::kTopk) | kTdigestOnly;
  EXPECT_EQ(SketchCommandEntries(all).size(), 52u);
  EXPECT_EQ(SketchCommandDocsAll(all).size(), 52u);
  EXPECT_EQ(SketchCommandEntries(all ^ kTdigestOnly).size(), 38u);
}

TEST(TdigestRowsTest, Arity) {
  // What Redis checks (inside MULTI too); CREATE's 2-or-4 is the module's own check.
  EXPECT_FALSE(SketchArityOk("TDIGEST.CREATE", 1));
  EXPECT_TRUE(SketchArityOk("TDIGEST.CREATE", 2));
  EXPECT_TRUE(SketchArityOk("tdigest.create", 3));
  EXPECT_TRUE(SketchArityOk("tdigest.create", 4));
  EXPECT_FALSE(SketchArityOk("TDIGEST.ADD", 2));
  EXPECT_TRUE(SketchArityOk("TDIGEST.ADD", 100));
  EXPECT_FALSE(SketchArityOk("TDIGEST.RESET", 3));
  EXPECT_TRUE(SketchArityOk("TDIGEST.RESET", 2));
  EXPECT_FALSE(SketchArityOk("TDIGEST.MERGE", 3));
  EXPECT_TRUE(SketchArityOk("TDIGEST.MERGE", 4));
  EXPECT_TRUE(SketchArityOk("TDIGEST.MERGE", 9));
  for (const char* one_key : {"TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.INFO"}) {
    EXPECT_FALSE(SketchArityOk(one_key, 1)) << one_key;
    EXPECT_TRUE(SketchArityOk(one_key, 2)) << one_key;
    EXPECT_FALSE(SketchArityOk(one_key, 3)) << one_key;
  }
  for (const char* list : {"TDIGEST.QUANTILE", "TDIGEST.BYRANK", "TDIGEST.BYREVRANK",
                           "TDIGEST.RANK", "TDIGEST.REVRANK", "TDIGEST.CDF"}) {
    EXPECT_FALSE(SketchArityOk(list, 2)) << list;
    EXPECT_TRUE(SketchArityOk(list, 3)) << list;
    EXPECT_TRUE(SketchArityOk(list, 7)) << list;
  }
  EXPECT_FALSE(SketchArityOk("TDIGEST.TRIMMED_MEAN", 3));
  EXPECT_TRUE(SketchArityOk("TDIGEST.TRIMMED_MEAN", 4));
  EXPECT_FALSE(SketchArityOk("TDIGEST.TRIMMED_MEAN", 5));
}

TEST(TdigestRowsTest, FamilyNamesAndAclCategories) {
  SketchFamily family = SketchFamily::kBloom;
  EXPECT_TRUE(LookupSketchCommand("TDigest.Trimmed_Mean", &family));
  EXPECT_EQ(family, SketchFamily::kTdigest);
  EXPECT_FALSE(LookupSketchCommand("tdigest.nosuch", &family));
  EXPECT_FALSE(LookupSketchCommand("td.add", &family));
  using Cats = std::vector<std::string_view>;
  int seen = 0;
  for (const SketchCommandName& c : SketchCommandNames()) {
    if (c.family != SketchFamily::kTdigest) continue;
    ++seen;
    const bool writes = c.name == "tdigest.create" || c.name == "tdigest.add" ||
                        c.name == "tdigest.reset" || c.name == "tdigest.merge";
    const bool fast =
        c.name != "tdigest.add" && c.name != "tdigest.merge" && c.name != "tdigest.trimmed_mean";
    Cats expected = {writes ? "write" : "read"};
    if (fast) expected.push_back("fast");
    expected.push_back("tdigest");
    EXPECT_EQ(c.writes, writes) << c.name;
    EXPECT_EQ(c.categories, expected) << c.name;
  }
  EXPECT_EQ(seen, 14);
  EXPECT_EQ(FamilyCategory(SketchFamily::kTdigest), "tdigest");
}

TEST(TdigestRowsTest, CommandList) {
  using V = std::vector<std::string_view>;
  const V all = {"tdigest.create",       "tdigest.add",  "tdigest.reset",    "tdigest.merge",
                 "tdigest.min",          "tdigest.max",  "tdigest.quantile", "tdigest.byrank",
                 "tdigest.byrevrank",    "tdigest.rank", "tdigest.revrank",  "tdigest.cdf",
                 "tdigest.trimmed_mean", "tdigest.info"};
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kNone, ""), all);
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kModule, "bf"), all);
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kAclCat, "TDigest"), all);
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kAclCat, "write"),
            (V{"tdigest.create", "tdigest.add", "tdigest.reset", "tdigest.merge"}));
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kAclCat, "read").size(), 10u);
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kAclCat, "fast"),
            (V{"tdigest.create", "tdigest.reset", "tdigest.min", "tdigest.max", "tdigest.quantile",
               "tdigest.byrank", "tdigest.byrevrank", "tdigest.rank", "tdigest.revrank",
               "tdigest.cdf", "tdigest.info"}));
  EXPECT_EQ(SketchCommandList(kTdigestOnly, ListFilter::kPattern, "*REV*"),
            (V{"tdigest.byrevrank", "tdigest.revrank"}));
  EXPECT_TRUE(SketchCommandList(kBloomAndCms, ListFilter::kAclCat, "tdigest").empty());
}

TEST(TdigestRowsTest, MergeKeysForRouting) {
  EXPECT_EQ(SketchCommandKeys(Args{"TDIGEST.ADD", "t", "1", "2"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"tdigest.merge", "d", "2", "a", "b", "OVERRIDE"}),
            (Keys{1, 3, 4}));
  EXPECT_EQ(SketchCommandKeys(Args{"TDIGEST.MERGE", "d", "1", "COMPRESSION", "100"}), (Keys{1, 3}));
  EXPECT_EQ(SketchCommandKeys(Args{"TDIGEST.MERGE", "d", "3", "a", "b"}), Keys{1});
  EXPECT_EQ(SketchCommandKeys(Args{"TDIGEST.MERGE", "d", "0", "a"}), Keys{1});
}

TEST(TdigestRowsTest, GetKeys) {
  // The keynum spec: numkeys at argv[2], the sources after it; the options are no keys.
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "3", "a", "b", "c", "OVERRIDE"}, false,
                          kTdigestOnly),
            "*4\r\n$1\r\nd\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_EQ(
      SketchGetKeys(Args{"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "5"}, true, kTdigestOnly),
      "*2\r\n*2\r\n$1\r\nd\r\n*1\r\n+RW\r\n*2\r\n$1\r\na\r\n*1\r\n+RO\r\n");
  EXPECT_EQ(
      SketchGetKeys(Args{"tdigest.merge", "d", "1", "a"}, true, kTdigestOnly, protocol::Resp::k3),
      "*2\r\n*2\r\n$1\r\nd\r\n~1\r\n+RW\r\n*2\r\n$1\r\na\r\n~1\r\n+RO\r\n");
  // As Redis reads a keynum spec, whatever the module would say of the arguments.
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "2", "OVERRIDE", "x"}, false, kTdigestOnly),
            "*3\r\n$1\r\nd\r\n$8\r\nOVERRIDE\r\n$1\r\nx\r\n");
  const std::string invalid = "-ERR Invalid arguments specified for command\r\n";
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "5", "a", "b", "c", "OVERRIDE"}, false,
                          kTdigestOnly),
            invalid);
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "0", "a"}, false, kTdigestOnly), invalid);
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "-1", "a"}, false, kTdigestOnly), invalid);
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "x", "a"}, false, kTdigestOnly), invalid);
  const std::string arity = "-ERR Invalid number of arguments specified for command\r\n";
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "1"}, false, kTdigestOnly), arity);
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.trimmed_mean", "t", "0.1"}, false, kTdigestOnly), arity);
  EXPECT_EQ(SketchGetKeys(Args{"TDIGEST.ADD", "t", "1", "2"}, false, kTdigestOnly),
            "*1\r\n$1\r\nt\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"TDIGEST.CDF", "t", "1"}, true, kTdigestOnly),
            "*1\r\n*2\r\n$1\r\nt\r\n*1\r\n+RO\r\n");
  // Forwarded: the upstream's to answer.
  EXPECT_EQ(SketchGetKeys(Args{"tdigest.merge", "d", "1", "a"}, false, kBloomAndCms), "");
}

// COMMAND DOCS arguments (Redis's map of name, type, key_spec_index, token, flags, arguments).
std::string TdArg(std::string_view name, std::string_view type, std::string_view flag = {}) {
  return (flag.empty() ? "*4\r\n" : "*6\r\n") + Bulk("name") + Bulk(name) + Bulk("type") +
         Bulk(type) + (flag.empty() ? "" : Bulk("flags") + SimpleArray({flag}));
}

std::string CompressionBlock() {
  return "*8\r\n" + Bulk("name") + Bulk("compression_block") + Bulk("type") + Bulk("block") +
         Bulk("flags") + SimpleArray({"optional"}) + Bulk("arguments") + "*2\r\n*6\r\n" +
         Bulk("name") + Bulk("compression_token") + Bulk("type") + Bulk("pure-token") +
         Bulk("token") + Bulk("COMPRESSION") + TdArg("compression", "integer");
}

TEST(TdigestRowsTest, DocsOfCreateAndMerge) {
  EXPECT_EQ(SketchCommandDocs("TDIGEST.CREATE", kTdigestOnly),
            DocsHead("tdigest.create", 6, "Allocates memory and initializes a new t-digest sketch",
                     "O(1)", "2.4.0") +
                Bulk("arguments") + "*2\r\n" + KeyArg() + CompressionBlock());
  EXPECT_EQ(SketchCommandDocs("tdigest.merge", kTdigestOnly),
            DocsHead("tdigest.merge", 6, "Merges multiple t-digest sketches into a single sketch",
                     "O(N*K), where N is the number of centroids and K being the number of input "
                     "sketches",
                     "2.4.0") +
                Bulk("arguments") + "*5\r\n*6\r\n" + Bulk("name") + Bulk("destination-key") +
                Bulk("type") + Bulk("key") + Bulk("key_spec_index") + ":0\r\n" +
                TdArg("numkeys", "integer") + "*8\r\n" + Bulk("name") + Bulk("source-key") +
                Bulk("type") + Bulk("key") + Bulk("key_spec_index") + ":1\r\n" + Bulk("flags") +
                SimpleArray({"multiple"}) + CompressionBlock() + "*8\r\n" + Bulk("name") +
                Bulk("override") + Bulk("type") + Bulk("pure-token") + Bulk("token") +
                Bulk("OVERRIDE") + Bulk("flags") + SimpleArray({"optional"}));
  EXPECT_EQ(SketchCommandDocs("tdigest.merge", kBloomAndCms), "");
}

TEST(TdigestRowsTest, DocsOfTheOthers) {
  struct Expected {
    const char* name;
    const char* summary;
    const char* complexity;
    std::string args;  // after the key
    int count;         // of arguments, the key included
  };
  const std::string none;
  const Expected expected[] = {
      {"tdigest.add", "Adds one or more observations to a t-digest sketch",
       "O(N), where N is the number of samples to add", TdArg("value", "double", "multiple"), 2},
      {"tdigest.reset", "Resets a t-digest sketch: empty the sketch and re-initializes it.", "O(1)",
       none, 1},
      {"tdigest.min", "Returns the minimum observation value from a t-digest sketch", "O(1)", none,
       1},
      {"tdigest.max", "Returns the maximum observation value from a t-digest sketch", "O(1)", none,
       1},
      {"tdigest.quantile",
       "Returns, for each input fraction, an estimation of the value (floating point) that is "
       "smaller than the given fraction of observations",
       "O(N) where N is the number of quantiles specified.",
       TdArg("quantile", "double", "multiple"), 2},
      {"tdigest.byrank",
       "Returns, for each input rank, an estimation of the value (floating-point) with that rank",
       "O(N) where N is the number of ranks specified", TdArg("rank", "double", "multiple"), 2},
      {"tdigest.byrevrank",
       "Returns, for each input reverse rank, an estimation of the value (floating-point) with "
       "that reverse rank",
       "O(N) where N is the number of reverse ranks specified.",
       TdArg("reverse_rank", "double", "multiple"), 2},
      {"tdigest.rank",
       "Returns, for each input value (floating-point), the estimated rank of the value (the "
       "number of observations in the sketch that are smaller than the value + half the number "
       "of observations that are equal to the value)",
       "O(N) where N is the number of values specified.", TdArg("value", "double", "multiple"), 2},
      {"tdigest.revrank",
       "Returns, for each input value (floating-point), the estimated reverse rank of the value "
       "(the number of observations in the sketch that are larger than the value + half the "
       "number of observations that are equal to the value)",
       "O(N) where N is the number of values specified.", TdArg("value", "double", "multiple"), 2},
      {"tdigest.cdf",
       "Returns, for each input value, an estimation of the floating-point fraction of "
       "(observations smaller than the given value + half the observations equal to the given "
       "value). Multiple fractions can be retrieved in a single call.",
       "O(N) where N is the number of values specified.", TdArg("value", "double", "multiple"), 2},
      {"tdigest.trimmed_mean",
       "Returns an estimation of the mean value from the sketch, excluding observation values "
       "outside the low and high cutoff quantiles",
       "O(N) where N is the number of centroids",
       TdArg("low_cut_quantile", "double") + TdArg("high_cut_quantile", "double"), 3},
      {"tdigest.info", "Returns information and statistics about a t-digest sketch", "O(1)", none,
       1}};
  for (const Expected& e : expected) {
    EXPECT_EQ(SketchCommandDocs(e.name, kTdigestOnly),
              DocsHead(e.name, 6, e.summary, e.complexity, "2.4.0") + Bulk("arguments") + "*" +
                  std::to_string(e.count) + "\r\n" + KeyArg() + e.args)
        << e.name;
  }
}

}  // namespace
}  // namespace bloomproxy::filters

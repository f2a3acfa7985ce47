// BF.*, CMS.*, TOPK.* and TDIGEST.* replies to a RESP3 client (filters/common/sketch_resp3.h):
// every recorded RedisBloom RESP2 reply of tests/fixtures/{bf,cms,topk,tdigest}, rewritten for its
// command's shape, must be the reply RedisBloom gave the same command after HELLO 3
// (<family>-resp3-expected.json), byte for byte. BP_FIXTURES is tests/fixtures.
#include "filters/common/sketch_resp3.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters {
namespace {

using fixtures::Base64Decode;
using fixtures::Case;
using fixtures::Json;
using fixtures::LoadCases;
using fixtures::ReadJsonFile;

// The RESP3 recording of `family` ("bf", "cms"): case name -> raw replies.
std::map<std::string, std::vector<std::string>> Resp3Replies(const std::string& family) {
  const Json root =
      ReadJsonFile(std::string(BP_FIXTURES) + "/" + family + "/" + family + "-resp3-expected.json");
  std::map<std::string, std::vector<std::string>> out;
  for (const Json& c : root.items) {
    std::vector<std::string>& replies = out[c.Get("name")->text];
    for (const Json& r : c.Get("replies")->items) replies.push_back(Base64Decode(r.text));
  }
  return out;
}

std::vector<std::string_view> Args(const std::vector<std::string>& cmd) {
  return std::vector<std::string_view>(cmd.begin(), cmd.end());
}

std::string Show(std::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, 200)) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) {
      out += "?";
    } else {
      out += c;
    }
  }
  return bytes.size() > 200 ? out + "... (" + std::to_string(bytes.size()) + " bytes)" : out;
}

// What replaying one recorded family checked.
struct Tally {
  size_t commands = 0;
  size_t changed = 0;           // replies whose RESP3 bytes differ from the RESP2 ones
  std::set<Resp3Shape> shapes;  // shapes of the commands whose reply changed
  std::set<std::string> changed_names;
};

Tally ReplayFamily(const std::string& family) {
  const std::vector<Case> cases = LoadCases(family + "/" + family);
  const auto resp3 = Resp3Replies(family);
  Tally t;
  EXPECT_EQ(resp3.size(), cases.size()) << family;
  for (const Case& c : cases) {
    auto it = resp3.find(c.name);
    if (it == resp3.end()) {
      ADD_FAILURE() << family << ": no RESP3 recording of case " << c.name;
      continue;
    }
    const std::vector<std::string>& want = it->second;
    EXPECT_EQ(want.size(), c.cmds.size()) << c.name;
    for (size_t i = 0; i < c.cmds.size() && i < want.size(); ++i) {
      const Resp3Shape shape = Resp3ShapeOf(Args(c.cmds[i]));
      const std::string got = ToResp3(shape, c.replies[i]);
      ++t.commands;
      EXPECT_EQ(got, want[i]) << family << " case " << c.name << " command #" << i << " ("
                              << c.cmds[i][0] << ")\n  resp2: " << Show(c.replies[i])
                              << "\n  want:  " << Show(want[i]) << "\n  got:   " << Show(got);
      if (want[i] != c.replies[i]) {
        ++t.changed;
        t.shapes.insert(shape);
        std::string name = c.cmds[i][0];
        for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        t.changed_names.insert(name);
      }
    }
  }
  return t;
}

TEST(SketchResp3, EveryRecordedBfReplyBecomesRedisBloomsResp3Reply) {
  const Tally t = ReplayFamily("bf");
  EXPECT_GE(t.commands, 300u);
  EXPECT_GE(t.changed, 200u);
  const std::set<Resp3Shape> every = {Resp3Shape::kBool,        Resp3Shape::kBoolArray,
                                      Resp3Shape::kInfoMap,     Resp3Shape::kBfInfoCapacity,
                                      Resp3Shape::kBfInfoSize,  Resp3Shape::kBfInfoFilters,
                                      Resp3Shape::kBfInfoItems, Resp3Shape::kBfInfoExpansion};
  EXPECT_EQ(t.shapes, every);
  const std::set<std::string> names = {"BF.ADD",    "BF.EXISTS",  "BF.MADD",
                                       "BF.INSERT", "BF.MEXISTS", "BF.INFO"};
  EXPECT_EQ(t.changed_names, names);
}

TEST(SketchResp3, EveryRecordedCmsReplyBecomesRedisBloomsResp3Reply) {
  const Tally t = ReplayFamily("cms");
  EXPECT_GE(t.commands, 450u);
  EXPECT_GE(t.changed, 60u);
  // The CMS recordings hold a few BF commands on sketches (WRONGTYPE, or a filter of their own).
  EXPECT_EQ(t.shapes, (std::set<Resp3Shape>{Resp3Shape::kBool, Resp3Shape::kInfoMap}));
  EXPECT_EQ(t.changed_names, (std::set<std::string>{"CMS.INFO", "BF.ADD", "BF.EXISTS"}));
}

TEST(SketchResp3, EveryRecordedTopkReplyBecomesRedisBloomsResp3Reply) {
  const Tally t = ReplayFamily("topk");
  EXPECT_EQ(t.commands, 711u);
  EXPECT_GE(t.changed, 100u);
  // The TOPK recordings hold BF.EXISTS / BF.MEXISTS on sketches (0s) and BF.ADD on one (an error).
  EXPECT_EQ(t.shapes, (std::set<Resp3Shape>{Resp3Shape::kBool, Resp3Shape::kTopkUpdate,
                                            Resp3Shape::kBoolArray, Resp3Shape::kTopkInfo}));
  EXPECT_EQ(t.changed_names,
            (std::set<std::string>{"TOPK.ADD", "TOPK.INCRBY", "TOPK.QUERY", "TOPK.INFO", "BF.ADD",
                                   "BF.EXISTS", "BF.MEXISTS"}));
}

TEST(SketchResp3, TopkShapes) {
  auto shape = [](std::vector<std::string_view> args) { return Resp3ShapeOf(args); };
  EXPECT_EQ(shape({"topk.add", "k", "a"}), Resp3Shape::kTopkUpdate);
  EXPECT_EQ(shape({"TOPK.INCRBY", "k", "a", "1"}), Resp3Shape::kTopkUpdate);
  EXPECT_EQ(shape({"TOPK.QUERY", "k", "a"}), Resp3Shape::kBoolArray);
  EXPECT_EQ(shape({"TOPK.INFO", "k"}), Resp3Shape::kTopkInfo);
  // Nulls become RESP3's, also in an INCRBY reply that stops after its error element.
  EXPECT_EQ(ToResp3(Resp3Shape::kTopkUpdate, "*2\r\n$-1\r\n$1\r\na\r\n"), "*2\r\n_\r\n$1\r\na\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kTopkUpdate, "*3\r\n$-1\r\n-TopK: bad\r\n"),
            "*3\r\n_\r\n-TopK: bad\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kTopkInfo,
                    "*8\r\n+k\r\n:1\r\n+width\r\n:8\r\n+depth\r\n:7\r\n+decay\r\n$3\r\n0.5\r\n"),
            "%4\r\n+k\r\n:1\r\n+width\r\n:8\r\n+depth\r\n:7\r\n+decay\r\n,0.5\r\n");
  // Errors and replies of another form pass as they are.
  EXPECT_EQ(ToResp3(Resp3Shape::kTopkInfo, "-TopK: key does not exist\r\n"),
            "-TopK: key does not exist\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kTopkUpdate, ":1\r\n"), ":1\r\n");
}

TEST(SketchResp3, EveryRecordedTdigestReplyBecomesRedisBloomsResp3Reply) {
  const Tally t = ReplayFamily("tdigest");
  EXPECT_EQ(t.commands, 2404u);
  EXPECT_EQ(t.changed, 1268u);
  // The TDIGEST recordings hold BF.ADD / BF.EXISTS on a Bloom filter and on a digest.
  EXPECT_EQ(t.shapes, (std::set<Resp3Shape>{Resp3Shape::kBool, Resp3Shape::kInfoMap,
                                            Resp3Shape::kDouble, Resp3Shape::kDoubleArray}));
  EXPECT_EQ(t.changed_names,
            (std::set<std::string>{"TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.TRIMMED_MEAN",
                                   "TDIGEST.QUANTILE", "TDIGEST.CDF", "TDIGEST.BYRANK",
                                   "TDIGEST.BYREVRANK", "TDIGEST.INFO", "BF.ADD", "BF.EXISTS"}));
}

TEST(SketchResp3, TdigestShapes) {
  auto shape = [](std::vector<std::string_view> args) { return Resp3ShapeOf(args); };
  for (std::string_view name : {"TDIGEST.MIN", "tdigest.max", "TDigest.Trimmed_Mean"}) {
    EXPECT_EQ(shape({name, "t", "0.1", "0.9"}), Resp3Shape::kDouble) << name;
  }
  for (std::string_view name :
       {"TDIGEST.QUANTILE", "TDIGEST.CDF", "tdigest.byrank", "TDIGEST.BYREVRANK"}) {
    EXPECT_EQ(shape({name, "t", "1"}), Resp3Shape::kDoubleArray) << name;
  }
  EXPECT_EQ(shape({"TDIGEST.INFO", "t"}), Resp3Shape::kInfoMap);
  // Integers, +OK and errors are the same in RESP3.
  for (std::string_view name : {"TDIGEST.CREATE", "TDIGEST.ADD", "TDIGEST.RESET", "TDIGEST.MERGE",
                                "TDIGEST.RANK", "TDIGEST.REVRANK", "TDIGEST.NOPE"}) {
    EXPECT_EQ(shape({name, "t", "1"}), Resp3Shape::kSame) << name;
  }
}

TEST(SketchResp3, TdigestDoublesBecomeDoubleFrames) {
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$3\r\nnan\r\n"), ",nan\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$4\r\n-nan\r\n"), ",-nan\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$3\r\ninf\r\n"), ",inf\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$4\r\n-inf\r\n"), ",-inf\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$2\r\n-0\r\n"), ",-0\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$19\r\n0.10000000000000001\r\n"),
            ",0.10000000000000001\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$24\r\n-1.7976931348623157e+308\r\n"),
            ",-1.7976931348623157e+308\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "-ERR T-Digest: key does not exist\r\n"),
            "-ERR T-Digest: key does not exist\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray,
                    "*5\r\n$3\r\nnan\r\n$4\r\n-nan\r\n$3\r\ninf\r\n$4\r\n-inf\r\n$1\r\n3\r\n"),
            "*5\r\n,nan\r\n,-nan\r\n,inf\r\n,-inf\r\n,3\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray, "*0\r\n"), "*0\r\n");
  // An error inside an array is left alone, and so is a whole error.
  EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray, "*3\r\n$3\r\nnan\r\n-ERR odd\r\n$1\r\n1\r\n"),
            "*3\r\n,nan\r\n-ERR odd\r\n,1\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray, "-ERR T-Digest: error parsing quantile\r\n"),
            "-ERR T-Digest: error parsing quantile\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray,
                    "-WRONGTYPE Operation against a key holding the "
                    "wrong kind of value\r\n"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  // Integers and nulls are not doubles.
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, ":1\r\n"), ":1\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDouble, "$-1\r\n"), "$-1\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray, "*2\r\n:1\r\n$-1\r\n"), "*2\r\n:1\r\n$-1\r\n");
  // Replies of another form pass as they are.
  for (std::string_view odd : {"", "+OK\r\n", "*2\r\n$1\r\n1\r\n", "*x\r\n", "*-1\r\n"}) {
    EXPECT_EQ(ToResp3(Resp3Shape::kDoubleArray, odd), odd) << Show(odd);
  }
  for (std::string_view odd : {"", "+OK\r\n", "*1\r\n$1\r\n1\r\n"}) {
    EXPECT_EQ(ToResp3(Resp3Shape::kDouble, odd), odd) << Show(odd);
  }
}

TEST(SketchResp3, TdigestInfoBecomesAMapOfNinePairs) {
  const std::string pairs =
      "+Compression\r\n:100\r\n+Capacity\r\n:610\r\n+Merged nodes\r\n:0\r\n"
      "+Unmerged nodes\r\n:0\r\n+Merged weight\r\n:0\r\n+Unmerged weight\r\n:0\r\n"
      "+Observations\r\n:0\r\n+Total compressions\r\n:0\r\n+Memory usage\r\n:9840\r\n";
  EXPECT_EQ(ToResp3(Resp3ShapeOf({"TDIGEST.INFO", "t"}), "*18\r\n" + pairs), "%9\r\n" + pairs);
  EXPECT_EQ(ToResp3(Resp3ShapeOf({"TDIGEST.INFO", "t"}), "-ERR T-Digest: key does not exist\r\n"),
            "-ERR T-Digest: key does not exist\r\n");
}

TEST(SketchResp3, ShapeOfEachCommand) {
  auto shape = [](std::vector<std::string_view> args) { return Resp3ShapeOf(args); };
  EXPECT_EQ(static_cast<int>(Resp3Shape::kSame), 0);
  EXPECT_EQ(shape({"bf.add", "f", "a"}), Resp3Shape::kBool);
  EXPECT_EQ(shape({"BF.EXISTS", "f", "a"}), Resp3Shape::kBool);
  EXPECT_EQ(shape({"Bf.MAdd", "f", "a", "b"}), Resp3Shape::kBoolArray);
  EXPECT_EQ(shape({"BF.MEXISTS", "f", "a"}), Resp3Shape::kBoolArray);
  EXPECT_EQ(shape({"BF.INSERT", "f", "ITEMS", "a"}), Resp3Shape::kBoolArray);
  EXPECT_EQ(shape({"BF.INFO", "f"}), Resp3Shape::kInfoMap);
  EXPECT_EQ(shape({"CMS.INFO", "s"}), Resp3Shape::kInfoMap);
  EXPECT_EQ(shape({"BF.INFO", "f", "capacity"}), Resp3Shape::kBfInfoCapacity);
  EXPECT_EQ(shape({"BF.INFO", "f", "SIZE"}), Resp3Shape::kBfInfoSize);
  EXPECT_EQ(shape({"BF.INFO", "f", "Filters"}), Resp3Shape::kBfInfoFilters);
  EXPECT_EQ(shape({"BF.INFO", "f", "iTeMs"}), Resp3Shape::kBfInfoItems);
  EXPECT_EQ(shape({"BF.INFO", "f", "expansion"}), Resp3Shape::kBfInfoExpansion);
  // An unknown field, and the commands whose replies RESP3 does not change.
  EXPECT_EQ(shape({"BF.INFO", "f", "cap"}), Resp3Shape::kSame);
  EXPECT_EQ(shape({"BF.INFO", "f", ""}), Resp3Shape::kSame);
  for (std::string_view name : {"BF.RESERVE",   "BF.CARD",       "BF.SCANDUMP",
                                "BF.LOADCHUNK", "CMS.INITBYDIM", "CMS.INITBYPROB",
                                "CMS.INCRBY",   "CMS.QUERY",     "CMS.MERGE",
                                "GET",          "HGETALL",       "CF.INSERTNX",
                                "CF.COUNT",     "CF.RESERVE",    "CF.COMPACT",
                                "CF.LOADCHUNK", "CF.DEBUG",      "TOPK.RESERVE",
                                "TOPK.COUNT",   "TOPK.LIST",     ""}) {
    EXPECT_EQ(shape({name, "k", "1"}), Resp3Shape::kSame) << name;
  }
  // BF.DEBUG: an array of bulk strings in both.
  EXPECT_EQ(shape({"BF.DEBUG", "k"}), Resp3Shape::kSame);
  EXPECT_EQ(shape({}), Resp3Shape::kSame);
}

TEST(SketchResp3, CuckooShapes) {
  auto shape = [](std::vector<std::string_view> args) { return Resp3ShapeOf(args); };
  for (std::string_view name : {"CF.ADD", "cf.addnx", "CF.EXISTS", "CF.DEL"}) {
    EXPECT_EQ(shape({name, "k", "a"}), Resp3Shape::kBool) << name;
  }
  EXPECT_EQ(shape({"CF.MEXISTS", "k", "a", "b"}), Resp3Shape::kBoolArray);
  EXPECT_EQ(shape({"CF.INSERT", "k", "ITEMS", "a"}), Resp3Shape::kCfInsert);
  EXPECT_EQ(shape({"CF.INFO", "k"}), Resp3Shape::kInfoMap);
  EXPECT_EQ(shape({"CF.SCANDUMP", "k", "0"}), Resp3Shape::kNullInArray);
  // RedisBloom: CF.INSERT's -1 (no room) is false; CF.SCANDUMP's end is RESP3's null.
  EXPECT_EQ(ToResp3(Resp3Shape::kCfInsert, "*3\r\n:1\r\n:-1\r\n:1\r\n"),
            "*3\r\n#t\r\n#f\r\n#t\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kNullInArray, "*2\r\n:0\r\n$-1\r\n"), "*2\r\n:0\r\n_\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kNullInArray, "*2\r\n:9\r\n$2\r\nab\r\n"),
            "*2\r\n:9\r\n$2\r\nab\r\n");
}

TEST(SketchResp3, BooleansAndTheErrorsBesideThem) {
  EXPECT_EQ(ToResp3(Resp3Shape::kBool, ":1\r\n"), "#t\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBool, ":0\r\n"), "#f\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBool, "-ERR non scaling filter is full\r\n"),
            "-ERR non scaling filter is full\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBoolArray, "*0\r\n"), "*0\r\n");
  EXPECT_EQ(
      ToResp3(Resp3Shape::kBoolArray, "*3\r\n:1\r\n:0\r\n-ERR non scaling filter is full\r\n"),
      "*3\r\n#t\r\n#f\r\n-ERR non scaling filter is full\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBoolArray,
                    "-WRONGTYPE Operation against a key holding the "
                    "wrong kind of value\r\n"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
}

TEST(SketchResp3, InfoRepliesBecomeMapsWithTheNullOfResp3) {
  const std::string whole =
      "*10\r\n+Capacity\r\n:100\r\n+Size\r\n:296\r\n+Number of filters\r\n:1\r\n"
      "+Number of items inserted\r\n:20\r\n+Expansion rate\r\n$-1\r\n";
  EXPECT_EQ(ToResp3(Resp3Shape::kInfoMap, whole),
            "%5\r\n+Capacity\r\n:100\r\n+Size\r\n:296\r\n+Number of filters\r\n:1\r\n"
            "+Number of items inserted\r\n:20\r\n+Expansion rate\r\n_\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kInfoMap, "*6\r\n+width\r\n:1\r\n+depth\r\n:1\r\n+count\r\n:0\r\n"),
            "%3\r\n+width\r\n:1\r\n+depth\r\n:1\r\n+count\r\n:0\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoExpansion, "*1\r\n$-1\r\n"),
            "%1\r\n+Expansion rate\r\n_\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoExpansion, "*1\r\n:4\r\n"),
            "%1\r\n+Expansion rate\r\n:4\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoCapacity, "*1\r\n:100\r\n"), "%1\r\n+Capacity\r\n:100\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoSize, "*1\r\n:296\r\n"), "%1\r\n+Size\r\n:296\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoFilters, "*1\r\n:3\r\n"),
            "%1\r\n+Number of filters\r\n:3\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoItems, "*1\r\n:0\r\n"),
            "%1\r\n+Number of items inserted\r\n:0\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoSize, "-ERR not found\r\n"), "-ERR not found\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kInfoMap, "-CMS: key does not exist\r\n"),
            "-CMS: key does not exist\r\n");
}

TEST(SketchResp3, RepliesOfAnotherFormPassAsTheyAre) {
  // None of these is made by a plan; each is left alone rather than half rewritten.
  for (std::string_view odd : {"", "+OK\r\n", ":2\r\n", "*2\r\n:1\r\n", "*1\r\n:1\r\n:0\r\n",
                               "*x\r\n", "*-1\r\n", "$1\r\n1\r\n", "*1\r\n:1"}) {
    EXPECT_EQ(ToResp3(Resp3Shape::kBool, odd), odd) << Show(odd);
    EXPECT_EQ(ToResp3(Resp3Shape::kBoolArray, odd), odd) << Show(odd);
    EXPECT_EQ(ToResp3(Resp3Shape::kInfoMap, odd), odd) << Show(odd);
    EXPECT_EQ(ToResp3(Resp3Shape::kSame, odd), odd) << Show(odd);
  }
  EXPECT_EQ(ToResp3(Resp3Shape::kInfoMap, "*3\r\n+a\r\n:1\r\n+b\r\n"), "*3\r\n+a\r\n:1\r\n+b\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kBfInfoItems, "*2\r\n:1\r\n:2\r\n"), "*2\r\n:1\r\n:2\r\n");
  EXPECT_EQ(ToResp3(Resp3Shape::kSame, "*1\r\n:1\r\n"), "*1\r\n:1\r\n");
  // A SCANDUMP chunk keeps its bytes, a 0 or 1 among them included.
  EXPECT_EQ(ToResp3(Resp3Shape::kSame, "*2\r\n:1\r\n$4\r\n:1\r\n\r\n"),
            "*2\r\n:1\r\n$4\r\n:1\r\n\r\n");
}

}  // namespace
}  // namespace bloomproxy::filters

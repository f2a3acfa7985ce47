// CMS.* inside MULTI (filters/cms/multi_cms.h): what QueueCmsCommand queues (a refusal for a wrong
// arity, PING and a known reply for other immediate errors, else one EVAL of the script with the
// keys and arguments the script reads), and the replies Reply() makes of the script's answers
// for every state and command. The script itself runs against a real redis-server in
// tests/integration/test_multi_cms.py; the hash vectors below are shared with it.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_args.h"
#include "filters/cms/cms_meta.h"
#include "filters/cms/multi_cms.h"
#include "filters/common/key_layout.h"
#include "filters/common/multi_command.h"
#include "filters/common/murmur_hash.h"
#include "protocol/reply_decoder.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string_view>;

struct Queued {
  std::unique_ptr<QueuedSketch> sketch;
  std::string refusal;
  std::vector<std::string> request;  // the queued command's arguments
};

Queued Queue(const Args& args, const CmsConfig& config = CmsConfig()) {
  Queued q;
  q.sketch = QueueCmsCommand(args, config, &q.refusal);
  if (q.sketch == nullptr) return q;
  protocol::RequestParser parser;
  protocol::Command cmd;
  size_t consumed = 0;
  const std::string& bytes = q.sketch->request();
  EXPECT_EQ(parser.Parse(bytes, true, &consumed, &cmd), protocol::ParseStatus::kOk);
  EXPECT_EQ(consumed, bytes.size());
  for (std::string_view a : cmd.args) q.request.emplace_back(a);
  return q;
}

std::string Reply(const Queued& q, std::string_view answer) {
  protocol::ReplyDecoder decoder;
  return q.sketch->Reply(answer, &decoder);
}

std::string Marker(std::string_view name) { return CmsMarkerKey(DataKeyPrefix(name), name); }

bool IsUnexpected(const std::string& reply) {
  return reply.rfind("-ERR bloomproxy: unexpected reply from upstream", 0) == 0;
}

// ---------------------------------------------------------------------------------------------
// Queueing.

TEST(MultiCmsQueue, WrongArityIsRefusedWhenQueued) {
  for (const Args& args : {Args{"CMS.INCRBY", "s", "a"}, Args{"cms.initbydim", "s", "1"},
                           Args{"CMS.QUERY", "s"}, Args{"CMS.INFO"}, Args{"CMS.MERGE", "d", "1"},
                           Args{"CMS.INITBYPROB", "s", "0.1", "0.1", "x"}}) {
    Queued q = Queue(args);
    EXPECT_EQ(q.sketch, nullptr) << args[0];
  }
  Queued q = Queue({"CMS.INCRBY", "s", "a"});
  EXPECT_EQ(q.sketch, nullptr);
  EXPECT_EQ(q.refusal, "-ERR wrong number of arguments for 'cms.incrby' command\r\n");
}

TEST(MultiCmsQueue, ArgumentCountTheModuleChecksIsAnsweredAtExec) {
  // An odd number of arguments passes the command table's arity (-4), which is all Redis checks
  // when it queues the command: RedisBloom's own check answers inside EXEC's array.
  Queued q = Queue({"CMS.INCRBY", "s", "a", "1", "b"});
  ASSERT_NE(q.sketch, nullptr);
  EXPECT_TRUE(q.refusal.empty());
  EXPECT_EQ(Reply(q, "+PONG\r\n"), "-ERR wrong number of arguments for 'cms.incrby' command\r\n");
}

TEST(MultiCmsQueue, IncrByIsOneEvalOfTheScript) {
  Queued q = Queue({"cms.incrby", "hits", "a", "2", "b", "9223372036854775807"});
  ASSERT_NE(q.sketch, nullptr);
  const std::vector<std::string> want = {
      "EVAL", CmsMultiScript(), "2", "hits", Marker("hits"), "incrby", "", DataKeyPrefix("hits"),
      // the count's increment: 2 + 2^63-1, wrapped, signed
      "-9223372036854775807", "a", "2", "b", "9223372036854775807"};
  EXPECT_EQ(q.request, want);
}

TEST(MultiCmsQueue, QueryAndInfo) {
  Queued q = Queue({"CMS.QUERY", "{t}x", "a", "", "c"});
  ASSERT_NE(q.sketch, nullptr);
  EXPECT_EQ(q.request,
            (std::vector<std::string>{"EVAL", CmsMultiScript(), "2", "{t}x", Marker("{t}x"),
                                      "query", "", "{t}x", "a", "", "c"}));
  q = Queue({"CMS.INFO", "s"});
  ASSERT_NE(q.sketch, nullptr);
  EXPECT_EQ(q.request, (std::vector<std::string>{"EVAL", CmsMultiScript(), "2", "s", Marker("s"),
                                                 "info", "", DataKeyPrefix("s")}));
}

TEST(MultiCmsQueue, InitPassesANewSketchsParameters) {
  CmsConfig config;
  config.max_part_bytes = 16 + 4 * 100;  // 100 cells a part: 300 cells in 3 parts
  Queued q = Queue({"CMS.INITBYDIM", "s", "150", "2"}, config);
  ASSERT_NE(q.sketch, nullptr);
  ASSERT_EQ(q.request.size(), 12u);
  EXPECT_EQ(q.request[5], "init");
  EXPECT_EQ(q.request[6], "");
  EXPECT_EQ(q.request[8].size(), 16u);  // a fresh id
  EXPECT_EQ(q.request[9], "150");
  EXPECT_EQ(q.request[10], "2");
  EXPECT_EQ(q.request[11], "100");
  // Each queued creation gets its own id.
  Queued again = Queue({"CMS.INITBYDIM", "s", "150", "2"}, config);
  EXPECT_NE(again.request[8], q.request[8]);
  // INITBYPROB: RedisBloom's dimensions (0.01 -> width 200; 0.01 -> depth 7).
  q = Queue({"CMS.INITBYPROB", "s", "0.01", "0.01"});
  ASSERT_EQ(q.request.size(), 12u);
  EXPECT_EQ(q.request[9], "200");
  EXPECT_EQ(q.request[10], "7");
  EXPECT_EQ(q.request[11], "1400");
}

TEST(MultiCmsQueue, ArgumentErrorsWaitForTheKeyCheck) {
  Queued q = Queue({"CMS.INITBYDIM", "s", "0", "2"});
  ASSERT_NE(q.sketch, nullptr);
  // No parameters: the script answers "exists" or the error before it would read them.
  EXPECT_EQ(q.request, (std::vector<std::string>{"EVAL", CmsMultiScript(), "2", "s", Marker("s"),
                                                 "init", "e", DataKeyPrefix("s")}));
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrInvalidWidth);
  EXPECT_EQ(Reply(q, ":3\r\n"), kCmsErrKeyExists);
  q = Queue({"CMS.INCRBY", "s", "a", "x"});
  EXPECT_EQ(q.request[6], "e");
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrCannotParseNumber);
  EXPECT_EQ(Reply(q, ":1\r\n"), kCmsErrKeyMissing);
  EXPECT_EQ(Reply(q, ":2\r\n"), kCmsErrWrongType);
  q = Queue({"CMS.INCRBY", "s", "a", "-1"});
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrNegativeNumber);
  q = Queue({"CMS.MERGE", "d", "0", "s"});
  EXPECT_EQ(q.request.size(), 8u);  // only the destination: the sources never parsed
  EXPECT_EQ(q.request[6], "e");
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrNumKeysNotPositive);
  q = Queue({"CMS.MERGE", "d", "2", "s"});
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrWrongNumKeys);
  q = Queue({"CMS.MERGE", "d", "x", "s"});
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrInvalidNumKeys);
  q = Queue({"CMS.MERGE", "d", "1", "s", "WEIGHTS"});
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrWrongNumKeysWeights);
}

TEST(MultiCmsQueue, MergeNamesEachDistinctSourceOnce) {
  Queued q = Queue({"CMS.MERGE", "{t}d", "4", "{t}a", "{t}d", "{t}a", "{t}b", "WEIGHTS", "1",
                    "-9223372036854775808", "0", "7"});
  ASSERT_NE(q.sketch, nullptr);
  const std::vector<std::string> want = {"EVAL",
                                         CmsMultiScript(),
                                         "6",
                                         "{t}d",
                                         Marker("{t}d"),
                                         "{t}a",
                                         Marker("{t}a"),
                                         "{t}b",
                                         Marker("{t}b"),
                                         "merge",
                                         "",
                                         "{t}d",
                                         "{t}a",
                                         "{t}b",
                                         "4",
                                         "-1",
                                         "2",
                                         "1",
                                         "1",
                                         "-9223372036854775808",
                                         "2",
                                         "0",
                                         "3",
                                         "7"};
  EXPECT_EQ(q.request, want);
}

TEST(MultiCmsQueue, MergeBadWeightIsCheckedAfterTheSourcesBeforeIt) {
  Queued q = Queue({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "1", "x"});
  ASSERT_NE(q.sketch, nullptr);
  ASSERT_EQ(q.request.size(), 20u);
  EXPECT_EQ(q.request[10], "");  // not pending after the destination's check
  EXPECT_EQ(q.request[14], "2");
  EXPECT_EQ(q.request[15], "1");  // weight 1 (from 0) does not parse
  EXPECT_EQ(q.request[17], "1");  // source 0's weight
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrInvalidWeight);
  EXPECT_EQ(Reply(q, ":5\r\n"), kCmsErrDimsNotEqual);
  // Redis's strict integers: "07" is no weight.
  q = Queue({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "07", "1"});
  EXPECT_EQ(q.request[15], "0");
  EXPECT_EQ(Reply(q, ":4\r\n"), kCmsErrInvalidWeight);
}

TEST(MultiCmsQueue, KnownReplyForAnImmediateErrorThatIsNoArityError) {
  Queued q = Queue({"CMS.NOPE", "s"});
  ASSERT_NE(q.sketch, nullptr);
  EXPECT_EQ(q.request, (std::vector<std::string>{"PING"}));
  EXPECT_EQ(Reply(q, "+PONG\r\n"), "-ERR unknown command\r\n");
}

// ---------------------------------------------------------------------------------------------
// Replies.

TEST(MultiCmsReply, IncrBy) {
  Queued q = Queue({"CMS.INCRBY", "s", "a", "1", "b", "5"});
  EXPECT_EQ(Reply(q, "*2\r\n:1\r\n:4294967295\r\n"), "*2\r\n:1\r\n-CMS: INCRBY overflow\r\n");
  EXPECT_EQ(Reply(q, "*2\r\n:0\r\n:7\r\n"), "*2\r\n:0\r\n:7\r\n");
  EXPECT_EQ(Reply(q, ":1\r\n"), kCmsErrKeyMissing);
  EXPECT_EQ(Reply(q, ":2\r\n"), kCmsErrWrongType);
  // Nonsense: a wrong count, a value out of range, a code that cannot be.
  EXPECT_TRUE(IsUnexpected(Reply(q, "*1\r\n:1\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, "*2\r\n:1\r\n:4294967296\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, "*2\r\n:1\r\n$1\r\n1\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, ":0\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, ":3\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, ":4\r\n")));  // no argument error was queued
  EXPECT_TRUE(IsUnexpected(Reply(q, ":7\r\n")));  // damaged metadata
  EXPECT_TRUE(IsUnexpected(Reply(q, "$-1\r\n")));
}

TEST(MultiCmsReply, QueryShowsSaturatedCounts) {
  Queued q = Queue({"CMS.QUERY", "s", "a"});
  EXPECT_EQ(Reply(q, "*1\r\n:4294967295\r\n"), "*1\r\n:4294967295\r\n");
  EXPECT_EQ(Reply(q, ":1\r\n"), kCmsErrKeyMissing);
  EXPECT_TRUE(IsUnexpected(Reply(q, "*1\r\n:-1\r\n")));
}

TEST(MultiCmsReply, Info) {
  Queued q = Queue({"CMS.INFO", "s"});
  const std::string want =
      "*6\r\n+width\r\n:100\r\n+depth\r\n:3\r\n+count\r\n:-2\r\n";  // count 2^64-2
  EXPECT_EQ(Reply(q, "*3\r\n$3\r\n100\r\n$1\r\n3\r\n$8\r\n\xff\xff\xff\xff\xff\xff\xff\xfe\r\n"),
            want);
  // A short part 0 reads as zeros past its end, as BITFIELD does.
  EXPECT_EQ(Reply(q, "*3\r\n$3\r\n100\r\n$1\r\n3\r\n$1\r\n\x01\r\n"),
            "*6\r\n+width\r\n:100\r\n+depth\r\n:3\r\n+count\r\n:72057594037927936\r\n");
  EXPECT_EQ(Reply(q, "*3\r\n$3\r\n100\r\n$1\r\n3\r\n$0\r\n\r\n"),
            "*6\r\n+width\r\n:100\r\n+depth\r\n:3\r\n+count\r\n:0\r\n");
  EXPECT_EQ(Reply(q, ":2\r\n"), kCmsErrWrongType);
  EXPECT_TRUE(IsUnexpected(Reply(q, "*3\r\n$1\r\nx\r\n$1\r\n3\r\n$0\r\n\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, "*3\r\n$1\r\n1\r\n$1\r\n3\r\n$9\r\n123456789\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(q, "*2\r\n$1\r\n1\r\n$1\r\n3\r\n")));
}

TEST(MultiCmsReply, InitAndMerge) {
  Queued init = Queue({"CMS.INITBYDIM", "s", "10", "2"});
  EXPECT_EQ(Reply(init, ":0\r\n"), "+OK\r\n");
  EXPECT_EQ(Reply(init, ":3\r\n"), kCmsErrKeyExists);
  EXPECT_TRUE(IsUnexpected(Reply(init, ":1\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(init, "*0\r\n")));
  Queued merge = Queue({"CMS.MERGE", "d", "1", "s"});
  EXPECT_EQ(Reply(merge, ":0\r\n"), "+OK\r\n");
  EXPECT_EQ(Reply(merge, ":1\r\n"), kCmsErrKeyMissing);
  EXPECT_EQ(Reply(merge, ":2\r\n"), kCmsErrWrongType);
  EXPECT_EQ(Reply(merge, ":5\r\n"), kCmsErrDimsNotEqual);
  EXPECT_EQ(Reply(merge, ":6\r\n"), kCmsErrMergeOverflow);
  EXPECT_TRUE(IsUnexpected(Reply(merge, ":8\r\n")));
  EXPECT_TRUE(IsUnexpected(Reply(merge, ":9\r\n")));
}

TEST(MultiCmsReply, UpstreamErrors) {
  Queued q = Queue({"CMS.QUERY", "s", "a"});
  // Errors about the server's state reach the client as they are; others are quoted.
  EXPECT_EQ(Reply(q, "-OOM command not allowed\r\n"), "-OOM command not allowed\r\n");
  EXPECT_EQ(Reply(q, "-BUSY Redis is busy\r\n"), "-BUSY Redis is busy\r\n");
  EXPECT_TRUE(IsUnexpected(Reply(q, "-ERR Error running script\r\n")));
}

// ---------------------------------------------------------------------------------------------
// The hash: vectors the integration test checks the script's murmur2 against (it EVALs the
// prelude), computed here with filters/cms/cms.h's MurmurHash2.

struct HashVector {
  std::string item;
  uint32_t seed;
  uint32_t hash;
};

TEST(MultiCmsHash, VectorsSharedWithTheIntegrationTest) {
  // test_multi_cms.py (HASH_VECTORS) holds the same table and checks the script's murmur2.
  const HashVector vectors[] = {
      {"", 0, 0},
      {"a", 0, 2456313694u},
      {"ab", 1, 1692487918u},
      {"abc", 2, 3876204518u},
      {"abcd", 3, 1741750889u},
      {"hello world", 6, 2241243765u},
      {std::string("\xff\xfe\x80\x7f\x00\x01", 6), 4294967295u, 3264469326u},
      {"count-min sketch", 1000, 402663127u},
  };
  for (const HashVector& v : vectors) {
    EXPECT_EQ(MurmurHash2(v.item.data(), static_cast<int>(v.item.size()), v.seed), v.hash)
        << v.item;
  }
  // And the cell a row picks, as the script computes it: hash % width + row * width.
  EXPECT_EQ(CmsItemCell("abc", 1000, 2), 3876204518u % 1000 + 2000);
}

}  // namespace
}  // namespace bloomproxy::filters

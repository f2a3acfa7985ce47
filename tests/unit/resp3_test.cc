// Resp3ToResp2: a RESP3 reply read as the RESP2 reply Redis sends for the same value, and the
// decoder reading RESP3 replies through it.
#include "protocol/resp3.h"

#include <gtest/gtest.h>

#include <string>

#include "protocol/reply_decoder.h"

namespace bloomproxy::protocol {
namespace {

std::string Down(std::string_view in) {
  std::string out;
  return Resp3ToResp2(in, &out) ? out : "(unchanged)";
}

TEST(Resp3ToResp2, ScalarsAsRedisWritesThemToRespTwo) {
  EXPECT_EQ(Down("_\r\n"), "$-1\r\n");
  EXPECT_EQ(Down("#t\r\n"), ":1\r\n");
  EXPECT_EQ(Down("#f\r\n"), "$-1\r\n");  // Lua's false
  EXPECT_EQ(Down(",3.5\r\n"), "$3\r\n3.5\r\n");
  EXPECT_EQ(Down("(12345678901234567890\r\n"), "$20\r\n12345678901234567890\r\n");
  EXPECT_EQ(Down("=9\r\ntxt:hello\r\n"), "$5\r\nhello\r\n");
  EXPECT_EQ(Down("!10\r\nERR oh no!\r\n"), "-ERR oh no!\r\n");
}

TEST(Resp3ToResp2, AggregatesFlatten) {
  EXPECT_EQ(Down("%2\r\n+a\r\n:1\r\n+b\r\n_\r\n"), "*4\r\n+a\r\n:1\r\n+b\r\n$-1\r\n");
  EXPECT_EQ(Down("~2\r\n$1\r\nx\r\n$1\r\ny\r\n"), "*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
  EXPECT_EQ(Down(">2\r\n$10\r\ninvalidate\r\n_\r\n"), "*2\r\n$10\r\ninvalidate\r\n$-1\r\n");
  EXPECT_EQ(Down("*2\r\n%1\r\n$1\r\nk\r\n#t\r\n$0\r\n\r\n"),
            "*2\r\n*2\r\n$1\r\nk\r\n:1\r\n$0\r\n\r\n");
  EXPECT_EQ(Down("|1\r\n+ttl\r\n:5\r\n%1\r\n+a\r\n:1\r\n"), "*2\r\n+a\r\n:1\r\n");
}

TEST(Resp3ToResp2, RespTwoAndBinaryBodiesAreLeftAlone) {
  // Bodies may hold any byte, RESP3 type bytes included: only type bytes count.
  EXPECT_EQ(Down("*2\r\n$3\r\n%1\n\r\n:1\r\n"), "(unchanged)");
  EXPECT_EQ(Down("$5\r\n_\r\n#t\r\n"), "(unchanged)");
  EXPECT_EQ(Down("*3\r\n$-1\r\n*-1\r\n$0\r\n\r\n"), "(unchanged)");
  EXPECT_EQ(Down("*2\r\n$3\r\n~a_\r\n_\r\n"), "*2\r\n$3\r\n~a_\r\n$-1\r\n");
  EXPECT_EQ(Down("%1\r\n+a\r\n"), "(unchanged)");  // truncated
}

TEST(Resp3ToResp2, DecoderReadsRespThree) {
  ReplyDecoder d;
  ReplyPtr r = d.Decode("*3\r\n_\r\n#t\r\n%1\r\n+k\r\n,1.5\r\n");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 3u);
  EXPECT_EQ(r->element[0]->type, REDIS_REPLY_NIL);
  EXPECT_EQ(r->element[1]->integer, 1);
  ASSERT_EQ(r->element[2]->elements, 2u);
  EXPECT_EQ(ReplyString(r->element[2]->element[1]), "1.5");
  r = d.Decode("=12\r\ntxt:# Server\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(ReplyString(r.get()), "# Server");
}

TEST(PairsToResp3, MapsAndPairsAsRedisAnswersRespThree) {
  const std::string flat = "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n_\r\n";
  EXPECT_EQ(PairsToResp3(flat, false), "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n_\r\n");
  EXPECT_EQ(PairsToResp3(flat, true), "*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n_\r\n");
  EXPECT_EQ(PairsToResp3("*0\r\n", false), "%0\r\n");
  EXPECT_EQ(PairsToResp3("*0\r\n", true), "*0\r\n");
  // Not a flat array of pairs: as it is.
  EXPECT_EQ(PairsToResp3("*1\r\n:1\r\n", false), "*1\r\n:1\r\n");
  EXPECT_EQ(PairsToResp3("-ERR x\r\n", true), "-ERR x\r\n");
}

TEST(IsSubscribeReplyPush, ConfirmationsAreRepliesMessagesAreNot) {
  EXPECT_TRUE(IsSubscribeReplyPush(">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"));
  EXPECT_TRUE(IsSubscribeReplyPush(">3\r\n$12\r\npunsubscribe\r\n_\r\n:0\r\n"));
  EXPECT_FALSE(IsSubscribeReplyPush(">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n"));
  EXPECT_FALSE(IsSubscribeReplyPush(">2\r\n$10\r\ninvalidate\r\n_\r\n"));
  EXPECT_FALSE(IsSubscribeReplyPush("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"));
}

}  // namespace
}  // namespace bloomproxy::protocol

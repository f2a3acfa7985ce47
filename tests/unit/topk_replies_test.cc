// TOPK replies made of script answers (filters/topk/topk_replies.h), on hand-written RESP2
// answers decoded as the plans decode them: TOPK.ADD / INCRBY members (nulls, expelled items cut
// at their first NUL, INCRBY's short reply and its error element), QUERY / COUNT integers, LIST's
// stable sort by count, INFO's eight elements, RESERVE's statuses, and every failure: what the
// name holds, a damaged sketch, upstream errors, and answers that make no sense (an error reply,
// never a made-up one).
#include "filters/topk/topk_replies.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "filters/topk/topk_args.h"
#include "protocol/errors.h"
#include "protocol/reply_decoder.h"
#include "tests/unit/script_answers.h"

namespace bloomproxy::filters {
namespace {

using namespace script_answers;        // NOLINT: test-local helpers
using namespace std::string_literals;  // NOLINT: items with NUL bytes

constexpr std::string_view kId = "0123456789abcdef";

// The fields every answer ends with: id, k, width, depth, decay.
std::string Fields(std::string_view k = "3", std::string_view width = "50",
                   std::string_view depth = "4", std::string_view decay = "0.90000000000000002") {
  return Array(5) + Bulk(kId) + Bulk(k) + Bulk(width) + Bulk(depth) + Bulk(decay);
}

bool IsUnexpected(const std::string& reply) {
  return reply.rfind(protocol::errors::kUnexpectedUpstreamPrefix, 0) == 0 && reply.size() >= 2 &&
         reply.substr(reply.size() - 2) == "\r\n";
}

class TopkRepliesTest : public ::testing::Test {
 protected:
  std::vector<std::string> Add(const std::string& answer,
                               const std::vector<TopkAddMember>& members) {
    decoded_ = answer.empty() || answer[0] == '-' ? nullptr : decoder_.Decode(answer);
    return TopkAddReplies(answer, decoded_.get(), members);
  }
  std::string Read(const TopkRequest& request, const std::string& answer) {
    decoded_ = answer.empty() || answer[0] == '-' ? nullptr : decoder_.Decode(answer);
    return TopkReadReply(request, answer, decoded_.get());
  }
  static TopkRequest Request(TopkCommand command, size_t items = 0, bool with_count = false) {
    TopkRequest r;
    r.command = command;
    r.items.assign(items, std::string_view());
    r.with_count = with_count;
    return r;
  }

  protocol::ReplyDecoder decoder_;
  protocol::ReplyPtr decoded_;
};

// ---------------------------------------------------------------------------------------------
// TOPK.ADD / TOPK.INCRBY.

TEST_F(TopkRepliesTest, AddNullsAndExpelledItems) {
  const std::string answer = Array(2) + Array(3) + kNull + Bulk("foo") + kNull + Fields();
  const std::vector<std::string> out = Add(answer, {{3, 3, ""}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], Array(3) + kNull + Bulk("foo") + kNull);
}

TEST_F(TopkRepliesTest, AddExpelledItemsAreCutAtTheFirstNul) {
  const std::string answer =
      Array(2) + Array(3) + Bulk("a\0b"s) + Bulk("\0x"s) + Bulk("") + Fields();
  const std::vector<std::string> out = Add(answer, {{3, 3, ""}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], Array(3) + Bulk("a") + Bulk("") + Bulk(""));
}

TEST_F(TopkRepliesTest, AddSeveralMembersEachGetTheirOwnElement) {
  const std::string answer =
      Array(4) + Array(1) + Bulk("x") + Array(2) + kNull + kNull + Array(0) + Fields();
  const std::vector<std::string> out = Add(answer, {{1, 1, ""}, {2, 2, ""}, {0, 0, ""}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], Array(1) + Bulk("x"));
  EXPECT_EQ(out[1], Array(2) + kNull + kNull);
  EXPECT_EQ(out[2], Array(0));
}

TEST_F(TopkRepliesTest, IncrByShortReplyEndsWithItsErrorElement) {
  // TOPK.INCRBY t a 2 b -1 c 3: three pairs announced, a applied, then the error, then nothing.
  const std::string error(kTopkErrIncrement);
  const std::string answer = Array(2) + Array(1) + Bulk("old") + Fields();
  const std::vector<std::string> out = Add(answer, {{1, 3, error}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], Array(3) + Bulk("old") + error);
  // The first pair bad: nothing applied.
  const std::vector<std::string> first = Add(Array(2) + Array(0) + Fields(), {{0, 2, error}});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], Array(2) + error);
  // The last pair bad: the reply is whole.
  const std::vector<std::string> last =
      Add(Array(2) + Array(1) + kNull + Fields(), {{1, 2, error}});
  EXPECT_EQ(last[0], Array(2) + kNull + error);
}

TEST_F(TopkRepliesTest, AddStatusesGoToEveryMember) {
  const std::vector<TopkAddMember> two = {{1, 1, ""}, {2, 2, ""}};
  EXPECT_EQ(Add(Simple("MISSING"), two),
            (std::vector<std::string>(2, std::string(kTopkErrKeyMissing))));
  EXPECT_EQ(Add(Simple("WRONGTYPE"), two),
            (std::vector<std::string>(2, std::string(kTopkErrWrongType))));
  const std::vector<std::string> damaged = Add(Simple("DAMAGED heap"), two);
  ASSERT_EQ(damaged.size(), 2u);
  EXPECT_EQ(damaged[0], damaged[1]);
  EXPECT_EQ(damaged[0], protocol::errors::UnexpectedUpstreamReply(
                            "EVALSHA", "the Top-K sketch is damaged: heap"));
  // An INCRBY's error element is not its reply when the key is missing.
  EXPECT_EQ(Add(Simple("MISSING"), {{0, 2, std::string(kTopkErrIncrement)}}),
            (std::vector<std::string>{std::string(kTopkErrKeyMissing)}));
}

TEST_F(TopkRepliesTest, AddUpstreamErrorsGoToEveryMember) {
  const std::vector<TopkAddMember> two = {{1, 1, ""}, {1, 1, ""}};
  // A server-state error passes as it is.
  const std::string oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
  EXPECT_EQ(Add(oom, two), (std::vector<std::string>(2, oom)));
  const std::string busy = "-BUSY Redis is busy running a script.\r\n";
  EXPECT_EQ(Add(busy, two), (std::vector<std::string>(2, busy)));
  // ERR is quoted in an unexpected-reply error.
  const std::vector<std::string> err = Add("-ERR Error running script\r\n", two);
  ASSERT_EQ(err.size(), 2u);
  EXPECT_EQ(err[0], err[1]);
  EXPECT_EQ(err[0],
            protocol::errors::UnexpectedUpstreamReply("EVALSHA", "ERR Error running script"));
}

TEST_F(TopkRepliesTest, AddMalformedAnswersAreErrorsForEveryMember) {
  const std::vector<TopkAddMember> one = {{1, 1, ""}};
  const std::vector<std::string> answers = {
      Int(1),                                                     // not an array
      Bulk("x"),                                                  // a string
      kNull,                                                      // nil
      Array(0),                                                   // empty
      Simple("FOO"),                                              // unknown status
      Simple("OK"),                                               // the commit's status
      Array(1) + Fields(),                                        // no member element
      Array(3) + Array(1) + kNull + Array(1) + kNull + Fields(),  // one member too many
      Array(2) + Array(1) + kNull + Array(4) + Bulk(kId) + Bulk("3") + Bulk("50") +
          Bulk("4"),  // fields of 4
      Array(2) + Array(1) + kNull + Array(5) + Bulk(kId) + Int(3) + Bulk("50") + Bulk("4") +
          Bulk("1"),                         // a field not a string
      Array(2) + Array(1) + kNull + Int(7),  // fields not an array
  };
  for (const std::string& answer : answers) {
    const std::vector<std::string> out = Add(answer, one);
    ASSERT_EQ(out.size(), 1u) << answer;
    EXPECT_TRUE(IsUnexpected(out[0])) << answer << " -> " << out[0];
  }
  // A frame the decoder could not decode.
  const std::vector<std::string> undecoded =
      TopkAddReplies(Array(2) + Array(1) + kNull + Fields(), nullptr, one);
  ASSERT_EQ(undecoded.size(), 1u);
  EXPECT_TRUE(IsUnexpected(undecoded[0])) << undecoded[0];
}

TEST_F(TopkRepliesTest, AddMalformedMemberElementIsAnErrorNotAMadeUpReply) {
  const std::vector<TopkAddMember> one = {{2, 2, ""}};
  const std::vector<std::string> answers = {
      Array(2) + Array(1) + kNull + Fields(),                  // fewer results than items
      Array(2) + Array(3) + kNull + kNull + kNull + Fields(),  // more
      Array(2) + Array(2) + kNull + Int(0) + Fields(),         // an integer result
      Array(2) + Array(2) + kNull + Array(0) + Fields(),       // a nested array
      Array(2) + Bulk("x") + Fields(),                         // not an array
  };
  for (const std::string& answer : answers) {
    const std::vector<std::string> out = Add(answer, one);
    ASSERT_EQ(out.size(), 1u) << answer;
    EXPECT_TRUE(IsUnexpected(out[0])) << answer << " -> " << out[0];
  }
}

TEST(TopkAddMemberReply, FromTheModelsExpelledItems) {
  const std::vector<TopkExpelled> expelled = {std::nullopt, "x\0y"s, ""s, std::nullopt};
  EXPECT_EQ(TopkAddMemberReply(expelled, {4, 4, ""}),
            Array(4) + kNull + Bulk("x") + Bulk("") + kNull);
  // INCRBY: the pairs announced, the applied ones, then the error.
  const std::string error(kTopkErrIncrement);
  EXPECT_EQ(TopkAddMemberReply({"a"s}, {1, 5, error}), Array(5) + Bulk("a") + error);
  EXPECT_EQ(TopkAddMemberReply({}, {0, 1, error}), Array(1) + error);
  EXPECT_EQ(TopkAddMemberReply({}, {0, 0, ""}), Array(0));
}

TEST_F(TopkRepliesTest, AnswerFieldsAreTheLastElementOfFiveStrings) {
  decoded_ = decoder_.Decode(Array(2) + Array(0) + Fields());
  const redisReply* f = TopkAnswerFields(decoded_.get());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->elements, 5u);
  EXPECT_EQ(std::string_view(f->element[0]->str, f->element[0]->len), kId);
  EXPECT_EQ(TopkAnswerFields(nullptr), nullptr);
  decoded_ = decoder_.Decode(Array(0));
  EXPECT_EQ(TopkAnswerFields(decoded_.get()), nullptr);
  decoded_ = decoder_.Decode(Simple("MISSING"));
  EXPECT_EQ(TopkAnswerFields(decoded_.get()), nullptr);
  decoded_ =
      decoder_.Decode(Array(1) + Array(5) + Bulk(kId) + Bulk("1") + Bulk("1") + kNull + Bulk("1"));
  EXPECT_EQ(TopkAnswerFields(decoded_.get()), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Reads.

TEST_F(TopkRepliesTest, QueryAndCountAreIntegers) {
  const std::string query = Array(2) + Array(3) + Int(1) + Int(0) + Int(1) + Fields();
  EXPECT_EQ(Read(Request(TopkCommand::kQuery, 3), query), Array(3) + Int(1) + Int(0) + Int(1));
  const std::string count = Array(2) + Array(2) + Int(4294967295) + Int(0) + Fields();
  EXPECT_EQ(Read(Request(TopkCommand::kCount, 2), count), Array(2) + Int(4294967295) + Int(0));
}

TEST_F(TopkRepliesTest, QueryAndCountMalformedResultsAreErrors) {
  const std::vector<std::string> answers = {
      Array(2) + Array(1) + Int(1) + Fields(),                      // fewer than the items
      Array(2) + Array(3) + Int(1) + Int(1) + Int(1) + Fields(),    // more
      Array(2) + Array(2) + Int(1) + Bulk("1") + Fields(),          // a string result
      Array(2) + Array(2) + Int(1) + kNull + Fields(),              // a nil result
      Array(2) + Int(2) + Fields(),                                 // results not an array
      Array(3) + Array(2) + Int(1) + Int(1) + Array(0) + Fields(),  // three elements
      Array(1) + Fields(),                                          // no results
  };
  for (TopkCommand c : {TopkCommand::kQuery, TopkCommand::kCount}) {
    for (const std::string& answer : answers) {
      const std::string out = Read(Request(c, 2), answer);
      EXPECT_TRUE(IsUnexpected(out)) << answer << " -> " << out;
    }
  }
}

TEST_F(TopkRepliesTest, ListSortsByCountStablyInSlotOrder) {
  // Slot order: a 3, b 5, c 3, d\0e 5, f 1.
  const std::string answer = Array(2) + Array(10) + Int(3) + Bulk("a") + Int(5) + Bulk("b") +
                             Int(3) + Bulk("c") + Int(5) + Bulk("d\0e"s) + Int(1) + Bulk("f") +
                             Fields();
  EXPECT_EQ(Read(Request(TopkCommand::kList), answer),
            Array(5) + Bulk("b") + Bulk("d") + Bulk("a") + Bulk("c") + Bulk("f"));
  EXPECT_EQ(Read(Request(TopkCommand::kList, 0, true), answer),
            Array(10) + Bulk("b") + Int(5) + Bulk("d") + Int(5) + Bulk("a") + Int(3) + Bulk("c") +
                Int(3) + Bulk("f") + Int(1));
}

TEST_F(TopkRepliesTest, ListKeepsSlotOrderForManyEqualCounts) {
  // Enough entries that an unstable sort would show (std::sort switches from insertion sort at
  // 16 elements).
  std::string results;
  std::string expected;
  std::string expected_last;
  for (int i = 0; i < 40; ++i) {
    const int64_t count = i % 3 == 0 ? 7 : 2;
    const std::string item = "i" + std::to_string(i);
    results += Int(count) + Bulk(item);
    (count == 7 ? expected : expected_last) += Bulk(item) + Int(count);
  }
  const std::string answer = Array(2) + Array(80) + results + Fields();
  EXPECT_EQ(Read(Request(TopkCommand::kList, 0, true), answer),
            Array(80) + expected + expected_last);
}

TEST_F(TopkRepliesTest, ListEmptyAndMalformed) {
  EXPECT_EQ(Read(Request(TopkCommand::kList), Array(2) + Array(0) + Fields()), Array(0));
  EXPECT_EQ(Read(Request(TopkCommand::kList, 0, true), Array(2) + Array(0) + Fields()), Array(0));
  const std::vector<std::string> answers = {
      Array(2) + Array(3) + Int(3) + Bulk("a") + Int(1) + Fields(),  // odd
      Array(2) + Array(2) + Bulk("a") + Int(3) + Fields(),           // pair reversed
      Array(2) + Array(2) + Int(3) + kNull + Fields(),               // nil item
      Array(2) + Simple("OK") + Fields(),                            // not an array
  };
  for (const std::string& answer : answers) {
    const std::string out = Read(Request(TopkCommand::kList, 0, true), answer);
    EXPECT_TRUE(IsUnexpected(out)) << answer << " -> " << out;
  }
}

TEST_F(TopkRepliesTest, InfoHasEightElementsAndTheDecayAsABulkString) {
  const std::string answer = Array(2) + Array(0) + Fields("3", "50", "4", "0.90000000000000002");
  EXPECT_EQ(Read(Request(TopkCommand::kInfo), answer),
            Array(8) + Simple("k") + Int(3) + Simple("width") + Int(50) + Simple("depth") + Int(4) +
                Simple("decay") + Bulk("0.90000000000000002"));
  EXPECT_EQ(Read(Request(TopkCommand::kInfo), Array(2) + Array(0) + Fields("1", "8", "7", "1")),
            Array(8) + Simple("k") + Int(1) + Simple("width") + Int(8) + Simple("depth") + Int(7) +
                Simple("decay") + Bulk("1"));
  // Fields that are not counts.
  for (const std::string& bad : {Fields("x"), Fields("3", "-1"), Fields("3", "50", "")}) {
    const std::string out = Read(Request(TopkCommand::kInfo), Array(2) + Array(0) + bad);
    EXPECT_TRUE(IsUnexpected(out)) << out;
  }
}

TEST_F(TopkRepliesTest, ReadFailures) {
  for (TopkCommand c :
       {TopkCommand::kQuery, TopkCommand::kCount, TopkCommand::kList, TopkCommand::kInfo}) {
    EXPECT_EQ(Read(Request(c, 1), Simple("MISSING")), kTopkErrKeyMissing);
    EXPECT_EQ(Read(Request(c, 1), Simple("WRONGTYPE")), kTopkErrWrongType);
    EXPECT_EQ(Read(Request(c, 1), Simple("DAMAGED buckets")),
              protocol::errors::UnexpectedUpstreamReply("EVALSHA",
                                                        "the Top-K sketch is damaged: buckets"));
    const std::string loading = "-LOADING Redis is loading the dataset in memory\r\n";
    EXPECT_EQ(Read(Request(c, 1), loading), loading);
    EXPECT_TRUE(IsUnexpected(Read(Request(c, 1), "-ERR unknown command 'EVALSHA_RO'\r\n")));
    EXPECT_TRUE(IsUnexpected(Read(Request(c, 1), Int(0))));
    EXPECT_TRUE(IsUnexpected(Read(Request(c, 1), Simple("CONFLICT"))));
    EXPECT_TRUE(IsUnexpected(Read(Request(c, 1), Array(0))));
    EXPECT_TRUE(IsUnexpected(Read(Request(c, 1), Array(2) + Array(1) + Int(1) + Array(0))));
    EXPECT_TRUE(IsUnexpected(
        TopkReadReply(Request(c, 1), Array(2) + Array(1) + Int(1) + Fields(), nullptr)));
  }
}

// ---------------------------------------------------------------------------------------------
// TOPK.RESERVE.

TEST(TopkReserveReply, ExistsFreeOk) {
  const std::string refusal(kTopkErrInvalidK);
  // The name holds something: "key already exists", whatever the arguments.
  EXPECT_EQ(TopkReserveReply("", "+EXISTS\r\n"), kTopkErrKeyExists);
  EXPECT_EQ(TopkReserveReply(refusal, "+EXISTS\r\n"), kTopkErrKeyExists);
  // Free: the refusal (the arguments' error, or Insufficient memory).
  EXPECT_EQ(TopkReserveReply(refusal, "+FREE\r\n"), refusal);
  EXPECT_EQ(TopkReserveReply(kTopkErrInsufficientMemory, "+FREE\r\n"), kTopkErrInsufficientMemory);
  EXPECT_EQ(TopkReserveReply("", "+OK\r\n"), "+OK\r\n");
}

TEST(TopkReserveReply, AnswersThatDoNotFitTheCallAreErrors) {
  const std::string refusal(kTopkErrInvalidK);
  // "check" never answers OK, "create" never FREE.
  EXPECT_TRUE(IsUnexpected(TopkReserveReply(refusal, "+OK\r\n")));
  EXPECT_TRUE(IsUnexpected(TopkReserveReply("", "+FREE\r\n")));
  for (const std::string& answer : {Int(1), Bulk("OK"), Simple("MISSING"), Array(0), kNull}) {
    EXPECT_TRUE(IsUnexpected(TopkReserveReply("", answer))) << answer;
    EXPECT_TRUE(IsUnexpected(TopkReserveReply(refusal, answer))) << answer;
  }
  const std::string readonly = "-READONLY You can't write against a read only replica.\r\n";
  EXPECT_EQ(TopkReserveReply("", readonly), readonly);
  EXPECT_EQ(TopkReserveReply(refusal, readonly), readonly);
  EXPECT_EQ(TopkReserveReply("", "-ERR bad\r\n"),
            protocol::errors::UnexpectedUpstreamReply("EVALSHA", "ERR bad"));
}

}  // namespace
}  // namespace bloomproxy::filters

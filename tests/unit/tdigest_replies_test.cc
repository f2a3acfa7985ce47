// TDIGEST replies made of script answers (filters/tdigest/tdigest_replies.h), on hand-written RESP2
// answers decoded as the plans decode them: the 56-byte header, every builder's statuses (MISSING,
// WRONGTYPE, DAMAGED, EXISTS, FREE, OK, ALLOC, OVERFLOW), upstream errors (as UpstreamError says),
// INFO's nine pairs, MIN / MAX of an empty digest, RANK's C cast, the doubles' format, ADD's reply
// per command and its shared failures, and answers that make no sense (an error reply, never a
// made-up one).
#include "filters/tdigest/tdigest_replies.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "filters/tdigest/tdigest.h"
#include "filters/tdigest/tdigest_args.h"
#include "protocol/errors.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {
namespace {

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
const std::string kNull = "$-1\r\n";
const std::string kOk = "+OK\r\n";

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

std::string Doubles(const std::vector<double>& values) {
  std::string out;
  for (double d : values) Put(&out, d);
  return out;
}

// The data key's 56-byte header of `h`.
std::string HeaderBytes(const TdigestHeader& h) {
  std::string out;
  Put(&out, h.compression);
  Put(&out, h.min);
  Put(&out, h.max);
  Put(&out, h.merged);
  Put(&out, h.unmerged);
  Put(&out, h.merged_weight);
  Put(&out, h.unmerged_weight);
  Put(&out, h.total_compressions);
  return out;
}

// A fresh default digest's header.
TdigestHeader Empty(double compression = 100) {
  TdigestHeader h;
  h.compression = compression;
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  return h;
}

// tdigest_read.lua's answer {header, results}.
std::string ReadAnswer(const TdigestHeader& h, const std::vector<double>& results = {}) {
  return Array(2) + Bulk(HeaderBytes(h)) + Bulk(Doubles(results));
}

// The RESP2 reply of a double.
std::string D(std::string_view text) { return Bulk(text); }

std::string Err(std::string_view e) { return std::string(e); }

bool IsUnexpected(const std::string& reply) {
  return reply.rfind(protocol::errors::kUnexpectedUpstreamPrefix, 0) == 0 && reply.size() >= 2 &&
         reply.substr(reply.size() - 2) == "\r\n" && reply.find('\n') == reply.size() - 1;
}

const std::string kOom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const std::string kBusy = "-BUSY Redis is busy running a script.\r\n";
const std::string kScriptError = "-ERR Error running script (call to f_x): @user_script:1\r\n";
const std::string kUpstreamWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

// Answers no builder accepts as anything but nonsense.
const std::vector<std::string> kNonsense = {
    Int(1), Int(0), Bulk("OK"), kNull, Array(0), "*-1\r\n", Simple("FOO"), Simple(""),
};

class TdigestRepliesTest : public ::testing::Test {
 protected:
  const redisReply* Decode(const std::string& answer) {
    decoded_ = answer.empty() || answer[0] == '-' ? nullptr : decoder_.Decode(answer);
    return decoded_.get();
  }
  std::string Create(const std::string& error, const std::string& answer) {
    return TdigestCreateReply(error, answer, Decode(answer));
  }
  std::string Check(TdigestCommand command, const std::string& error, const std::string& answer) {
    return TdigestCheckReply(command, error, answer, Decode(answer));
  }
  std::string Reset(const std::string& answer) { return TdigestResetReply(answer, Decode(answer)); }
  std::vector<std::string> Add(const std::string& answer, size_t commands, std::string* shared) {
    return TdigestAddReplies(answer, Decode(answer), commands, shared);
  }
  std::string Merge(const std::string& answer) { return TdigestMergeReply(answer, Decode(answer)); }
  // The reply to command `args` (parsed as the proxy parses it) for `answer`.
  std::string Read(std::vector<std::string> args, const std::string& answer) {
    args_ = std::move(args);
    const std::vector<std::string_view> views(args_.begin(), args_.end());
    TdigestRequest request;
    EXPECT_EQ(ParseTdigestRequest(views, &request), "") << args_[0];
    return TdigestReadReply(request, answer, Decode(answer));
  }

  protocol::ReplyDecoder decoder_;
  protocol::ReplyPtr decoded_;
  std::vector<std::string> args_;
};

// ---------------------------------------------------------------------------------------------
// The header.

TEST(TdigestHeaderTest, ParsesEveryFieldLittleEndian) {
  TdigestHeader h;
  h.compression = 7;
  h.min = -0.0;
  h.max = 1e308;
  h.merged = 0xfffffffeu;
  h.unmerged = 3;
  h.merged_weight = INT64_MAX - 1;
  h.unmerged_weight = -5;
  h.total_compressions = int64_t{1} << 40;
  const std::string bytes = HeaderBytes(h);
  ASSERT_EQ(bytes.size(), 56u);
  // Offsets as docs/tdigest.md draws them.
  EXPECT_EQ(bytes.substr(24, 4), std::string("\xfe\xff\xff\xff", 4));
  EXPECT_EQ(bytes.substr(28, 4), std::string("\x03\x00\x00\x00", 4));
  TdigestHeader out;
  ASSERT_TRUE(ParseTdigestHeader(bytes, &out));
  EXPECT_EQ(out.compression, 7);
  EXPECT_EQ(out.min, 0);
  EXPECT_TRUE(std::signbit(out.min));
  EXPECT_EQ(out.max, 1e308);
  EXPECT_EQ(out.merged, 0xfffffffeu);
  EXPECT_EQ(out.unmerged, 3u);
  EXPECT_EQ(out.merged_weight, INT64_MAX - 1);
  EXPECT_EQ(out.unmerged_weight, -5);
  EXPECT_EQ(out.total_compressions, int64_t{1} << 40);
}

TEST(TdigestHeaderTest, TheDefaultDigestIsTheDocumentedBytes) {
  // struct.pack('<dddIIqqq', 100.0, DBL_MAX, -DBL_MAX, 0, 0, 0, 0, 0).
  std::string expected;
  expected += std::string("\x00\x00\x00\x00\x00\x00\x59\x40", 8);
  expected += std::string("\xff\xff\xff\xff\xff\xff\xef\x7f", 8);
  expected += std::string("\xff\xff\xff\xff\xff\xff\xef\xff", 8);
  expected += std::string(32, '\0');
  TdigestHeader h;
  ASSERT_TRUE(ParseTdigestHeader(expected, &h));
  EXPECT_EQ(h.compression, 100);
  EXPECT_EQ(h.min, DBL_MAX);
  EXPECT_EQ(h.max, -DBL_MAX);
  EXPECT_EQ(h.merged, 0u);
  EXPECT_EQ(h.unmerged, 0u);
  EXPECT_EQ(h.merged_weight, 0);
  EXPECT_EQ(h.unmerged_weight, 0);
  EXPECT_EQ(h.total_compressions, 0);
  EXPECT_EQ(HeaderBytes(Empty()), expected);
}

TEST(TdigestHeaderTest, RefusesWrongSizesAndCompressionsBelowOne) {
  const std::string good = HeaderBytes(Empty());
  TdigestHeader h;
  EXPECT_FALSE(ParseTdigestHeader("", &h));
  EXPECT_FALSE(ParseTdigestHeader(good.substr(0, 55), &h));
  EXPECT_FALSE(ParseTdigestHeader(good + '\0', &h));
  EXPECT_FALSE(ParseTdigestHeader(good + good, &h));
  for (double c : {0.0, -0.0, 0.5, -100.0, std::nan("")}) {
    EXPECT_FALSE(ParseTdigestHeader(HeaderBytes(Empty(c)), &h)) << c;
  }
  EXPECT_TRUE(ParseTdigestHeader(HeaderBytes(Empty(1)), &h));
}

// ---------------------------------------------------------------------------------------------
// CREATE.

TEST_F(TdigestRepliesTest, CreateStatuses) {
  const std::string parse(kTdigestErrParseCompression);
  EXPECT_EQ(Create("", Simple("OK")), kOk);
  EXPECT_EQ(Create("", Simple("EXISTS")), Err(kTdigestErrKeyExists));
  EXPECT_EQ(Create("", Simple("WRONGTYPE")), Err(kTdigestErrWrongType));
  // The argument error is the reply only when the name is free; the key's error wins.
  EXPECT_EQ(Create(parse, Simple("FREE")), parse);
  EXPECT_EQ(Create(parse, Simple("EXISTS")), Err(kTdigestErrKeyExists));
  EXPECT_EQ(Create(parse, Simple("WRONGTYPE")), Err(kTdigestErrWrongType));
  const std::string alloc(kTdigestErrAllocation);
  EXPECT_EQ(Create(alloc, Simple("FREE")), alloc);
  EXPECT_EQ(Create(alloc, Simple("EXISTS")), Err(kTdigestErrKeyExists));
}

TEST_F(TdigestRepliesTest, CreateStatusesOfTheOtherCallAreNonsense) {
  const std::string parse(kTdigestErrParseCompression);
  // "check" never creates; "create" never answers FREE.
  EXPECT_TRUE(IsUnexpected(Create(parse, Simple("OK")))) << Create(parse, Simple("OK"));
  EXPECT_TRUE(IsUnexpected(Create("", Simple("FREE")))) << Create("", Simple("FREE"));
  for (const std::string& answer : kNonsense) {
    EXPECT_TRUE(IsUnexpected(Create("", answer))) << answer;
    EXPECT_TRUE(IsUnexpected(Create(parse, answer))) << answer;
  }
  EXPECT_TRUE(IsUnexpected(Create("", Array(2) + Bulk("a") + Bulk("b"))));
  EXPECT_TRUE(IsUnexpected(TdigestCreateReply("", "+OK\r\n", nullptr)));
}

TEST_F(TdigestRepliesTest, CreateDamagedIsAnUnexpectedReply) {
  EXPECT_EQ(
      Create("", Simple("DAMAGED header")),
      protocol::errors::UnexpectedUpstreamReply("EVALSHA", "the t-digest is damaged: header"));
}

// tdigest_create.lua answers EXISTS, WRONGTYPE, FREE or OK: MISSING is not one of its answers,
// and "key does not exist" is never CREATE's reply in RedisBloom.
TEST_F(TdigestRepliesTest, CreateMissingIsNonsenseNotAMadeUpReply) {
  EXPECT_TRUE(IsUnexpected(Create("", Simple("MISSING")))) << Create("", Simple("MISSING"));
  const std::string parse(kTdigestErrParseCompression);
  EXPECT_TRUE(IsUnexpected(Create(parse, Simple("MISSING")))) << Create(parse, Simple("MISSING"));
}

// ---------------------------------------------------------------------------------------------
// The key check of a command whose argument error comes after it.

TEST_F(TdigestRepliesTest, CheckGivesTheKeysErrorFirstThenTheArgumentError) {
  const std::string range(kTdigestErrQuantileRange);
  for (TdigestCommand c : {TdigestCommand::kQuantile, TdigestCommand::kAdd,
                           TdigestCommand::kTrimmedMean, TdigestCommand::kByRank}) {
    EXPECT_EQ(Check(c, range, Simple("OK")), range);
    EXPECT_EQ(Check(c, range, Simple("MISSING")), Err(kTdigestErrKeyMissing));
    EXPECT_EQ(Check(c, range, Simple("WRONGTYPE")), Err(kTdigestErrWrongType));
    EXPECT_TRUE(IsUnexpected(Check(c, range, Simple("DAMAGED size"))));
  }
}

TEST_F(TdigestRepliesTest, CheckOfMergeAcceptsAMissingDestination) {
  const std::string numkeys(kTdigestErrNumkeysPositive);
  EXPECT_EQ(Check(TdigestCommand::kMerge, numkeys, Simple("MISSING")), numkeys);
  EXPECT_EQ(Check(TdigestCommand::kMerge, numkeys, Simple("OK")), numkeys);
  EXPECT_EQ(Check(TdigestCommand::kMerge, numkeys, Simple("WRONGTYPE")), Err(kTdigestErrWrongType));
  EXPECT_TRUE(IsUnexpected(Check(TdigestCommand::kMerge, numkeys, Simple("DAMAGED x"))));
}

TEST_F(TdigestRepliesTest, CheckNonsense) {
  const std::string e(kTdigestErrParseVal);
  for (const std::string& answer : kNonsense) {
    EXPECT_TRUE(IsUnexpected(Check(TdigestCommand::kAdd, e, answer))) << answer;
    EXPECT_TRUE(IsUnexpected(Check(TdigestCommand::kMerge, e, answer))) << answer;
  }
  // Statuses of the other scripts, and a read's answer.
  for (const std::string& answer : {Simple("EXISTS"), Simple("FREE"), Simple("ALLOC"),
                                    Simple("OVERFLOW"), ReadAnswer(Empty())}) {
    EXPECT_TRUE(IsUnexpected(Check(TdigestCommand::kAdd, e, answer))) << answer;
  }
}

// ---------------------------------------------------------------------------------------------
// RESET.

TEST_F(TdigestRepliesTest, ResetStatuses) {
  EXPECT_EQ(Reset(Simple("OK")), kOk);
  EXPECT_EQ(Reset(Simple("MISSING")), Err(kTdigestErrKeyMissing));
  EXPECT_EQ(Reset(Simple("WRONGTYPE")), Err(kTdigestErrWrongType));
  EXPECT_EQ(Reset(Simple("DAMAGED nodes")),
            protocol::errors::UnexpectedUpstreamReply("EVALSHA", "the t-digest is damaged: nodes"));
  for (const std::string& answer : kNonsense) {
    EXPECT_TRUE(IsUnexpected(Reset(answer))) << answer;
  }
  for (const std::string& answer :
       {Simple("EXISTS"), Simple("FREE"), Array(1) + Int(1), ReadAnswer(Empty())}) {
    EXPECT_TRUE(IsUnexpected(Reset(answer))) << answer;
  }
}

// ---------------------------------------------------------------------------------------------
// ADD.

TEST_F(TdigestRepliesTest, AddOneReplyPerCommand) {
  std::string shared = "stale";
  EXPECT_EQ(Add(Array(1) + Int(1), 1, &shared), std::vector<std::string>{kOk});
  EXPECT_EQ(shared, "");
  const std::string overflow(kTdigestErrOverflow);
  EXPECT_EQ(Add(Array(3) + Int(1) + Int(0) + Int(1), 3, &shared),
            (std::vector<std::string>{kOk, overflow, kOk}));
  EXPECT_EQ(shared, "");
  EXPECT_EQ(Add(Array(2) + Int(0) + Int(0), 2, &shared),
            (std::vector<std::string>{overflow, overflow}));
}

TEST_F(TdigestRepliesTest, AddStatusesAreSharedFailures) {
  std::string shared;
  EXPECT_TRUE(Add(Simple("MISSING"), 2, &shared).empty());
  EXPECT_EQ(shared, Err(kTdigestErrKeyMissing));
  EXPECT_TRUE(Add(Simple("WRONGTYPE"), 2, &shared).empty());
  EXPECT_EQ(shared, Err(kTdigestErrWrongType));
  EXPECT_TRUE(Add(Simple("DAMAGED count"), 1, &shared).empty());
  EXPECT_EQ(shared,
            protocol::errors::UnexpectedUpstreamReply("EVALSHA", "the t-digest is damaged: count"));
}

TEST_F(TdigestRepliesTest, AddNonsenseIsASharedUnexpectedReply) {
  const std::vector<std::string> answers = {
      Simple("OK"),                         // RESET's status
      Simple("EXISTS"),                     //
      Array(1) + Int(1),                    // one result for two commands
      Array(3) + Int(1) + Int(1) + Int(1),  // three
  };
  for (const std::string& answer : answers) {
    std::string shared;
    EXPECT_TRUE(Add(answer, 2, &shared).empty()) << answer;
    EXPECT_TRUE(IsUnexpected(shared)) << answer << " -> " << shared;
  }
  for (const std::string& answer : kNonsense) {
    std::string shared;
    EXPECT_TRUE(Add(answer, 1, &shared).empty()) << answer;
    EXPECT_TRUE(IsUnexpected(shared)) << answer << " -> " << shared;
  }
  std::string shared;
  EXPECT_TRUE(TdigestAddReplies(Array(1) + Int(1), nullptr, 1, &shared).empty());
  EXPECT_TRUE(IsUnexpected(shared)) << shared;
}

// tdigest_add.lua answers 1 or 0 per command: any other element is nonsense, not an overflow.
TEST_F(TdigestRepliesTest, AddElementOtherThanOneOrZeroIsNonsenseNotAnOverflow) {
  for (const std::string& element :
       {Int(2), Int(-1), Bulk("1"), Bulk("0"), kNull, Simple("OK"), Array(1) + Int(1)}) {
    std::string shared;
    const std::vector<std::string> out = Add(Array(2) + Int(1) + element, 2, &shared);
    const bool refused =
        out.empty() ? IsUnexpected(shared) : out.size() == 2 && IsUnexpected(out[1]);
    EXPECT_TRUE(refused) << element << " -> " << (out.size() == 2 ? out[1] : shared);
  }
  // A read's answer {header, results} for two commands.
  std::string shared;
  const std::vector<std::string> out = Add(ReadAnswer(Empty()), 2, &shared);
  const bool refused = out.empty()
                           ? IsUnexpected(shared)
                           : out.size() == 2 && IsUnexpected(out[0]) && IsUnexpected(out[1]);
  EXPECT_TRUE(refused) << (out.empty() ? shared : out[0] + " " + out[1]);
  // For one command it is nonsense by its length already.
  EXPECT_TRUE(Add(ReadAnswer(Empty()), 1, &shared).empty());
  EXPECT_TRUE(IsUnexpected(shared)) << shared;
}

// ---------------------------------------------------------------------------------------------
// Upstream errors, for every builder.

TEST_F(TdigestRepliesTest, UpstreamErrorsPassAsUpstreamErrorSays) {
  const std::string quantile(kTdigestErrQuantileRange);
  auto each = [&](const std::string& answer) {
    std::string shared;
    std::vector<std::string> out = {
        Create("", answer),
        Create(quantile, answer),
        Check(TdigestCommand::kQuantile, quantile, answer),
        Check(TdigestCommand::kMerge, quantile, answer),
        Reset(answer),
        Merge(answer),
        Read({"TDIGEST.MIN", "t"}, answer),
        Read({"TDIGEST.QUANTILE", "t", "0.5"}, answer),
    };
    EXPECT_TRUE(Add(answer, 2, &shared).empty());
    out.push_back(shared);
    return out;
  };
  // Errors about the server's state reach the client as they are.
  for (const std::string& state : {kOom, kBusy, std::string("-READONLY You can't write.\r\n")}) {
    for (const std::string& reply : each(state)) EXPECT_EQ(reply, state);
  }
  // ERR and WRONGTYPE from the upstream are quoted in an unexpected-reply error.
  for (const std::string& reply : each(kScriptError)) {
    EXPECT_EQ(reply, protocol::errors::UnexpectedUpstreamReply(
                         "EVALSHA", "ERR Error running script (call to f_x): @user_script:1"));
  }
  for (const std::string& reply : each(kUpstreamWrongType)) {
    EXPECT_TRUE(IsUnexpected(reply)) << reply;
    EXPECT_NE(reply, Err(kTdigestErrWrongType));
  }
  // So is an error without an upper-case code.
  for (const std::string& reply : each("-oops\r\n")) EXPECT_TRUE(IsUnexpected(reply)) << reply;
}

// ---------------------------------------------------------------------------------------------
// MERGE.

TEST_F(TdigestRepliesTest, MergeStatuses) {
  EXPECT_EQ(Merge(Simple("OK")), kOk);
  EXPECT_EQ(Merge(Simple("MISSING")), Err(kTdigestErrKeyMissing));
  EXPECT_EQ(Merge(Simple("WRONGTYPE")), Err(kTdigestErrWrongType));
  EXPECT_EQ(Merge(Simple("ALLOC")), Err(kTdigestErrMergeAllocation));
  EXPECT_EQ(Merge(Simple("OVERFLOW")), Err(kTdigestErrOverflow));
  EXPECT_EQ(Merge(Simple("DAMAGED weights")), protocol::errors::UnexpectedUpstreamReply(
                                                  "EVALSHA", "the t-digest is damaged: weights"));
  for (const std::string& answer : kNonsense) {
    EXPECT_TRUE(IsUnexpected(Merge(answer))) << answer;
  }
  for (const std::string& answer : {Simple("EXISTS"), Simple("FREE"), Simple("alloc"),
                                    Array(1) + Int(1), ReadAnswer(Empty())}) {
    EXPECT_TRUE(IsUnexpected(Merge(answer))) << answer;
  }
}

// ---------------------------------------------------------------------------------------------
// Reads.

TEST_F(TdigestRepliesTest, ReadStatuses) {
  for (std::vector<std::string> args : {std::vector<std::string>{"TDIGEST.MIN", "t"},
                                        {"TDIGEST.INFO", "t"},
                                        {"TDIGEST.CDF", "t", "1"},
                                        {"TDIGEST.RANK", "t", "1"},
                                        {"TDIGEST.BYRANK", "t", "1"},
                                        {"TDIGEST.TRIMMED_MEAN", "t", "0.1", "0.9"}}) {
    EXPECT_EQ(Read(args, Simple("MISSING")), Err(kTdigestErrKeyMissing)) << args[0];
    EXPECT_EQ(Read(args, Simple("WRONGTYPE")), Err(kTdigestErrWrongType)) << args[0];
    EXPECT_EQ(
        Read(args, Simple("DAMAGED header")),
        protocol::errors::UnexpectedUpstreamReply("EVALSHA", "the t-digest is damaged: header"));
    // The check's status is not a read's answer.
    EXPECT_TRUE(IsUnexpected(Read(args, Simple("OK")))) << args[0];
    for (const std::string& answer : kNonsense) {
      EXPECT_TRUE(IsUnexpected(Read(args, answer))) << args[0] << " " << answer;
    }
  }
}

TEST_F(TdigestRepliesTest, InfoIsNinePairsOfTheHeader) {
  TdigestHeader h = Empty(100);
  EXPECT_EQ(Read({"TDIGEST.INFO", "t"}, ReadAnswer(h)),
            Array(18) + Simple("Compression") + Int(100) + Simple("Capacity") + Int(610) +
                Simple("Merged nodes") + Int(0) + Simple("Unmerged nodes") + Int(0) +
                Simple("Merged weight") + Int(0) + Simple("Unmerged weight") + Int(0) +
                Simple("Observations") + Int(0) + Simple("Total compressions") + Int(0) +
                Simple("Memory usage") + Int(9840));
  h = Empty(7);
  h.min = 1;
  h.max = 9;
  h.merged = 5;
  h.unmerged = 2;
  h.merged_weight = 30;
  h.unmerged_weight = 2;
  h.total_compressions = 4;
  // Capacity 6C + 10, memory usage 80 + 16 * capacity, observations MW + UW.
  EXPECT_EQ(Read({"TDIGEST.INFO", "t"}, ReadAnswer(h)),
            Array(18) + Simple("Compression") + Int(7) + Simple("Capacity") + Int(52) +
                Simple("Merged nodes") + Int(5) + Simple("Unmerged nodes") + Int(2) +
                Simple("Merged weight") + Int(30) + Simple("Unmerged weight") + Int(2) +
                Simple("Observations") + Int(32) + Simple("Total compressions") + Int(4) +
                Simple("Memory usage") + Int(912));
}

TEST_F(TdigestRepliesTest, InfoOfHugeWeightsAndLargeCounts) {
  TdigestHeader h = Empty(1);
  h.merged = 15;
  h.unmerged = 0xffffffffu;
  h.merged_weight = INT64_MAX - 7;
  h.unmerged_weight = 7;
  h.total_compressions = INT64_MAX;
  const std::string reply = Read({"TDIGEST.INFO", "t"}, ReadAnswer(h));
  EXPECT_EQ(reply, Array(18) + Simple("Compression") + Int(1) + Simple("Capacity") + Int(16) +
                       Simple("Merged nodes") + Int(15) + Simple("Unmerged nodes") +
                       Int(4294967295) + Simple("Merged weight") + Int(INT64_MAX - 7) +
                       Simple("Unmerged weight") + Int(7) + Simple("Observations") +
                       Int(INT64_MAX) + Simple("Total compressions") + Int(INT64_MAX) +
                       Simple("Memory usage") + Int(336));
}

TEST_F(TdigestRepliesTest, MinAndMaxAreNanWhenTheDigestIsEmpty) {
  // The header's DBL_MAX / -DBL_MAX are never shown: the constant NaN ("nan", not "-nan").
  EXPECT_EQ(Read({"TDIGEST.MIN", "t"}, ReadAnswer(Empty())), D("nan"));
  EXPECT_EQ(Read({"TDIGEST.MAX", "t"}, ReadAnswer(Empty())), D("nan"));
  TdigestHeader h = Empty();
  h.min = -0.0;
  h.max = 0.1;
  h.unmerged = 2;
  h.unmerged_weight = 2;
  EXPECT_EQ(Read({"TDIGEST.MIN", "t"}, ReadAnswer(h)), D("-0"));
  EXPECT_EQ(Read({"TDIGEST.MAX", "t"}, ReadAnswer(h)), D("0.10000000000000001"));
  // Merged weight alone counts too.
  h = Empty();
  h.min = 3;
  h.max = 1e308;
  h.merged = 1;
  h.merged_weight = 1;
  EXPECT_EQ(Read({"TDIGEST.MIN", "t"}, ReadAnswer(h)), D("3"));
  EXPECT_EQ(Read({"TDIGEST.MAX", "t"}, ReadAnswer(h)), D("1e+308"));
  // A digest never holds a negative total, but a read of one is NaN too (td_size() > 0).
  h.merged_weight = -1;
  EXPECT_EQ(Read({"TDIGEST.MIN", "t"}, ReadAnswer(h)), D("nan"));
}

TEST_F(TdigestRepliesTest, DoublesAreFormattedAsRedisBloomPrintsThem) {
  const std::vector<double> values = {std::numeric_limits<double>::quiet_NaN(),
                                      -std::numeric_limits<double>::quiet_NaN(),
                                      INFINITY,
                                      -INFINITY,
                                      -0.0,
                                      0.0,
                                      0.1,
                                      3,
                                      1e308,
                                      9.56095296680591e-291,
                                      -1.7976931348623157e308,
                                      0.70014113139740741};
  ASSERT_FALSE(std::signbit(values[0]));
  ASSERT_TRUE(std::signbit(values[1]));
  const std::string want = Array(12) + D("nan") + D("-nan") + D("inf") + D("-inf") + D("-0") +
                           D("0") + D("0.10000000000000001") + D("3") + D("1e+308") +
                           D("9.56095296680591e-291") + D("-1.7976931348623157e+308") +
                           D("0.70014113139740741");
  std::vector<std::string> args = {"TDIGEST.QUANTILE", "t"};
  args.insert(args.end(), 12, "0.5");
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), values)), want);
  args[0] = "TDIGEST.CDF";
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), values)), want);
  args = {"TDIGEST.BYRANK", "t"};
  args.insert(args.end(), 12, "3");
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), values)), want);
  args[0] = "TDIGEST.BYREVRANK";
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), values)), want);
  // Each reply is what tdigest.h formats.
  for (double d : values) EXPECT_EQ(TdigestDoubleReply(d, false), D(TdigestFormatDouble(d)));
}

TEST_F(TdigestRepliesTest, TrimmedMeanIsOneDouble) {
  const std::vector<std::string> args = {"TDIGEST.TRIMMED_MEAN", "t", "0.1", "0.9"};
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), {2.5})), D("2.5"));
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), {std::nan("")})), D("nan"));
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), {-std::nan("")})), D("-nan"));
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), {-INFINITY})), D("-inf"));
  // Not one result.
  EXPECT_TRUE(IsUnexpected(Read(args, ReadAnswer(Empty()))));
  EXPECT_TRUE(IsUnexpected(Read(args, ReadAnswer(Empty(), {1, 2}))));
}

TEST_F(TdigestRepliesTest, RankCastsEachDoubleAsC) {
  const std::vector<double> ranks = {
      3,       -1,   -2,    std::nan(""),          -std::nan(""),          2.9999,
      -2.5,    1e19, -1e19, 9223372036854775808.0, -9223372036854775808.0, 9223372036854774784.0,
      INFINITY};
  const std::string want = Array(13) + Int(3) + Int(-1) + Int(-2) + Int(INT64_MIN) +
                           Int(INT64_MIN) + Int(2) + Int(-2) + Int(INT64_MIN) + Int(INT64_MIN) +
                           Int(INT64_MIN) + Int(INT64_MIN) + Int(9223372036854774784) +
                           Int(INT64_MIN);
  std::vector<std::string> args = {"TDIGEST.RANK", "t"};
  args.insert(args.end(), 13, "1");
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), ranks)), want);
  args[0] = "TDIGEST.REVRANK";
  EXPECT_EQ(Read(args, ReadAnswer(Empty(), ranks)), want);
  EXPECT_EQ(Read({"TDIGEST.RANK", "t", "1"}, ReadAnswer(Empty(), {-2})), Array(1) + Int(-2));
}

TEST_F(TdigestRepliesTest, ReadResultsMustMatchTheArguments) {
  const std::vector<std::vector<std::string>> commands = {
      {"TDIGEST.QUANTILE", "t", "0.1", "0.2"}, {"TDIGEST.CDF", "t", "1", "2"},
      {"TDIGEST.RANK", "t", "1", "2"},         {"TDIGEST.REVRANK", "t", "1", "2"},
      {"TDIGEST.BYRANK", "t", "1", "2"},       {"TDIGEST.BYREVRANK", "t", "1", "2"},
  };
  for (const std::vector<std::string>& args : commands) {
    EXPECT_FALSE(IsUnexpected(Read(args, ReadAnswer(Empty(), {1, 2})))) << args[0];
    const std::string header = Bulk(HeaderBytes(Empty()));
    const std::vector<std::string> answers = {
        ReadAnswer(Empty(), {1}),                                 // too few
        ReadAnswer(Empty(), {1, 2, 3}),                           // too many
        Array(2) + header + Bulk(Doubles({1, 2}) + "x"),          // not whole doubles
        Array(2) + header + Bulk(Doubles({1, 2}).substr(0, 15)),  //
        Array(2) + header + kNull,                                // no results
        Array(2) + header + Int(2),                               //
        Array(2) + header + Simple("OK"),                         //
        Array(3) + header + Bulk(Doubles({1, 2})) + Bulk(""),     // a third element
        Array(1) + header,                                        // none
        Array(2) + Bulk(HeaderBytes(Empty()).substr(1)) + Bulk(Doubles({1, 2})),
        Array(2) + Bulk(HeaderBytes(Empty(0))) + Bulk(Doubles({1, 2})),
        Array(2) + Simple(HeaderBytes(Empty()).substr(0, 8)) + Bulk(Doubles({1, 2})),
        Array(2) + Array(0) + Bulk(Doubles({1, 2})),  // a header that is not a string
    };
    for (const std::string& answer : answers) {
      EXPECT_TRUE(IsUnexpected(Read(args, answer))) << args[0] << ": " << answer;
    }
  }
}

TEST_F(TdigestRepliesTest, HeaderOnlyReadsNeedAWholeHeader) {
  for (std::vector<std::string> args : {std::vector<std::string>{"TDIGEST.MIN", "t"},
                                        {"TDIGEST.MAX", "t"},
                                        {"TDIGEST.INFO", "t"}}) {
    EXPECT_FALSE(IsUnexpected(Read(args, ReadAnswer(Empty()))));
    EXPECT_TRUE(IsUnexpected(Read(args, Array(2) + Bulk("") + Bulk(""))));
    EXPECT_TRUE(IsUnexpected(Read(args, Array(2) + Bulk(HeaderBytes(Empty(-1))) + Bulk(""))));
    EXPECT_TRUE(IsUnexpected(Read(args, Array(1) + Bulk(HeaderBytes(Empty())))));
    EXPECT_TRUE(IsUnexpected(Read(args, Bulk(HeaderBytes(Empty())))));
  }
}

}  // namespace
}  // namespace bloomproxy::filters

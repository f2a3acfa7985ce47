// TDIGEST plans (filters/tdigest/tdigest_plan.h) stepped by hand with made-up upstream answers:
// one script call by EVALSHA, EVAL with the body after NOSCRIPT, the reply (or, for a batch of
// ADD, each command's); CREATE over the compression limit answering "allocation failed" only when
// the name is free; commands whose argument error RedisBloom gives after the key check
// (TdigestErrorOrder::kAfterKey) sending the check and replying the key's error first.
#include "filters/tdigest/tdigest_plan.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/tdigest/tdigest_add.lua.h"
#include "filters/tdigest/tdigest_args.h"
#include "filters/tdigest/tdigest_create.lua.h"
#include "filters/tdigest/tdigest_merge.lua.h"
#include "filters/tdigest/tdigest_read.lua.h"
#include "filters/tdigest/tdigest_replies.h"
#include "protocol/errors.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string>;

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
const std::string kOk = "+OK\r\n";
const std::string kNoScript = "-NOSCRIPT No matching script. Please use EVAL.\r\n";

template <typename T>
std::string Bytes(T v) {
  char out[sizeof v];
  std::memcpy(out, &v, sizeof v);
  return std::string(out, sizeof v);
}

std::string Doubles(const std::vector<double>& values) {
  std::string out;
  for (double d : values) out += Bytes(d);
  return out;
}

// tdigest_read.lua's answer {header, results} for a digest of compression 100 holding `n`
// unmerged observations between min and max.
std::string ReadAnswer(const std::vector<double>& results, int64_t n = 0, double min = DBL_MAX,
                       double max = -DBL_MAX) {
  std::string header = Bytes(100.0) + Bytes(min) + Bytes(max) + Bytes(uint32_t{0}) +
                       Bytes(static_cast<uint32_t>(n)) + Bytes(int64_t{0}) + Bytes(n) +
                       Bytes(int64_t{0});
  return Array(2) + Bulk(header) + Bulk(Doubles(results));
}

// The multibulk requests of a step, split into their arguments.
std::vector<Args> ParseRequests(std::string_view in) {
  std::vector<Args> out;
  size_t pos = 0;
  auto number = [&]() {
    const size_t eol = in.find("\r\n", pos);
    const size_t n = std::stoul(std::string(in.substr(pos + 1, eol - pos - 1)));
    pos = eol + 2;
    return n;
  };
  while (pos < in.size()) {
    EXPECT_EQ(in[pos], '*');
    const size_t n = number();
    Args args;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(in[pos], '$');
      const size_t len = number();
      args.emplace_back(in.substr(pos, len));
      pos += len + 2;
    }
    out.push_back(std::move(args));
  }
  return out;
}

// A structure script call on digest "t": command, script, 1, name, marker, prefix, argv.
Args Call(std::string_view command, std::string_view script, const Args& argv) {
  Args out = {std::string(command), std::string(script), "1", "t", "{t}:td:m:t", "{t}"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool IsUnexpected(const std::string& reply) {
  return reply.rfind(protocol::errors::kUnexpectedUpstreamPrefix, 0) == 0;
}

class TdigestPlanTest : public ::testing::Test {
 protected:
  // The plan of client command `args`, parsed as the proxy parses it; the arguments are gone
  // before the plan starts (its views are copied).
  std::unique_ptr<Plan> Command(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    TdigestRequest request;
    const std::string error = ParseTdigestRequest(views, &request);
    EXPECT_TRUE(error.empty() || request.error_order == TdigestErrorOrder::kAfterKey) << error;
    std::unique_ptr<Plan> plan = MakeTdigestPlan(request, error, &config_);
    for (std::string& a : args) a.assign(a.size(), '#');
    return plan;
  }

  // The plan's first request.
  Args Start(Plan* plan) {
    step_ = PlanStep{};
    plan->Start(&step_);
    return Request();
  }
  // Answers the last request; the next one, or nothing when the plan is done.
  Args Answer(Plan* plan, const std::string& answer) {
    StepReplies replies(&decoder_);
    replies.Add(answer);
    step_ = PlanStep{};
    plan->OnReplies(replies, &step_);
    return step_.done ? Args() : Request();
  }
  Args Request() {
    EXPECT_FALSE(step_.done);
    EXPECT_EQ(step_.replies, 1u);
    const std::vector<Args> requests = ParseRequests(step_.requests);
    EXPECT_EQ(requests.size(), 1u);
    return requests.empty() ? Args() : requests[0];
  }
  // Starts `plan`, checks that its call is `argv` of `script`, answers it and returns the reply.
  std::string Run(Plan* plan, const LuaScript& script, const Args& argv,
                  const std::string& answer) {
    EXPECT_EQ(Start(plan), Call("EVALSHA", script.sha1, argv));
    EXPECT_TRUE(Answer(plan, answer).empty());
    EXPECT_TRUE(step_.done);
    return step_.reply;
  }

  TdigestConfig config_;
  protocol::ReplyDecoder decoder_;
  PlanStep step_;
};

// ---------------------------------------------------------------------------------------------
// EVALSHA, then EVAL after NOSCRIPT.

TEST_F(TdigestPlanTest, FirstEvalshaThenEvalWithTheBodyAfterNoScript) {
  std::unique_ptr<Plan> plan = Command({"TDIGEST.QUANTILE", "t", "0.5", "1"});
  const Args argv = {"quantile", Doubles({0.5, 1})};
  EXPECT_EQ(Start(plan.get()), Call("EVALSHA", lua::kTdigestRead.sha1, argv));
  EXPECT_EQ(Answer(plan.get(), kNoScript), Call("EVAL", lua::kTdigestRead.body, argv));
  EXPECT_TRUE(Answer(plan.get(), ReadAnswer({2.5, INFINITY}, 3, 1, 4)).empty());
  EXPECT_TRUE(step_.done);
  EXPECT_EQ(step_.reply, Array(2) + Bulk("2.5") + Bulk("inf"));
  EXPECT_TRUE(plan->MemberReplies().empty());
}

TEST_F(TdigestPlanTest, NoScriptAfterTheBodyEndsThePlan) {
  std::unique_ptr<Plan> plan = Command({"TDIGEST.MIN", "t"});
  Start(plan.get());
  EXPECT_EQ(Answer(plan.get(), kNoScript), Call("EVAL", lua::kTdigestRead.body, {"header", ""}));
  EXPECT_TRUE(Answer(plan.get(), kNoScript).empty());
  EXPECT_TRUE(step_.done);
  EXPECT_EQ(step_.reply.substr(0, 1), "-");
}

TEST_F(TdigestPlanTest, ShardingProxyUpstreamStillSendsEvalsha) {
  config_.upstream = protocol::UpstreamKind::kShardingProxy;
  std::unique_ptr<Plan> plan = Command({"TDIGEST.MAX", "t"});
  EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"header", ""}, ReadAnswer({}, 2, -1, 7)),
            Bulk("7"));
}

TEST_F(TdigestPlanTest, AMissingReplyIsAnUnexpectedReply) {
  std::unique_ptr<Plan> plan = Command({"TDIGEST.INFO", "t"});
  Start(plan.get());
  StepReplies none(&decoder_);
  step_ = PlanStep{};
  plan->OnReplies(none, &step_);
  EXPECT_TRUE(step_.done);
  EXPECT_TRUE(IsUnexpected(step_.reply)) << step_.reply;
}

// ---------------------------------------------------------------------------------------------
// Each command's call and reply.

TEST_F(TdigestPlanTest, ReadsReplyFromTheAnswer) {
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.MIN", "t"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"header", ""}, ReadAnswer({})), Bulk("nan"));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.RANK", "t", "1", "5"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"rank", Doubles({1, 5})},
                  ReadAnswer({std::nan(""), 2.0}, 2, 1, 5)),
              Array(2) + Int(INT64_MIN) + Int(2));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.BYREVRANK", "t", "0"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"byrevrank", Doubles({0})},
                  ReadAnswer({-0.0}, 1, -0.0, -0.0)),
              Array(1) + Bulk("-0"));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.TRIMMED_MEAN", "t", "0", "1"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"trimmed", Doubles({0, 1})},
                  ReadAnswer({-std::nan("")})),
              Bulk("-nan"));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.INFO", "t"});
    const std::string reply = Run(plan.get(), lua::kTdigestRead, {"header", ""}, ReadAnswer({}));
    EXPECT_EQ(reply.rfind(Array(18) + Simple("Compression") + Int(100), 0), 0u) << reply;
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.CDF", "t", "1"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"cdf", Doubles({1})}, Simple("MISSING")),
              std::string(kTdigestErrKeyMissing));
  }
}

TEST_F(TdigestPlanTest, AddResetAndMerge) {
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.ADD", "t", "1.5", "-0", "1e3"});
    const std::string one = Bytes(int64_t{1});
    const Args argv = {"add", Bytes(1.5) + one + Bytes(-0.0) + one + Bytes(1000.0) + one,
                       Bytes(-0.0), Bytes(1000.0), "3"};
    EXPECT_EQ(Run(plan.get(), lua::kTdigestAdd, argv, Array(1) + Int(1)), kOk);
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.ADD", "t", "2"});
    EXPECT_EQ(Start(plan.get())[6], "add");
    Answer(plan.get(), Array(1) + Int(0));
    EXPECT_EQ(step_.reply, std::string(kTdigestErrOverflow));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.ADD", "t", "2"});
    Start(plan.get());
    Answer(plan.get(), Simple("WRONGTYPE"));
    EXPECT_EQ(step_.reply, std::string(kTdigestErrWrongType));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.RESET", "t"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestAdd, {"reset"}, Simple("OK")), kOk);
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.MERGE", "d", "2", "a", "b", "OVERRIDE"});
    const Args first = Start(plan.get());
    ASSERT_EQ(first.size(), 16u);
    EXPECT_EQ(Args(first.begin(), first.begin() + 6),
              (Args{"EVALSHA", std::string(lua::kTdigestMerge.sha1), "3", "d", "a", "b"}));
    EXPECT_EQ(first[6].size(), 16u);  // the id
    EXPECT_EQ(first[7], "");
    EXPECT_EQ(first[8], "1");
    EXPECT_EQ(first[9], std::to_string(TdigestMaxCompression(config_)));
    const Args second = Answer(plan.get(), kNoScript);
    ASSERT_EQ(second.size(), 16u);
    EXPECT_EQ(second[0], "EVAL");
    EXPECT_EQ(second[1], lua::kTdigestMerge.body);
    // The same arguments; the id may be drawn again (the EVALSHA ran nothing).
    EXPECT_EQ(second[6].size(), 16u);
    Args again = second;
    again[6] = first[6];
    EXPECT_EQ(Args(again.begin() + 2, again.end()), Args(first.begin() + 2, first.end()));
    Answer(plan.get(), Simple("ALLOC"));
    EXPECT_EQ(step_.reply, std::string(kTdigestErrMergeAllocation));
  }
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.MERGE", "d", "1", "a"});
    Start(plan.get());
    Answer(plan.get(), Simple("OK"));
    EXPECT_EQ(step_.reply, kOk);
  }
}

// ---------------------------------------------------------------------------------------------
// CREATE.

TEST_F(TdigestPlanTest, CreateSendsTheIdAndCompressionAndTheSameIdAfterNoScript) {
  std::unique_ptr<Plan> plan = Command({"TDIGEST.CREATE", "t", "COMPRESSION", "10"});
  const Args first = Start(plan.get());
  ASSERT_EQ(first.size(), 9u);
  EXPECT_EQ(Args(first.begin(), first.begin() + 7),
            Call("EVALSHA", lua::kTdigestCreate.sha1, {"create"}));
  EXPECT_EQ(first[7].size(), 16u);
  EXPECT_EQ(first[8], "10");
  const Args second = Answer(plan.get(), kNoScript);
  EXPECT_EQ(second, Call("EVAL", lua::kTdigestCreate.body, {"create", first[7], "10"}));
  Answer(plan.get(), Simple("OK"));
  EXPECT_EQ(step_.reply, kOk);
  std::unique_ptr<Plan> plain = Command({"TDIGEST.CREATE", "t"});
  EXPECT_EQ(Start(plain.get())[8], "100");
  Answer(plain.get(), Simple("EXISTS"));
  EXPECT_EQ(step_.reply, std::string(kTdigestErrKeyExists));
}

TEST_F(TdigestPlanTest, CreateOverTheLimitIsRefusedOnlyWhenTheNameIsFree) {
  config_.max_bytes = 9840;  // compression 100 at most
  ASSERT_EQ(TdigestMaxCompression(config_), 100);
  {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.CREATE", "t", "COMPRESSION", "100"});
    EXPECT_EQ(Start(plan.get())[6], "create");
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Simple("FREE"), std::string(kTdigestErrAllocation)},
      {Simple("EXISTS"), std::string(kTdigestErrKeyExists)},
      {Simple("WRONGTYPE"), std::string(kTdigestErrWrongType)},
  };
  for (const auto& [answer, reply] : cases) {
    std::unique_ptr<Plan> plan = Command({"TDIGEST.CREATE", "t", "COMPRESSION", "101"});
    EXPECT_EQ(Run(plan.get(), lua::kTdigestCreate, {"check"}, answer), reply) << answer;
  }
  // The default compression over a smaller limit.
  config_.max_bytes = 9839;
  std::unique_ptr<Plan> plan = Command({"TDIGEST.CREATE", "t"});
  EXPECT_EQ(Run(plan.get(), lua::kTdigestCreate, {"check"}, Simple("FREE")),
            std::string(kTdigestErrAllocation));
  // A create's answer to a check is nonsense.
  std::unique_ptr<Plan> odd = Command({"TDIGEST.CREATE", "t"});
  EXPECT_TRUE(IsUnexpected(Run(odd.get(), lua::kTdigestCreate, {"check"}, Simple("OK"))));
}

TEST_F(TdigestPlanTest, CreateArgumentErrorsComeAfterTheKey) {
  const std::vector<std::pair<Args, std::string>> commands = {
      {{"TDIGEST.CREATE", "t", "COMPRESSION", "abc"}, std::string(kTdigestErrParseCompression)},
      {{"TDIGEST.CREATE", "t", "COMPRESSION", "0"}, std::string(kTdigestErrCompressionPositive)},
      {{"TDIGEST.CREATE", "t", "FOO", "10"}, std::string(kTdigestErrWrongKeyword)},
      {{"TDIGEST.CREATE", "t", "COMPRESSION", "400000000000000000"},
       std::string(kTdigestErrAllocation)},
  };
  for (const auto& [args, error] : commands) {
    for (const auto& [answer, reply] : std::vector<std::pair<std::string, std::string>>{
             {Simple("FREE"), error},
             {Simple("EXISTS"), std::string(kTdigestErrKeyExists)},
             {Simple("WRONGTYPE"), std::string(kTdigestErrWrongType)}}) {
      std::unique_ptr<Plan> plan = Command(args);
      EXPECT_EQ(Run(plan.get(), lua::kTdigestCreate, {"check"}, answer), reply) << args[3];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Argument errors after the key check.

TEST_F(TdigestPlanTest, ArgumentErrorsAfterTheKeySendTheCheckAndReplyTheKeysErrorFirst) {
  const std::vector<std::pair<Args, std::string>> commands = {
      {{"TDIGEST.ADD", "t", "1", "abc"}, std::string(kTdigestErrParseVal)},
      {{"TDIGEST.ADD", "t", "inf"}, std::string(kTdigestErrValFinite)},
      {{"TDIGEST.QUANTILE", "t", "2"}, std::string(kTdigestErrQuantileRange)},
      {{"TDIGEST.CDF", "t", "x"}, std::string(kTdigestErrParseCdf)},
      {{"TDIGEST.RANK", "t", "nan"}, std::string(kTdigestErrParseValue)},
      {{"TDIGEST.BYRANK", "t", "-1"}, std::string(kTdigestErrRankNegative)},
      {{"TDIGEST.BYREVRANK", "t", "1.5"}, std::string(kTdigestErrParseRank)},
      {{"TDIGEST.TRIMMED_MEAN", "t", "0.5", "0.1"}, std::string(kTdigestErrCutOrder)},
  };
  for (const auto& [args, error] : commands) {
    for (const auto& [answer, reply] : std::vector<std::pair<std::string, std::string>>{
             {Simple("OK"), error},
             {Simple("MISSING"), std::string(kTdigestErrKeyMissing)},
             {Simple("WRONGTYPE"), std::string(kTdigestErrWrongType)}}) {
      std::unique_ptr<Plan> plan = Command(args);
      const Args first = Start(plan.get());
      EXPECT_EQ(first, Call("EVALSHA", lua::kTdigestRead.sha1, {"check"})) << args[0];
      EXPECT_EQ(Answer(plan.get(), kNoScript), Call("EVAL", lua::kTdigestRead.body, {"check"}));
      EXPECT_TRUE(Answer(plan.get(), answer).empty());
      EXPECT_EQ(step_.reply, reply) << args[0] << " " << answer;
    }
  }
}

TEST_F(TdigestPlanTest, MergeArgumentErrorsComeAfterItsDestinationOnly) {
  const std::vector<std::pair<Args, std::string>> commands = {
      {{"TDIGEST.MERGE", "t", "0", "a"}, std::string(kTdigestErrNumkeysPositive)},
      {{"TDIGEST.MERGE", "t", "x", "a"}, std::string(kTdigestErrParseNumkeys)},
      {{"TDIGEST.MERGE", "t", "1", "a", "junk"}, std::string(kTdigestErrWrongKeyword)},
      {{"TDIGEST.MERGE", "t", "1", "a", "COMPRESSION", "0"},
       std::string(kTdigestErrCompressionPositive)},
  };
  for (const auto& [args, error] : commands) {
    // A missing destination is fine: the argument error is the reply.
    for (const auto& [answer, reply] : std::vector<std::pair<std::string, std::string>>{
             {Simple("OK"), error},
             {Simple("MISSING"), error},
             {Simple("WRONGTYPE"), std::string(kTdigestErrWrongType)}}) {
      std::unique_ptr<Plan> plan = Command(args);
      EXPECT_EQ(Run(plan.get(), lua::kTdigestRead, {"check"}, answer), reply)
          << args[2] << " " << answer;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ADD batches.

TEST_F(TdigestPlanTest, AddBatchIsOneCallWithEachCommandsReply) {
  std::vector<PlanMember> members(3);
  members[0] = {0, 2, true, false};
  members[1] = {2, 1, true, false};
  members[2] = {3, 2, true, false};
  std::unique_ptr<Plan> plan =
      MakeTdigestAddBatchPlan("t", {"1", "-0", "2.5e1", "0", "-7"}, std::move(members), &config_);
  const std::string one = Bytes(int64_t{1});
  const Args argv = {"add",
                     Bytes(1.0) + one + Bytes(-0.0) + one + Bytes(25.0) + one + Bytes(0.0) + one +
                         Bytes(-7.0) + one,
                     Bytes(-7.0),
                     Bytes(25.0),
                     "2",
                     "1",
                     "2"};
  EXPECT_EQ(Start(plan.get()), Call("EVALSHA", lua::kTdigestAdd.sha1, argv));
  EXPECT_EQ(Answer(plan.get(), kNoScript), Call("EVAL", lua::kTdigestAdd.body, argv));
  EXPECT_TRUE(Answer(plan.get(), Array(3) + Int(1) + Int(0) + Int(0)).empty());
  const std::string overflow(kTdigestErrOverflow);
  EXPECT_EQ(plan->MemberReplies(), (std::vector<std::string>{kOk, overflow, overflow}));
  EXPECT_EQ(step_.reply, kOk);
}

TEST_F(TdigestPlanTest, AddBatchSharedFailureGoesToTheStepReply) {
  for (const auto& [answer, reply] : std::vector<std::pair<std::string, std::string>>{
           {Simple("MISSING"), std::string(kTdigestErrKeyMissing)},
           {Simple("WRONGTYPE"), std::string(kTdigestErrWrongType)},
           {"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
            "-OOM command not allowed when used memory > 'maxmemory'.\r\n"}}) {
    std::vector<PlanMember> members = {{0, 1, true, false}, {1, 1, true, false}};
    std::unique_ptr<Plan> plan =
        MakeTdigestAddBatchPlan("t", {"1", "2"}, std::move(members), &config_);
    Start(plan.get());
    Answer(plan.get(), answer);
    EXPECT_TRUE(step_.done);
    EXPECT_TRUE(plan->MemberReplies().empty());
    EXPECT_EQ(step_.reply, reply);
  }
  // One result for two commands.
  std::vector<PlanMember> members = {{0, 1, true, false}, {1, 1, true, false}};
  std::unique_ptr<Plan> plan =
      MakeTdigestAddBatchPlan("t", {"1", "2"}, std::move(members), &config_);
  Start(plan.get());
  Answer(plan.get(), Array(1) + Int(1));
  EXPECT_TRUE(plan->MemberReplies().empty());
  EXPECT_TRUE(IsUnexpected(step_.reply)) << step_.reply;
}

TEST(TdigestValueOfTest, StrtodOfTheWholeString) {
  EXPECT_EQ(TdigestValueOf("1.5"), 1.5);
  EXPECT_EQ(TdigestValueOf("1e3"), 1000);
  EXPECT_EQ(TdigestValueOf("-1.7976931348623157e308"), -DBL_MAX);
  EXPECT_EQ(TdigestValueOf("0.1"), 0.1);
  const double minus_zero = TdigestValueOf("-0");
  EXPECT_EQ(minus_zero, 0);
  EXPECT_TRUE(std::signbit(minus_zero));
  EXPECT_EQ(TdigestValueOf("4.9406564584124654e-324"), 4.9406564584124654e-324);
}

}  // namespace
}  // namespace bloomproxy::filters

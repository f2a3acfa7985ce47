// Hand-written upstream answers and the requests a plan sends, for the tests that step script
// plans and replies by hand: RESP2 pieces (integers, bulk and simple strings, array headers,
// null, OK, NOSCRIPT), a step's multibulk requests split into their arguments, the raw
// little-endian bytes of numbers as the scripts store them, and a fixture stepping a plan that
// sends one request a step.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/common/plan.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters::script_answers {

using Args = std::vector<std::string>;

inline std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
inline std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
inline std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
inline std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
inline const std::string kNull = "$-1\r\n";
inline const std::string kOk = "+OK\r\n";
inline const std::string kNoScript = "-NOSCRIPT No matching script. Please use EVAL.\r\n";

// The multibulk requests in `in`, split into their arguments.
inline std::vector<Args> ParseRequests(std::string_view in) {
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

// The bytes of `v` as the machine (little-endian) holds them.
template <typename T>
std::string Bytes(T v) {
  char out[sizeof v];
  std::memcpy(out, &v, sizeof v);
  return std::string(out, sizeof v);
}

template <typename T>
void Put(std::string* out, T v) {
  out->append(Bytes(v));
}

// `values` as consecutive 8-byte doubles.
inline std::string Doubles(const std::vector<double>& values) {
  std::string out;
  for (double d : values) out += Bytes(d);
  return out;
}

// A fixture stepping a plan that sends one request a step: its requests come back split into
// their arguments, each answered with a hand-written reply.
class OneCallPlanTest : public ::testing::Test {
 protected:
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

  protocol::ReplyDecoder decoder_;
  PlanStep step_;
};

}  // namespace bloomproxy::filters::script_answers

// Every recorded TDIGEST command (tests/fixtures/tdigest) through the proxy's C++ path: parsed
// (tdigest_args.h), planned (tdigest_plan.h: MakeTdigestPlan, and MakeTdigestAddBatchPlan for
// every other ADD), its script call answered by a fake server that does what each script's
// header says with the model's maths (tdigest.h), and the reply, as it is and through
// ToResp3(Resp3ShapeOf(cmd)), compared byte for byte with RedisBloom's RESP2 and RESP3 replies.
// The Lua itself is not run here; the fake server checks the calls' arguments (markers,
// prefixes, weights, ADD's bounds) as it reads them.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/common/sketch_resp3.h"
#include "filters/tdigest/tdigest.h"
#include "filters/tdigest/tdigest_add.lua.h"
#include "filters/tdigest/tdigest_args.h"
#include "filters/tdigest/tdigest_create.lua.h"
#include "filters/tdigest/tdigest_merge.lua.h"
#include "filters/tdigest/tdigest_plan.h"
#include "filters/tdigest/tdigest_read.lua.h"
#include "protocol/reply_decoder.h"
#include "tests/unit/tdigest_fixtures.h"

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string>;
using fixtures::Case;

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
const std::string kNoScript = "-NOSCRIPT No matching script. Please use EVAL.\r\n";

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  return out;
}

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

template <typename T>
T Get(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

std::vector<double> DoublesOf(std::string_view bytes) {
  EXPECT_EQ(bytes.size() % 8, 0u);
  std::vector<double> out;
  for (size_t at = 0; at + 8 <= bytes.size(); at += 8) out.push_back(Get<double>(bytes, at));
  return out;
}

std::string Doubles(const std::vector<double>& values) {
  std::string out;
  for (double d : values) Put(&out, d);
  return out;
}

// The digest's 56-byte header (tdigest_layout.lua).
std::string HeaderOf(const Tdigest& t) {
  std::string out;
  Put(&out, static_cast<double>(t.compression));
  Put(&out, t.min);
  Put(&out, t.max);
  Put(&out, static_cast<uint32_t>(t.merged));
  Put(&out, static_cast<uint32_t>(TdigestUnmergedNodes(t)));
  Put(&out, t.merged_weight);
  Put(&out, t.unmerged_weight);
  Put(&out, t.total_compressions);
  return out;
}

// The multibulk requests in `in`, split into their arguments.
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

struct Value {
  std::string type;  // "TDIS-TYPE" for a digest
  Tdigest digest;
};

// A keyspace answering the TDIGEST scripts' calls as their header comments say, and the few
// other commands of the recordings for what they do to it.
class FakeServer {
 public:
  std::string Answer(const Args& request) {
    EXPECT_GE(request.size(), 3u);
    if (request.size() < 3) return "";
    const bool body = request[0] == "EVAL";
    EXPECT_TRUE(body || request[0] == "EVALSHA") << request[0];
    const LuaScript* script = nullptr;
    for (const LuaScript* s :
         {&lua::kTdigestAdd, &lua::kTdigestRead, &lua::kTdigestCreate, &lua::kTdigestMerge}) {
      if (request[1] == (body ? s->body : s->sha1)) script = s;
    }
    if (script == nullptr) {
      ADD_FAILURE() << "not a TDIGEST script";
      return "";
    }
    if (script == &lua::kTdigestMerge) return Merge(request);
    // EVALSHA <sha> 1 <name> <marker> <prefix> <argv...>
    EXPECT_EQ(request[2], "1");
    if (request.size() < 7) {
      ADD_FAILURE() << "too few arguments";
      return "";
    }
    const std::string& name = request[3];
    EXPECT_EQ(request[5], DataKeyPrefix(name));
    EXPECT_EQ(request[4], TdigestMarkerKey(DataKeyPrefix(name), name));
    const Args argv(request.begin() + 6, request.end());
    if (script == &lua::kTdigestCreate) return Create(name, argv);
    Value* v = Find(name);
    if (v == nullptr) return Simple("MISSING");
    if (v->type != kTdigestTypeName) return Simple("WRONGTYPE");
    if (script == &lua::kTdigestAdd) return Add(&v->digest, argv);
    return Read(&v->digest, argv);
  }

  // A command that is not TDIGEST.*: only its effect on the keyspace.
  void Plain(const Args& args) {
    const std::string name = Upper(args[0]);
    if (name == "SET" && args.size() == 3) keys_[args[1]] = Value{"string", {}};
    if ((name == "LPUSH" || name == "HSET" || name == "BF.ADD") && args.size() >= 3 &&
        Find(args[1]) == nullptr) {
      keys_[args[1]] = Value{name, {}};
    }
    if (name == "CMS.INITBYDIM" && Find(args[1]) == nullptr) keys_[args[1]] = Value{"cms", {}};
    if (name == "DEL" || name == "UNLINK") {
      for (size_t i = 1; i < args.size(); ++i) keys_.erase(args[i]);
    }
    if ((name == "RENAME" || name == "RENAMENX") && args.size() == 3) {
      auto it = keys_.find(args[1]);
      if (it == keys_.end() || (name == "RENAMENX" && Find(args[2]) != nullptr)) return;
      Value moved = std::move(it->second);
      keys_.erase(it);
      keys_[args[2]] = std::move(moved);
    }
  }

 private:
  Value* Find(const std::string& key) {
    auto it = keys_.find(key);
    return it == keys_.end() ? nullptr : &it->second;
  }

  // tdigest_create.lua.
  std::string Create(const std::string& name, const Args& argv) {
    const Value* v = Find(name);
    if (v != nullptr) return Simple(v->type == kTdigestTypeName ? "EXISTS" : "WRONGTYPE");
    if (argv[0] == "check") return Simple("FREE");
    EXPECT_EQ(argv.size(), 3u);
    EXPECT_EQ(argv[0], "create");
    keys_[name] = Value{std::string(kTdigestTypeName), NewTdigest(std::stoll(argv[2]))};
    return Simple("OK");
  }

  // tdigest_add.lua.
  static std::string Add(Tdigest* t, const Args& argv) {
    if (argv[0] == "reset") {
      TdigestReset(t);
      return Simple("OK");
    }
    EXPECT_EQ(argv[0], "add");
    const std::string& nodes = argv[1];
    EXPECT_EQ(nodes.size() % 16, 0u);
    // ARGV[5..6]: the bounds as the library's strict comparisons leave them over the values.
    double low = DBL_MAX;
    double high = -DBL_MAX;
    for (size_t at = 0; at + 16 <= nodes.size(); at += 16) {
      const double v = Get<double>(nodes, at);
      EXPECT_EQ(Get<int64_t>(nodes, at + 8), 1);
      if (v < low) low = v;
      if (v > high) high = v;
    }
    EXPECT_EQ(argv[2], Doubles({low}));
    EXPECT_EQ(argv[3], Doubles({high}));
    std::string out = Array(argv.size() - 4);
    size_t at = 0;
    size_t total = 0;
    for (size_t m = 4; m < argv.size(); ++m) {
      const size_t count = std::stoul(argv[m]);
      bool added = true;
      for (size_t i = 0; i < count; ++i, at += 16) {
        added = added && TdigestAddNode(t, Get<double>(nodes, at), 1);
      }
      total += count;
      out += Int(added ? 1 : 0);
    }
    EXPECT_EQ(16 * total, nodes.size());
    return out;
  }

  // tdigest_read.lua.
  static std::string Read(Tdigest* t, const Args& argv) {
    const std::string& op = argv[0];
    if (op == "check") return Simple("OK");
    const std::vector<double> in = DoublesOf(argv[1]);
    std::vector<double> out;
    if (op == "quantile") {
      out = TdigestQuantiles(t, in);
    } else if (op == "cdf") {
      for (double x : in) out.push_back(TdigestCdf(t, x));
    } else if (op == "trimmed") {
      EXPECT_EQ(in.size(), 2u);
      out.push_back(TdigestTrimmedMean(t, in[0], in[1]));
    } else if (op == "rank" || op == "revrank") {
      // The script sends each rank as the double the proxy casts; the model casts already.
      for (int64_t r : TdigestRanks(t, in, op == "revrank")) {
        out.push_back(r == INT64_MIN ? std::nan("") : static_cast<double>(r));
      }
    } else if (op == "byrank" || op == "byrevrank") {
      std::vector<int64_t> ranks;
      for (double d : in) {
        ranks.push_back(d >= 9223372036854775808.0 ? INT64_MAX : static_cast<int64_t>(d));
      }
      out = TdigestByRanks(t, ranks, op == "byrevrank");
    } else {
      EXPECT_EQ(op, "header");
      EXPECT_TRUE(in.empty());
    }
    return Array(2) + Bulk(HeaderOf(*t)) + Bulk(Doubles(out));
  }

  // tdigest_merge.lua: EVALSHA <sha> <n> <dest> <sources...> <id> <compression> <override>
  // <limit> <marker, prefix of each key>.
  std::string Merge(const Args& request) {
    const size_t n = std::stoul(request[2]);
    EXPECT_EQ(request.size(), 3 + n + 4 + 2 * n);
    if (request.size() != 3 + n + 4 + 2 * n) return "";
    const Args keys(request.begin() + 3, request.begin() + 3 + n);
    const Args argv(request.begin() + 3 + n, request.end());
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(argv[4 + 2 * i], TdigestMarkerKey(DataKeyPrefix(keys[i]), keys[i]));
      EXPECT_EQ(argv[5 + 2 * i], DataKeyPrefix(keys[i]));
    }
    EXPECT_EQ(argv[0].size(), 16u);
    Value* dest = Find(keys[0]);
    if (dest != nullptr && dest->type != kTdigestTypeName) return Simple("WRONGTYPE");
    TdigestRequest req;
    req.has_compression = !argv[1].empty();
    if (req.has_compression) req.compression = std::stoll(argv[1]);
    EXPECT_TRUE(argv[2] == "0" || argv[2] == "1") << argv[2];
    req.override_dest = argv[2] == "1";
    std::vector<Tdigest*> sources;
    std::vector<int64_t> compressions;
    for (size_t i = 1; i < n; ++i) {
      Value* s = Find(keys[i]);
      if (s == nullptr) return Simple("MISSING");
      if (s->type != kTdigestTypeName) return Simple("WRONGTYPE");
      sources.push_back(&s->digest);
      compressions.push_back(s->digest.compression);
    }
    const int64_t c =
        TdigestMergeCompression(req, dest == nullptr ? nullptr : &dest->digest, compressions);
    if (c > std::stoll(argv[3])) return Simple("ALLOC");
    Tdigest merged = NewTdigest(c);
    if (!req.override_dest && dest != nullptr) TdigestMergeInto(&merged, &dest->digest);
    for (Tdigest* s : sources) {
      if (!TdigestMergeInto(&merged, s)) return Simple("OVERFLOW");
    }
    keys_[keys[0]] = Value{std::string(kTdigestTypeName), std::move(merged)};
    return Simple("OK");
  }

  std::map<std::string, Value> keys_;
};

class TdigestPlanReplay {
 public:
  // The proxy's RESP2 reply to TDIGEST command `args`, its calls answered by `server`. Every
  // other call first meets NOSCRIPT.
  std::string Run(const Args& args, FakeServer* server) {
    const std::vector<std::string_view> views(args.begin(), args.end());
    TdigestRequest request;
    const std::string error = ParseTdigestRequest(views, &request);
    if (!error.empty() && request.error_order == TdigestErrorOrder::kNow) return error;
    std::unique_ptr<Plan> plan;
    const bool batch = request.command == TdigestCommand::kAdd && error.empty() && ++adds_ % 2;
    if (batch) {
      std::vector<PlanMember> members = {{0, args.size() - 2, true, false}};
      plan = MakeTdigestAddBatchPlan(std::string(request.key), Args(args.begin() + 2, args.end()),
                                     std::move(members), &config_);
    } else {
      plan = MakeTdigestPlan(request, error, &config_);
    }
    PlanStep step;
    plan->Start(&step);
    bool noscript = ++calls_ % 2 == 0;
    for (int round = 0; round < 3 && !step.done; ++round) {
      EXPECT_EQ(step.replies, 1u);
      const std::vector<Args> requests = ParseRequests(step.requests);
      EXPECT_EQ(requests.size(), 1u);
      if (requests.size() != 1) return "";
      StepReplies replies(&decoder_);
      replies.Add(noscript ? kNoScript : server->Answer(requests[0]));
      noscript = false;
      step = PlanStep{};
      plan->OnReplies(replies, &step);
    }
    EXPECT_TRUE(step.done);
    if (!batch) return step.reply;
    const std::vector<std::string>& members = plan->MemberReplies();
    if (members.empty()) return step.reply;
    EXPECT_EQ(members.size(), 1u);
    EXPECT_EQ(members[0], step.reply);
    return members[0];
  }

 private:
  TdigestConfig config_;
  protocol::ReplyDecoder decoder_;
  size_t adds_ = 0;
  size_t calls_ = 0;
};

std::string Show(std::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, 300)) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

TEST(TdigestPlanReplayTest, EveryRecordedCommandGetsRedisBloomsReplyInBothProtocols) {
  size_t commands = 0;
  size_t matched2 = 0;
  size_t matched3 = 0;
  for (const Case& c : fixtures::TdigestCases()) {
    const std::vector<std::string>& resp3 = fixtures::TdigestResp3Replies().at(c.name);
    ASSERT_EQ(resp3.size(), c.cmds.size()) << c.name;
    FakeServer server;  // each case runs on a fresh key set
    TdigestPlanReplay replay;
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const Args& args = c.cmds[i];
      TdigestCommand command;
      if (!LookupTdigestCommand(args[0], &command)) {
        server.Plain(args);
        continue;
      }
      ++commands;
      const std::string got = replay.Run(args, &server);
      const std::vector<std::string_view> views(args.begin(), args.end());
      const std::string got3 = ToResp3(Resp3ShapeOf(views), got);
      EXPECT_EQ(got, c.replies[i]) << c.name << " command " << i << " (" << args[0] << ")\n"
                                   << "  want: " << Show(c.replies[i]) << "\n  got:  " << Show(got);
      EXPECT_EQ(got3, resp3[i]) << c.name << " command " << i << " (" << args[0] << ") RESP3";
      matched2 += got == c.replies[i];
      matched3 += got3 == resp3[i];
    }
  }
  EXPECT_EQ(commands, 2352u);
  EXPECT_EQ(matched2, commands);
  EXPECT_EQ(matched3, commands);
}

}  // namespace
}  // namespace bloomproxy::filters

// The harness of the BF plan tests (no sockets): MiniRedis, a small in-memory model of the
// Redis commands plans send (strings and hashes, expiry, and the scripts of
// filters/common/sharding_requests.h), and BfPlanTest, which runs plans against it.
#pragma once

#include "filters/bloom/bf_plan.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/add_script.h"
#include "filters/bloom/bf_args.h"
#include "filters/common/key_layout.h"
#include "filters/common/sharding_requests.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/reply_decoder.h"
#include "protocol/request_parser.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kWrongTypeText =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
const std::string kWrongTypeReply = "-" + std::string(kWrongTypeText) + "\r\n";

inline std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The multibulk requests of a step, split into their arguments.
inline std::vector<std::vector<std::string>> ParseRequests(std::string_view in) {
  std::vector<std::vector<std::string>> out;
  size_t pos = 0;
  auto line = [&]() {
    const size_t eol = in.find("\r\n", pos);
    EXPECT_NE(eol, std::string_view::npos);
    std::string_view l = in.substr(pos, eol - pos);
    pos = eol + 2;
    return l;
  };
  while (pos < in.size()) {
    std::string_view head = line();
    EXPECT_EQ(head[0], '*');
    const int n = std::stoi(std::string(head.substr(1)));
    std::vector<std::string> args;
    for (int i = 0; i < n; ++i) {
      std::string_view len = line();
      EXPECT_EQ(len[0], '$');
      const size_t l = std::stoul(std::string(len.substr(1)));
      args.emplace_back(in.substr(pos, l));
      pos += l + 2;
    }
    out.push_back(std::move(args));
  }
  return out;
}

// The Redis commands plans send, on strings and hashes, with Redis's replies; behind a sharding
// proxy also the scripts of filters/common/sharding_requests.h, and the add script
// (filters/bloom/add_script.h), recognised by their text.
class MiniRedis {
 public:
  std::map<std::string, std::string> strings;
  std::map<std::string, std::map<std::string, std::string>> hashes;
  std::map<std::string, int64_t> expiry;       // key: its expiry time in ms (keys never expire)
  std::map<std::string, int> calls;            // per command name: how many were run
  std::vector<std::vector<std::string>> sent;  // every command, in order
  // Replaces a reply: called with the command (upper-case name first) and its occurrence
  // (1 = the first of that name); a value is sent instead of the real reply (the command is
  // not run).
  std::function<std::optional<std::string>(const std::vector<std::string>&, int)> override;

  std::string Reply(std::vector<std::string> cmd) {
    cmd[0] = Upper(cmd[0]);
    sent.push_back(cmd);
    const int n = ++calls[cmd[0]];
    if (override) {
      if (std::optional<std::string> r = override(cmd, n)) return *r;
    }
    return Run(cmd);
  }

  bool Exists(const std::string& k) const { return strings.count(k) || hashes.count(k); }

 private:
  static std::string Int(int64_t v) {
    std::string out;
    protocol::AppendInteger(&out, v);
    return out;
  }
  static std::string Bulk(std::string_view s) {
    std::string out;
    protocol::AppendBulk(&out, s);
    return out;
  }

  std::string Run(const std::vector<std::string>& c) {
    const std::string& name = c[0];
    const std::string key = c.size() > 1 ? c[1] : "";
    const bool is_hash = hashes.count(key) > 0;
    const bool is_string = strings.count(key) > 0;
    if (name == "TYPE") return is_string ? "+string\r\n" : is_hash ? "+hash\r\n" : "+none\r\n";
    if (name == "HGETALL" || name == "HMGET" || name == "HGET" || name == "HSET" ||
        name == "HSETNX") {
      if (is_string) return kWrongTypeReply;
      auto& h = hashes[key];
      std::string out;
      if (name == "HGETALL") {
        protocol::AppendArrayHeader(&out, static_cast<int64_t>(h.size() * 2));
        for (const auto& [f, v] : h) out += Bulk(f) + Bulk(v);
      } else if (name == "HMGET" || name == "HGET") {
        if (name == "HMGET") protocol::AppendArrayHeader(&out, static_cast<int64_t>(c.size() - 2));
        for (size_t i = 2; i < c.size(); ++i) {
          auto it = h.find(c[i]);
          if (it == h.end()) {
            protocol::AppendNullBulk(&out);
          } else {
            out += Bulk(it->second);
          }
        }
      } else if (name == "HSET") {
        int64_t added = 0;
        for (size_t i = 2; i + 1 < c.size(); i += 2) {
          added += h.count(c[i]) ? 0 : 1;
          h[c[i]] = c[i + 1];
        }
        out = Int(added);
      } else {
        const bool added = h.count(c[2]) == 0;
        if (added) h[c[2]] = c[3];
        out = Int(added ? 1 : 0);
      }
      if (h.empty()) hashes.erase(key);
      return out;
    }
    if (name == "MGET") {
      std::string out;
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(c.size() - 1));
      for (size_t i = 1; i < c.size(); ++i) {
        auto it = strings.find(c[i]);
        if (it == strings.end()) {
          protocol::AppendNullBulk(&out);
        } else {
          out += Bulk(it->second);
        }
      }
      return out;
    }
    if (name == "UNLINK" || name == "DEL") {
      int64_t n = 0;
      for (size_t i = 1; i < c.size(); ++i) {
        n += strings.erase(c[i]) + hashes.erase(c[i]);
        expiry.erase(c[i]);
      }
      return Int(n);
    }
    if (name == "RENAMENX") {
      if (!Exists(key)) return "-ERR no such key\r\n";
      if (Exists(c[2])) return Int(0);
      if (expiry.count(key)) expiry[c[2]] = expiry[key];
      expiry.erase(key);
      if (is_string) {
        strings[c[2]] = strings[key];
        strings.erase(key);
      } else {
        hashes[c[2]] = hashes[key];
        hashes.erase(key);
      }
      return Int(1);
    }
    if (name == "PEXPIRETIME") {
      if (!Exists(key)) return Int(-2);
      return Int(expiry.count(key) ? expiry[key] : -1);
    }
    if (name == "PEXPIREAT") {
      if (!Exists(key)) return Int(0);
      expiry[key] = std::stoll(c[2]);
      return Int(1);
    }
    if (name == "EVAL") return Eval(c);
    if (name == "SET") {
      if (c.size() > 3 && Upper(c[3]) == "NX" && Exists(key)) return "$-1\r\n";
      hashes.erase(key);
      expiry.erase(key);
      strings[key] = c[2];
      return "+OK\r\n";
    }
    // String commands.
    if (is_hash) return kWrongTypeReply;
    std::string& s = strings[key];
    std::string reply;
    bool reads_only =
        name == "GET" || name == "STRLEN" || name == "GETRANGE" || name == "BITFIELD_RO";
    if (name == "GET") {
      reply = is_string ? Bulk(s) : "$-1\r\n";
    } else if (name == "STRLEN") {
      reply = Int(static_cast<int64_t>(s.size()));
    } else if (name == "INCRBY" || name == "DECRBY") {
      int64_t v = 0;
      if (is_string && !protocol::StringToInt64(s, &v)) {
        reply = "-ERR value is not an integer or out of range\r\n";
      } else {
        v += (name == "INCRBY" ? 1 : -1) * std::stoll(c[2]);
        s = std::to_string(v);
        reply = Int(v);
      }
    } else if (name == "SETRANGE") {
      const size_t off = std::stoul(c[2]);
      if (s.size() < off + c[3].size()) s.resize(off + c[3].size(), '\0');
      s.replace(off, c[3].size(), c[3]);
      reply = Int(static_cast<int64_t>(s.size()));
    } else if (name == "GETRANGE") {
      const size_t from = std::stoul(c[2]);
      size_t to = std::stoul(c[3]);
      if (s.empty() || from >= s.size()) {
        reply = Bulk("");
      } else {
        to = std::min(to, s.size() - 1);
        reply = Bulk(std::string_view(s).substr(from, to - from + 1));
      }
    } else if (name == "BITFIELD" || name == "BITFIELD_RO") {
      reads_only = true;
      std::vector<int64_t> values;
      for (size_t i = 2; i < c.size();) {
        const bool set = Upper(c[i]) == "SET";
        reads_only = reads_only && !set;  // BITFIELD with GETs only creates no key
        const uint64_t off = std::stoull(c[i + 2]);
        const size_t byte = off / 8;
        const int bit = 7 - static_cast<int>(off % 8);
        values.push_back(byte < s.size() ? (static_cast<uint8_t>(s[byte]) >> bit) & 1 : 0);
        if (set) {
          if (s.size() <= byte) s.resize(byte + 1, '\0');
          if (c[i + 3] == "1") {
            s[byte] = static_cast<char>(s[byte] | (1 << bit));
          } else {
            s[byte] = static_cast<char>(s[byte] & ~(1 << bit));
          }
        }
        i += set ? 4 : 3;
      }
      protocol::AppendArrayHeader(&reply, static_cast<int64_t>(values.size()));
      for (int64_t v : values) reply += Int(v);
    } else {
      reply = "-ERR unknown command '" + name + "'\r\n";
    }
    // Reading commands do not create keys.
    if (!is_string && (reads_only || reply[0] == '-')) strings.erase(key);
    return reply;
  }

  // EVAL of a script of filters/common/sharding_requests.h (KEYS[1] = c[3], ARGV = c[4..]),
  // emulated as its comment documents it.
  std::string Eval(const std::vector<std::string>& c) {
    if (c.size() > 3 && c[1] == AddScript()) return EvalAdd(c);
    if (c.size() < 4 || c[2] != "1") return "-ERR unexpected EVAL\r\n";
    const std::string& key = c[3];
    if (c[1] == PublishScript()) {
      // The metadata written to the name only if it is free: 1, else 0.
      if (Exists(key)) return Int(0);
      std::vector<std::string> hset = {"HSET", key};
      hset.insert(hset.end(), c.begin() + 4, c.end());
      Run(hset);
      return Int(1);
    }
    if (c[1] == ShardScript() && c.size() == 6) {
      // The shard created unless it exists (SETRANGE of its last byte); its length.
      if (!Exists(key)) Run({"SETRANGE", key, c[4], c[5]});
      return Run({"STRLEN", key});
    }
    if (c[1] == ExpireTimeScript() && c.size() == 4) return Run({"PEXPIRETIME", key});
    return "-ERR unexpected script\r\n";
  }

  // EVAL of filters/bloom/add_script.h, emulated as its comment documents it: one BITFIELD per
  // shard and group, items in order.
  std::string EvalAdd(const std::vector<std::string>& c) {
    const size_t nkeys = std::stoul(c[2]);
    const std::vector<std::string> keys(c.begin() + 3, c.begin() + 3 + nkeys);
    const std::vector<std::string> argv(c.begin() + 3 + nkeys, c.end());
    if (!hashes.count(keys[0])) return Int(kAddStale);
    auto& h = hashes[keys[0]];
    if (!h.count(argv[0]) || h[argv[0]] != argv[1] || h["id"] != argv[2] || h.count(argv[3])) {
      return Int(kAddStale);
    }
    const size_t n = std::stoul(argv[4]), groups = std::stoul(argv[5]);
    size_t a = 6;
    std::vector<bool> found(n, false);
    std::vector<int64_t> out(n, 0);
    for (size_t g = 0; g < groups; ++g) {
      const bool set = g + 1 == groups;
      const size_t k = std::stoul(argv[a++]);
      std::map<std::string, std::vector<std::string>> cmds;  // key -> BITFIELD
      std::vector<std::pair<std::string, size_t>> where(n * k);
      for (size_t j = 0; j < n; ++j) {
        for (size_t b = 0; b < k; ++b, a += 2) {
          if (found[j]) continue;
          const std::string& key = keys[std::stoul(argv[a]) - 1];
          auto& cmd = cmds[key];
          if (cmd.empty()) cmd = {"BITFIELD", key};
          where[j * k + b] = {key, (cmd.size() - 2) / (set ? 4 : 3)};
          for (const char* op : {set ? "SET" : "GET", "u1"}) cmd.push_back(op);
          cmd.push_back(argv[a + 1]);
          if (set) cmd.push_back("1");
        }
      }
      std::map<std::string, std::vector<int64_t>> bits;
      for (const auto& [key, cmd] : cmds) {
        const std::string reply = Run(cmd);
        std::vector<int64_t>& v = bits[key];
        for (size_t p = reply.find(":"); p != std::string::npos; p = reply.find(":", p + 1)) {
          v.push_back(reply[p + 1] - '0');
        }
      }
      for (size_t j = 0; j < n; ++j) {
        if (found[j]) {
          if (set) out[j] = kAddInOlderLink;
          continue;
        }
        bool ones = true;
        for (size_t b = 0; b < k; ++b) {
          ones = ones && bits[where[j * k + b].first][where[j * k + b].second] == 1;
        }
        if (set) {
          out[j] = ones ? kAddExisted : kAddNew;
        } else {
          found[j] = ones;
        }
      }
    }
    std::string reply;
    protocol::AppendArrayHeader(&reply, static_cast<int64_t>(n));
    for (int64_t v : out) reply += Int(v);
    return reply;
  }
};

// "-ERR bloomproxy: unexpected reply from upstream to <what>: <detail>\r\n".
inline std::string Nonsense(std::string_view what, std::string_view detail) {
  return "-ERR bloomproxy: unexpected reply from upstream to " + std::string(what) + ": " +
         std::string(detail) + "\r\n";
}

class BfPlanTest : public ::testing::Test {
 protected:
  // Runs one BF command as the proxy would (every step's requests answered by MiniRedis, the
  // last step's trailing requests too) and returns the client's reply. `warm`: with the
  // metadata cached from earlier commands (otherwise the cache starts empty).
  std::string Bf(std::vector<std::string> args) {
    if (!warm_) cache_ = FilterCache();
    std::vector<std::string_view> views(args.begin(), args.end());
    BfRequest request;
    const std::string parse_error = ParseBfRequest(views, config_.defaults, &request);
    EXPECT_EQ(parse_error, "");
    return Run(MakeBfPlan(request, &cache_, &config_));
  }

  std::string Run(std::unique_ptr<Plan> plan, Plan** keep = nullptr) {
    PlanStep step;
    plan->Start(&step);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::vector<std::string>> requests = ParseRequests(step.requests);
      EXPECT_EQ(requests.size(), step.replies);
      StepReplies replies(&decoder_);
      for (auto& r : requests) replies.Add(redis_.Reply(r));
      if (step.done) {
        if (keep != nullptr) *keep = plan.release();
        return step.reply;
      }
      PlanStep next;
      plan->OnReplies(replies, &next);
      step = std::move(next);
    }
    ADD_FAILURE() << "the plan did not finish";
    return {};
  }

  // A filter "f" (defaults: 1 % error, capacity 100, one shard) holding items "a" and "b".
  void MakeFilter(std::vector<std::string> reserve = {"BF.RESERVE", "f", "0.01", "100"}) {
    ASSERT_EQ(Bf(reserve), "+OK\r\n");
    ASSERT_EQ(Bf({"BF.MADD", "f", "a", "b"}), "*2\r\n:1\r\n:1\r\n");
    ASSERT_TRUE(redis_.hashes.count("f"));
    id_ = redis_.hashes["f"]["id"];
    // l0: "bytes bits capacity k n2 error bpe"
    const std::string& l0 = redis_.hashes["f"]["l0"];
    bytes_ = std::stoull(l0.substr(0, l0.find(' ')));
    std::string rest = l0;
    for (int i = 0; i < 3; ++i) rest = rest.substr(rest.find(' ') + 1);
    k_ = std::stoul(rest.substr(0, rest.find(' ')));
  }
  std::string Bits(size_t link = 0, size_t shard = 0) const {
    return BitsKey(DataKeyPrefix("f"), id_, link, shard);
  }
  std::string Count(size_t link = 0) const { return CountKey(DataKeyPrefix("f"), id_, link); }

  // The replies of a healthy filter: the same whatever was tried on it before.
  void ExpectHealthy() {
    EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), ":1\r\n");
    EXPECT_EQ(Bf({"BF.MEXISTS", "f", "b", "zz"}), "*2\r\n:1\r\n:0\r\n");
    EXPECT_EQ(Bf({"BF.CARD", "f"}), ":2\r\n");
  }

  // Runs `check` with an empty cache and with the filter's metadata cached, each on a fresh
  // MiniRedis holding MakeFilter()'s filter damaged by `damage`.
  void BothCaches(const std::function<void()>& damage, const std::function<void()>& check) {
    for (bool warm : {false, true}) {
      SCOPED_TRACE(warm ? "metadata cached" : "metadata not cached");
      redis_ = MiniRedis();
      cache_ = FilterCache();
      warm_ = true;
      MakeFilter();
      warm_ = warm;
      damage();
      check();
    }
  }

  MiniRedis redis_;
  FilterCache cache_;
  BfConfig config_;
  protocol::ReplyDecoder decoder_;
  bool warm_ = true;
  std::string id_;
  uint64_t bytes_ = 0;
  uint32_t k_ = 0;
};

// --- the model itself ------------------------------------------------------------------------

}  // namespace
}  // namespace bloomproxy::filters

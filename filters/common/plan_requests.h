// Small helpers for building requests and reading replies, shared by the plans
// (filters/common/plan.h): the requests of a step with what each reply must be (ReplyCheck), the
// checks themselves, and the error replies a plan gives when an upstream reply makes no sense.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/common/plan.h"
#include "protocol/encoder.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// What a plan expects of the reply to one of its requests. Every reply of a step is checked
// before any is used (CheckReplies), so an answer is only ever made of replies that make sense:
// anything else ends the command with an error.
struct ReplyCheck {
  enum class Kind : uint8_t {
    kAny,         // read by the plan itself (validation, TYPE, HGETALL), or not read at all
    kNoError,     // anything but an error reply
    kInteger,     // an integer
    kLength,      // STRLEN / SETRANGE of a shard: the integer `n` (the shard's size)
    kPresent,     // STRLEN of a count key: an integer > 0 (the key exists)
    kBits,        // BITFIELD / BITFIELD_RO: an array of `n` integers, each 0 or 1
    kBulk,        // GETRANGE of a shard: a bulk string of `n` bytes
    kCounts,      // MGET of the count keys: `n` bulk strings, each an integer >= 0
    kCount,       // GET of a count key: a bulk string holding an integer >= 0
    kAddResults,  // the add script (add_script.h): -1, or an array of `n` integers 0, 1 or 2
  };
  enum class Role : uint8_t { kNone, kShard, kCount, kCounts, kAdd };

  std::string command;  // upper case, as sent (short: no allocation)
  Kind kind = Kind::kAny;
  Role role = Role::kNone;
  uint32_t link = 0;
  uint64_t shard = 0;
  uint64_t n = 0;
};

// The request a reply answers, for error messages: "BITFIELD_RO of link 0 shard 0".
std::string What(const ReplyCheck& c);

// The requests of a step being built, each with what the plan expects of its reply.
class Requests {
 public:
  // Appends one command; its first argument names it in the reply's check (Kind::kAny until
  // Last() says more).
  void Add(std::initializer_list<std::string_view> args) {
    protocol::AppendCommand(&out_, args);
    Added(*args.begin());
  }
  void Add(const std::vector<std::string>& args) {
    protocol::AppendCommand(&out_, args);
    Added(args[0]);
  }
  void Add(const std::vector<std::string_view>& args) {
    protocol::AppendCommand(&out_, args);
    Added(args[0]);
  }
  // A request encoded in place (RESP multibulk), for big ones: Begin() gives the buffer with
  // room for `bytes` more (so that neither this request nor a few small ones after it move it),
  // to which the request is appended; End() adds it, named `command`.
  std::string& Begin(size_t bytes) {
    out_.reserve(out_.size() + bytes + kSlack);
    return out_;
  }
  void End(std::string_view command) { Added(command); }
  // What the plan expects of the last request's reply.
  ReplyCheck& Last() { return checks_.back(); }
  // The number of requests added since the last MoveTo (the index the next one will have).
  size_t count() const { return checks_.size(); }
  // Appends the requests to the step; their checks go to *checks (or are dropped, for
  // trailing requests whose replies are skipped).
  void MoveTo(PlanStep* step, std::vector<ReplyCheck>* checks = nullptr) {
    if (step->requests.empty()) {
      step->requests.swap(out_);
    } else {
      step->requests += out_;
    }
    step->replies += checks_.size();
    if (checks != nullptr) {
      for (ReplyCheck& c : checks_) checks->push_back(std::move(c));
    }
    out_.clear();
    checks_.clear();
  }

 private:
  static constexpr size_t kSlack = 1024;  // room for the small requests after a big one

  void Added(std::string_view command) {
    checks_.emplace_back();
    checks_.back().command.assign(command);
  }

  std::string out_;
  std::vector<ReplyCheck> checks_;
};

// Whether `r` is a nil reply (false for null).
bool IsNil(const redisReply* r);
// The text of a string, status or error reply; empty for any other reply and for null.
std::string_view Str(const redisReply* r);
// The value of an integer reply, or of a string or status reply that holds an integer;
// `fallback` for anything else and for null.
int64_t Int(const redisReply* r, int64_t fallback = 0);

// The first line of a reply frame without its type byte ("3" for "*3\r\n...").
std::string_view FrameLine(std::string_view f);

// How a reply looks, for error messages: "an array of 2", "the integer 5", "nil".
std::string DescribeFrame(std::string_view f);

// The same, for a reply hiredis decoded (null: it could not).
std::string Described(const redisReply* r, std::string_view f);

// The client's error reply for a reply to request `c` that makes no sense:
// "-ERR bloomproxy: unexpected reply from upstream to <What(c)>: <detail>\r\n".
std::string Unexpected(const ReplyCheck& c, std::string_view detail);

// The client's reply for an error reply `frame` the upstream sent to request `c`. Errors about
// the server's state (OOM, READONLY, LOADING, NOAUTH, NOPERM, BUSY, MASTERDOWN, MISCONF, ...)
// reach the client as they are: RedisBloom on that server would answer them too. ERR and
// WRONGTYPE say that a key of the filter is not what the plan wrote (or that the upstream does
// not know a command), which RedisBloom would never answer for a filter: they become an
// unexpected-reply error that quotes them. So does an error without an upper-case code.
std::string UpstreamError(std::string_view frame, const ReplyCheck& c);

// Whether `frame` is Redis's WRONGTYPE error: the key holds another type.
inline bool IsWrongType(std::string_view frame) { return frame.substr(0, 10) == "-WRONGTYPE"; }

// An integer reply (":<v>\r\n"); false for anything else.
bool FrameInt(std::string_view f, int64_t* v);

// A count key's value: an integer >= 0.
bool ParseCount(std::string_view s, int64_t* v);

// Whether the reply to request `c` is what the plan expects; the error reply for the client
// otherwise. Checked: the type, the length, every element, and the value where it is known
// (a shard's size), so that no reply that makes no sense is ever read as 0, 1 or a count.
bool CheckReply(StepReplies& r, size_t i, const ReplyCheck& c, std::string* error);

// The RESP bytes of a simple decoded reply (integers, statuses, errors, strings, nil): what the
// client gets when a plan passes one of Redis's own replies through.
std::string Reencode(const redisReply* r, std::string_view command);

// The RESP integer reply ":<v>\r\n".
std::string Integer(int64_t v);

// `v` in decimal, as a request argument.
std::string U64(uint64_t v);

// A ReplyCheck that only names a command, for errors found in the metadata.
ReplyCheck Named(std::string_view command);

}  // namespace bloomproxy::filters

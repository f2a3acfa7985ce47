#include "filters/bf_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "filters/key_layout.h"
#include "protocol/command_table.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kMarkerField = "bloomproxy";
constexpr std::string_view kMarkerValue = "1";
constexpr std::string_view kWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
constexpr std::string_view kNotFound = "-ERR not found\r\n";
constexpr std::string_view kItemExists = "-ERR item exists\r\n";
constexpr std::string_view kBadData = "-ERR received bad data\r\n";
constexpr std::string_view kNoLink = "-ERR invalid offset - no link found\r\n";
constexpr std::string_view kFullError = "-ERR non scaling filter is full\r\n";
constexpr std::string_view kTooBig = "-ERR invalid chunk - Too big for current filter\r\n";
constexpr std::string_view kOldDump =
    "-ERR bloomproxy cannot load dumps of filters with 32-bit hashes (RedisBloom 1.x)\r\n";
// HMGET of this many link fields covers any chain a key-level plan meets: with expansion >= 2
// a chain of 64 links would hold more than 2^64 items.
constexpr size_t kMaxLinkFields = 64;

// ---------------------------------------------------------------------------------------------
// Small helpers for building requests and reading replies.

// What a plan expects of the reply to one of its requests. Every reply of a step is checked
// before any is used (CheckReplies), so an answer is only ever made of replies that make sense:
// anything else ends the command with an error.
struct ReplyCheck {
  enum class Kind : uint8_t {
    kAny,      // read by the plan itself (validation, TYPE, HGETALL), or not read at all
    kNoError,  // anything but an error reply
    kInteger,  // an integer
    kLength,   // STRLEN / SETRANGE of a shard: the integer `n` (the shard's size)
    kPresent,  // STRLEN of a count key: an integer > 0 (the key exists)
    kBits,     // BITFIELD / BITFIELD_RO: an array of `n` integers, each 0 or 1
    kBulk,     // GETRANGE of a shard: a bulk string of `n` bytes
    kCounts,   // MGET of the count keys: `n` bulk strings, each an integer >= 0
    kCount,    // GET of a count key: a bulk string holding an integer >= 0
  };
  enum class Role : uint8_t { kNone, kShard, kCount, kCounts };

  std::string command;  // upper case, as sent (short: no allocation)
  Kind kind = Kind::kAny;
  Role role = Role::kNone;
  uint32_t link = 0;
  uint64_t shard = 0;
  uint64_t n = 0;
};

// The request a reply answers, for error messages: "BITFIELD_RO of link 0 shard 0".
std::string What(const ReplyCheck& c) {
  std::string out = c.command;
  switch (c.role) {
    case ReplyCheck::Role::kNone:
      break;
    case ReplyCheck::Role::kShard:
      out += " of link " + std::to_string(c.link) + " shard " + std::to_string(c.shard);
      break;
    case ReplyCheck::Role::kCount:
      out += " of the count of link " + std::to_string(c.link);
      break;
    case ReplyCheck::Role::kCounts:
      out += " of the counts";
      break;
  }
  return out;
}

class Requests {
 public:
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
  // A request already encoded (RESP multibulk).
  void AddEncoded(std::string_view request, std::string_view command) {
    out_.append(request);
    Added(command);
  }
  // What the plan expects of the last request's reply.
  ReplyCheck& Last() { return checks_.back(); }
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
  void Added(std::string_view command) {
    checks_.emplace_back();
    checks_.back().command.assign(command);
  }

  std::string out_;
  std::vector<ReplyCheck> checks_;
};

bool IsNil(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_NIL; }
std::string_view Str(const redisReply* r) {
  if (r == nullptr) return {};
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR) {
    return {r->str, r->len};
  }
  return {};
}
int64_t Int(const redisReply* r, int64_t fallback = 0) {
  if (r == nullptr) return fallback;
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  int64_t v = 0;
  if ((r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
      protocol::StringToInt64(Str(r), &v)) {
    return v;
  }
  return fallback;
}

// The first line of a reply frame without its type byte ("3" for "*3\r\n...").
std::string_view FrameLine(std::string_view f) {
  if (f.empty()) return {};
  const size_t eol = f.find('\r');
  return f.substr(1, eol == std::string_view::npos ? std::string_view::npos : eol - 1);
}

// How a reply looks, for error messages: "an array of 2", "the integer 5", "nil".
std::string DescribeFrame(std::string_view f) {
  if (f.empty()) return "nothing";
  const std::string_view line = FrameLine(f);
  auto quoted = [](std::string_view s) {
    return "'" + std::string(s.substr(0, 60)) + (s.size() > 60 ? "...'" : "'");
  };
  switch (f[0]) {
    case '*':
      return line == "-1" ? "a nil array" : "an array of " + std::string(line);
    case ':':
      return "the integer " + std::string(line);
    case '$':
      return line == "-1" ? "nil" : "a bulk string of " + std::string(line) + " bytes";
    case '+':
      return "the status " + quoted(line);
    case '-':
      return "the error " + quoted(line);
    default:
      return "a reply of unknown type";
  }
}

// The same, for a reply hiredis decoded (null: it could not).
std::string Described(const redisReply* r, std::string_view f) {
  return r == nullptr ? "a reply that could not be decoded" : DescribeFrame(f);
}

std::string Unexpected(const ReplyCheck& c, std::string_view detail) {
  return protocol::errors::UnexpectedUpstreamReply(What(c), detail);
}

// The client's reply for an error reply `frame` the upstream sent to request `c`. Errors about
// the server's state (OOM, READONLY, LOADING, NOAUTH, NOPERM, BUSY, MASTERDOWN, MISCONF, ...)
// reach the client as they are: RedisBloom on that server would answer them too. ERR and
// WRONGTYPE say that a key of the filter is not what the plan wrote (or that the upstream does
// not know a command), which RedisBloom would never answer for a filter: they become an
// unexpected-reply error that quotes them. So does an error without an upper-case code.
std::string UpstreamError(std::string_view frame, const ReplyCheck& c) {
  const std::string_view text = FrameLine(frame);
  const std::string_view code = text.substr(0, text.find(' '));
  bool state_error = !code.empty() && code != "ERR" && code != "WRONGTYPE" && frame.size() >= 2 &&
                     frame.substr(frame.size() - 2) == "\r\n";
  for (char ch : code) state_error = state_error && ch >= 'A' && ch <= 'Z';
  if (state_error) return std::string(frame);
  return Unexpected(c, text);
}

// An integer reply (":<v>\r\n"); false for anything else.
bool FrameInt(std::string_view f, int64_t* v) {
  return !f.empty() && f[0] == ':' && protocol::StringToInt64(FrameLine(f), v);
}

// A count key's value: an integer >= 0.
bool ParseCount(std::string_view s, int64_t* v) { return protocol::StringToInt64(s, v) && *v >= 0; }

// Whether the reply to request `c` is what the plan expects; the error reply for the client
// otherwise. Checked: the type, the length, every element, and the value where it is known
// (a shard's size), so that no reply that makes no sense is ever read as 0, 1 or a count.
bool CheckReply(StepReplies& r, size_t i, const ReplyCheck& c, std::string* error) {
  using Kind = ReplyCheck::Kind;
  if (c.kind == Kind::kAny) return true;
  if (i >= r.size()) {
    *error = Unexpected(c, "the reply is missing");
    return false;
  }
  const std::string_view f = r.Frame(i);
  if (r.IsErrorReply(i)) {
    *error = UpstreamError(f, c);
    return false;
  }
  int64_t v = 0;
  switch (c.kind) {
    case Kind::kAny:
    case Kind::kNoError:
      return true;
    case Kind::kInteger:
      if (FrameInt(f, &v)) return true;
      *error = Unexpected(c, "expected an integer, got " + DescribeFrame(f));
      return false;
    case Kind::kLength:
    case Kind::kPresent:
      if (!FrameInt(f, &v)) {
        *error = Unexpected(c, "expected an integer, got " + DescribeFrame(f));
        return false;
      }
      if (v == 0) {
        *error = Unexpected(c, "the key is missing");
        return false;
      }
      if (c.kind == Kind::kLength && static_cast<uint64_t>(v) != c.n) {
        *error = Unexpected(
            c, "the key holds " + std::to_string(v) + " bytes, expected " + std::to_string(c.n));
        return false;
      }
      return true;
    case Kind::kBits: {
      const std::vector<int64_t>* values = r.Ints(i);
      if (values == nullptr || values->size() != c.n) {
        *error = Unexpected(c, "expected an array of " + std::to_string(c.n) +
                                   " integers 0 or 1, got " + DescribeFrame(f) +
                                   (values == nullptr && f[0] == '*' && FrameLine(f) != "-1"
                                        ? " with elements other than integers"
                                        : ""));
        return false;
      }
      for (int64_t b : *values) {
        if (b != 0 && b != 1) {
          *error = Unexpected(c, "expected bits 0 or 1, got the integer " + std::to_string(b));
          return false;
        }
      }
      return true;
    }
    case Kind::kBulk: {
      const redisReply* reply = r.Get(i);
      if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
        *error = Unexpected(c, "expected a bulk string, got " + Described(reply, f));
        return false;
      }
      if (reply->len == 0) {
        *error = Unexpected(c, "the key is missing");
        return false;
      }
      if (reply->len != c.n) {
        *error = Unexpected(c, "the key holds " + std::to_string(reply->len) +
                                   " bytes in the range, expected " + std::to_string(c.n));
        return false;
      }
      return true;
    }
    case Kind::kCounts: {
      const redisReply* reply = r.Get(i);
      if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements != c.n) {
        *error = Unexpected(
            c, "expected an array of " + std::to_string(c.n) + ", got " + Described(reply, f));
        return false;
      }
      for (size_t l = 0; l < reply->elements; ++l) {
        const redisReply* e = reply->element[l];
        if (e->type == REDIS_REPLY_NIL) {
          // MGET answers nil for a missing key and for a key of another type alike.
          *error = Unexpected(
              c, "the count of link " + std::to_string(l) + " is missing or not a string");
          return false;
        }
        if (e->type != REDIS_REPLY_STRING || !ParseCount(Str(e), &v)) {
          *error =
              Unexpected(c, "the count of link " + std::to_string(l) + " is not an integer >= 0");
          return false;
        }
      }
      return true;
    }
    case Kind::kCount: {
      const redisReply* reply = r.Get(i);
      if (IsNil(reply)) {
        *error = Unexpected(c, "the key is missing");
        return false;
      }
      if (reply == nullptr || reply->type != REDIS_REPLY_STRING || !ParseCount(Str(reply), &v)) {
        *error = Unexpected(c, "expected an integer >= 0, got " + Described(reply, f));
        return false;
      }
      return true;
    }
  }
  return true;
}

// The RESP bytes of a simple decoded reply (integers, statuses, errors, strings, nil): what the
// client gets when a plan passes one of Redis's own replies through.
std::string Reencode(const redisReply* r, std::string_view command) {
  std::string out;
  ReplyCheck c;
  c.command.assign(command);
  if (r == nullptr) return Unexpected(c, "the reply could not be decoded");
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      protocol::AppendInteger(&out, r->integer);
      break;
    case REDIS_REPLY_STATUS:
      protocol::AppendSimple(&out, Str(r));
      break;
    case REDIS_REPLY_ERROR:
      out = "-" + std::string(Str(r)) + "\r\n";
      break;
    case REDIS_REPLY_STRING:
      protocol::AppendBulk(&out, Str(r));
      break;
    case REDIS_REPLY_NIL:
      protocol::AppendNullBulk(&out);
      break;
    default:
      out =
          Unexpected(c, "expected a simple reply, got an array of " + std::to_string(r->elements));
  }
  return out;
}

std::string Integer(int64_t v) {
  std::string out;
  protocol::AppendInteger(&out, v);
  return out;
}

std::string U64(uint64_t v) { return std::to_string(v); }

// Doubles are stored as the hex of their bits, so a dump header rebuilt from the metadata has
// exactly the bytes it was loaded with.
std::string DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, bits);
  return buf;
}
bool ParseDoubleBits(std::string_view s, double* out) {
  if (s.size() != 16) return false;
  uint64_t bits = 0;
  for (char c : s) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    bits = (bits << 4) | static_cast<uint64_t>(v);
  }
  std::memcpy(out, &bits, sizeof(bits));
  return true;
}
bool ParseU64(std::string_view s, uint64_t* out) {
  int64_t v = 0;
  if (!protocol::StringToInt64(s, &v) || v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

std::string EncodeLink(const LinkParams& l) {
  return U64(l.bytes) + " " + U64(l.bits) + " " + U64(l.capacity) + " " + std::to_string(l.k) +
         " " + std::to_string(l.n2) + " " + DoubleBits(l.error) + " " + DoubleBits(l.bpe);
}
// A link field, with what the bit maths needs of it: bits = bytes * 8 (positions stay in the
// key), 0 < k < 1000, an error rate in (0, 1), n2 = 0 (64-bit hashes; older dumps are refused
// at load).
bool DecodeLink(std::string_view s, LinkParams* l) {
  std::string_view parts[7];
  size_t n = 0;
  while (n < 7) {
    size_t sp = s.find(' ');
    parts[n++] = s.substr(0, sp);
    if (sp == std::string_view::npos) {
      s = {};
      break;
    }
    s.remove_prefix(sp + 1);
  }
  uint64_t k = 0, n2 = 0;
  if (n != 7 || !s.empty() || !ParseU64(parts[0], &l->bytes) || !ParseU64(parts[1], &l->bits) ||
      !ParseU64(parts[2], &l->capacity) || !ParseU64(parts[3], &k) || !ParseU64(parts[4], &n2) ||
      !ParseDoubleBits(parts[5], &l->error) || !ParseDoubleBits(parts[6], &l->bpe)) {
    return false;
  }
  if (l->bytes == 0 || l->bytes > (uint64_t{1} << 59) || l->bits != l->bytes * 8 || k == 0 ||
      k >= 1000 || n2 != 0 || !(l->error > 0 && l->error < 1) || !std::isfinite(l->bpe)) {
    return false;
  }
  l->k = static_cast<uint32_t>(k);
  l->n2 = 0;
  return true;
}

std::string NewId() {
  static std::mt19937_64 rng{std::random_device{}()};
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, rng());
  return buf;
}

// The largest shard a filter's metadata may name: Redis strings stop at 512 MB.
constexpr uint64_t kMaxShardBytes = 512ULL * 1024 * 1024;
// The most shards a link may have (2^24: 1 PB in shards of 64 MiB, 1 GB in the smallest, 64
// bytes); metadata naming more is damaged (listing its keys would exhaust memory).
constexpr uint64_t kMaxShardsPerLink = uint64_t{1} << 24;

enum class MetaStatus {
  kFilter,     // *out is the filter's metadata
  kNotFilter,  // no marker: a hash that is no filter
  kDamaged,    // the marker, but fields missing or that do not parse (*problem says which)
};

// Metadata from a hash's fields (HGETALL, or HMGET of the fixed list below).
//
// `strict` (every BF plan: HGETALL): every field a plan uses must be there and parse, and the
// link fields must be l0, l1, ... without a gap. Any other hash with the marker is damaged, and
// answering from it could make up a reply (a link skipped is items not found; a capacity
// missing is a made-up BF.INFO).
//
// Not strict (key-level plans, which only need the data keys' names): what parses is used,
// and the chain ends at the first link that is missing or does not parse, so a damaged filter
// still loses the data keys that can be named.
MetaStatus MetaFromFields(std::string_view name,
                          const std::vector<std::pair<std::string_view, std::string_view>>& f,
                          bool strict, std::shared_ptr<FilterMeta>* out, std::string* problem) {
  auto meta = std::make_shared<FilterMeta>();
  bool marker = false;
  bool have_id = false, have_error = false, have_capacity = false, have_expansion = false,
       have_options = false, have_shard = false;
  std::string bad;  // the first field that does not parse or is out of range
  auto fail = [&bad](std::string_view field) {
    if (bad.empty()) bad.assign(field);
  };
  std::vector<std::pair<uint64_t, std::string_view>> link_fields;
  for (const auto& [field, value] : f) {
    uint64_t v = 0;
    if (field == kMarkerField) {
      marker = value == kMarkerValue;
    } else if (field == "id") {
      have_id = true;
      meta->id.assign(value);
      bool ok = !value.empty() && value.size() <= 64;
      for (char c : value) ok = ok && std::isalnum(static_cast<unsigned char>(c));
      if (!ok) fail(field);
    } else if (field == "error") {
      have_error = true;
      if (!ParseDoubleBits(value, &meta->error) || !std::isfinite(meta->error) ||
          !(meta->error > 0)) {
        fail(field);
      }
    } else if (field == "capacity") {
      have_capacity = true;
      if (!ParseU64(value, &meta->capacity)) fail(field);
    } else if (field == "expansion") {
      have_expansion = true;
      if (!ParseU64(value, &v) || v > UINT32_MAX) fail(field);
      meta->expansion = static_cast<uint32_t>(v);
    } else if (field == "options") {
      have_options = true;
      if (!ParseU64(value, &v) || v > UINT32_MAX || (v & kOptHash64) == 0) fail(field);
      meta->options = static_cast<uint32_t>(v);
    } else if (field == "shard") {
      have_shard = true;
      if (!ParseU64(value, &meta->shard_bytes) || meta->shard_bytes == 0 ||
          meta->shard_bytes > kMaxShardBytes) {
        fail(field);
      }
    } else if (field.size() > 1 && field[0] == 'l' && ParseU64(field.substr(1), &v)) {
      link_fields.emplace_back(v, value);
    }
  }
  if (!marker) return MetaStatus::kNotFilter;
  std::sort(link_fields.begin(), link_fields.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < link_fields.size(); ++i) {
    LinkParams l;
    if (link_fields[i].first != i) {
      // A gap: l<i> missing while a later link exists (links are only ever added in order).
      if (!strict) break;
      *problem = "the filter's metadata has no field 'l" + std::to_string(i) + "' but has 'l" +
                 std::to_string(link_fields[i].first) + "'";
      return MetaStatus::kDamaged;
    }
    // A link of more shards than any real one would have (the plans and DEL list them all).
    if (!DecodeLink(link_fields[i].second, &l) ||
        (meta->shard_bytes > 0 && l.bytes / meta->shard_bytes >= kMaxShardsPerLink)) {
      if (!strict) break;
      fail("l" + std::to_string(i));
      break;
    }
    meta->links.push_back(l);
  }
  if (strict && !meta->nonscaling()) {
    // A scaling chain whose next links would take no items would add links for ever.
    if (meta->capacity == 0) fail("capacity");
    if (meta->expansion == 0) fail("expansion");
  }
  if (strict) {
    const char* missing = !have_id              ? "id"
                          : !have_shard         ? "shard"
                          : !have_options       ? "options"
                          : !have_error         ? "error"
                          : !have_capacity      ? "capacity"
                          : !have_expansion     ? "expansion"
                          : link_fields.empty() ? "l0"
                                                : nullptr;
    if (missing != nullptr) {
      *problem = std::string("the filter's metadata has no field '") + missing + "'";
      return MetaStatus::kDamaged;
    }
    if (!bad.empty()) {
      *problem = "the filter's metadata field '" + bad + "' is not valid";
      return MetaStatus::kDamaged;
    }
  } else if (meta->id.empty() || meta->shard_bytes == 0 || meta->links.empty() || bad == "id" ||
             bad == "shard") {
    return MetaStatus::kNotFilter;
  }
  meta->counts.assign(meta->links.size(), 0);
  meta->prefix = DataKeyPrefix(name);
  *out = std::move(meta);
  return MetaStatus::kFilter;
}

// HMGET of the fields a key-level plan needs to find a filter's data keys.
std::vector<std::string> MetaFieldList() {
  std::vector<std::string> f = {std::string(kMarkerField), "id", "shard", "options"};
  for (size_t i = 0; i < kMaxLinkFields; ++i) f.push_back("l" + std::to_string(i));
  return f;
}
void AddMetaHmget(Requests* req, std::string_view key) {
  std::vector<std::string> args = {"HMGET", std::string(key)};
  for (std::string& f : MetaFieldList()) args.push_back(std::move(f));
  req->Add(args);
}
std::shared_ptr<FilterMeta> MetaFromHmget(std::string_view name, const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return nullptr;
  std::vector<std::string> names = MetaFieldList();
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  for (size_t i = 0; i < r->elements && i < names.size(); ++i) {
    if (r->element[i]->type == REDIS_REPLY_STRING)
      fields.emplace_back(names[i], Str(r->element[i]));
  }
  // The chain's parameters are not read: the data keys need only id, shard and links.
  std::shared_ptr<FilterMeta> meta;
  std::string problem;
  if (MetaFromFields(name, fields, /*strict=*/false, &meta, &problem) != MetaStatus::kFilter) {
    return nullptr;
  }
  return meta;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// StepReplies

void StepReplies::Add(std::string_view frame) {
  bytes_.append(frame);
  ends_.push_back(bytes_.size());
}

std::string_view StepReplies::Frame(size_t i) const {
  const size_t k = first_ + i;
  const size_t begin = k == 0 ? 0 : ends_[k - 1];
  return std::string_view(bytes_).substr(begin, ends_[k] - begin);
}

const redisReply* StepReplies::Get(size_t i) {
  if (i >= size()) return nullptr;
  const size_t k = first_ + i;
  if (decoded_.size() < ends_.size()) decoded_.resize(ends_.size());
  if (!decoded_[k]) decoded_[k] = decoder_->Decode(Frame(i));
  return decoded_[k].get();
}

const std::vector<int64_t>* StepReplies::Ints(size_t i) {
  if (i >= size()) return nullptr;
  const size_t k = first_ + i;
  if (ints_.size() < ends_.size()) ints_.resize(ends_.size());
  if (ints_[k]) return ints_[k].get();
  // "*<n>\r\n" then n times ":<v>\r\n" (the framer already checked the framing).
  std::string_view f = Frame(i);
  if (f.empty() || f[0] != '*') return nullptr;
  size_t eol = f.find('\r');
  int64_t n = 0;
  if (eol == std::string_view::npos || !protocol::StringToInt64(f.substr(1, eol - 1), &n)) {
    return nullptr;
  }
  auto values = std::make_unique<std::vector<int64_t>>();
  values->reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  size_t pos = eol + 2;
  for (int64_t e = 0; e < n; ++e) {
    if (pos >= f.size() || f[pos] != ':') return nullptr;
    eol = f.find('\r', pos);
    int64_t v = 0;
    if (eol == std::string_view::npos ||
        !protocol::StringToInt64(f.substr(pos + 1, eol - pos - 1), &v)) {
      return nullptr;
    }
    values->push_back(v);
    pos = eol + 2;
  }
  ints_[k] = std::move(values);
  return ints_[k].get();
}

// ---------------------------------------------------------------------------------------------
// FilterMeta and FilterCache

uint64_t FilterMeta::ShardCount(size_t link) const {
  const uint64_t bytes = links[link].bytes;
  return bytes == 0 ? 1 : (bytes + shard_bytes - 1) / shard_bytes;
}
std::string FilterMeta::BitsKey(size_t link, size_t shard) const {
  return filters::BitsKey(prefix, id, link, shard);
}
std::string FilterMeta::CountKey(size_t link) const { return filters::CountKey(prefix, id, link); }
std::vector<std::string> FilterMeta::DataKeys() const {
  std::vector<std::string> keys;
  for (size_t l = 0; l < links.size(); ++l) {
    for (uint64_t s = 0; s < ShardCount(l); ++s) keys.push_back(BitsKey(l, s));
    keys.push_back(CountKey(l));
  }
  return keys;
}

std::shared_ptr<FilterMeta> FilterCache::Find(std::string_view name) const {
  auto it = map_.find(std::string(name));
  return it == map_.end() ? nullptr : it->second;
}
void FilterCache::Put(std::string_view name, std::shared_ptr<FilterMeta> meta) {
  // Bounded: a proxy serving many filters keeps the recent ones. Clearing is cheap and safe,
  // since every entry is validated on use anyway.
  if (map_.size() >= 100000) map_.clear();
  map_[std::string(name)] = std::move(meta);
}
void FilterCache::Erase(std::string_view name) { map_.erase(std::string(name)); }

namespace {

// ---------------------------------------------------------------------------------------------
// BF plans.
//
// Every round on a known filter starts with a validation reply, HMGET name bloomproxy id l<n>:
// the name must still be a filter with the same id, and no link beyond the ones known may
// exist. Otherwise the cached metadata is dropped and the command starts over from the
// metadata (writes made in the stale round went to keys of the old id, which are removed).
//
// Every other reply of a step is checked against what its request must answer (ReplyCheck)
// before any is used: a data key missing, of another type or overwritten, a count that is no
// integer, a reply of the wrong type or length, or an error in the middle of the pipeline ends
// the command with an error reply, never with an answer made of it.

enum class KeyState {
  kMissing,    // no such key
  kOtherType,  // a key that is not a filter
  kFilter,     // the filter as cached
  kNewLink,    // the same filter, with a link the cache does not know yet
  kReplaced,   // a filter recreated under the same name (another id)
  kError,      // the reply makes no sense, or is an error: the command ends with it
};

// The size of shard `shard` of link `link`: every shard is created at this size, and never
// changes size afterwards.
uint64_t ShardSize(const FilterMeta& meta, size_t link, uint64_t shard) {
  return std::min(meta.shard_bytes, meta.links[link].bytes - shard * meta.shard_bytes);
}

// A ReplyCheck that only names a command, for errors found in the metadata.
ReplyCheck Named(std::string_view command) {
  ReplyCheck c;
  c.command.assign(command);
  return c;
}

class BfPlan : public Plan {
 public:
  BfPlan(const BfRequest& request, FilterCache* cache, const BfConfig* config,
         std::string deferred_error, std::vector<BfMember> members = {})
      : req_(request),
        name_(request.key),
        deferred_error_(std::move(deferred_error)),
        cache_(cache),
        config_(config),
        members_(std::move(members)) {
    if (members_.empty()) {
      const bool multi = request.command == BfCommand::kMAdd ||
                         request.command == BfCommand::kInsert ||
                         request.command == BfCommand::kMExists;
      members_.push_back({0, request.items.size(), multi});
    }
    // The request's views point into the client's input buffer, which changes while the plan
    // runs: keep copies.
    items_.reserve(request.items.size());
    for (std::string_view item : request.items) items_.emplace_back(item);
    data_.assign(request.data);
    req_.items.clear();
    req_.data = {};
    req_.key = name_;
  }

  void Start(PlanStep* step) override {
    if (!deferred_error_.empty()) return Fetch(step);
    meta_ = cache_->Find(name_);
    const bool creating = req_.command == BfCommand::kReserve ||
                          (req_.command == BfCommand::kLoadChunk && req_.iterator == 1);
    if (!meta_ || creating) return Fetch(step);
    Main(step);
  }

  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    // Replies of trailing requests (cleanup, counts) sent with the last step come first.
    r.Skip(skip_);
    skip_ = 0;
    switch (phase_) {
      case Phase::kFetch:
        return OnFetch(r, step);
      case Phase::kCounts:
        return OnCounts(r, step);
      case Phase::kCreate:
        return OnCreate(r, step);
      case Phase::kCreateLink:
        return OnCreateLink(r, step);
      case Phase::kMain:
        return OnMain(r, step);
    }
  }

 private:
  enum class Phase { kFetch, kCounts, kCreate, kCreateLink, kMain };
  enum class AddStage { kCheck, kSet };

  bool Creates() const {
    switch (req_.command) {
      case BfCommand::kReserve:
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
        return true;
      case BfCommand::kInsert:
        return !req_.nocreate;
      case BfCommand::kLoadChunk:
        return req_.iterator == 1;
      default:
        return false;
    }
  }
  bool NeedsCounts() const {
    switch (req_.command) {
      case BfCommand::kExists:
      case BfCommand::kMExists:
      case BfCommand::kLoadChunk:
        return false;
      case BfCommand::kScanDump:
        return req_.iterator == 0;
      default:
        return true;
    }
  }
  bool Adding() const {
    return req_.command == BfCommand::kAdd || req_.command == BfCommand::kMAdd ||
           req_.command == BfCommand::kInsert;
  }

  // Every step starts with the trailing requests of the previous one; their replies are
  // skipped.
  Requests& BeginStep(PlanStep* step) {
    trailing_.MoveTo(step);
    skip_ = step->replies;
    checks_.clear();
    return next_requests_;
  }
  void EndStep(PlanStep* step) { next_requests_.MoveTo(step, &checks_); }

  void Finish(PlanStep* step, std::string reply) {
    step->done = true;
    step->reply = std::move(reply);
    trailing_.MoveTo(step);
  }

  // Every reply of the step as its request must answer it; false and *error (the reply for
  // the client) at the first that is not.
  bool CheckReplies(StepReplies& r, std::string* error) const {
    for (size_t i = 0; i < checks_.size(); ++i) {
      if (!CheckReply(r, i, checks_[i], error)) return false;
    }
    return true;
  }

  // The metadata is read again from the name (it changed, or the cache was stale).
  void Restart(PlanStep* step) {
    cache_->Erase(name_);
    meta_ = nullptr;
    if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
    Fetch(step);
  }

  // The reply for a key that is missing or of another type; false when the command creates
  // the filter instead.
  bool ReplyForAbsent(KeyState state, PlanStep* step) {
    if (req_.command == BfCommand::kExists || req_.command == BfCommand::kMExists) {
      // BF.EXISTS and BF.MEXISTS answer 0 for a missing key and for another type.
      results_.assign(items_.size(), kRes0);
      FinishMembers(step);
      return true;
    }
    if (state == KeyState::kOtherType) {
      Finish(step, std::string(kWrongType));
      return true;
    }
    if (req_.command == BfCommand::kCard) {
      Finish(step, Integer(0));
      return true;
    }
    if (!Creates()) {
      Finish(step, std::string(kNotFound));
      return true;
    }
    return false;
  }

  // --- metadata ---------------------------------------------------------------------------

  void Fetch(PlanStep* step) {
    phase_ = Phase::kFetch;
    Requests& req = BeginStep(step);
    req.Add({"TYPE", name_});
    req.Add({"HGETALL", name_});
    EndStep(step);
  }

  // What the name holds, from TYPE and HGETALL. A hash with the filter marker whose fields do
  // not parse is damaged: kError, not "another type" (BF.EXISTS would answer 0 for it).
  KeyState Classify(StepReplies& r, std::shared_ptr<FilterMeta>* meta, std::string* error) {
    if (r.size() < checks_.size()) {
      *error = Unexpected(checks_[r.size()], "the reply is missing");
      return KeyState::kError;
    }
    if (r.IsErrorReply(0)) {
      *error = UpstreamError(r.Frame(0), checks_[0]);
      return KeyState::kError;
    }
    const redisReply* type = r.Get(0);
    if (type == nullptr || (type->type != REDIS_REPLY_STATUS && type->type != REDIS_REPLY_STRING)) {
      *error = Unexpected(checks_[0], "expected a type name, got " + Described(type, r.Frame(0)));
      return KeyState::kError;
    }
    const std::string_view t = Str(type);
    if (t == "none") return KeyState::kMissing;
    if (t != "hash") return KeyState::kOtherType;
    if (r.IsErrorReply(1)) {
      *error = UpstreamError(r.Frame(1), checks_[1]);
      return KeyState::kError;
    }
    const redisReply* hash = r.Get(1);
    if (hash == nullptr || hash->type != REDIS_REPLY_ARRAY || hash->elements % 2 != 0) {
      *error = Unexpected(
          checks_[1], "expected an array of field-value pairs, got " + Described(hash, r.Frame(1)));
      return KeyState::kError;
    }
    std::vector<std::pair<std::string_view, std::string_view>> fields;
    fields.reserve(hash->elements / 2);
    for (size_t i = 0; i < hash->elements; i += 2) {
      if (hash->element[i]->type != REDIS_REPLY_STRING ||
          hash->element[i + 1]->type != REDIS_REPLY_STRING) {
        *error = Unexpected(checks_[1], "expected fields and values as bulk strings");
        return KeyState::kError;
      }
      fields.emplace_back(Str(hash->element[i]), Str(hash->element[i + 1]));
    }
    std::string problem;
    switch (MetaFromFields(name_, fields, /*strict=*/true, meta, &problem)) {
      case MetaStatus::kFilter:
        return KeyState::kFilter;
      case MetaStatus::kNotFilter:
        return KeyState::kOtherType;
      case MetaStatus::kDamaged:
        break;
    }
    *error = Unexpected(checks_[1], problem);
    return KeyState::kError;
  }

  void OnFetch(StepReplies& r, PlanStep* step) {
    std::shared_ptr<FilterMeta> meta;
    std::string error;
    const KeyState state = Classify(r, &meta, &error);
    if (state != KeyState::kFilter) {
      cache_->Erase(name_);
      meta_ = nullptr;
      if (state == KeyState::kError) return Finish(step, error);
      if (ReplyForAbsent(state, step)) return;
      if (req_.command == BfCommand::kLoadChunk) {
        // The header is looked at once the key is known to be free, as RedisBloom does.
        if (!DecodeDumpHeader(data_, &header_)) return Finish(step, std::string(kBadData));
        // Dumps of very old RedisBloom filters (32-bit hash, power-of-two modulus) would need
        // other bit maths.
        bool old_format = (header_.options & kOptHash64) == 0;
        for (const DumpLink& l : header_.links) old_format = old_format || l.params.n2 != 0;
        if (old_format) return Finish(step, std::string(kOldDump));
        // A scaling chain whose new links would take no items (RedisBloom never writes one:
        // BF.RESERVE refuses a capacity or expansion of 0) would add links for ever.
        if ((header_.options & kOptNoScaling) == 0 &&
            (header_.expansion == 0 || header_.links[0].params.capacity == 0)) {
          return Finish(step, std::string(kBadData));
        }
      }
      return Create(step);
    }
    if (req_.command == BfCommand::kReserve) return Finish(step, std::string(kItemExists));
    if (req_.command == BfCommand::kLoadChunk && req_.iterator == 1) {
      return Finish(step, std::string(kBadData));
    }
    meta_ = meta;
    cache_->Put(name_, meta_);
    if (!deferred_error_.empty()) return Finish(step, deferred_error_);
    if (NeedsCounts()) return FetchCounts(step);
    Main(step);
  }

  void FetchCounts(PlanStep* step) {
    phase_ = Phase::kCounts;
    Requests& req = BeginStep(step);
    AddValidation(&req);
    AddCounts(&req);
    EndStep(step);
  }

  // MGET of the count keys: each must hold an integer >= 0 (nil is a count key missing or of
  // another type: the filter is damaged, and 0 would be a made-up count).
  void AddCounts(Requests* req) const {
    std::vector<std::string> args = {"MGET"};
    for (size_t l = 0; l < meta_->links.size(); ++l) args.push_back(meta_->CountKey(l));
    req->Add(args);
    ReplyCheck& c = req->Last();
    c.kind = ReplyCheck::Kind::kCounts;
    c.role = ReplyCheck::Role::kCounts;
    c.n = meta_->links.size();
  }

  // The MGET reply, already checked (kCounts).
  void ApplyCounts(const redisReply* r) {
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      int64_t v = 0;
      ParseCount(Str(r->element[l]), &v);
      meta_->counts[l] = v;
    }
    const size_t last = meta_->links.size() - 1;
    link_full_ = meta_->counts[last] >= static_cast<int64_t>(meta_->links[last].capacity);
  }

  void OnCounts(StepReplies& r, PlanStep* step) {
    std::string error;
    const KeyState state = Validate(r, &error);
    if (state == KeyState::kError) return Finish(step, error);
    if (state != KeyState::kFilter) return Restart(step);
    if (!CheckReplies(r, &error)) return Finish(step, error);
    ApplyCounts(r.Get(kValidationReplies));
    Main(step);
  }

  // Validation at the head of every round on a known filter: the name must still be this
  // filter (same id), and no link beyond the known ones may exist yet. One HMGET says it all:
  // WRONGTYPE for another type, nils for a missing key (or a hash that is no filter: the
  // reload that follows tells them apart with TYPE).
  static constexpr size_t kValidationReplies = 1;
  void AddValidation(Requests* req) {
    req->Add({"HMGET", name_, kMarkerField, "id", "l" + std::to_string(meta_->links.size())});
  }
  KeyState Validate(StepReplies& r, std::string* error) {
    const ReplyCheck& c = checks_[0];
    if (r.empty()) {
      *error = Unexpected(c, "the reply is missing");
      return KeyState::kError;
    }
    const std::string_view f = r.Frame(0);
    if (r.IsErrorReply(0)) {
      if (f.substr(0, 10) == "-WRONGTYPE") return KeyState::kOtherType;
      *error = UpstreamError(f, c);
      return KeyState::kError;
    }
    const redisReply* hmget = r.Get(0);
    if (hmget == nullptr || hmget->type != REDIS_REPLY_ARRAY || hmget->elements != 3) {
      *error = Unexpected(c, "expected an array of 3, got " + Described(hmget, f));
      return KeyState::kError;
    }
    for (size_t i = 0; i < 3; ++i) {
      const int t = hmget->element[i]->type;
      if (t != REDIS_REPLY_NIL && t != REDIS_REPLY_STRING) {
        *error = Unexpected(c, "expected bulk strings or nils, got other values");
        return KeyState::kError;
      }
    }
    if (IsNil(hmget->element[0])) return KeyState::kMissing;
    if (Str(hmget->element[0]) != kMarkerValue) return KeyState::kOtherType;
    if (Str(hmget->element[1]) != meta_->id) return KeyState::kReplaced;
    if (!IsNil(hmget->element[2])) return KeyState::kNewLink;
    return KeyState::kFilter;
  }

  // --- creation ---------------------------------------------------------------------------

  // A new filter: its bits and counts first, then its metadata, published with RENAMENX so
  // that exactly one creator wins, whatever the name holds.
  void Create(PlanStep* step) {
    phase_ = Phase::kCreate;
    auto meta = std::make_shared<FilterMeta>();
    meta->id = NewId();
    meta->prefix = DataKeyPrefix(name_);
    meta->shard_bytes = config_->max_shard_bytes;
    if (req_.command == BfCommand::kLoadChunk) {
      meta->options = header_.options;
      meta->expansion = header_.expansion;
      meta->error = header_.links[0].params.error;
      meta->capacity = header_.links[0].params.capacity;
      for (const DumpLink& l : header_.links) {
        meta->links.push_back(l.params);
        meta->counts.push_back(static_cast<int64_t>(l.items));
      }
      // The chain's own error rate: the first link of a scaling chain has half of it.
      if (!meta->nonscaling()) meta->error *= 2;
    } else {
      meta->error = req_.error_rate;
      meta->capacity = req_.capacity;
      meta->expansion = req_.nonscaling ? 0 : req_.expansion;
      meta->options = req_.nonscaling ? kOptionsNonScaling : kOptionsScaling;
      meta->links.push_back(
          ChainLink(meta->error, meta->capacity, meta->expansion, req_.nonscaling, 0));
      meta->counts.push_back(0);
    }
    Requests& req = BeginStep(step);
    for (size_t l = 0; l < meta->links.size(); ++l) {
      AddLinkKeys(&req, *meta, l, meta->counts[l], /*shared=*/false);
    }
    const std::string tmp = meta->prefix + ":bf:" + meta->id + ":new";
    std::vector<std::string> hset = {"HSET",
                                     tmp,
                                     std::string(kMarkerField),
                                     std::string(kMarkerValue),
                                     "id",
                                     meta->id,
                                     "error",
                                     DoubleBits(meta->error),
                                     "capacity",
                                     U64(meta->capacity),
                                     "expansion",
                                     U64(meta->expansion),
                                     "options",
                                     U64(meta->options),
                                     "shard",
                                     U64(meta->shard_bytes)};
    for (size_t l = 0; l < meta->links.size(); ++l) {
      hset.push_back("l" + std::to_string(l));
      hset.push_back(EncodeLink(meta->links[l]));
    }
    req.Add(hset);
    req.Last().kind = ReplyCheck::Kind::kInteger;
    req.Add({"RENAMENX", tmp, name_});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    EndStep(step);
    pending_meta_ = meta;
  }

  // A link's shard keys, created at full size in one step each, and its count key.
  // SETRANGE of the last byte on a missing key makes Redis allocate exactly the string's size,
  // zeroed, without the zeros crossing the network (SETBIT and BITFIELD would grow the string
  // greedily instead). Keys of a new filter carry an id nobody else knows yet, so they are
  // written directly; a new link of a shared filter may be created by several proxies at once,
  // so its shards are built under a private name and moved in place with RENAMENX (the first
  // wins; a later one must not overwrite bits already set).
  static void AddLinkKeys(Requests* req, const FilterMeta& meta, size_t link, int64_t count,
                          bool shared) {
    const uint64_t shards = meta.ShardCount(link);
    for (uint64_t s = 0; s < shards; ++s) {
      const uint64_t len = ShardSize(meta, link, s);
      const std::string key = meta.BitsKey(link, s);
      auto describe = [&](ReplyCheck::Kind kind) {
        ReplyCheck& c = req->Last();
        c.kind = kind;
        c.role = ReplyCheck::Role::kShard;
        c.link = static_cast<uint32_t>(link);
        c.shard = s;
        c.n = len;
      };
      if (!shared) {
        req->Add({"SETRANGE", key, U64(len - 1), std::string_view("\0", 1)});
        describe(ReplyCheck::Kind::kLength);
        continue;
      }
      const std::string tmp = key + ":" + NewId();
      req->Add({"SETRANGE", tmp, U64(len - 1), std::string_view("\0", 1)});
      describe(ReplyCheck::Kind::kLength);
      req->Add({"RENAMENX", tmp, key});
      describe(ReplyCheck::Kind::kInteger);
      req->Add({"UNLINK", tmp});
      describe(ReplyCheck::Kind::kNoError);
    }
    req->Add({"SET", meta.CountKey(link), std::to_string(count), "NX"});
    ReplyCheck& c = req->Last();
    c.kind = ReplyCheck::Kind::kNoError;
    c.role = ReplyCheck::Role::kCount;
    c.link = static_cast<uint32_t>(link);
  }

  void OnCreate(StepReplies& r, PlanStep* step) {
    std::shared_ptr<FilterMeta> meta = std::move(pending_meta_);
    std::string error;
    int64_t renamed = -1;
    if (CheckReplies(r, &error)) {
      FrameInt(r.Frame(checks_.size() - 1), &renamed);
      if (renamed != 0 && renamed != 1) {
        error = Unexpected(checks_.back(),
                           "expected 0 or 1, got the integer " + std::to_string(renamed));
      }
    } else if (r.size() >= checks_.size()) {
      FrameInt(r.Frame(checks_.size() - 1), &renamed);
    }
    if (renamed != 1 || !error.empty()) {
      // Someone else holds the name, or a write failed: remove what was prepared. A filter
      // published with a write that failed is removed too (nobody used it yet: it is a round
      // trip old), so the name is as it was and the next command on it starts afresh.
      std::vector<std::string> args = {"UNLINK", meta->prefix + ":bf:" + meta->id + ":new"};
      for (std::string& k : meta->DataKeys()) args.push_back(std::move(k));
      if (renamed == 1) args.push_back(name_);
      trailing_.Add(args);
      if (!error.empty()) return Finish(step, error);
      if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
      return Fetch(step);
    }
    meta_ = meta;
    cache_->Put(name_, meta_);
    if (req_.command == BfCommand::kReserve || req_.command == BfCommand::kLoadChunk) {
      return Finish(step, "+OK\r\n");
    }
    Main(step);
  }

  // A new link when the newest one is full. Its keys come first, then the metadata field that
  // names it: HSETNX makes concurrent creators agree (a link's parameters are the same for
  // all of them). The name's TTL, if any, is given to the new keys.
  void CreateLink(PlanStep* step) {
    phase_ = Phase::kCreateLink;
    const size_t l = meta_->links.size();
    auto next = std::make_shared<FilterMeta>(*meta_);
    next->links.push_back(ChainLink(meta_->error, meta_->capacity, meta_->expansion, false, l));
    next->counts.push_back(0);
    Requests& req = BeginStep(step);
    AddLinkKeys(&req, *next, l, 0, /*shared=*/true);
    req.Add({"HSETNX", name_, "l" + std::to_string(l), EncodeLink(next->links[l])});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    req.Add({"GET", next->CountKey(l)});
    req.Last().kind = ReplyCheck::Kind::kCount;
    req.Last().role = ReplyCheck::Role::kCount;
    req.Last().link = static_cast<uint32_t>(l);
    req.Add({"PEXPIRETIME", name_});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    EndStep(step);
    pending_meta_ = next;
  }

  void OnCreateLink(StepReplies& r, PlanStep* step) {
    std::shared_ptr<FilterMeta> next = std::move(pending_meta_);
    std::string error;
    if (!CheckReplies(r, &error)) return Finish(step, error);
    meta_ = next;
    const size_t l = meta_->links.size() - 1;
    const size_t n = checks_.size();
    int64_t count = 0, expire_at = -1;
    ParseCount(Str(r.Get(n - 2)), &count);
    FrameInt(r.Frame(n - 1), &expire_at);
    meta_->counts[l] = count;
    if (expire_at > 0) {
      for (uint64_t s = 0; s < meta_->ShardCount(l); ++s) {
        trailing_.Add({"PEXPIREAT", meta_->BitsKey(l, s), std::to_string(expire_at)});
      }
      trailing_.Add({"PEXPIREAT", meta_->CountKey(l), std::to_string(expire_at)});
    }
    link_full_ = meta_->counts[l] >= static_cast<int64_t>(meta_->links[l].capacity);
    cache_->Put(name_, meta_);
    Main(step);
  }

  // --- the command itself -----------------------------------------------------------------

  void Main(PlanStep* step) {
    phase_ = Phase::kMain;
    switch (req_.command) {
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
      case BfCommand::kInsert:
        return AddRound(step);
      case BfCommand::kExists:
      case BfCommand::kMExists:
        return ExistsRound(step);
      case BfCommand::kCard:
      case BfCommand::kInfo:
        return CountsRound(step);
      case BfCommand::kScanDump:
        return req_.iterator == 0 ? CountsRound(step) : DumpRound(step);
      case BfCommand::kLoadChunk:
        return LoadRound(step);
      case BfCommand::kReserve:
        return Finish(step, std::string(kItemExists));
    }
  }

  void OnMain(StepReplies& r, PlanStep* step) {
    std::string error;
    const KeyState state = Validate(r, &error);
    const bool adding = Adding();
    if (state == KeyState::kError) {
      if (adding) ReleaseAfterError(r);
      return Finish(step, error);
    }
    if (state == KeyState::kNewLink && adding && add_stage_ == AddStage::kSet) {
      // Another proxy added a link: this round's bits went into a link that is now older,
      // which keeps the items findable. Count them there and reload before the next round.
      reload_ = true;
    } else if (state != KeyState::kFilter) {
      if (adding && add_stage_ == AddStage::kCheck && state == KeyState::kNewLink) {
        Release(reserve_);  // the same filter: its count must not keep this round's places
      }
      if (round_wrote_ && state != KeyState::kNewLink) {
        // The name was deleted or recreated: the bits this round set belong to no filter.
        std::vector<std::string> args = {"UNLINK"};
        for (uint64_t shard : set_ops_.shards) {
          args.push_back(meta_->BitsKey(meta_->links.size() - 1, shard));
        }
        trailing_.Add(args);
      }
      round_wrote_ = false;
      return Restart(step);
    }
    if (!CheckReplies(r, &error)) {
      if (adding) ReleaseAfterError(r);
      return Finish(step, error);
    }
    switch (req_.command) {
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
      case BfCommand::kInsert:
        return OnAddRound(r, step);
      case BfCommand::kExists:
      case BfCommand::kMExists:
        return OnExistsRound(r, step);
      case BfCommand::kScanDump:
        if (req_.iterator != 0) return OnDumpRound(r, step);
        return OnCountsRound(r, step);
      case BfCommand::kCard:
      case BfCommand::kInfo:
        return OnCountsRound(r, step);
      case BfCommand::kLoadChunk:
        return Finish(step, "+OK\r\n");
      case BfCommand::kReserve:
        return Finish(step, std::string(kItemExists));
    }
  }

  // An add round that ends with an error gives back the places it reserved. A count key that
  // was missing (STRLEN 0, and INCRBY answered just this round's reservation) was created by
  // the INCRBY: it is removed again, so the filter stays visibly damaged instead of going on
  // with a count that restarted from nothing.
  void ReleaseAfterError(StepReplies& r) {
    if (add_stage_ == AddStage::kSet) {
      Release(placed_);
      return;
    }
    int64_t after = 0;
    if (incr_at_ >= r.size() || !FrameInt(r.Frame(incr_at_), &after)) return;  // nothing reserved
    if (after == reserve_ && count_len_at_ < r.size() && r.Frame(count_len_at_) == ":0\r\n") {
      trailing_.Add({"UNLINK", meta_->CountKey(meta_->links.size() - 1)});
      return;
    }
    Release(reserve_);
  }

  // Bit offsets of item `item` in link `link`: appends (shard, offset in the shard).
  void ItemOffsets(size_t item, size_t link, std::vector<std::pair<uint64_t, uint64_t>>* out) {
    if (hashes_.size() != items_.size()) {
      hashes_.resize(items_.size());
      hashed_.assign(items_.size(), false);
    }
    if (!hashed_[item]) {
      hashes_[item] = HashItem(items_[item]);
      hashed_[item] = true;
    }
    const LinkParams& p = meta_->links[link];
    const uint64_t shard_bits = meta_->shard_bytes * 8;
    for (uint32_t i = 0; i < p.k; ++i) {
      const uint64_t offset = RedisBitOffset(BitPosition(hashes_[item], i, p.bits));
      out->emplace_back(offset / shard_bits, offset % shard_bits);
    }
  }

  // Where each item's bits are in the replies of a set of BITFIELD commands.
  struct BitOps {
    std::vector<uint64_t> shards;   // the shard of each command
    std::vector<uint32_t> ops;      // the number of ops of each command
    uint32_t k = 0;                 // ops per item
    std::vector<uint32_t> command;  // per op, item-major: the command holding it
    std::vector<uint32_t> index;    // per op: its position in that command
    std::vector<uint64_t> offsets;  // per op: its bit offset in its shard
    size_t first = 0;               // the step's reply index of the first command
  };

  // The ops of one BITFIELD (SET u1 <off> 1 per bit) or BITFIELD_RO (GET u1 <off>) per shard
  // of `link` that `items` touch, in item order.
  void PlanBits(size_t link, const std::vector<size_t>& items, BitOps* ops) {
    std::vector<std::pair<uint64_t, uint64_t>> offs;
    ops->shards.clear();
    ops->ops.clear();
    ops->k = meta_->links[link].k;
    ops->command.clear();
    ops->index.clear();
    ops->offsets.clear();
    ops->command.reserve(items.size() * ops->k);
    ops->index.reserve(items.size() * ops->k);
    ops->offsets.reserve(items.size() * ops->k);
    for (size_t j = 0; j < items.size(); ++j) {
      offs.clear();
      ItemOffsets(items[j], link, &offs);
      for (const auto& [shard, off] : offs) {
        size_t c = 0;
        while (c < ops->shards.size() && ops->shards[c] != shard) ++c;
        if (c == ops->shards.size()) {
          ops->shards.push_back(shard);
          ops->ops.push_back(0);
        }
        ops->command.push_back(static_cast<uint32_t>(c));
        ops->index.push_back(ops->ops[c]++);
        ops->offsets.push_back(off);
      }
    }
  }

  // STRLEN of shards of `link`: each must have the size it was created with. A shard deleted
  // or overwritten would otherwise read as zeros (BITFIELD_RO of a missing key), and BITFIELD
  // would create it anew, small, answering "new" for items the filter had.
  void AddShardLengths(Requests* req, size_t link, const std::vector<uint64_t>& shards) const {
    for (uint64_t s : shards) {
      req->Add({"STRLEN", meta_->BitsKey(link, s)});
      ReplyCheck& c = req->Last();
      c.kind = ReplyCheck::Kind::kLength;
      c.role = ReplyCheck::Role::kShard;
      c.link = static_cast<uint32_t>(link);
      c.shard = s;
      c.n = ShardSize(*meta_, link, s);
    }
  }

  // The BITFIELD (set) or BITFIELD_RO commands of `ops`; each must answer an array of its
  // ops' bits.
  void AddBitfields(Requests* req, size_t link, bool set, BitOps* ops) {
    // Encoded straight to RESP, one append per op: a batch may carry thousands of ops.
    ops->first = req->count();
    std::string out;
    // "$3\r\nSET\r\n$2\r\nu1\r\n$<d>\r\n<offset>\r\n$1\r\n1\r\n"; an offset in a shard has
    // at most 10 digits (shards are under 512 MB).
    const std::string_view head = set ? "$3\r\nSET\r\n$2\r\nu1\r\n$" : "$3\r\nGET\r\n$2\r\nu1\r\n$";
    char op[64];
    std::memcpy(op, head.data(), head.size());
    for (size_t c = 0; c < ops->shards.size(); ++c) {
      out.clear();
      out.reserve(64 + ops->ops[c] * 40);
      protocol::AppendArrayHeader(&out, 2 + static_cast<int64_t>(ops->ops[c]) * (set ? 4 : 3));
      protocol::AppendBulk(&out, set ? "BITFIELD" : "BITFIELD_RO");
      protocol::AppendBulk(&out, meta_->BitsKey(link, ops->shards[c]));
      for (size_t x = 0; x < ops->offsets.size(); ++x) {
        if (ops->command[x] != c) continue;
        char digits[24];
        const auto res = std::to_chars(digits, digits + sizeof(digits), ops->offsets[x]);
        const size_t n = static_cast<size_t>(res.ptr - digits);
        char* p = op + head.size();
        if (n >= 10) *p++ = static_cast<char>('0' + n / 10);
        *p++ = static_cast<char>('0' + n % 10);
        *p++ = '\r';
        *p++ = '\n';
        std::memcpy(p, digits, n);
        p += n;
        *p++ = '\r';
        *p++ = '\n';
        if (set) {
          std::memcpy(p, "$1\r\n1\r\n", 7);
          p += 7;
        }
        out.append(op, static_cast<size_t>(p - op));
      }
      req->AddEncoded(out, set ? "BITFIELD" : "BITFIELD_RO");
      ReplyCheck& check = req->Last();
      check.kind = ReplyCheck::Kind::kBits;
      check.role = ReplyCheck::Role::kShard;
      check.link = static_cast<uint32_t>(link);
      check.shard = ops->shards[c];
      check.n = ops->ops[c];
    }
  }

  // STRLEN of the shards `items` touch in `link`, then their BITFIELD commands.
  void AddBitReads(Requests* req, size_t link, const std::vector<size_t>& items, BitOps* ops) {
    PlanBits(link, items, ops);
    AddShardLengths(req, link, ops->shards);
    AddBitfields(req, link, /*set=*/false, ops);
  }

  // True when every bit of the j-th item reads 1 (GET's value, or SET's old value). The
  // replies were checked (kBits).
  static bool AllOnes(const BitOps& ops, size_t j, StepReplies& replies) {
    for (size_t x = j * ops.k; x < (j + 1) * ops.k && x < ops.command.size(); ++x) {
      const std::vector<int64_t>* values = replies.Ints(ops.first + ops.command[x]);
      const size_t op = ops.index[x];
      if (values == nullptr || op >= values->size() || (*values)[op] != 1) return false;
    }
    return true;
  }

  // ADD / MADD / INSERT, in rounds of two steps.
  //
  // The check step reserves room in the newest link: INCRBY of its count by the number of
  // items the proxy expects to fit. The new count says how many of them really fit, whatever
  // other proxies are adding at the same time, so a link never takes more than its capacity
  // (which keeps the chain's error bound). When older links exist, the step also reads the
  // items' bits there: RedisBloom adds nothing for an item an older link has. It also checks
  // (STRLEN) that the count key and the shards the set step will write are there, at their
  // size, before anything is written to them.
  // The set step sets the bits of the items that fit, one BITFIELD per shard of the newest
  // link: the old values it returns say, item by item and in order, whether each is new,
  // atomically. The reservation left unused (items that were not new) is given back with
  // DECRBY. A full link gets a successor before the next round.
  void AddRound(PlanStep* step) {
    round_wrote_ = false;
    if (reload_) {
      reload_ = false;
      meta_ = nullptr;
      cache_->Erase(name_);
      return Fetch(step);
    }
    if (next_ >= items_.size()) return FinishMembers(step);
    const size_t last = meta_->links.size() - 1;
    const int64_t room = static_cast<int64_t>(meta_->links[last].capacity) - meta_->counts[last];
    if (room <= 0 && link_full_ && !meta_->nonscaling()) return CreateLink(step);
    const size_t remaining = items_.size() - next_;
    reserve_ = room > 0 ? std::min<int64_t>(room, static_cast<int64_t>(remaining)) : 0;
    window_.clear();
    const size_t want = reserve_ > 0 ? static_cast<size_t>(reserve_) : 1;
    for (size_t i = next_; i < items_.size() && window_.size() < want; ++i) window_.push_back(i);
    found_.assign(window_.size(), false);
    // A full non-scaling filter still answers 0 for an item it has: then every link is read.
    CheckLinks(step, room <= 0 && meta_->nonscaling() ? last + 1 : last);
  }

  void CheckLinks(PlanStep* step, size_t links) {
    add_stage_ = AddStage::kCheck;
    const size_t last = meta_->links.size() - 1;
    Requests& req = BeginStep(step);
    AddValidation(&req);
    count_len_at_ = req.count();
    req.Add({"STRLEN", meta_->CountKey(last)});
    req.Last().kind = ReplyCheck::Kind::kPresent;
    req.Last().role = ReplyCheck::Role::kCount;
    req.Last().link = static_cast<uint32_t>(last);
    if (reserve_ > 0) {
      // The shards of the newest link the set step may write.
      if (meta_->ShardCount(last) == 1) {
        AddShardLengths(&req, last, {0});
      } else {
        BitOps planned;
        PlanBits(last, window_, &planned);
        AddShardLengths(&req, last, planned.shards);
      }
    }
    incr_at_ = req.count();
    req.Add({"INCRBY", meta_->CountKey(last), std::to_string(reserve_)});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    req.Last().role = ReplyCheck::Role::kCount;
    req.Last().link = static_cast<uint32_t>(last);
    check_ops_.assign(links, {});
    for (size_t l = 0; l < links; ++l) AddBitReads(&req, l, window_, &check_ops_[l]);
    EndStep(step);
  }

  // The set step, for the window's items not found in older links.
  void SetBits(PlanStep* step) {
    add_stage_ = AddStage::kSet;
    set_items_.clear();
    for (size_t j = 0; j < window_.size(); ++j) {
      if (!found_[j]) set_items_.push_back(window_[j]);
    }
    const size_t last = meta_->links.size() - 1;
    Requests& req = BeginStep(step);
    AddValidation(&req);
    PlanBits(last, set_items_, &set_ops_);
    AddBitfields(&req, last, /*set=*/true, &set_ops_);
    round_wrote_ = true;
    EndStep(step);
  }

  // Gives back `n` reserved places of the newest link.
  void Release(int64_t n) {
    if (n <= 0) return;
    const size_t last = meta_->links.size() - 1;
    meta_->counts[last] -= n;
    trailing_.Add({"DECRBY", meta_->CountKey(last), std::to_string(n)});
  }

  // The replies were checked (CheckReplies).
  void OnAddRound(StepReplies& r, PlanStep* step) {
    const size_t last = meta_->links.size() - 1;
    const int64_t capacity = static_cast<int64_t>(meta_->links[last].capacity);
    if (add_stage_ == AddStage::kCheck) {
      int64_t after = 0;
      FrameInt(r.Frame(incr_at_), &after);
      if (after < reserve_) {
        Release(reserve_);
        return Finish(step, Unexpected(checks_[incr_at_], "the count was negative"));
      }
      meta_->counts[last] = after;
      // Of the places reserved, those below the capacity are this round's.
      int64_t granted = std::clamp<int64_t>(capacity - (after - reserve_), 0, reserve_);
      const int64_t unused_before = reserve_ - granted;
      // Items in order: one found in an older link answers 0 and takes no place; the others
      // take the granted places; the round ends at the first that has none.
      size_t take = 0;
      int64_t placed = 0;
      for (size_t j = 0; j < window_.size(); ++j) {
        for (size_t l = 0; l < check_ops_.size() && !found_[j]; ++l) {
          found_[j] = AllOnes(check_ops_[l], j, r);
        }
        if (!found_[j]) {
          if (granted == 0) break;
          --granted;
          ++placed;
        }
        take = j + 1;
      }
      window_.resize(take);
      found_.resize(take);
      Release(unused_before + granted);  // what neither overflowed nor was used
      placed_ = placed;
      link_full_ = after - reserve_ >= capacity;
      if (placed == 0) {
        for (size_t j = 0; j < take; ++j) results_.push_back(kRes0);
        next_ += take;
        if (take == 0) {
          link_full_ = true;
          if (meta_->nonscaling() && check_ops_.size() == meta_->links.size()) {
            // Full, and the next item is not there: RedisBloom stops the command with an error;
            // the command's later items are not looked at.
            results_.push_back(kResFull);
            const BfMember& m = members_[MemberOf(next_)];
            for (size_t i = next_ + 1; i < m.start + m.count; ++i) results_.push_back(kResSkipped);
            next_ = m.start + m.count;
            return AddRound(step);
          }
        }
        return AddRound(step);
      }
      return SetBits(step);
    }
    // The set step.
    int64_t added = 0;
    size_t s = 0;
    for (size_t j = 0; j < window_.size(); ++j) {
      if (found_[j]) {
        results_.push_back(kRes0);
        continue;
      }
      const bool existed = AllOnes(set_ops_, s++, r);
      results_.push_back(existed ? kRes0 : kRes1);
      added += existed ? 0 : 1;
    }
    next_ = window_.back() + 1;
    Release(placed_ - added);
    AddRound(step);
  }

  size_t MemberOf(size_t item) const {
    auto it = std::upper_bound(members_.begin(), members_.end(), item,
                               [](size_t i, const BfMember& m) { return i < m.start; });
    return static_cast<size_t>(it - members_.begin()) - 1;
  }

  // Each member's reply from the per-item results: a single item's own, or an array of the
  // member's results up to (and including) an error that ended it.
  void FinishMembers(PlanStep* step) {
    auto append = [](std::string* out, int8_t code) {
      out->append(code == kRes1   ? std::string_view(":1\r\n")
                  : code == kRes0 ? std::string_view(":0\r\n")
                                  : kFullError);
    };
    member_replies_.clear();
    member_replies_.reserve(members_.size());
    for (const BfMember& m : members_) {
      std::string out;
      if (!m.multi) {
        append(&out, m.start < results_.size() ? results_[m.start] : kResFull);
      } else {
        size_t n = 0;
        while (n < m.count && m.start + n < results_.size() &&
               results_[m.start + n] != kResSkipped) {
          ++n;
        }
        out.reserve(8 + 4 * n);
        protocol::AppendArrayHeader(&out, static_cast<int64_t>(n));
        for (size_t i = m.start; i < m.start + n; ++i) append(&out, results_[i]);
      }
      member_replies_.push_back(std::move(out));
    }
    Finish(step, members_.size() == 1 ? member_replies_[0] : std::string());
  }

  // EXISTS / MEXISTS: one BITFIELD_RO per link and shard for all the items (each shard's size
  // checked in the same pipeline).
  void ExistsRound(PlanStep* step) {
    Requests& req = BeginStep(step);
    AddValidation(&req);
    std::vector<size_t> all(items_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    check_ops_.assign(meta_->links.size(), {});
    for (size_t l = 0; l < meta_->links.size(); ++l) AddBitReads(&req, l, all, &check_ops_[l]);
    EndStep(step);
  }

  // The replies were checked (CheckReplies).
  void OnExistsRound(StepReplies& r, PlanStep* step) {
    results_.clear();
    for (size_t j = 0; j < items_.size(); ++j) {
      bool found = false;
      for (size_t l = 0; l < check_ops_.size() && !found; ++l) {
        found = AllOnes(check_ops_[l], j, r);
      }
      results_.push_back(found ? kRes1 : kRes0);
    }
    FinishMembers(step);
  }

  // CARD / INFO / SCANDUMP's header: the counts.
  void CountsRound(PlanStep* step) {
    Requests& req = BeginStep(step);
    AddValidation(&req);
    AddCounts(&req);
    EndStep(step);
  }

  // The replies were checked (CheckReplies).
  void OnCountsRound(StepReplies& r, PlanStep* step) {
    ApplyCounts(r.Get(kValidationReplies));
    int64_t total = 0;
    uint64_t capacity = 0, bytes = 0;
    bool counts_overflow = false, sizes_overflow = false;
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      counts_overflow = counts_overflow || __builtin_add_overflow(total, meta_->counts[l], &total);
      sizes_overflow = sizes_overflow ||
                       __builtin_add_overflow(capacity, meta_->links[l].capacity, &capacity) ||
                       __builtin_add_overflow(bytes, meta_->links[l].bytes, &bytes);
    }
    if (counts_overflow) {
      return Finish(
          step, Unexpected(checks_[kValidationReplies], "the counts add up to more than 2^63 - 1"));
    }
    // BF.INFO: RedisBloom's Size counts its structures (32 bytes + 64 per link) and the bits.
    const uint64_t size = 32 + 64 * meta_->links.size() + bytes;
    constexpr uint64_t kMaxInt = static_cast<uint64_t>(INT64_MAX);
    if (sizes_overflow || capacity > kMaxInt || size > kMaxInt || size < bytes) {
      return Finish(step, Unexpected(Named("HGETALL"),
                                     "the filter's link capacities or sizes add up to more "
                                     "than 2^63 - 1"));
    }
    if (req_.command == BfCommand::kCard) return Finish(step, Integer(total));
    if (req_.command == BfCommand::kScanDump) {
      DumpHeader h;
      h.total_items = static_cast<uint64_t>(total);
      h.options = meta_->options;
      h.expansion = meta_->expansion;
      for (size_t l = 0; l < meta_->links.size(); ++l) {
        h.links.push_back({meta_->links[l], static_cast<uint64_t>(meta_->counts[l])});
      }
      std::string out = "*2\r\n:1\r\n";
      protocol::AppendBulk(&out, EncodeDumpHeader(h));
      return Finish(step, out);
    }
    const int64_t filters = static_cast<int64_t>(meta_->links.size());
    auto expansion = [&](std::string* o) {
      if (meta_->nonscaling()) {
        protocol::AppendNullBulk(o);
      } else {
        protocol::AppendInteger(o, meta_->expansion);
      }
    };
    std::string out;
    switch (req_.info_field) {
      case InfoField::kAll:
        out = "*10\r\n";
        protocol::AppendSimple(&out, "Capacity");
        protocol::AppendInteger(&out, static_cast<int64_t>(capacity));
        protocol::AppendSimple(&out, "Size");
        protocol::AppendInteger(&out, static_cast<int64_t>(size));
        protocol::AppendSimple(&out, "Number of filters");
        protocol::AppendInteger(&out, filters);
        protocol::AppendSimple(&out, "Number of items inserted");
        protocol::AppendInteger(&out, total);
        protocol::AppendSimple(&out, "Expansion rate");
        expansion(&out);
        break;
      case InfoField::kCapacity:
        out = "*1\r\n" + Integer(static_cast<int64_t>(capacity));
        break;
      case InfoField::kSize:
        out = "*1\r\n" + Integer(static_cast<int64_t>(size));
        break;
      case InfoField::kFilters:
        out = "*1\r\n" + Integer(filters);
        break;
      case InfoField::kItems:
        out = "*1\r\n" + Integer(total);
        break;
      case InfoField::kExpansion:
        out = "*1\r\n";
        expansion(&out);
        break;
    }
    Finish(step, out);
  }

  // SCANDUMP with an iterator: the chunk's bytes, with GETRANGE from the shards it spans.
  void DumpRound(PlanStep* step) {
    std::vector<uint64_t> sizes;
    for (const LinkParams& l : meta_->links) sizes.push_back(l.bytes);
    chunk_ = LocateDumpChunk(sizes, req_.iterator);
    Requests& req = BeginStep(step);
    AddValidation(&req);
    if (!chunk_.end) {
      const uint64_t sb = meta_->shard_bytes;
      for (uint64_t s = chunk_.offset / sb; s * sb < chunk_.offset + chunk_.length; ++s) {
        const uint64_t from = std::max(chunk_.offset, s * sb) - s * sb;
        const uint64_t to = std::min(chunk_.offset + chunk_.length, (s + 1) * sb) - 1 - s * sb;
        req.Add({"GETRANGE", meta_->BitsKey(chunk_.link, s), U64(from), U64(to)});
        // Shards have their full size: fewer bytes are a shard missing or overwritten.
        ReplyCheck& c = req.Last();
        c.kind = ReplyCheck::Kind::kBulk;
        c.role = ReplyCheck::Role::kShard;
        c.link = static_cast<uint32_t>(chunk_.link);
        c.shard = s;
        c.n = to - from + 1;
      }
    }
    EndStep(step);
  }

  // The replies were checked (CheckReplies).
  void OnDumpRound(StepReplies& r, PlanStep* step) {
    if (chunk_.end) return Finish(step, "*2\r\n:0\r\n$0\r\n\r\n");
    std::string data;
    data.reserve(chunk_.length);
    for (size_t i = kValidationReplies; i < checks_.size(); ++i) data.append(Str(r.Get(i)));
    std::string out = "*2\r\n";
    protocol::AppendInteger(&out, req_.iterator + static_cast<int64_t>(chunk_.length));
    protocol::AppendBulk(&out, data);
    Finish(step, out);
  }

  // LOADCHUNK of data: SETRANGE into the shards the chunk spans (each shard's size checked
  // before and after).
  void LoadRound(PlanStep* step) {
    // RedisBloom's SBChain_LoadEncodedChunk: the chunk starts at iterator - length - 1.
    const int64_t len = static_cast<int64_t>(data_.size());
    if (req_.iterator <= 0 || req_.iterator < len) return Finish(step, std::string(kBadData));
    uint64_t pos = static_cast<uint64_t>(req_.iterator - len - 1);
    size_t link = 0;
    while (link < meta_->links.size() && pos >= meta_->links[link].bytes) {
      pos -= meta_->links[link].bytes;
      ++link;
    }
    if (req_.iterator - len - 1 < 0 || link == meta_->links.size()) {
      return Finish(step, std::string(kNoLink));
    }
    const uint64_t offset = pos;
    if (data_.size() > meta_->links[link].bytes - offset) {
      return Finish(step, std::string(kTooBig));
    }
    Requests& req = BeginStep(step);
    AddValidation(&req);
    const uint64_t sb = meta_->shard_bytes;
    const uint64_t end = offset + data_.size();
    for (uint64_t s = offset / sb; s * sb < end; ++s) {
      const uint64_t from = std::max(offset, s * sb);
      const uint64_t to = std::min(end, (s + 1) * sb);
      AddShardLengths(&req, link, {s});
      req.Add({"SETRANGE", meta_->BitsKey(link, s), U64(from - s * sb),
               std::string_view(data_).substr(from - offset, to - from)});
      ReplyCheck& c = req.Last();
      c.kind = ReplyCheck::Kind::kLength;
      c.role = ReplyCheck::Role::kShard;
      c.link = static_cast<uint32_t>(link);
      c.shard = s;
      c.n = ShardSize(*meta_, link, s);
    }
    EndStep(step);
  }

  static constexpr int kMaxRestarts = 5;
  static constexpr std::string_view kBusy = "-ERR filter metadata keeps changing, try again\r\n";

  BfRequest req_;
  std::string name_;
  std::string deferred_error_;
  std::vector<std::string> items_;
  std::string data_;
  FilterCache* cache_;
  const BfConfig* config_;
  std::shared_ptr<FilterMeta> meta_;
  std::shared_ptr<FilterMeta> pending_meta_;
  DumpHeader header_;
  Phase phase_ = Phase::kFetch;
  size_t skip_ = 0;
  Requests trailing_;               // sent with the next step; replies skipped
  Requests next_requests_;          // the step being built
  std::vector<ReplyCheck> checks_;  // what each reply of the step in flight must be
  int restarts_ = 0;
  bool round_wrote_ = false;
  bool reload_ = false;
  bool link_full_ = false;   // the upstream showed the newest link full
  int64_t reserve_ = 0;      // places asked for in the newest link this round
  int64_t placed_ = 0;       // places granted and used by items to set
  size_t count_len_at_ = 0;  // check step: the reply of STRLEN of the newest count key
  size_t incr_at_ = 0;       // check step: the reply of its INCRBY

  // ADD state.
  std::vector<ItemHash> hashes_;
  std::vector<bool> hashed_;
  // Per item: 0, 1, the full error, or not processed (its command stopped at an error).
  static constexpr int8_t kRes0 = 0, kRes1 = 1, kResFull = 2, kResSkipped = -1;
  std::vector<int8_t> results_;
  std::vector<BfMember> members_;
  std::vector<std::string> member_replies_;
  size_t next_ = 0;
  std::vector<size_t> window_;
  std::vector<bool> found_;
  std::vector<size_t> set_items_;
  AddStage add_stage_ = AddStage::kSet;
  std::vector<BitOps> check_ops_;
  BitOps set_ops_;
  ChunkPos chunk_;
};

// ---------------------------------------------------------------------------------------------
// Key-level plans.

// TYPE name: "MBbloom--" for a filter, as RedisBloom's module type is named.
class TypePlan : public Plan {
 public:
  explicit TypePlan(std::string key) : key_(std::move(key)) {}
  void Start(PlanStep* step) override {
    Requests req;
    req.Add({"TYPE", key_});
    req.Add({"HGET", key_, kMarkerField});
    req.MoveTo(step);
  }
  void OnReplies(StepReplies& r, PlanStep* step) override {
    step->done = true;
    if (r.size() < 2) {
      step->reply = Unexpected(Named("TYPE"), "the reply is missing");
    } else if (Str(r.Get(0)) == "hash" && Str(r.Get(1)) == kMarkerValue) {
      step->reply = "+MBbloom--\r\n";
    } else {
      step->reply = Reencode(r.Get(0), "TYPE");  // Redis's own answer about a key
    }
  }

 private:
  std::string key_;
};

// DEL/UNLINK, EXPIRE family, PERSIST, RENAME/RENAMENX: the command runs as the client sent it,
// inside MULTI with an HMGET of each named key's filter fields, so the proxy learns atomically
// which keys were filters; then the filters' data keys follow (deleted, given the same expiry,
// or renamed), before the client's next command.
class KeyPlan : public Plan {
 public:
  enum class Kind { kDelete, kExpire, kPersist, kRename };

  KeyPlan(Kind kind, const std::vector<std::string_view>& args, FilterCache* cache)
      : kind_(kind), cache_(cache) {
    for (std::string_view a : args) args_.emplace_back(a);
    if (kind_ == Kind::kDelete) {
      keys_.assign(args_.begin() + 1, args_.end());
    } else if (kind_ == Kind::kRename) {
      keys_ = {args_[1], args_[2]};
    } else {
      keys_ = {args_[1]};
    }
  }

  void Start(PlanStep* step) override {
    Requests req;
    req.Add({"MULTI"});
    for (const std::string& k : keys_) AddMetaHmget(&req, k);
    req.Add(args_);
    if (kind_ == Kind::kExpire || kind_ == Kind::kPersist) req.Add({"PEXPIRETIME", keys_[0]});
    req.Add({"EXEC"});
    req.MoveTo(step);
  }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    step->done = true;
    const redisReply* exec = r.empty() ? nullptr : r.Get(r.size() - 1);
    if (exec == nullptr || exec->type != REDIS_REPLY_ARRAY) {
      // MULTI or EXEC failed (the upstream's error for the command comes first).
      for (size_t i = 0; i < r.size(); ++i) {
        if (r.IsErrorReply(i)) {
          step->reply.assign(r.Frame(i));
          return;
        }
      }
      step->reply = Reencode(exec, "EXEC");
      return;
    }
    const size_t n = keys_.size();
    if (exec->elements < n + 1) {
      step->reply =
          Unexpected(Named("EXEC"), "expected an array of at least " + std::to_string(n + 1) +
                                        ", got an array of " + std::to_string(exec->elements));
      return;
    }
    const redisReply* result = exec->element[n];
    step->reply = Reencode(result, args_[0]);
    std::vector<std::shared_ptr<FilterMeta>> metas(n);
    for (size_t i = 0; i < n; ++i) {
      metas[i] = MetaFromHmget(keys_[i], exec->element[i]);
      cache_->Erase(keys_[i]);
    }
    Requests follow;
    switch (kind_) {
      case Kind::kDelete: {
        std::vector<std::string> keys = {"UNLINK"};
        for (const auto& m : metas) {
          if (!m) continue;
          for (std::string& k : m->DataKeys()) keys.push_back(std::move(k));
        }
        if (keys.size() > 1) follow.Add(keys);
        break;
      }
      case Kind::kExpire:
      case Kind::kPersist: {
        if (!metas[0] || Int(result, 0) != 1) break;
        // PEXPIRETIME's answer: an integer, or the data keys are left as they are.
        const redisReply* expiry = exec->elements > n + 1 ? exec->element[n + 1] : nullptr;
        if (expiry == nullptr || expiry->type != REDIS_REPLY_INTEGER) break;
        const int64_t at = expiry->integer;
        for (const std::string& k : metas[0]->DataKeys()) {
          if (at == -2) {
            follow.Add({"UNLINK", k});  // expired at once: the name is gone
          } else if (at < 0) {
            follow.Add({"PERSIST", k});
          } else {
            follow.Add({"PEXPIREAT", k, std::to_string(at)});
          }
        }
        break;
      }
      case Kind::kRename: {
        const bool renamed =
            result != nullptr && (result->type == REDIS_REPLY_STATUS || Int(result, 0) == 1);
        if (!renamed || keys_[0] == keys_[1]) break;
        if (metas[1]) {
          std::vector<std::string> keys = {"UNLINK"};
          for (std::string& k : metas[1]->DataKeys()) keys.push_back(std::move(k));
          follow.Add(keys);
        }
        if (metas[0]) {
          FilterMeta moved = *metas[0];
          moved.prefix = DataKeyPrefix(keys_[1]);
          std::vector<std::string> from = metas[0]->DataKeys();
          std::vector<std::string> to = moved.DataKeys();
          for (size_t i = 0; i < from.size(); ++i) follow.Add({"RENAME", from[i], to[i]});
        }
        break;
      }
    }
    follow.MoveTo(step);
  }

 private:
  Kind kind_;
  FilterCache* cache_;
  std::vector<std::string> args_;
  std::vector<std::string> keys_;
};

}  // namespace

std::unique_ptr<Plan> MakeBfPlan(const BfRequest& request, FilterCache* cache,
                                 const BfConfig* config, std::string deferred_error) {
  return std::make_unique<BfPlan>(request, cache, config, std::move(deferred_error));
}

std::unique_ptr<Plan> MakeBatchPlan(const BfRequest& request, std::vector<BfMember> members,
                                    FilterCache* cache, const BfConfig* config) {
  return std::make_unique<BfPlan>(request, cache, config, std::string(), std::move(members));
}

std::unique_ptr<Plan> MakeKeyPlan(const std::vector<std::string_view>& args, FilterCache* cache) {
  if (args.empty()) return nullptr;
  const protocol::CommandInfo* info = protocol::LookupCommand(args[0]);
  // Wrong arity is the upstream's to report, as for any command.
  if (info == nullptr || !protocol::ArityOk(*info, args.size())) return nullptr;
  const std::string_view name = info->name;
  if (name == "type") return std::make_unique<TypePlan>(std::string(args[1]));
  if (name == "del" || name == "unlink") {
    return std::make_unique<KeyPlan>(KeyPlan::Kind::kDelete, args, cache);
  }
  if (name == "expire" || name == "pexpire" || name == "expireat" || name == "pexpireat") {
    return std::make_unique<KeyPlan>(KeyPlan::Kind::kExpire, args, cache);
  }
  if (name == "persist") return std::make_unique<KeyPlan>(KeyPlan::Kind::kPersist, args, cache);
  if (name == "rename" || name == "renamenx") {
    return std::make_unique<KeyPlan>(KeyPlan::Kind::kRename, args, cache);
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// COMMAND entries.

namespace {

struct BfCommandDoc {
  const char* name;
  int arity;
  std::initializer_list<const char*> flags;
  const char* category;
};

const BfCommandDoc kBfDocs[] = {
    {"bf.reserve", -4, {"write", "denyoom"}, "@write"},
    {"bf.add", 3, {"write", "denyoom"}, "@write"},
    {"bf.madd", -3, {"write", "denyoom"}, "@write"},
    {"bf.insert", -4, {"write", "denyoom"}, "@write"},
    {"bf.exists", 3, {"readonly"}, "@read"},
    {"bf.mexists", -3, {"readonly"}, "@read"},
    {"bf.info", -2, {"readonly"}, "@read"},
    {"bf.card", 2, {"readonly"}, "@read"},
    {"bf.scandump", 3, {"readonly"}, "@read"},
    {"bf.loadchunk", 4, {"write", "denyoom"}, "@write"},
};

std::string EncodeEntry(const BfCommandDoc& d) {
  std::string out;
  protocol::AppendArrayHeader(&out, 10);
  protocol::AppendBulk(&out, d.name);
  protocol::AppendInteger(&out, d.arity);
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(d.flags.size() + 1));
  for (const char* f : d.flags) protocol::AppendSimple(&out, f);
  protocol::AppendSimple(&out, "module");
  protocol::AppendInteger(&out, 1);  // first key
  protocol::AppendInteger(&out, 1);  // last key
  protocol::AppendInteger(&out, 1);  // step
  protocol::AppendArrayHeader(&out, 2);
  protocol::AppendSimple(&out, d.category);
  protocol::AppendSimple(&out, "@bloom");
  protocol::AppendArrayHeader(&out, 0);  // tips
  protocol::AppendArrayHeader(&out, 0);  // key specs
  protocol::AppendArrayHeader(&out, 0);  // subcommands
  return out;
}

}  // namespace

std::vector<BfCommandName> BfCommandNames() {
  std::vector<BfCommandName> out;
  for (const BfCommandDoc& d : kBfDocs) {
    out.push_back({d.name, std::string_view(d.category) == "@write"});
  }
  return out;
}

std::vector<std::string> BfCommandEntries() {
  std::vector<std::string> out;
  for (const BfCommandDoc& d : kBfDocs) out.push_back(EncodeEntry(d));
  return out;
}

std::string BfCommandEntry(std::string_view name) {
  for (const BfCommandDoc& d : kBfDocs) {
    std::string_view n = d.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = n[i] == static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    }
    if (same) return EncodeEntry(d);
  }
  return {};
}

}  // namespace bloomproxy::filters

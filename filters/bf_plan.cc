#include "filters/bf_plan.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "filters/key_layout.h"
#include "protocol/command_table.h"
#include "protocol/encoder.h"
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

class Requests {
 public:
  void Add(std::initializer_list<std::string_view> args) {
    protocol::AppendCommand(&out_, args);
    ++count_;
  }
  void Add(const std::vector<std::string>& args) {
    protocol::AppendCommand(&out_, args);
    ++count_;
  }
  void Add(const std::vector<std::string_view>& args) {
    protocol::AppendCommand(&out_, args);
    ++count_;
  }
  // A request already encoded (RESP multibulk).
  void AddEncoded(std::string_view request) {
    out_.append(request);
    ++count_;
  }
  size_t count() const { return count_; }
  void MoveTo(PlanStep* step) {
    if (step->requests.empty()) {
      step->requests.swap(out_);
    } else {
      step->requests += out_;
    }
    step->replies += count_;
    out_.clear();
    count_ = 0;
  }

 private:
  std::string out_;
  size_t count_ = 0;
};

bool IsError(const redisReply* r) { return r == nullptr || r->type == REDIS_REPLY_ERROR; }
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

// The RESP bytes of a simple decoded reply (integers, statuses, errors, strings, nil): what the
// client gets when a plan passes one of Redis's own replies through.
std::string Reencode(const redisReply* r) {
  std::string out;
  if (r == nullptr) return "-ERR upstream reply could not be decoded\r\n";
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
      out = "-ERR unexpected upstream reply\r\n";
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
bool DecodeLink(std::string_view s, LinkParams* l) {
  std::string_view parts[7];
  size_t n = 0;
  while (n < 7) {
    size_t sp = s.find(' ');
    parts[n++] = s.substr(0, sp);
    if (sp == std::string_view::npos) break;
    s.remove_prefix(sp + 1);
  }
  uint64_t k = 0, n2 = 0;
  return n == 7 && ParseU64(parts[0], &l->bytes) && ParseU64(parts[1], &l->bits) &&
         ParseU64(parts[2], &l->capacity) && ParseU64(parts[3], &k) && ParseU64(parts[4], &n2) &&
         ParseDoubleBits(parts[5], &l->error) && ParseDoubleBits(parts[6], &l->bpe) &&
         l->bits > 0 && k > 0 && k < 1000 && (l->error > 0) &&
         ((l->k = static_cast<uint32_t>(k)), (l->n2 = static_cast<uint8_t>(n2)), true);
}

std::string NewId() {
  static std::mt19937_64 rng{std::random_device{}()};
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, rng());
  return buf;
}

// Metadata from a hash's fields (HGETALL, or HMGET of the fixed list below). Null if the hash is
// not a filter.
std::shared_ptr<FilterMeta> MetaFromFields(
    std::string_view name, const std::vector<std::pair<std::string_view, std::string_view>>& f) {
  auto meta = std::make_shared<FilterMeta>();
  bool marker = false;
  std::vector<std::pair<uint64_t, LinkParams>> links;
  for (const auto& [field, value] : f) {
    if (field == kMarkerField) {
      marker = value == kMarkerValue;
    } else if (field == "id") {
      meta->id.assign(value);
    } else if (field == "error") {
      ParseDoubleBits(value, &meta->error);
    } else if (field == "capacity") {
      ParseU64(value, &meta->capacity);
    } else if (field == "expansion") {
      uint64_t v = 0;
      ParseU64(value, &v);
      meta->expansion = static_cast<uint32_t>(v);
    } else if (field == "options") {
      uint64_t v = 0;
      ParseU64(value, &v);
      meta->options = static_cast<uint32_t>(v);
    } else if (field == "shard") {
      ParseU64(value, &meta->shard_bytes);
    } else if (field.size() > 1 && field[0] == 'l') {
      uint64_t index = 0;
      LinkParams l;
      if (ParseU64(field.substr(1), &index) && DecodeLink(value, &l)) links.emplace_back(index, l);
    }
  }
  if (!marker || meta->id.empty() || meta->shard_bytes == 0) return nullptr;
  std::sort(links.begin(), links.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Links are used in order; a gap (a field not yet written) ends the chain.
  for (size_t i = 0; i < links.size() && links[i].first == i; ++i) {
    meta->links.push_back(links[i].second);
  }
  if (meta->links.empty()) return nullptr;
  meta->counts.assign(meta->links.size(), 0);
  meta->prefix = DataKeyPrefix(name);
  return meta;
}

std::shared_ptr<FilterMeta> MetaFromHgetall(std::string_view name, const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return nullptr;
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    fields.emplace_back(Str(r->element[i]), Str(r->element[i + 1]));
  }
  return MetaFromFields(name, fields);
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
  return MetaFromFields(name, fields);
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
// Every round on a known filter starts with two validation replies, TYPE and
// HMGET name bloomproxy id l<n>: the name must still be a filter with the same id, and no link
// beyond the ones known may exist. Otherwise the cached metadata is dropped and the command
// starts over from the metadata (writes made in the stale round went to keys of the old id,
// which are removed).

enum class KeyState {
  kMissing,    // no such key
  kOtherType,  // a key that is not a filter
  kFilter,     // the filter as cached
  kNewLink,    // the same filter, with a link the cache does not know yet
  kReplaced,   // a filter recreated under the same name (another id)
};

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

  // Every step starts with the trailing requests of the previous one; their replies are
  // skipped.
  Requests& BeginStep(PlanStep* step) {
    trailing_.MoveTo(step);
    skip_ = step->replies;
    return next_requests_;
  }
  void EndStep(PlanStep* step) { next_requests_.MoveTo(step); }

  void Finish(PlanStep* step, std::string reply) {
    step->done = true;
    step->reply = std::move(reply);
    trailing_.MoveTo(step);
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

  KeyState Classify(const redisReply* type, const redisReply* hash_reply,
                    std::shared_ptr<FilterMeta>* meta) {
    std::string_view t = Str(type);
    if (IsError(type) || t == "none") return KeyState::kMissing;
    if (t != "hash") return KeyState::kOtherType;
    *meta = MetaFromHgetall(name_, hash_reply);
    return *meta ? KeyState::kFilter : KeyState::kOtherType;
  }

  void OnFetch(StepReplies& r, PlanStep* step) {
    std::shared_ptr<FilterMeta> meta;
    KeyState state = r.size() >= 2 ? Classify(r.Get(0), r.Get(1), &meta) : KeyState::kMissing;
    if (state != KeyState::kFilter) {
      cache_->Erase(name_);
      meta_ = nullptr;
      if (ReplyForAbsent(state, step)) return;
      if (req_.command == BfCommand::kLoadChunk) {
        // The header is looked at once the key is known to be free, as RedisBloom does.
        if (!DecodeDumpHeader(data_, &header_)) return Finish(step, std::string(kBadData));
        // Dumps of very old RedisBloom filters (32-bit hash, power-of-two modulus) would need
        // other bit maths.
        bool old_format = (header_.options & kOptHash64) == 0;
        for (const DumpLink& l : header_.links) old_format = old_format || l.params.n2 != 0;
        if (old_format) return Finish(step, std::string(kOldDump));
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
    req.Add(CountsRequest());
    EndStep(step);
  }

  std::vector<std::string> CountsRequest() const {
    std::vector<std::string> args = {"MGET"};
    for (size_t l = 0; l < meta_->links.size(); ++l) args.push_back(meta_->CountKey(l));
    return args;
  }

  void ApplyCounts(const redisReply* r) {
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return;
    for (size_t l = 0; l < meta_->links.size() && l < r->elements; ++l) {
      meta_->counts[l] = Int(r->element[l], 0);
    }
    const size_t last = meta_->links.size() - 1;
    link_full_ = meta_->counts[last] >= static_cast<int64_t>(meta_->links[last].capacity);
  }

  void OnCounts(StepReplies& r, PlanStep* step) {
    if (!r.empty()) ApplyCounts(r.Get(0));
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
  KeyState Validate(const redisReply* hmget) {
    if (hmget == nullptr) return KeyState::kMissing;
    if (hmget->type == REDIS_REPLY_ERROR) {
      return Str(hmget).substr(0, 9) == "WRONGTYPE" ? KeyState::kOtherType : KeyState::kMissing;
    }
    if (hmget->type != REDIS_REPLY_ARRAY || hmget->elements != 3) return KeyState::kOtherType;
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
    req.Add({"RENAMENX", tmp, name_});
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
    const uint64_t bytes = meta.links[link].bytes;
    const uint64_t shards = meta.ShardCount(link);
    for (uint64_t s = 0; s < shards; ++s) {
      const uint64_t len = std::min(meta.shard_bytes, bytes - s * meta.shard_bytes);
      const std::string key = meta.BitsKey(link, s);
      if (!shared) {
        req->Add({"SETRANGE", key, U64(len - 1), std::string_view("\0", 1)});
        continue;
      }
      const std::string tmp = key + ":" + NewId();
      req->Add({"SETRANGE", tmp, U64(len - 1), std::string_view("\0", 1)});
      req->Add({"RENAMENX", tmp, key});
      req->Add({"UNLINK", tmp});
    }
    req->Add({"SET", meta.CountKey(link), std::to_string(count), "NX"});
  }

  void OnCreate(StepReplies& r, PlanStep* step) {
    const bool won = !r.empty() && Int(r.Get(r.size() - 1), 0) == 1;
    std::shared_ptr<FilterMeta> meta = std::move(pending_meta_);
    if (!won) {
      // Someone else holds the name: remove what was prepared and answer from what is there.
      std::vector<std::string> args = {"UNLINK", meta->prefix + ":bf:" + meta->id + ":new"};
      for (std::string& k : meta->DataKeys()) args.push_back(std::move(k));
      trailing_.Add(args);
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
    req.Add({"GET", next->CountKey(l)});
    req.Add({"PEXPIRETIME", name_});
    EndStep(step);
    pending_meta_ = next;
  }

  void OnCreateLink(StepReplies& r, PlanStep* step) {
    meta_ = std::move(pending_meta_);
    const size_t l = meta_->links.size() - 1;
    if (r.size() >= 3) {
      meta_->counts[l] = Int(r.Get(r.size() - 2), 0);
      const int64_t expire_at = Int(r.Get(r.size() - 1), -1);
      if (expire_at > 0) {
        for (uint64_t s = 0; s < meta_->ShardCount(l); ++s) {
          trailing_.Add({"PEXPIREAT", meta_->BitsKey(l, s), std::to_string(expire_at)});
        }
        trailing_.Add({"PEXPIREAT", meta_->CountKey(l), std::to_string(expire_at)});
      }
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
    if (r.size() < kValidationReplies) return Finish(step, "-ERR upstream reply missing\r\n");
    const KeyState state = Validate(r.Get(0));
    const bool adding = req_.command == BfCommand::kAdd || req_.command == BfCommand::kMAdd ||
                        req_.command == BfCommand::kInsert;
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
      cache_->Erase(name_);
      meta_ = nullptr;
      if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
      return Fetch(step);
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
        for (size_t i = kValidationReplies; i < r.size(); ++i) {
          if (IsError(r.Get(i))) return Finish(step, Reencode(r.Get(i)));
        }
        return Finish(step, "+OK\r\n");
      case BfCommand::kReserve:
        return Finish(step, std::string(kItemExists));
    }
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
    uint32_t k = 0;                 // ops per item
    std::vector<uint32_t> command;  // per op, item-major: the command holding it
    std::vector<uint32_t> index;    // per op: its position in that command
  };

  // One BITFIELD (SET u1 <off> 1 per bit) or BITFIELD_RO (GET u1 <off>) per shard of `link`
  // that `items` touch, the ops in item order.
  void AddBitfield(Requests* req, size_t link, const std::vector<size_t>& items, bool set,
                   BitOps* ops) {
    // Encoded straight to RESP, one append per op: a batch may carry thousands of ops.
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> ops_per_command;
    std::vector<std::pair<uint64_t, uint64_t>> offs;
    ops->shards.clear();
    ops->k = meta_->links[link].k;
    ops->command.clear();
    ops->index.clear();
    ops->command.reserve(items.size() * ops->k);
    ops->index.reserve(items.size() * ops->k);
    offsets.reserve(items.size() * ops->k);
    for (size_t j = 0; j < items.size(); ++j) {
      offs.clear();
      ItemOffsets(items[j], link, &offs);
      for (const auto& [shard, off] : offs) {
        size_t c = 0;
        while (c < ops->shards.size() && ops->shards[c] != shard) ++c;
        if (c == ops->shards.size()) {
          ops->shards.push_back(shard);
          ops_per_command.push_back(0);
        }
        ops->command.push_back(static_cast<uint32_t>(c));
        ops->index.push_back(ops_per_command[c]++);
        offsets.push_back(off);
      }
    }
    std::string out;
    // "$3\r\nSET\r\n$2\r\nu1\r\n$<d>\r\n<offset>\r\n$1\r\n1\r\n"; an offset in a shard has
    // at most 10 digits (shards are under 512 MB).
    const std::string_view head = set ? "$3\r\nSET\r\n$2\r\nu1\r\n$" : "$3\r\nGET\r\n$2\r\nu1\r\n$";
    char op[64];
    std::memcpy(op, head.data(), head.size());
    for (size_t c = 0; c < ops->shards.size(); ++c) {
      out.clear();
      out.reserve(64 + ops_per_command[c] * 40);
      protocol::AppendArrayHeader(&out,
                                  2 + static_cast<int64_t>(ops_per_command[c]) * (set ? 4 : 3));
      protocol::AppendBulk(&out, set ? "BITFIELD" : "BITFIELD_RO");
      protocol::AppendBulk(&out, meta_->BitsKey(link, ops->shards[c]));
      for (size_t x = 0; x < offsets.size(); ++x) {
        if (ops->command[x] != c) continue;
        char digits[24];
        const auto res = std::to_chars(digits, digits + sizeof(digits), offsets[x]);
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
      req->AddEncoded(out);
    }
  }

  // True when every bit of the j-th item reads 1 (GET's value, or SET's old value).
  static bool AllOnes(const BitOps& ops, size_t j, StepReplies& replies, size_t first) {
    for (size_t x = j * ops.k; x < (j + 1) * ops.k && x < ops.command.size(); ++x) {
      const std::vector<int64_t>* values = replies.Ints(first + ops.command[x]);
      const size_t op = ops.index[x];
      if (values == nullptr || op >= values->size() || (*values)[op] != 1) return false;
    }
    return true;
  }

  static bool FirstError(StepReplies& replies, size_t first, size_t n, std::string* error) {
    for (size_t c = first; c < first + n && c < replies.size(); ++c) {
      if (replies.IsErrorReply(c)) {
        error->assign(replies.Frame(c));
        return true;
      }
    }
    return false;
  }

  // ADD / MADD / INSERT, in rounds of two steps.
  //
  // The check step reserves room in the newest link: INCRBY of its count by the number of
  // items the proxy expects to fit. The new count says how many of them really fit, whatever
  // other proxies are adding at the same time, so a link never takes more than its capacity
  // (which keeps the chain's error bound). When older links exist, the step also reads the
  // items' bits there: RedisBloom adds nothing for an item an older link has.
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
    Requests& req = BeginStep(step);
    AddValidation(&req);
    req.Add({"INCRBY", meta_->CountKey(meta_->links.size() - 1), std::to_string(reserve_)});
    check_ops_.assign(links, {});
    check_first_.assign(links, 0);
    for (size_t l = 0; l < links; ++l) {
      check_first_[l] = req.count();
      AddBitfield(&req, l, window_, false, &check_ops_[l]);
    }
    EndStep(step);
  }

  // The set step, for the window's items not found in older links.
  void SetBits(PlanStep* step) {
    add_stage_ = AddStage::kSet;
    set_items_.clear();
    for (size_t j = 0; j < window_.size(); ++j) {
      if (!found_[j]) set_items_.push_back(window_[j]);
    }
    Requests& req = BeginStep(step);
    AddValidation(&req);
    AddBitfield(&req, meta_->links.size() - 1, set_items_, true, &set_ops_);
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

  void OnAddRound(StepReplies& r, PlanStep* step) {
    std::string error;
    const size_t last = meta_->links.size() - 1;
    const int64_t capacity = static_cast<int64_t>(meta_->links[last].capacity);
    if (add_stage_ == AddStage::kCheck) {
      const int64_t after = r.size() > kValidationReplies ? Int(r.Get(kValidationReplies), 0) : 0;
      for (size_t l = 0; l < check_ops_.size(); ++l) {
        if (FirstError(r, check_first_[l], check_ops_[l].shards.size(), &error)) {
          Release(reserve_);
          return Finish(step, error);
        }
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
          found_[j] = AllOnes(check_ops_[l], j, r, check_first_[l]);
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
    if (FirstError(r, kValidationReplies, set_ops_.shards.size(), &error)) {
      Release(placed_);
      return Finish(step, error);
    }
    int64_t added = 0;
    size_t s = 0;
    for (size_t j = 0; j < window_.size(); ++j) {
      if (found_[j]) {
        results_.push_back(kRes0);
        continue;
      }
      const bool existed = AllOnes(set_ops_, s++, r, kValidationReplies);
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

  // EXISTS / MEXISTS: one BITFIELD_RO per link and shard for all the items.
  void ExistsRound(PlanStep* step) {
    Requests& req = BeginStep(step);
    AddValidation(&req);
    std::vector<size_t> all(items_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    check_ops_.assign(meta_->links.size(), {});
    check_first_.assign(meta_->links.size(), 0);
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      check_first_[l] = req.count();
      AddBitfield(&req, l, all, false, &check_ops_[l]);
    }
    EndStep(step);
  }

  void OnExistsRound(StepReplies& r, PlanStep* step) {
    std::string error;
    for (size_t l = 0; l < check_ops_.size(); ++l) {
      if (FirstError(r, check_first_[l], check_ops_[l].shards.size(), &error)) {
        return Finish(step, error);
      }
    }
    results_.clear();
    for (size_t j = 0; j < items_.size(); ++j) {
      bool found = false;
      for (size_t l = 0; l < check_ops_.size() && !found; ++l) {
        found = AllOnes(check_ops_[l], j, r, check_first_[l]);
      }
      results_.push_back(found ? kRes1 : kRes0);
    }
    FinishMembers(step);
  }

  // CARD / INFO / SCANDUMP's header: the counts.
  void CountsRound(PlanStep* step) {
    Requests& req = BeginStep(step);
    AddValidation(&req);
    req.Add(CountsRequest());
    EndStep(step);
  }

  void OnCountsRound(StepReplies& r, PlanStep* step) {
    if (r.size() > kValidationReplies) ApplyCounts(r.Get(kValidationReplies));
    int64_t total = 0;
    uint64_t capacity = 0, bytes = 0;
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      total += meta_->counts[l];
      capacity += meta_->links[l].capacity;
      bytes += meta_->links[l].bytes;
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
    // BF.INFO: RedisBloom's Size counts its structures (32 bytes + 64 per link) and the bits.
    const uint64_t size = 32 + 64 * meta_->links.size() + bytes;
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
      }
    }
    EndStep(step);
  }

  void OnDumpRound(StepReplies& r, PlanStep* step) {
    if (chunk_.end) return Finish(step, "*2\r\n:0\r\n$0\r\n\r\n");
    std::string data;
    const uint64_t sb = meta_->shard_bytes;
    const uint64_t first = chunk_.offset / sb;
    for (size_t i = kValidationReplies; i < r.size(); ++i) {
      if (IsError(r.Get(i))) return Finish(step, Reencode(r.Get(i)));
      const uint64_t s = first + (i - kValidationReplies);
      const uint64_t from = std::max(chunk_.offset, s * sb);
      const uint64_t to = std::min(chunk_.offset + chunk_.length, (s + 1) * sb);
      std::string_view piece = Str(r.Get(i));
      data.append(piece);
      // A shard shorter than expected reads as zeros, as the bits it lacks are.
      if (piece.size() < to - from) data.append(to - from - piece.size(), '\0');
    }
    std::string out = "*2\r\n";
    protocol::AppendInteger(&out, req_.iterator + static_cast<int64_t>(chunk_.length));
    protocol::AppendBulk(&out, data);
    Finish(step, out);
  }

  // LOADCHUNK of data: SETRANGE into the shards the chunk spans.
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
      req.Add({"SETRANGE", meta_->BitsKey(link, s), U64(from - s * sb),
               std::string_view(data_).substr(from - offset, to - from)});
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
  Requests trailing_;       // sent with the next step; replies skipped
  Requests next_requests_;  // the step being built
  int restarts_ = 0;
  bool round_wrote_ = false;
  bool reload_ = false;
  bool link_full_ = false;  // the upstream showed the newest link full
  int64_t reserve_ = 0;     // places asked for in the newest link this round
  int64_t placed_ = 0;      // places granted and used by items to set

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
  std::vector<size_t> check_first_;
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
      step->reply = "-ERR upstream reply missing\r\n";
    } else if (Str(r.Get(0)) == "hash" && Str(r.Get(1)) == kMarkerValue) {
      step->reply = "+MBbloom--\r\n";
    } else {
      step->reply = Reencode(r.Get(0));
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
      step->reply = Reencode(exec);
      return;
    }
    const size_t n = keys_.size();
    if (exec->elements < n + 1) {
      step->reply = "-ERR upstream reply missing\r\n";
      return;
    }
    const redisReply* result = exec->element[n];
    step->reply = Reencode(result);
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
        const int64_t at = exec->elements > n + 1 ? Int(exec->element[n + 1], -1) : -1;
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

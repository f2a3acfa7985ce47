// A Bloom filter's metadata as the plans keep it: the hash in the filter's name (its marker,
// parameters and links), how a link is written in a field, the cache of filters already seen,
// and the settings the BF plans take from the proxy's configuration.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bloom.h"
#include "filters/bloom/window/window_rules.h"
#include "filters/common/key_layout.h"
#include "filters/common/meta_cache.h"
#include "filters/common/plan_requests.h"
#include "filters/guava/bf_layout.h"
#include "protocol/reply_decoder.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The settings plans need (from the proxy's configuration).
struct BfConfig {
  BfDefaults defaults;
  uint64_t max_shard_bytes = 64ULL * 1024 * 1024 - 16;
  // Behind a sharding proxy plans use only the commands it forwards (BITFIELD for
  // BITFIELD_RO, small scripts with keys for RENAMENX and PEXPIRETIME).
  protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis;
  // Behind a Redis Cluster a redirected command (an ASK's resend, a TRYAGAIN held for a while)
  // can run after a later one of the same step: plans then create keys with the same single-key
  // scripts as behind a sharding proxy, so no step depends on the order of its commands.
  bool cluster = false;
  // bf-layout rules: names that are filters in a Java application's layout.
  LayoutRules layouts;
  // bf-window rules: names whose filters BF.ADD, BF.MADD and BF.INSERT create windowed.
  WindowRules windows;
  // The local monotonic clock in µs, for windowed filters' clock samples (null: CLOCK_BOOTTIME;
  // tests set their own).
  int64_t (*monotonic_us)() = nullptr;
};

// What the proxy knows of one filter: its parameters (immutable once created) and links.
// The metadata lives in the filter's name, a Redis hash:
//
//   bloomproxy  "1"        marks the hash as a filter (layout version)
//   id          hex        random, part of every data key name
//   error capacity expansion options shard      the chain's parameters
//   l0 l1 ...   "bytes bits capacity k n2 error bpe"   one field per link (doubles as hex bits)
//   window slots   a windowed filter's window (ms) and slot count; it has no links
//
// and each link's item count in its count key (INCRBY), its bits in its shard keys.
struct FilterMeta {
  std::string id;
  std::string prefix;  // DataKeyPrefix(name)
  double error = 0;
  uint64_t capacity = 0;
  uint32_t expansion = 0;
  uint32_t options = kOptionsScaling;
  uint64_t shard_bytes = 0;
  std::vector<LinkParams> links;
  std::vector<int64_t> counts;  // items per link, as last seen (other proxies may add more)
  // This proxy's tally of BF.EXISTS lookups on the filter lately: how many items were read,
  // and how many had their first bit set in some link. BF.EXISTS probes that bit first while
  // at most half of them did (bf_plan_read.cc).
  struct ProbeTally {
    uint32_t read = 0;
    uint32_t passed = 0;
    bool Probing() const { return static_cast<uint64_t>(passed) * 2 <= read; }
    // One item read; the tally halves past kWindow items, to follow the lookups of the moment.
    void Count(bool first_bit_set) {
      ++read;
      passed += first_bit_set ? 1 : 0;
      if (read >= kWindow) {
        read /= 2;
        passed /= 2;
      }
    }
    static constexpr uint32_t kWindow = 4096;
  };
  ProbeTally probes;

  // A windowed filter (docs/windowed-filters.md): its window and slots (0: a plain filter).
  // Its hash has no links; its items are in slot filters (filters/bloom/window/).
  uint64_t window_ms = 0;
  uint32_t slots = 0;
  bool windowed() const { return window_ms > 0; }
  // This proxy's bracket of the upstream's clock for a windowed filter, from the last TIME it
  // read there (filters/bloom/window/window_clock.h). Not stored upstream.
  struct ClockSample {
    bool known = false;
    int64_t sent_us = 0;      // local monotonic time when the TIME request was made
    int64_t read_us = 0;      // ... and when its reply was read
    int64_t upstream_us = 0;  // the upstream's time in the reply (Unix µs)
  };
  ClockSample clock;

  // Whether the chain never adds links (BF.RESERVE ... NONSCALING).
  bool nonscaling() const { return (options & kOptNoScaling) != 0; }
  // How many shard keys hold link `link`'s bits (each at most shard_bytes).
  uint64_t ShardCount(size_t link) const;
  // The name of shard `shard` of link `link`.
  std::string BitsKey(size_t link, size_t shard) const;
  // The name of link `link`'s count key.
  std::string CountKey(size_t link) const;
  // Every data key of the filter (bits and counts), for DEL, EXPIRE and RENAME. None for a
  // windowed filter: its keys are its slots', which depend on the upstream's time (the key
  // scripts find them, filters/common/filter_at.lua).
  std::vector<std::string> DataKeys() const;
};

// Filters this proxy has seen, by name (filters/common/meta_cache.h).
using FilterCache = MetaCache<FilterMeta>;

// The field that marks a hash as a filter, and its value (the layout version).
inline constexpr std::string_view kMarkerField = "bloomproxy";
inline constexpr std::string_view kMarkerValue = "1";

// 16 lower-case hex digits (an item's hash, a double's bits).
std::string Hex64(uint64_t v);

// Doubles are stored as the hex of their bits, so a dump header rebuilt from the metadata has
// exactly the bytes it was loaded with.
std::string DoubleBits(double d);
// The double whose bits DoubleBits wrote: false unless `s` is 16 lower-case hex digits.
bool ParseDoubleBits(std::string_view s, double* out);
// A decimal integer >= 0 (up to 2^63 - 1); false for anything else.
bool ParseU64(std::string_view s, uint64_t* out);

// The metadata field of link `l`: "bytes bits capacity k n2 error bpe", doubles as DoubleBits.
std::string EncodeLink(const LinkParams& l);
// A link field, with what the bit maths needs of it: bits = bytes * 8 (positions stay in the
// key), 0 < k < 1000, an error rate in (0, 1), n2 = 0 (64-bit hashes; older dumps are refused
// at load).
bool DecodeLink(std::string_view s, LinkParams* l);

// What a hash's fields hold (MetaFromFields).
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
// still loses the data keys that can be named. A windowed filter (window, no links) is a
// filter: its data keys are its live slots' (filters/bloom/window/window_slots.h).
MetaStatus MetaFromFields(std::string_view name,
                          const std::vector<std::pair<std::string_view, std::string_view>>& f,
                          bool strict, std::shared_ptr<FilterMeta>* out, std::string* problem);

// A new filter named `name` (a fresh id): from `req`'s parameters (BF.RESERVE, BF.INSERT, or the
// defaults of BF.ADD), or from a BF.LOADCHUNK dump header when `header` is set.
FilterMeta NewFilterMeta(std::string_view name, const BfRequest& req, const DumpHeader* header,
                         const BfConfig& config);

// The fields and values of a filter's metadata hash, as HSET takes them (marker first).
std::vector<std::string> MetaHashFields(const FilterMeta& meta);

// HMGET of the fields a key-level plan needs to find a filter's data keys (and a windowed
// filter's window and slots, which name its slots).
std::vector<std::string> MetaFieldList();
// Appends HMGET `key` of MetaFieldList() to `req`.
void AddMetaHmget(Requests* req, std::string_view key);
// The metadata of filter `name` from the reply to AddMetaHmget's request (not strict: enough to
// name the data keys); null when the reply is not an array or `name` is no filter.
std::shared_ptr<FilterMeta> MetaFromHmget(std::string_view name, const redisReply* r);

}  // namespace bloomproxy::filters

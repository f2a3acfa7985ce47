#include "filters/common/sketch_commands.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/module_args.h"
#include "protocol/encoder.h"
#include "protocol/glob.h"

namespace bloomproxy::filters {
namespace {

using protocol::Resp;

// An argument of COMMAND DOCS (Redis's redisCommandArg: the types and flags as it names them).
enum class ArgType : uint8_t { kString, kInteger, kDouble, kKey, kPureToken, kOneof, kBlock };
constexpr uint8_t kOptional = 1;
constexpr uint8_t kMultiple = 2;

struct Arg {
  const char* name;
  ArgType type;
  const char* token = nullptr;
  uint8_t flags = 0;
  int key_spec_index = -1;               // the key spec a key argument belongs to; -1: none shown
  std::initializer_list<Arg> args = {};  // a block's or a oneof's arguments
};

// A key spec (Redis's keySpec): where the keys are, begin_search "index" then find_keys "range"
// (lastkey, keystep, limit) or "keynum" (keynumidx, firstkey, keystep).
struct KeySpec {
  const char* notes;
  const char* flags;  // space-separated, in Redis's order: "RW", "RO", "RW access update", ...
  int index;
  bool keynum;
  int a, b, c;
};

// RM_CreateCommand's key spec for a command registered with first/last/step 1,1,1 and no command
// info: full access (RW access update), one key.
constexpr KeySpec kLegacyKey = {nullptr, "RW access update", 1, false, 0, 1, 0};

// One entry of a command's history (Redis's commandHistory): the version and what changed.
struct HistoryEntry {
  const char* since;
  const char* changes;
};

struct Docs {
  const char* summary = nullptr;  // nullptr: the command has no command info
  const char* since = nullptr;
  const char* complexity = nullptr;
  std::initializer_list<Arg> args = {};
  std::initializer_list<HistoryEntry> history = {};
};

struct Row {
  const char* name;
  int arity;
  std::initializer_list<const char*> flags;  // as registered; "module" and order are Redis's
  std::initializer_list<const char*> acl;    // RedisBloom's categories, the family's added
  SketchFamily family;
  std::initializer_list<KeySpec> key_specs;
  Docs docs;
};

constexpr SketchFamily kBloom = SketchFamily::kBloom;
constexpr SketchFamily kCms = SketchFamily::kCms;
constexpr SketchFamily kCuckoo = SketchFamily::kCuckoo;
constexpr SketchFamily kTopk = SketchFamily::kTopk;
constexpr SketchFamily kTdigest = SketchFamily::kTdigest;
constexpr ArgType kStr = ArgType::kString;
constexpr ArgType kInt = ArgType::kInteger;
constexpr ArgType kDbl = ArgType::kDouble;
constexpr ArgType kKey = ArgType::kKey;
constexpr ArgType kToken = ArgType::kPureToken;
constexpr ArgType kOneof = ArgType::kOneof;
constexpr ArgType kBlock = ArgType::kBlock;

// A key spec of one key at argv[1] (RedisBloom's cmd_info: RW for writes, RO for reads).
constexpr KeySpec Key1(const char* flag, const char* notes = nullptr) {
  return {notes, flag, 1, false, 0, 1, 0};
}

// The first argument of every sketch command: its key.
const Arg kKeyArg = {"key", kKey, nullptr, 0, 0};

constexpr const char* kBfAddComplexity =
    "O(k), where k is the number of hash functions used by the last sub-filter";
constexpr const char* kBfMultiComplexity =
    "O(k * n), where k is the number of hash functions and n is the number of items";
constexpr const char* kBfAddSummary =
    "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";
constexpr const char* kTopkCountHistory =
    "As of Bloom version 2.4, this command is regarded as deprecated. The count value is not a "
    "representative of the number of appearances of an item";
constexpr const char* kTdValuesComplexity = "O(N) where N is the number of values specified.";
constexpr const char* kTdRankSummary =
    "Returns, for each input value (floating-point), the estimated rank of the value (the number "
    "of observations in the sketch that are smaller than the value + half the number of "
    "observations that are equal to the value)";
constexpr const char* kTdRevRankSummary =
    "Returns, for each input value (floating-point), the estimated reverse rank of the value (the "
    "number of observations in the sketch that are larger than the value + half the number of "
    "observations that are equal to the value)";
constexpr const char* kTdCdfSummary =
    "Returns, for each input value, an estimation of the floating-point fraction of (observations "
    "smaller than the given value + half the observations equal to the given value). Multiple "
    "fractions can be retrieved in a single call.";
constexpr const char* kCfInsertComplexity =
    "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is "
    "maxIterations";

// Flags, arities and key specs: RedisBloom's registration (src/rebloom.c, src/cmd_info/*.c) as
// the recorded module (master b28c2945) reports them; docs/compatibility.md. Categories: what
// RedisBloom sets on Redis >= 7.4 (RedisModule_SetCommandACLCategories) besides its family's.
// clang-format off
const Row kRows[] = {
    {"bf.reserve", -4, {"write", "denyoom"}, {"write", "fast"}, kBloom,
     {Key1("RW", "is key name for the the Bloom filter to be created.")},
     {"Creates a new Bloom Filter", "1.0.0", "O(1)",
      {kKeyArg, {"error_rate", kDbl}, {"capacity", kInt},
       {"expansion", kBlock, "EXPANSION", kOptional, -1, {{"expansion", kInt}}},
       {"nonscaling", kToken, "NONSCALING", kOptional}}}},
    {"bf.add", 3, {"write", "denyoom"}, {"write"}, kBloom,
     {Key1("RW", "is key name for a Bloom filter to add the item to.")},
     {"Adds an item to a Bloom Filter", "1.0.0", kBfAddComplexity, {kKeyArg, {"item", kStr}}}},
    {"bf.madd", -3, {"write", "denyoom"}, {"write"}, kBloom,
     {Key1("RW", "is key name for a Bloom filter to add the items to.")},
     {kBfAddSummary, "1.0.0", kBfMultiComplexity,
      {kKeyArg, {"item", kStr, nullptr, kMultiple}}}},
    {"bf.insert", -4, {"write", "denyoom"}, {"write"}, kBloom,
     {Key1("RW", "is key name for a Bloom filter to insert the item to.")},
     {kBfAddSummary, "1.0.0", kBfMultiComplexity,
      {kKeyArg, {"capacity", kBlock, "CAPACITY", kOptional, -1, {{"capacity", kInt}}},
       {"error", kBlock, "ERROR", kOptional, -1, {{"error", kDbl}}},
       {"expansion", kBlock, "EXPANSION", kOptional, -1, {{"expansion", kInt}}},
       {"nocreate", kToken, "NOCREATE", kOptional}, {"nonscaling", kToken, "NONSCALING", kOptional},
       {"items", kToken, "ITEMS"}, {"item", kStr, nullptr, kMultiple}}}},
    {"bf.exists", 3, {"readonly", "fast"}, {"read"}, kBloom,
     {Key1("RO", "is key name for a Bloom filter to check the item in.")},
     {"Checks whether an item exists in a Bloom Filter", "1.0.0", kBfAddComplexity,
      {kKeyArg, {"item", kStr}}}},
    {"bf.mexists", -3, {"readonly", "fast"}, {"read"}, kBloom,
     {Key1("RO", "is key name for a Bloom filter.")},
     {"Checks whether one or more items exist in a Bloom Filter", "1.0.0", kBfMultiComplexity,
      {kKeyArg, {"item", kStr, nullptr, kMultiple}}}},
    {"bf.info", -2, {"readonly", "fast"}, {"read", "fast"}, kBloom,
     {Key1("RO", "is key name for a Bloom filter.")},
     {"Returns information about a Bloom Filter", "1.0.0", "O(1)",
      {kKeyArg, {"single_value", kOneof, nullptr, kOptional, -1,
                 {{"capcaity", kToken, "CAPACITY"}, {"SIZE", kToken, "SIZE"},
                  {"FILTERS", kToken, "FILTERS"}, {"ITEMS", kToken, "ITEMS"},
                  {"EXPANSION", kToken, "EXPANSION"}}}}}},
    {"bf.card", 2, {"readonly", "fast"}, {"read", "fast"}, kBloom,
     {Key1("RO", "is key name for a Bloom filter.")},
     {"Returns the cardinality of a Bloom filter", "2.4.4", "O(1)", {kKeyArg}}},
    // RedisBloom registers BF.DEBUG without command info, as CF.COMPACT below: arity -1 (the
    // module checks 2) and RM_CreateCommand's key spec.
    {"bf.debug", -1, {"readonly", "fast"}, {"read"}, kBloom, {kLegacyKey}, {}},
    {"bf.scandump", 3, {"readonly", "fast"}, {"read"}, kBloom,
     {Key1("RW", "is key name for a Bloom filter to save.")},
     {"Begins an incremental save of the bloom filter", "1.0.0", "O(n), where n is the capacity",
      {kKeyArg, {"iterator", kInt}}}},
    {"bf.loadchunk", 4, {"write", "denyoom"}, {"write"}, kBloom,
     {Key1("RW", "is key name for a Bloom filter to load the chunk to.")},
     {"Restores a filter previously saved using SCANDUMP", "1.0.0",
      "O(n), where n is the capacity", {kKeyArg, {"iterator", kInt}, {"data", kStr}}}},
    {"cms.initbydim", 4, {"write", "denyoom"}, {"write"}, kCms, {Key1("RW")},
     {"Initializes a Count-Min Sketch to dimensions specified by user", "2.0.0", "O(1)",
      {kKeyArg, {"width", kInt}, {"depth", kInt}}}},
    {"cms.initbyprob", 4, {"write", "denyoom"}, {"write"}, kCms, {Key1("RW")},
     {"Initializes a Count-Min Sketch to accommodate requested tolerances.", "2.0.0", "O(1)",
      {kKeyArg, {"error", kDbl}, {"probability", kDbl}}}},
    {"cms.incrby", -4, {"write", "denyoom"}, {"write"}, kCms, {Key1("RW")},
     {"Increases the count of one or more items by increment", "2.0.0",
      "O(n) where n is the number of items",
      {kKeyArg, {"items", kBlock, nullptr, kMultiple, -1,
                 {{"item", kStr}, {"increment", kInt}}}}}},
    {"cms.query", -3, {"readonly"}, {"read"}, kCms, {Key1("RO")},
     {"Returns the count for one or more items in a sketch", "2.0.0",
      "O(n) where n is the number of items", {kKeyArg, {"item", kStr, nullptr, kMultiple}}}},
    // Only the destination is declared a key (COMMAND GETKEYS names it alone).
    {"cms.merge", -4, {"write", "denyoom"}, {"write"}, kCms, {Key1("RW")},
     {"Merges several sketches into one sketch", "2.0.0",
      "O(n) where n is the number of sketches",
      {kKeyArg, {"numKeys", kInt}, {"source", kKey, nullptr, kMultiple},
       {"weights", kBlock, nullptr, kOptional, -1,
        {{"weights", kToken, "WEIGHTS"}, {"weight", kDbl, nullptr, kMultiple}}}}}},
    {"cms.info", 2, {"readonly"}, {"read"}, kCms, {Key1("RO")},
     {"Returns information about a sketch", "2.0.0", "O(1)", {kKeyArg}}},
    {"cf.reserve", -3, {"write", "denyoom"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Creates a new Cuckoo Filter", "1.0.0", "O(1)",
      {kKeyArg, {"capacity", kInt},
       {"bucketsize", kBlock, "BUCKETSIZE", kOptional, -1, {{"bucketsize", kInt}}},
       {"maxiterations", kBlock, "MAXITERATIONS", kOptional, -1, {{"maxiterations", kInt}}},
       {"expansion", kBlock, "EXPANSION", kOptional, -1, {{"expansion", kInt}}}}}},
    {"cf.add", 3, {"write", "denyoom"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Adds an item to a Cuckoo Filter", "1.0.0",
      "O(k + i), where k is the number of sub-filters and i is maxIterations",
      {kKeyArg, {"item", kStr}}}},
    {"cf.addnx", 3, {"write", "denyoom"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Adds an item to a Cuckoo Filter if the item did not exist previously.", "1.0.0",
      "O(k + i), where k is the number of sub-filters and i is maxIterations",
      {kKeyArg, {"item", kStr}}}},
    {"cf.insert", -4, {"write", "denyoom"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
      "1.0.0", kCfInsertComplexity,
      {kKeyArg, {"capacity", kBlock, nullptr, kOptional, -1,
                 {{"capacity", kToken, "CAPACITY"}, {"capacity", kInt}}},
       {"nocreate", kToken, "NOCREATE", kOptional}, {"items", kToken, "ITEMS"},
       {"item", kStr, nullptr, kMultiple}}}},
    // RedisBloom gives CF.INSERTNX the arguments of CF.INSERT.
    {"cf.insertnx", -4, {"write", "denyoom"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter "
      "will be created if it does not exist", "1.0.0", kCfInsertComplexity,
      {kKeyArg, {"capacity", kBlock, nullptr, kOptional, -1,
                 {{"capacity", kToken, "CAPACITY"}, {"capacity", kInt}}},
       {"nocreate", kToken, "NOCREATE", kOptional}, {"items", kToken, "ITEMS"},
       {"item", kStr, nullptr, kMultiple}}}},
    {"cf.exists", 3, {"readonly", "fast"}, {"read"}, kCuckoo, {Key1("RO")},
     {"Checks whether one or more items exist in a Cuckoo Filter", "1.0.0",
      "O(k), where k is the number of sub-filters", {kKeyArg, {"item", kStr}}}},
    {"cf.mexists", -3, {"readonly", "fast"}, {"read"}, kCuckoo, {Key1("RO")},
     {"Checks whether one or more items exist in a Cuckoo Filter", "1.0.0",
      "O(k * n), where k is the number of sub-filters and n is the number of items",
      {kKeyArg, {"item", kStr, nullptr, kMultiple}}}},
    {"cf.count", 3, {"readonly", "fast"}, {"read"}, kCuckoo, {Key1("RO")},
     {"Return the number of times an item might be in a Cuckoo Filter", "1.0.0",
      "O(k), where k is the number of sub-filters", {kKeyArg, {"item", kStr}}}},
    {"cf.del", 3, {"write", "fast"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Deletes an item from a Cuckoo Filter", "1.0.0",
      "O(k), where k is the number of sub-filters", {kKeyArg, {"item", kStr}}}},
    // RedisBloom registers CF.COMPACT without command info (arity -1: the module checks 2, and
    // the key spec RM_CreateCommand makes) and with the flags of a read, though it writes.
    {"cf.compact", -1, {"readonly", "fast"}, {"read"}, kCuckoo, {kLegacyKey}, {}},
    {"cf.scandump", 3, {"readonly", "fast"}, {"read"}, kCuckoo, {Key1("RW")},
     {"Begins an incremental save of the bloom filter", "1.0.0", "O(n), where n is the capacity",
      {kKeyArg, {"iterator", kInt}}}},
    {"cf.loadchunk", 4, {"write", "denyoom"}, {"write"}, kCuckoo, {Key1("RW")},
     {"Restores a filter previously saved using SCANDUMP", "1.0.0",
      "O(n), where n is the capacity", {kKeyArg, {"iterator", kInt}, {"data", kStr}}}},
    {"cf.info", 2, {"readonly", "fast"}, {"read"}, kCuckoo, {Key1("RO")},
     {"Returns information about a Cuckoo Filter", "1.0.0", "O(1)", {kKeyArg}}},
    {"cf.debug", 2, {"readonly", "fast"}, {"read"}, kCuckoo, {Key1("RO")},
     {"Returns internal debug information about a Cuckoo Filter", "1.0.0", "O(1)", {kKeyArg}}},
    // Top-K: key specs without notes (src/cmd_info/topk_info.c at b28c2945); TOPK.COUNT carries
    // the one history entry of RedisBloom's command info, its deprecation.
    {"topk.reserve", -3, {"write", "denyoom"}, {"write"}, kTopk, {Key1("RW")},
     {"Initializes a Top-K sketch with specified parameters", "2.0.0", "O(1)",
      {kKeyArg, {"topk", kInt},
       {"params", kBlock, nullptr, kOptional, -1,
        {{"width", kInt}, {"depth", kInt}, {"decay", kDbl}}}}}},
    {"topk.add", -3, {"write", "denyoom"}, {"write"}, kTopk, {Key1("RW")},
     {"Adds an item to a Top-k sketch. Multiple items can be added at the same time.", "2.0.0",
      "O(n * k) where n is the number of items and k is the depth",
      {kKeyArg, {"item", kStr, nullptr, kMultiple}}}},
    {"topk.incrby", -4, {"write", "denyoom"}, {"write"}, kTopk, {Key1("RW")},
     {"Increases the count of one or more items by increment", "2.0.0",
      "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment",
      {kKeyArg, {"item_increment", kBlock, nullptr, kMultiple, -1,
                 {{"item", kStr}, {"increment", kInt}}}}}},
    {"topk.query", -3, {"readonly"}, {"read"}, kTopk, {Key1("RO")},
     {"Checks whether one or more items are in a sketch", "2.0.0",
      "O(n) where n is the number of items", {kKeyArg, {"item", kStr, nullptr, kMultiple}}}},
    {"topk.count", -3, {"readonly"}, {"read"}, kTopk, {Key1("RO")},
     {"Return the count for one or more items are in a sketch", "2.0.0",
      "O(n) where n is the number of items", {kKeyArg, {"item", kStr, nullptr, kMultiple}},
      {{"2.4.0", kTopkCountHistory}}}},
    {"topk.list", -2, {"readonly"}, {"read"}, kTopk, {Key1("RO")},
     {"Return the full list of items in Top-K sketch.", "2.0.0",
      "O(k*log(k)) where k is the value of top-k",
      {kKeyArg, {"withcount", kToken, "WITHCOUNT", kOptional}}}},
    {"topk.info", 2, {"readonly"}, {"read"}, kTopk, {Key1("RO")},
     {"Returns information about a sketch", "2.0.0", "O(1)", {kKeyArg}}},
    // T-digest (src/cmd_info/tdigest_info.c, src/rm_tdigest.c; docs/compatibility.md says which
    // fact comes from where): key specs without notes, MERGE's sources in a keynum spec.
    {"tdigest.create", -2, {"write", "denyoom"}, {"write", "fast"}, kTdigest, {Key1("RW")},
     {"Allocates memory and initializes a new t-digest sketch", "2.4.0", "O(1)",
      {kKeyArg, {"compression_block", kBlock, nullptr, kOptional, -1,
                 {{"compression_token", kToken, "COMPRESSION"}, {"compression", kInt}}}}}},
    {"tdigest.add", -3, {"write", "denyoom"}, {"write"}, kTdigest, {Key1("RW")},
     {"Adds one or more observations to a t-digest sketch", "2.4.0",
      "O(N), where N is the number of samples to add",
      {kKeyArg, {"value", kDbl, nullptr, kMultiple}}}},
    {"tdigest.reset", 2, {"write", "denyoom"}, {"write", "fast"}, kTdigest, {Key1("RW")},
     {"Resets a t-digest sketch: empty the sketch and re-initializes it.", "2.4.0", "O(1)",
      {kKeyArg}}},
    // The destination, then numkeys (argv[2]) sources: a keynum spec, hence movablekeys.
    {"tdigest.merge", -4, {"write", "denyoom"}, {"write"}, kTdigest,
     {Key1("RW"), {nullptr, "RO", 2, true, 0, 1, 1}},
     {"Merges multiple t-digest sketches into a single sketch", "2.4.0",
      "O(N*K), where N is the number of centroids and K being the number of input sketches",
      {{"destination-key", kKey, nullptr, 0, 0}, {"numkeys", kInt},
       {"source-key", kKey, nullptr, kMultiple, 1},
       {"compression_block", kBlock, nullptr, kOptional, -1,
        {{"compression_token", kToken, "COMPRESSION"}, {"compression", kInt}}},
       {"override", kToken, "OVERRIDE", kOptional}}}},
    {"tdigest.min", 2, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {"Returns the minimum observation value from a t-digest sketch", "2.4.0", "O(1)",
      {kKeyArg}}},
    {"tdigest.max", 2, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {"Returns the maximum observation value from a t-digest sketch", "2.4.0", "O(1)",
      {kKeyArg}}},
    {"tdigest.quantile", -3, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {"Returns, for each input fraction, an estimation of the value (floating point) that is "
      "smaller than the given fraction of observations", "2.4.0",
      "O(N) where N is the number of quantiles specified.",
      {kKeyArg, {"quantile", kDbl, nullptr, kMultiple}}}},
    {"tdigest.byrank", -3, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {"Returns, for each input rank, an estimation of the value (floating-point) with that rank",
      "2.4.0", "O(N) where N is the number of ranks specified",
      {kKeyArg, {"rank", kDbl, nullptr, kMultiple}}}},
    {"tdigest.byrevrank", -3, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {"Returns, for each input reverse rank, an estimation of the value (floating-point) with "
      "that reverse rank", "2.4.0", "O(N) where N is the number of reverse ranks specified.",
      {kKeyArg, {"reverse_rank", kDbl, nullptr, kMultiple}}}},
    {"tdigest.rank", -3, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {kTdRankSummary, "2.4.0", kTdValuesComplexity,
      {kKeyArg, {"value", kDbl, nullptr, kMultiple}}}},
    {"tdigest.revrank", -3, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {kTdRevRankSummary, "2.4.0", kTdValuesComplexity,
      {kKeyArg, {"value", kDbl, nullptr, kMultiple}}}},
    {"tdigest.cdf", -3, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {kTdCdfSummary, "2.4.0", kTdValuesComplexity, {kKeyArg, {"value", kDbl, nullptr, kMultiple}}}},
    {"tdigest.trimmed_mean", 4, {"readonly"}, {"read"}, kTdigest, {Key1("RO")},
     {"Returns an estimation of the mean value from the sketch, excluding observation values "
      "outside the low and high cutoff quantiles", "2.4.0",
      "O(N) where N is the number of centroids",
      {kKeyArg, {"low_cut_quantile", kDbl}, {"high_cut_quantile", kDbl}}}},
    {"tdigest.info", 2, {"readonly"}, {"read", "fast"}, kTdigest, {Key1("RO")},
     {"Returns information and statistics about a t-digest sketch", "2.4.0", "O(1)", {kKeyArg}}},
};
// clang-format on

// Redis's orders: of a command's flags (addReplyFlagsForCommand), of the ACL categories
// (ACLCommandCategories, module categories after Redis's own) and of key spec flags.
constexpr std::string_view kFlagOrder[] = {"write",   "readonly", "denyoom",      "module",
                                           "admin",   "pubsub",   "noscript",     "blocking",
                                           "loading", "stale",    "skip_monitor", "skip_slowlog",
                                           "asking",  "fast",     "no_auth",      "movablekeys"};
constexpr std::string_view kCategoryOrder[] = {
    "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
    "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting"};
constexpr const char* kArgTypeNames[] = {"string",     "integer", "double", "key",
                                         "pure-token", "oneof",   "block"};

bool Contains(std::initializer_list<const char*> list, std::string_view s) {
  for (const char* x : list) {
    if (s == x) return true;
  }
  return false;
}

bool Movable(const Row& r) {
  for (const KeySpec& k : r.key_specs) {
    if (k.keynum) return true;
  }
  return false;
}

// The flags COMMAND shows: the row's, "module", and "movablekeys" when a key spec is not a range
// (Redis's populateCommandLegacyRangeSpec), in Redis's order.
std::vector<std::string_view> CommandFlags(const Row& r) {
  std::vector<std::string_view> out;
  for (std::string_view f : kFlagOrder) {
    if (Contains(r.flags, f) || f == "module" || (f == "movablekeys" && Movable(r))) {
      out.push_back(f);
    }
  }
  return out;
}

std::vector<std::string_view> Categories(const Row& r) {
  std::vector<std::string_view> out;
  for (std::string_view c : kCategoryOrder) {
    if (Contains(r.acl, c)) out.push_back(c);
  }
  out.push_back(FamilyCategory(r.family));
  return out;
}

void AppendStringSet(std::string* out, const std::vector<std::string_view>& items, Resp resp,
                     std::string_view prefix = {}) {
  protocol::AppendSetHeader(out, static_cast<int64_t>(items.size()), resp);
  for (std::string_view s : items)
    protocol::AppendSimple(out, std::string(prefix) + std::string(s));
}

void AppendKeySpecFlags(std::string* out, std::string_view flags, Resp resp) {
  std::vector<std::string_view> items;
  while (!flags.empty()) {
    const size_t space = std::min(flags.find(' '), flags.size());
    items.push_back(flags.substr(0, space));
    flags.remove_prefix(std::min(space + 1, flags.size()));
  }
  AppendStringSet(out, items, resp);
}

void AppendKeySpec(std::string* out, const KeySpec& k, Resp resp) {
  // Redis's addReplyCommandKeySpecs.
  protocol::AppendMapHeader(out, k.notes != nullptr ? 4 : 3, resp);
  if (k.notes != nullptr) {
    protocol::AppendBulk(out, "notes");
    protocol::AppendBulk(out, k.notes);
  }
  protocol::AppendBulk(out, "flags");
  AppendKeySpecFlags(out, k.flags, resp);
  protocol::AppendBulk(out, "begin_search");
  protocol::AppendMapHeader(out, 2, resp);
  protocol::AppendBulk(out, "type");
  protocol::AppendBulk(out, "index");
  protocol::AppendBulk(out, "spec");
  protocol::AppendMapHeader(out, 1, resp);
  protocol::AppendBulk(out, "index");
  protocol::AppendInteger(out, k.index);
  protocol::AppendBulk(out, "find_keys");
  protocol::AppendMapHeader(out, 2, resp);
  protocol::AppendBulk(out, "type");
  protocol::AppendBulk(out, k.keynum ? "keynum" : "range");
  protocol::AppendBulk(out, "spec");
  protocol::AppendMapHeader(out, 3, resp);
  const char* const names[2][3] = {{"lastkey", "keystep", "limit"},
                                   {"keynumidx", "firstkey", "keystep"}};
  const int values[3] = {k.a, k.b, k.c};
  for (int i = 0; i < 3; ++i) {
    protocol::AppendBulk(out, names[k.keynum ? 1 : 0][i]);
    protocol::AppendInteger(out, values[i]);
  }
}

// Redis's addReplyCommandInfo; first/last/step come from the one range spec (the legacy range).
std::string EncodeEntry(const Row& r, Resp resp) {
  int first = 0, last = 0, step = 0;
  for (const KeySpec& k : r.key_specs) {
    if (k.keynum) continue;
    first = k.index;
    last = k.a >= 0 ? k.index + k.a : k.a;
    step = k.b;
    break;
  }
  std::string out;
  protocol::AppendArrayHeader(&out, 10);
  protocol::AppendBulk(&out, r.name);
  protocol::AppendInteger(&out, r.arity);
  AppendStringSet(&out, CommandFlags(r), resp);
  protocol::AppendInteger(&out, first);
  protocol::AppendInteger(&out, last);
  protocol::AppendInteger(&out, step);
  AppendStringSet(&out, Categories(r), resp, "@");
  protocol::AppendSetHeader(&out, 0, resp);  // tips
  protocol::AppendSetHeader(&out, static_cast<int64_t>(r.key_specs.size()), resp);
  for (const KeySpec& k : r.key_specs) AppendKeySpec(&out, k, resp);
  protocol::AppendSetHeader(&out, 0, resp);  // subcommands
  return out;
}

// Redis's addReplyCommandArgList.
void AppendArgs(std::string* out, std::initializer_list<Arg> args, Resp resp) {
  protocol::AppendArrayHeader(out, static_cast<int64_t>(args.size()));
  for (const Arg& a : args) {
    const bool nested = a.type == ArgType::kOneof || a.type == ArgType::kBlock;
    protocol::AppendMapHeader(
        out,
        2 + (a.key_spec_index != -1) + (a.token != nullptr) + (a.flags != 0) + (nested ? 1 : 0),
        resp);
    protocol::AppendBulk(out, "name");
    protocol::AppendBulk(out, a.name);
    protocol::AppendBulk(out, "type");
    protocol::AppendBulk(out, kArgTypeNames[static_cast<int>(a.type)]);
    if (a.key_spec_index != -1) {
      protocol::AppendBulk(out, "key_spec_index");
      protocol::AppendInteger(out, a.key_spec_index);
    }
    if (a.token != nullptr) {
      protocol::AppendBulk(out, "token");
      protocol::AppendBulk(out, a.token);
    }
    if (a.flags != 0) {
      std::vector<std::string_view> flags;
      if (a.flags & kOptional) flags.push_back("optional");
      if (a.flags & kMultiple) flags.push_back("multiple");
      protocol::AppendBulk(out, "flags");
      AppendStringSet(out, flags, resp);
    }
    if (nested) {
      protocol::AppendBulk(out, "arguments");
      AppendArgs(out, a.args, resp);
    }
  }
}

// Redis's addReplyCommandDocs for a module command, after its name.
std::string EncodeDocs(const Row& r, Resp resp) {
  const Docs& d = r.docs;
  const bool info = d.summary != nullptr;
  std::string out;
  protocol::AppendBulk(&out, r.name);
  const bool history = d.history.size() != 0;
  protocol::AppendMapHeader(&out, (info ? 6 : 2) + (history ? 1 : 0), resp);
  if (info) {
    protocol::AppendBulk(&out, "summary");
    protocol::AppendBulk(&out, d.summary);
    protocol::AppendBulk(&out, "since");
    protocol::AppendBulk(&out, d.since);
  }
  protocol::AppendBulk(&out, "group");
  protocol::AppendBulk(&out, "module");
  if (info) {
    protocol::AppendBulk(&out, "complexity");
    protocol::AppendBulk(&out, d.complexity);
  }
  protocol::AppendBulk(&out, "module");
  protocol::AppendBulk(&out, kModuleName);
  if (history) {
    // Redis 7.0's addReplyCommandHistory: a set of [since, changes] pairs.
    protocol::AppendBulk(&out, "history");
    protocol::AppendSetHeader(&out, static_cast<int64_t>(d.history.size()), resp);
    for (const HistoryEntry& h : d.history) {
      protocol::AppendArrayHeader(&out, 2);
      protocol::AppendBulk(&out, h.since);
      protocol::AppendBulk(&out, h.changes);
    }
  }
  if (info) {
    protocol::AppendBulk(&out, "arguments");
    AppendArgs(&out, d.args, resp);
  }
  return out;
}

const Row* Find(std::string_view name) {
  for (const Row& r : kRows) {
    if (EqualsIgnoreCase(name, r.name)) return &r;
  }
  return nullptr;
}

const Row* FindIn(std::string_view name, SketchFamilies families) {
  const Row* r = Find(name);
  return r != nullptr && (families & FamilyBit(r->family)) ? r : nullptr;
}

std::string Error(std::string_view text) {
  std::string out;
  protocol::AppendError(&out, text);
  return out;
}

// The positions of the keys the key specs find in `args` (Redis's getKeysUsingKeySpecs), and
// each key's spec; false when a spec cannot place its keys (Redis then answers "Invalid
// arguments specified for command").
bool KeysBySpecs(const Row& r, const std::vector<std::string_view>& args,
                 std::vector<std::pair<size_t, const KeySpec*>>* keys) {
  const int argc = static_cast<int>(args.size());
  for (const KeySpec& k : r.key_specs) {
    int first = k.index, last = 0, step = 0;
    if (!k.keynum) {
      step = k.b;
      last = k.a >= 0 ? first + k.a : argc + k.a;
    } else {
      int64_t numkeys = 0;
      if (k.a >= argc || first + k.a >= argc || !ParseLongLong(args[first + k.a], &numkeys) ||
          numkeys < 0) {
        return false;
      }
      step = k.c;
      first += k.b;
      last = first + static_cast<int>(numkeys) - 1;
    }
    if (last >= argc || last < first || first >= argc) return false;
    for (int i = first; i <= last; i += step) keys->emplace_back(static_cast<size_t>(i), &k);
  }
  return true;
}

}  // namespace

std::string_view FamilyCategory(SketchFamily f) {
  switch (f) {
    case SketchFamily::kBloom:
      return "bloom";
    case SketchFamily::kCms:
      return "cms";
    case SketchFamily::kCuckoo:
      return "cuckoo";
    case SketchFamily::kTopk:
      return "topk";
    case SketchFamily::kTdigest:
      return "tdigest";
  }
  return "";
}

bool LookupSketchCommand(std::string_view name, SketchFamily* family) {
  const Row* r = Find(name);
  if (r == nullptr) return false;
  *family = r->family;
  return true;
}

std::vector<SketchCommandName> SketchCommandNames() {
  std::vector<SketchCommandName> out;
  for (const Row& r : kRows) {
    out.push_back({r.name, Contains(r.flags, "write"), r.family, Categories(r)});
  }
  return out;
}

std::vector<std::string> SketchCommandEntries(SketchFamilies families, Resp resp) {
  std::vector<std::string> out;
  for (const Row& r : kRows) {
    if (families & FamilyBit(r.family)) out.push_back(EncodeEntry(r, resp));
  }
  return out;
}

std::string SketchCommandEntry(std::string_view name, SketchFamilies families, Resp resp) {
  const Row* r = FindIn(name, families);
  return r != nullptr ? EncodeEntry(*r, resp) : std::string();
}

std::string SketchCommandDocs(std::string_view name, SketchFamilies families, Resp resp) {
  const Row* r = FindIn(name, families);
  return r != nullptr ? EncodeDocs(*r, resp) : std::string();
}

std::vector<std::string> SketchCommandDocsAll(SketchFamilies families, Resp resp) {
  std::vector<std::string> out;
  for (const Row& r : kRows) {
    if (families & FamilyBit(r.family)) out.push_back(EncodeDocs(r, resp));
  }
  return out;
}

std::vector<std::string_view> SketchCommandList(SketchFamilies families, ListFilter filter,
                                                std::string_view arg) {
  // Redis's shouldFilterFromCommandList: MODULE by the module's name (case-sensitive), ACLCAT
  // by category (any case), PATTERN as a glob without case.
  std::string lower(arg);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string_view> out;
  for (const Row& r : kRows) {
    if (!(families & FamilyBit(r.family))) continue;
    bool pass = true;
    if (filter == ListFilter::kModule) {
      pass = arg == kModuleName;
    } else if (filter == ListFilter::kAclCat) {
      pass = false;
      for (std::string_view c : Categories(r)) pass = pass || c == lower;
    } else if (filter == ListFilter::kPattern) {
      pass = protocol::GlobMatch(lower, r.name);
    }
    if (pass) out.push_back(r.name);
  }
  return out;
}

std::string SketchGetKeys(const std::vector<std::string_view>& args, bool with_flags,
                          SketchFamilies families, Resp resp) {
  // Redis's getKeysSubcommandImpl.
  const Row* r = args.empty() ? nullptr : FindIn(args[0], families);
  if (r == nullptr) return std::string();
  const auto argc = static_cast<int64_t>(args.size());
  if ((r->arity > 0 && r->arity != argc) || argc < -r->arity) {
    return Error("ERR Invalid number of arguments specified for command");
  }
  std::vector<std::pair<size_t, const KeySpec*>> keys;
  if (!KeysBySpecs(*r, args, &keys) || keys.empty()) {
    return Error("ERR Invalid arguments specified for command");
  }
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(keys.size()));
  for (const auto& [pos, spec] : keys) {
    if (with_flags) protocol::AppendArrayHeader(&out, 2);
    protocol::AppendBulk(&out, args[pos]);
    if (with_flags) AppendKeySpecFlags(&out, spec->flags, resp);
  }
  return out;
}

bool SketchArityOk(std::string_view name, size_t argc) {
  const Row* r = Find(name);
  if (r == nullptr) return true;
  const auto n = static_cast<int64_t>(argc);
  return r->arity > 0 ? n == r->arity : n >= -r->arity;
}

std::vector<size_t> SketchCommandKeys(const std::vector<std::string_view>& args) {
  SketchFamily family;
  if (args.size() < 2 || !LookupSketchCommand(args[0], &family)) return {};
  std::vector<size_t> keys = {1};
  int64_t n = 0;
  const bool merge =
      (family == SketchFamily::kCms && EqualsIgnoreCase(args[0], "cms.merge")) ||
      (family == SketchFamily::kTdigest && EqualsIgnoreCase(args[0], "tdigest.merge"));
  if (merge && args.size() > 3 && ParseLongLong(args[2], &n) && n > 0 &&
      static_cast<uint64_t>(n) <= args.size() - 3) {
    for (int64_t i = 0; i < n; ++i) keys.push_back(3 + static_cast<size_t>(i));
  }
  return keys;
}

}  // namespace bloomproxy::filters

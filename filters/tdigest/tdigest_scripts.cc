#include "filters/tdigest/tdigest_scripts.h"

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "filters/common/key_layout.h"
#include "filters/tdigest/tdigest_add.lua.h"
#include "filters/tdigest/tdigest_create.lua.h"
#include "filters/tdigest/tdigest_merge.lua.h"
#include "filters/tdigest/tdigest_read.lua.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// Redis's largest string.
constexpr uint64_t kMaxString = uint64_t{512} * 1024 * 1024;

// x86-64 is little-endian: a double's bytes as the scripts' struct.unpack('<d') reads them.
void AppendDouble(std::string* out, double d) {
  char bytes[sizeof d];
  std::memcpy(bytes, &d, sizeof d);
  out->append(bytes, sizeof d);
}

std::string Doubles(const std::vector<double>& values) {
  std::string out;
  out.reserve(8 * values.size());
  for (double v : values) AppendDouble(&out, v);
  return out;
}

const char* ReadOp(TdigestCommand command) {
  switch (command) {
    case TdigestCommand::kQuantile:
      return "quantile";
    case TdigestCommand::kCdf:
      return "cdf";
    case TdigestCommand::kTrimmedMean:
      return "trimmed";
    case TdigestCommand::kRank:
      return "rank";
    case TdigestCommand::kRevRank:
      return "revrank";
    case TdigestCommand::kByRank:
      return "byrank";
    case TdigestCommand::kByRevRank:
      return "byrevrank";
    default:
      return "header";  // MIN, MAX, INFO
  }
}

}  // namespace

int64_t TdigestMaxCompression(const TdigestConfig& config) {
  // 80 + 16 * (6C + 10) <= max_bytes, and 56 + 16 * (6C + 9) <= 512 MB.
  const uint64_t by_memory = config.max_bytes < 240 ? 0 : (config.max_bytes - 240) / 96;
  const uint64_t by_string = (kMaxString - 56 - 144) / 96;
  return static_cast<int64_t>(std::min(by_memory, by_string));
}

TdigestCall TdigestCreateCall(int64_t compression, bool check) {
  if (check) return {&lua::kTdigestCreate, {"check"}};
  return {&lua::kTdigestCreate, {"create", NewId(), std::to_string(compression)}};
}

TdigestCall TdigestAddCall(const std::vector<double>& values, const std::vector<size_t>& counts) {
  TdigestCall call{&lua::kTdigestAdd, {"add"}};
  std::string nodes;
  nodes.reserve(16 * values.size());
  double low = DBL_MAX;
  double high = -DBL_MAX;
  const int64_t one = 1;
  char weight[sizeof one];
  std::memcpy(weight, &one, sizeof one);
  for (double v : values) {
    AppendDouble(&nodes, v);
    nodes.append(weight, sizeof weight);
    // The library's strict comparisons, so that -0 and 0 stay as it leaves them.
    if (v < low) low = v;
    if (v > high) high = v;
  }
  call.argv.push_back(std::move(nodes));
  call.argv.emplace_back();
  AppendDouble(&call.argv.back(), low);
  call.argv.emplace_back();
  AppendDouble(&call.argv.back(), high);
  for (size_t c : counts) call.argv.push_back(std::to_string(c));
  return call;
}

TdigestCall TdigestResetCall() { return {&lua::kTdigestAdd, {"reset"}}; }

TdigestCall TdigestCheckCall() { return {&lua::kTdigestRead, {"check"}}; }

TdigestCall TdigestReadCall(const TdigestRequest& request) {
  TdigestCall call{&lua::kTdigestRead, {ReadOp(request.command)}};
  if (request.command == TdigestCommand::kByRank || request.command == TdigestCommand::kByRevRank) {
    std::vector<double> ranks;
    for (int64_t r : request.ranks) ranks.push_back(static_cast<double>(r));
    call.argv.push_back(Doubles(ranks));
  } else {
    call.argv.push_back(Doubles(request.values));
  }
  return call;
}

void AppendTdigestCall(std::string* out, std::string_view name, const TdigestCall& call, bool body,
                       protocol::UpstreamKind upstream) {
  const std::string prefix = DataKeyPrefix(name);
  // Reads may compress the digest and write it back: no script goes as EVAL_RO.
  AppendStructureScript(out, *call.script, /*read_only=*/false, body, upstream, name,
                        TdigestMarkerKey(prefix, name), prefix, call.argv);
}

void AppendTdigestMerge(std::string* out, const TdigestRequest& request,
                        const TdigestConfig& config, bool body) {
  std::vector<std::string> owned;
  owned.push_back(std::to_string(1 + request.sources.size()));
  owned.push_back(NewId());
  owned.push_back(request.has_compression ? std::to_string(request.compression) : "");
  owned.push_back(request.override_dest ? "1" : "0");
  owned.push_back(std::to_string(TdigestMaxCompression(config)));
  std::vector<std::string_view> keys = {request.key};
  keys.insert(keys.end(), request.sources.begin(), request.sources.end());
  for (std::string_view k : keys) {
    const std::string prefix = DataKeyPrefix(k);
    owned.push_back(TdigestMarkerKey(prefix, k));
    owned.push_back(prefix);
  }
  std::vector<std::string_view> args;
  args.push_back(body ? "EVAL" : "EVALSHA");
  args.push_back(body ? lua::kTdigestMerge.body : lua::kTdigestMerge.sha1);
  args.push_back(owned[0]);
  args.insert(args.end(), keys.begin(), keys.end());
  for (size_t i = 1; i < owned.size(); ++i) args.push_back(owned[i]);
  protocol::AppendCommand(out, args);
}

}  // namespace bloomproxy::filters

#include "filters/tdigest/tdigest_args.h"

#include <algorithm>
#include <cmath>

#include "filters/common/module_args.h"

namespace bloomproxy::filters {
namespace {

struct CommandName {
  std::string_view name;  // lower case, as the arity error names it
  TdigestCommand command;
};

constexpr CommandName kCommands[] = {
    {"tdigest.create", TdigestCommand::kCreate},
    {"tdigest.reset", TdigestCommand::kReset},
    {"tdigest.add", TdigestCommand::kAdd},
    {"tdigest.merge", TdigestCommand::kMerge},
    {"tdigest.min", TdigestCommand::kMin},
    {"tdigest.max", TdigestCommand::kMax},
    {"tdigest.quantile", TdigestCommand::kQuantile},
    {"tdigest.cdf", TdigestCommand::kCdf},
    {"tdigest.trimmed_mean", TdigestCommand::kTrimmedMean},
    {"tdigest.rank", TdigestCommand::kRank},
    {"tdigest.revrank", TdigestCommand::kRevRank},
    {"tdigest.byrank", TdigestCommand::kByRank},
    {"tdigest.byrevrank", TdigestCommand::kByRevRank},
    {"tdigest.info", TdigestCommand::kInfo},
};

std::string_view LowerName(TdigestCommand command) {
  for (const CommandName& c : kCommands) {
    if (c.command == command) return c.name;
  }
  return "";
}

std::string AfterKey(std::string_view error, TdigestRequest* out) {
  out->error_order = TdigestErrorOrder::kAfterKey;
  return std::string(error);
}

// CREATE's and MERGE's COMPRESSION value: strict int64, positive.
std::string_view ParseCompression(std::string_view arg, int64_t* out) {
  if (!ParseLongLong(arg, out)) return kTdigestErrParseCompression;
  if (*out <= 0) return kTdigestErrCompressionPositive;
  return "";
}

std::string ParseCreate(const std::vector<std::string_view>& args, TdigestRequest* out) {
  if (args.size() == 2) return "";
  if (!EqualsIgnoreCase(args[2], "COMPRESSION") && !EqualsIgnoreCase(args[3], "COMPRESSION")) {
    return AfterKey(kTdigestErrWrongKeyword, out);
  }
  const std::string_view error = ParseCompression(args[3], &out->compression);
  if (!error.empty()) return AfterKey(error, out);
  if (!TdigestCompressionFits(out->compression)) return AfterKey(kTdigestErrAllocation, out);
  out->has_compression = true;
  return "";
}

std::string ParseMerge(const std::vector<std::string_view>& args, TdigestRequest* out) {
  int64_t numkeys = 0;
  if (!ParseLongLong(args[2], &numkeys)) return AfterKey(kTdigestErrParseNumkeys, out);
  if (numkeys <= 0) return AfterKey(kTdigestErrNumkeysPositive, out);
  const size_t argc = args.size();
  if (static_cast<uint64_t>(numkeys) > argc - 3) {
    return AfterKey(WrongArityError("tdigest.merge"), out);
  }
  const size_t tail = 3 + static_cast<size_t>(numkeys);
  out->sources.assign(args.begin() + 3, args.begin() + static_cast<std::ptrdiff_t>(tail));
  size_t compression_at = 0;
  for (size_t i = tail; i < argc && compression_at == 0; ++i) {
    if (EqualsIgnoreCase(args[i], "COMPRESSION")) compression_at = i;
  }
  if (compression_at != 0) {
    if (compression_at + 1 == argc) return AfterKey(WrongArityError("tdigest.merge"), out);
    const std::string_view error = ParseCompression(args[compression_at + 1], &out->compression);
    if (!error.empty()) return AfterKey(error, out);
    out->has_compression = true;
  }
  for (size_t i = tail; i < argc && !out->override_dest; ++i) {
    out->override_dest = EqualsIgnoreCase(args[i], "OVERRIDE");
  }
  if (tail < argc && !out->has_compression && !out->override_dest) {
    return AfterKey(kTdigestErrWrongKeyword, out);
  }
  return "";
}

// ADD, QUANTILE, CDF, RANK, REVRANK: one double per argument from args[2].
std::string ParseValues(const std::vector<std::string_view>& args, TdigestRequest* out) {
  for (size_t i = 2; i < args.size(); ++i) {
    double v = 0;
    const bool parsed = ParseDouble(args[i], &v);
    switch (out->command) {
      case TdigestCommand::kAdd:
        if (!parsed) return AfterKey(kTdigestErrParseVal, out);
        if (std::isinf(v)) return AfterKey(kTdigestErrValFinite, out);
        break;
      case TdigestCommand::kQuantile:
        if (!parsed) return AfterKey(kTdigestErrParseQuantile, out);
        if (v < 0 || v > 1) return AfterKey(kTdigestErrQuantileRange, out);
        break;
      case TdigestCommand::kCdf:
        if (!parsed) return AfterKey(kTdigestErrParseCdf, out);
        break;
      default:  // RANK, REVRANK
        if (!parsed) return AfterKey(kTdigestErrParseValue, out);
        break;
    }
    out->values.push_back(v);
  }
  return "";
}

std::string ParseRanks(const std::vector<std::string_view>& args, TdigestRequest* out) {
  for (size_t i = 2; i < args.size(); ++i) {
    int64_t r = 0;
    if (!ParseLongLong(args[i], &r)) return AfterKey(kTdigestErrParseRank, out);
    if (r < 0) return AfterKey(kTdigestErrRankNegative, out);
    out->ranks.push_back(r);
  }
  return "";
}

std::string ParseTrimmedMean(const std::vector<std::string_view>& args, TdigestRequest* out) {
  double lo = 0;
  double hi = 0;
  if (!ParseDouble(args[2], &lo)) return AfterKey(kTdigestErrParseLow, out);
  if (!ParseDouble(args[3], &hi)) return AfterKey(kTdigestErrParseHigh, out);
  if (lo < 0 || lo > 1 || hi < 0 || hi > 1) return AfterKey(kTdigestErrCutRange, out);
  if (lo >= hi) return AfterKey(kTdigestErrCutOrder, out);
  out->values = {lo, hi};
  return "";
}

bool ArityOk(TdigestCommand command, size_t argc) {
  switch (command) {
    case TdigestCommand::kCreate:
      return argc == 2 || argc == 4;
    case TdigestCommand::kReset:
    case TdigestCommand::kMin:
    case TdigestCommand::kMax:
    case TdigestCommand::kInfo:
      return argc == 2;
    case TdigestCommand::kMerge:
      return argc >= 4;
    case TdigestCommand::kTrimmedMean:
      return argc == 4;
    default:
      return argc >= 3;
  }
}

}  // namespace

bool LookupTdigestCommand(std::string_view name, TdigestCommand* out) {
  for (const CommandName& c : kCommands) {
    if (EqualsIgnoreCase(name, c.name)) {
      *out = c.command;
      return true;
    }
  }
  return false;
}

std::string ParseTdigestRequest(const std::vector<std::string_view>& args, TdigestRequest* out) {
  *out = TdigestRequest{};
  if (args.empty() || !LookupTdigestCommand(args[0], &out->command)) {
    return "-ERR unknown command\r\n";
  }
  if (args.size() > 1) out->key = args[1];
  if (!ArityOk(out->command, args.size())) return WrongArityError(LowerName(out->command));
  switch (out->command) {
    case TdigestCommand::kCreate:
      return ParseCreate(args, out);
    case TdigestCommand::kMerge:
      return ParseMerge(args, out);
    case TdigestCommand::kAdd:
    case TdigestCommand::kQuantile:
    case TdigestCommand::kCdf:
    case TdigestCommand::kRank:
    case TdigestCommand::kRevRank:
      return ParseValues(args, out);
    case TdigestCommand::kByRank:
    case TdigestCommand::kByRevRank:
      return ParseRanks(args, out);
    case TdigestCommand::kTrimmedMean:
      return ParseTrimmedMean(args, out);
    default:
      return "";
  }
}

int64_t TdigestMergeCompression(const TdigestRequest& req, const Tdigest* dest,
                                const std::vector<int64_t>& sources) {
  if (req.has_compression) return req.compression;
  if (!req.override_dest && dest != nullptr) return dest->compression;
  int64_t largest = 0;
  for (int64_t c : sources) largest = std::max(largest, c);
  return largest;
}

bool TdigestCompressionFits(int64_t compression) {
  return static_cast<double>(compression) <= kTdigestMaxCompression;
}

}  // namespace bloomproxy::filters

// The TDIGEST.* part of bf_args_fuzzer.cc (one target, so CI fuzzes it in the time it had for BF):
// ParseTdigestRequest checked against a reference parser written from the spec's grammar
// ("MERGE", "Argument parsing", "Per command" of the t-digest spec). Included by bf_args_fuzzer.cc
// after its helpers (FUZZ_CHECK, Args, Same, EqualsIgnoreCase, IsInteger) and cf_args_fuzz.h
// (FlipAll), which it uses.
//
// Input layout: the first byte picks the command name and how the rest is split:
//   bits 0-3  0..13: the name of one of the fourteen TDIGEST commands (kTdNames below);
//             14..15: no pick, the first argument of the rest is the name, as sent
//   bit 4     the picked name in lower case (else upper case)
//   bit 5     arguments are separated by '\n' (else by NUL)
//   bit 6     ignored
//   bit 7     1 (TDIGEST)
// The rest, split on the separator, gives the arguments after the name.
//
// Checked: the reply is "" or one of tdigest_args.h's errors (or the arity error naming the
// command in lower case), with the TdigestErrorOrder the spec's check order gives it; the reply,
// the order and every field equal the reference's; the key is args[1] whenever there is one; on
// success the values are finite where the spec says so, quantiles and cuts in [0,1], lo < hi,
// ranks >= 0, MERGE's sources are the numkeys arguments after numkeys themselves (views); the
// name's letters in the other case, parsed into a request left dirty by an earlier use, give the
// same request; every letter flipped gives the same error and numbers. For a good MERGE,
// TdigestMergeCompression's pick and TdigestCompressionFits against step 6 of the spec.
#pragma once

#include <algorithm>

#include "filters/tdigest/tdigest.h"
#include "filters/tdigest/tdigest_args.h"

namespace {
namespace td_fuzz {

namespace bf = bloomproxy::filters;
using bf::TdigestCommand;
using bf::TdigestErrorOrder;
using bf::TdigestRequest;

struct TdName {
  const char* upper;
  const char* lower;
  TdigestCommand command;
};
constexpr TdName kTdNames[] = {
    {"TDIGEST.CREATE", "tdigest.create", TdigestCommand::kCreate},
    {"TDIGEST.RESET", "tdigest.reset", TdigestCommand::kReset},
    {"TDIGEST.ADD", "tdigest.add", TdigestCommand::kAdd},
    {"TDIGEST.MERGE", "tdigest.merge", TdigestCommand::kMerge},
    {"TDIGEST.MIN", "tdigest.min", TdigestCommand::kMin},
    {"TDIGEST.MAX", "tdigest.max", TdigestCommand::kMax},
    {"TDIGEST.QUANTILE", "tdigest.quantile", TdigestCommand::kQuantile},
    {"TDIGEST.CDF", "tdigest.cdf", TdigestCommand::kCdf},
    {"TDIGEST.TRIMMED_MEAN", "tdigest.trimmed_mean", TdigestCommand::kTrimmedMean},
    {"TDIGEST.RANK", "tdigest.rank", TdigestCommand::kRank},
    {"TDIGEST.REVRANK", "tdigest.revrank", TdigestCommand::kRevRank},
    {"TDIGEST.BYRANK", "tdigest.byrank", TdigestCommand::kByRank},
    {"TDIGEST.BYREVRANK", "tdigest.byrevrank", TdigestCommand::kByRevRank},
    {"TDIGEST.INFO", "tdigest.info", TdigestCommand::kInfo},
};
constexpr unsigned kTdNameCount = sizeof(kTdNames) / sizeof(kTdNames[0]);

// The spec's allocation limit, written here as the spec gives it (not the header's constant).
constexpr double kSpecMaxCompression = 384307168202282315.0;

const TdName* FindTdName(std::string_view name) {
  for (const TdName& n : kTdNames) {
    if (EqualsIgnoreCase(name, n.upper)) return &n;
  }
  return nullptr;
}

std::string TdArity(const TdName& name) {
  return std::string("-ERR wrong number of arguments for '") + name.lower + "' command\r\n";
}

// Every argument error ParseTdigestRequest may give (the key-check and MERGE-step errors never).
bool IsArgumentError(const std::string& e) {
  for (std::string_view k :
       {bf::kTdigestErrWrongKeyword, bf::kTdigestErrParseCompression,
        bf::kTdigestErrCompressionPositive, bf::kTdigestErrAllocation, bf::kTdigestErrParseVal,
        bf::kTdigestErrValFinite, bf::kTdigestErrParseNumkeys, bf::kTdigestErrNumkeysPositive,
        bf::kTdigestErrParseQuantile, bf::kTdigestErrQuantileRange, bf::kTdigestErrParseCdf,
        bf::kTdigestErrParseValue, bf::kTdigestErrParseRank, bf::kTdigestErrRankNegative,
        bf::kTdigestErrParseLow, bf::kTdigestErrParseHigh, bf::kTdigestErrCutRange,
        bf::kTdigestErrCutOrder}) {
    if (e == k) return true;
  }
  return false;
}

// The reference's verdict: the reply ("" when good) and when it is given.
struct Verdict {
  std::string error;
  TdigestErrorOrder order = TdigestErrorOrder::kNow;
};

Verdict After(std::string_view error) { return {std::string(error), TdigestErrorOrder::kAfterKey}; }

bool ArityOk(TdigestCommand c, size_t argc) {
  switch (c) {
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
    default:  // ADD, QUANTILE, CDF, RANK, REVRANK, BYRANK, BYREVRANK
      return argc >= 3;
  }
}

// COMPRESSION's value (CREATE and MERGE): strict int64, positive.
std::string_view RefCompression(std::string_view arg, int64_t* out) {
  if (!IsInteger(arg, out)) return bf::kTdigestErrParseCompression;
  if (*out <= 0) return bf::kTdigestErrCompressionPositive;
  return {};
}

Verdict RefCreate(const std::vector<std::string_view>& args, TdigestRequest* want) {
  if (args.size() == 2) return {};
  // COMPRESSION at argv[2] or argv[3]; the value is always argv[3].
  if (!EqualsIgnoreCase(args[2], "COMPRESSION") && !EqualsIgnoreCase(args[3], "COMPRESSION")) {
    return After(bf::kTdigestErrWrongKeyword);
  }
  if (std::string_view e = RefCompression(args[3], &want->compression); !e.empty()) {
    return After(e);
  }
  if (static_cast<double>(want->compression) > kSpecMaxCompression) {
    return After(bf::kTdigestErrAllocation);
  }
  want->has_compression = true;
  return {};
}

Verdict RefMerge(const std::vector<std::string_view>& args, const TdName& name,
                 TdigestRequest* want) {
  const size_t argc = args.size();
  int64_t numkeys = 0;
  if (!IsInteger(args[2], &numkeys)) return After(bf::kTdigestErrParseNumkeys);
  if (numkeys <= 0) return After(bf::kTdigestErrNumkeysPositive);
  if (numkeys > static_cast<int64_t>(argc - 3)) return After(TdArity(name));
  const size_t tail = 3 + static_cast<size_t>(numkeys);
  for (size_t i = 3; i < tail; ++i) want->sources.push_back(args[i]);
  size_t compression = 0;
  size_t override_at = 0;
  for (size_t i = argc; i-- > tail;) {  // the first match of each: scan back, keep the last seen
    if (EqualsIgnoreCase(args[i], "COMPRESSION")) compression = i;
    if (EqualsIgnoreCase(args[i], "OVERRIDE")) override_at = i;
  }
  if (compression != 0) {
    if (compression + 1 == argc) return After(TdArity(name));
    if (std::string_view e = RefCompression(args[compression + 1], &want->compression);
        !e.empty()) {
      return After(e);
    }
    want->has_compression = true;
  }
  want->override_dest = override_at != 0;
  if (tail < argc && compression == 0 && override_at == 0) {
    return After(bf::kTdigestErrWrongKeyword);
  }
  return {};
}

// One number of ADD, QUANTILE, CDF, RANK or REVRANK: "" or its error.
std::string_view RefValue(TdigestCommand c, std::string_view arg, double* v) {
  const bool parsed = bf::ParseDouble(arg, v);
  switch (c) {
    case TdigestCommand::kAdd:
      if (!parsed) return bf::kTdigestErrParseVal;
      if (!std::isfinite(*v)) return bf::kTdigestErrValFinite;
      return {};
    case TdigestCommand::kQuantile:
      if (!parsed) return bf::kTdigestErrParseQuantile;
      if (!(*v >= 0 && *v <= 1)) return bf::kTdigestErrQuantileRange;
      return {};
    case TdigestCommand::kCdf:
      return parsed ? std::string_view() : bf::kTdigestErrParseCdf;
    default:
      return parsed ? std::string_view() : bf::kTdigestErrParseValue;
  }
}

Verdict RefTrimmedMean(const std::vector<std::string_view>& args, TdigestRequest* want) {
  double lo = 0;
  double hi = 0;
  if (!bf::ParseDouble(args[2], &lo)) return After(bf::kTdigestErrParseLow);
  if (!bf::ParseDouble(args[3], &hi)) return After(bf::kTdigestErrParseHigh);
  if (!(lo >= 0 && lo <= 1 && hi >= 0 && hi <= 1)) return After(bf::kTdigestErrCutRange);
  if (!(lo < hi)) return After(bf::kTdigestErrCutOrder);
  want->values = {lo, hi};
  return {};
}

Verdict Reference(const std::vector<std::string_view>& args, const TdName& name,
                  TdigestRequest* want) {
  *want = TdigestRequest{};
  want->command = name.command;
  if (args.size() > 1) want->key = args[1];
  if (!ArityOk(name.command, args.size())) return {TdArity(name), TdigestErrorOrder::kNow};
  switch (name.command) {
    case TdigestCommand::kCreate:
      return RefCreate(args, want);
    case TdigestCommand::kMerge:
      return RefMerge(args, name, want);
    case TdigestCommand::kTrimmedMean:
      return RefTrimmedMean(args, want);
    case TdigestCommand::kByRank:
    case TdigestCommand::kByRevRank:
      for (size_t i = 2; i < args.size(); ++i) {
        int64_t r = 0;
        if (!IsInteger(args[i], &r)) return After(bf::kTdigestErrParseRank);
        if (r < 0) return After(bf::kTdigestErrRankNegative);
        want->ranks.push_back(r);
      }
      return {};
    case TdigestCommand::kAdd:
    case TdigestCommand::kQuantile:
    case TdigestCommand::kCdf:
    case TdigestCommand::kRank:
    case TdigestCommand::kRevRank:
      for (size_t i = 2; i < args.size(); ++i) {
        double v = 0;
        if (std::string_view e = RefValue(name.command, args[i], &v); !e.empty()) return After(e);
        want->values.push_back(v);
      }
      return {};
    default:  // RESET, MIN, MAX, INFO
      return {};
  }
}

// The numbers and flags of two requests (views aside); doubles bit for bit.
bool SameTdNumbers(const TdigestRequest& a, const TdigestRequest& b) {
  if (a.command != b.command || a.compression != b.compression ||
      a.has_compression != b.has_compression || a.override_dest != b.override_dest ||
      a.sources.size() != b.sources.size() || a.values.size() != b.values.size() ||
      a.ranks != b.ranks) {
    return false;
  }
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (std::memcmp(&a.values[i], &b.values[i], sizeof(double)) != 0) return false;
  }
  return true;
}

bool SameTdRequest(const TdigestRequest& a, const TdigestRequest& b) {
  if (!SameTdNumbers(a, b) || !Same(a.key, b.key)) return false;
  for (size_t i = 0; i < a.sources.size(); ++i) {
    if (!Same(a.sources[i], b.sources[i])) return false;
  }
  return true;
}

// The spec's own rules on a good request, apart from the reference.
void CheckGood(const std::vector<std::string_view>& args, const TdigestRequest& req) {
  const size_t argc = args.size();
  FUZZ_CHECK(argc >= 2 && Same(req.key, args[1]));
  const bool merge = req.command == TdigestCommand::kMerge;
  const bool create = req.command == TdigestCommand::kCreate;
  if (!merge) FUZZ_CHECK(req.sources.empty() && !req.override_dest);
  if (!merge && !create) FUZZ_CHECK(!req.has_compression);
  if (!req.has_compression) FUZZ_CHECK(req.compression == bf::kTdigestDefaultCompression);
  if (req.has_compression) FUZZ_CHECK(req.compression > 0);
  if (create) {
    FUZZ_CHECK(req.has_compression == (argc == 4));
    FUZZ_CHECK(bf::TdigestCompressionFits(req.compression));
  }
  if (req.command != TdigestCommand::kByRank && req.command != TdigestCommand::kByRevRank) {
    FUZZ_CHECK(req.ranks.empty());
  } else {
    FUZZ_CHECK(req.ranks.size() == argc - 2);
    for (int64_t r : req.ranks) FUZZ_CHECK(r >= 0);
  }
  for (double v : req.values) FUZZ_CHECK(!std::isnan(v));
  switch (req.command) {
    case TdigestCommand::kAdd:
    case TdigestCommand::kCdf:
    case TdigestCommand::kRank:
    case TdigestCommand::kRevRank:
    case TdigestCommand::kQuantile:
      FUZZ_CHECK(req.values.size() == argc - 2);
      for (double v : req.values) {
        if (req.command == TdigestCommand::kAdd) FUZZ_CHECK(std::isfinite(v));
        if (req.command == TdigestCommand::kQuantile) FUZZ_CHECK(v >= 0 && v <= 1);
      }
      break;
    case TdigestCommand::kTrimmedMean:
      FUZZ_CHECK(req.values.size() == 2);
      FUZZ_CHECK(req.values[0] >= 0 && req.values[1] <= 1 && req.values[0] < req.values[1]);
      break;
    case TdigestCommand::kMerge: {
      // numkeys sources, views of args[3..3+numkeys); then a tail with a keyword, or none.
      int64_t numkeys = 0;
      FUZZ_CHECK(IsInteger(args[2], &numkeys) && numkeys >= 1);
      FUZZ_CHECK(req.sources.size() == static_cast<size_t>(numkeys) &&
                 3 + req.sources.size() <= argc);
      for (size_t i = 0; i < req.sources.size(); ++i) FUZZ_CHECK(Same(req.sources[i], args[3 + i]));
      FUZZ_CHECK(3 + req.sources.size() == argc || req.has_compression || req.override_dest);
      FUZZ_CHECK(req.values.empty());
      break;
    }
    default:
      FUZZ_CHECK(req.values.empty());
  }
}

// Step 6 of MERGE, with dest and the sources' compressions taken from the input's bytes.
void CheckMergeCompression(const TdigestRequest& req, const std::vector<std::string_view>& args) {
  std::vector<int64_t> sources;
  for (std::string_view s : req.sources) {
    uint64_t bits = 0;
    for (char ch : s.substr(0, 8)) bits = (bits << 8) | static_cast<uint8_t>(ch);
    const auto c = static_cast<int64_t>(bits >> 1);  // 0 .. INT64_MAX; a digest's is >= 1
    sources.push_back(c < 1 ? 1 : c);
  }
  bf::Tdigest dest_digest;
  const bf::Tdigest* dest = &dest_digest;
  dest_digest.compression = static_cast<int64_t>(args[1].size()) * 1000 + 1;
  const int64_t largest = *std::max_element(sources.begin(), sources.end());
  for (const bf::Tdigest* d : {static_cast<const bf::Tdigest*>(nullptr), dest}) {
    const int64_t want = req.has_compression                    ? req.compression
                         : (!req.override_dest && d != nullptr) ? d->compression
                                                                : largest;
    const int64_t got = bf::TdigestMergeCompression(req, d, sources);
    FUZZ_CHECK(got == want);
    FUZZ_CHECK(bf::TdigestCompressionFits(got) ==
               (static_cast<double>(got) <= kSpecMaxCompression));
  }
}

// Parses args into *req and checks the result; returns the reply.
std::string ParseAndCheck(const std::vector<std::string_view>& args, const TdName* name,
                          TdigestRequest* req) {
  const std::string error = bf::ParseTdigestRequest(args, req);
  TdigestCommand looked_up = TdigestCommand::kInfo;
  FUZZ_CHECK(bf::LookupTdigestCommand(args[0], &looked_up) == (name != nullptr));
  if (name == nullptr) {
    FUZZ_CHECK(error == "-ERR unknown command\r\n");  // not a TDIGEST command: never asked
    return error;
  }
  FUZZ_CHECK(looked_up == name->command);
  FUZZ_CHECK(req->command == name->command);
  FUZZ_CHECK(args.size() < 2 ? req->key.empty() : Same(req->key, args[1]));
  TdigestRequest want;
  const Verdict verdict = Reference(args, *name, &want);
  FUZZ_CHECK(error == verdict.error);
  if (!error.empty()) {
    FUZZ_CHECK(IsArgumentError(error) || error == TdArity(*name));
    FUZZ_CHECK(req->error_order == verdict.order);
    // Arity errors are replied at once, but MERGE's numkeys > argc-3 and COMPRESSION last.
    if (error == TdArity(*name) && req->command != TdigestCommand::kMerge) {
      FUZZ_CHECK(req->error_order == TdigestErrorOrder::kNow);
    }
    if (IsArgumentError(error)) FUZZ_CHECK(req->error_order == TdigestErrorOrder::kAfterKey);
    return error;
  }
  FUZZ_CHECK(SameTdRequest(*req, want));
  CheckGood(args, *req);
  if (req->command == TdigestCommand::kMerge) CheckMergeCompression(*req, args);
  return error;
}

// A request as an earlier use of every field leaves it.
void Dirty(TdigestRequest* r, std::string_view view) {
  r->command = TdigestCommand::kMerge;
  r->key = view;
  r->compression = 7;
  r->has_compression = true;
  r->override_dest = true;
  r->sources.assign(3, view);
  r->values = {0.25, 0.5};
  r->ranks = {1, 2, 3};
  r->error_order = TdigestErrorOrder::kAfterKey;
}

int FuzzTd(const uint8_t* bytes, size_t size) {
  const unsigned pick = bytes[0] & 0x0f;
  const bool lower = (bytes[0] & 0x10) != 0;
  const char separator = (bytes[0] & 0x20) ? '\n' : '\0';
  const std::string_view rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  std::vector<std::string_view> parts;
  for (size_t start = 0; !rest.empty();) {
    const size_t end = rest.find(separator, start);
    parts.push_back(rest.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::string name;
  size_t first = 0;
  if (pick < kTdNameCount) {
    name = lower ? kTdNames[pick].lower : kTdNames[pick].upper;
  } else {
    if (parts.empty()) return 0;
    name.assign(parts[0]);
    first = 1;
  }
  Args args;
  args.Add(name);
  for (size_t i = first; i < parts.size(); ++i) args.Add(parts[i]);
  const TdName* known = FindTdName(name);
  if (pick < kTdNameCount) FUZZ_CHECK(known == &kTdNames[pick]);

  TdigestRequest req;
  const std::string error = ParseAndCheck(args.views(), known, &req);

  // The name's letters flipped, the same argument allocations, a dirty request: the same result.
  Args flipped_name;
  cf_fuzz::FlipAll({args.views()[0]}, &flipped_name);
  std::vector<std::string_view> views2 = flipped_name.views();
  views2.insert(views2.end(), args.views().begin() + 1, args.views().end());
  TdigestRequest req2;
  Dirty(&req2, flipped_name.views()[0]);
  FUZZ_CHECK(ParseAndCheck(views2, known, &req2) == error);
  if (error.empty()) FUZZ_CHECK(SameTdRequest(req, req2));
  if (!error.empty()) FUZZ_CHECK(req2.error_order == req.error_order);

  // Every letter flipped (keywords, "inf", "1e3" included): the same error and numbers.
  Args flipped_all;
  cf_fuzz::FlipAll(args.views(), &flipped_all);
  TdigestRequest req3;
  Dirty(&req3, flipped_all.views()[0]);
  FUZZ_CHECK(ParseAndCheck(flipped_all.views(), known, &req3) == error);
  if (error.empty()) FUZZ_CHECK(SameTdNumbers(req, req3));
  return 0;
}

}  // namespace td_fuzz
}  // namespace

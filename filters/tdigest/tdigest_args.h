// Argument parsing of the TDIGEST.* commands: RedisBloom's grammar, its check order and its error
// replies verbatim (src/rm_tdigest.c, RMUtil_ArgIndex). Pure; no sockets.
//
// RedisBloom looks at the key before most argument errors, so the parser says *when* each error
// it finds is to be replied (TdigestRequest::error_order):
//
//   command        arity        before the key   key check (the plan's)     then
//   CREATE         2 or 4       -                exists: t-digest -> key    wrong keyword,
//                                                already exists, other ->   compression parse,
//                                                WRONGTYPE                  <= 0, allocation failed
//   RESET MIN MAX  == 2         -                missing -> key does not    (none)
//   INFO                                         exist, other -> WRONGTYPE
//   ADD            >= 3         -                missing / WRONGTYPE        each value, in order
//   QUANTILE CDF   >= 3         -                missing / WRONGTYPE        each argument
//   RANK REVRANK
//   BYRANK BYREVRANK
//   TRIMMED_MEAN   == 4         -                missing / WRONGTYPE        lo parse, hi parse,
//                                                                           range, order
//   MERGE          >= 4         -                dest of another type ->    numkeys parse, <= 0,
//                                                WRONGTYPE (missing is      numkeys > argc-3 (arity
//                                                fine)                      error), the tail's
//                                                                           COMPRESSION / OVERRIDE
//                                                                           / wrong keyword
//   then, MERGE only (the plan's): every source in order (missing -> key does not exist, other
//   type -> WRONGTYPE; a source named as dest is dest), then the compression the new digest gets
//   (TdigestMergeCompression) above kTdigestMaxCompression -> kTdigestErrMergeAllocation.
//
// All arguments are validated before anything changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/tdigest/tdigest.h"
#include "protocol/errors.h"

namespace bloomproxy::filters {

// Every TDIGEST reply error, as RedisBloom sends it (RESP2 bytes; RESP3 sends the same).
inline constexpr std::string_view kTdigestErrKeyMissing = "-ERR T-Digest: key does not exist\r\n";
inline constexpr std::string_view kTdigestErrKeyExists = "-ERR T-Digest: key already exists\r\n";
inline constexpr std::string_view kTdigestErrWrongType = protocol::errors::kWrongType;
inline constexpr std::string_view kTdigestErrWrongKeyword = "-ERR T-Digest: wrong keyword\r\n";
inline constexpr std::string_view kTdigestErrParseCompression =
    "-ERR T-Digest: error parsing compression parameter\r\n";
inline constexpr std::string_view kTdigestErrCompressionPositive =
    "-ERR T-Digest: compression parameter needs to be a positive integer\r\n";
inline constexpr std::string_view kTdigestErrAllocation = "-ERR T-Digest: allocation failed\r\n";
inline constexpr std::string_view kTdigestErrMergeAllocation =
    "-ERR T-Digest: allocation of destination digest failed\r\n";
inline constexpr std::string_view kTdigestErrParseVal =
    "-ERR T-Digest: error parsing val parameter\r\n";
inline constexpr std::string_view kTdigestErrValFinite =
    "-ERR T-Digest: val parameter needs to be a finite number\r\n";
inline constexpr std::string_view kTdigestErrOverflow = "-ERR T-Digest: overflow detected\r\n";
inline constexpr std::string_view kTdigestErrParseNumkeys =
    "-ERR T-Digest: error parsing numkeys\r\n";
inline constexpr std::string_view kTdigestErrNumkeysPositive =
    "-ERR T-Digest: numkeys needs to be a positive integer\r\n";
inline constexpr std::string_view kTdigestErrParseQuantile =
    "-ERR T-Digest: error parsing quantile\r\n";
inline constexpr std::string_view kTdigestErrQuantileRange =
    "-ERR T-Digest: quantile should be in [0,1]\r\n";
inline constexpr std::string_view kTdigestErrParseCdf = "-ERR T-Digest: error parsing cdf\r\n";
inline constexpr std::string_view kTdigestErrParseValue = "-ERR T-Digest: error parsing value\r\n";
inline constexpr std::string_view kTdigestErrParseRank = "-ERR T-Digest: error parsing rank\r\n";
inline constexpr std::string_view kTdigestErrRankNegative =
    "-ERR T-Digest: rank needs to be non negative\r\n";
inline constexpr std::string_view kTdigestErrParseLow =
    "-ERR T-Digest: error parsing low_cut_percentile\r\n";
inline constexpr std::string_view kTdigestErrParseHigh =
    "-ERR T-Digest: error parsing high_cut_percentile\r\n";
inline constexpr std::string_view kTdigestErrCutRange =
    "-ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]\r\n";
inline constexpr std::string_view kTdigestErrCutOrder =
    "-ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile\r\n";
// COPY of a t-digest: RedisBloom's type has no copy callback.
inline constexpr std::string_view kTdigestErrCopyNotSupported =
    "-ERR not supported for this module key\r\n";
// TYPE of a t-digest.
inline constexpr std::string_view kTdigestTypeName = "TDIS-TYPE";

enum class TdigestCommand {
  kCreate,
  kReset,
  kAdd,
  kMerge,
  kMin,
  kMax,
  kQuantile,
  kCdf,
  kTrimmedMean,
  kRank,
  kRevRank,
  kByRank,
  kByRevRank,
  kInfo,
};

// When an error returned by ParseTdigestRequest is the reply.
enum class TdigestErrorOrder {
  // Arity (all but MERGE's numkeys > argc-3 and its COMPRESSION-as-last-argument): at once.
  kNow,
  // After the key check: CREATE's argument errors only if the key does not exist; MERGE's
  // numkeys and tail errors only if dest is not of another type; every other command's argument
  // errors only if the key is a t-digest.
  kAfterKey,
};

struct TdigestRequest {
  TdigestCommand command = TdigestCommand::kInfo;
  // The digest (MERGE: dest). Set whenever there is an argument after the command name.
  std::string_view key;
  // CREATE: the compression (default 100). MERGE: the COMPRESSION value when has_compression.
  int64_t compression = kTdigestDefaultCompression;
  bool has_compression = false;
  // MERGE: OVERRIDE given.
  bool override_dest = false;
  // MERGE: the source keys in argument order (duplicates kept).
  std::vector<std::string_view> sources;
  // ADD, QUANTILE, CDF, RANK, REVRANK: the numbers in order. TRIMMED_MEAN: {lo, hi}.
  std::vector<double> values;
  // BYRANK, BYREVRANK: the ranks in order.
  std::vector<int64_t> ranks;
  // Meaningful when ParseTdigestRequest returned an error.
  TdigestErrorOrder error_order = TdigestErrorOrder::kNow;
};

// Recognises a TDIGEST command name (any case); false for anything else.
bool LookupTdigestCommand(std::string_view name, TdigestCommand* out);

// Parses args (args[0] is the command name, any case) into *out. Returns an empty string on
// success, otherwise the RESP error RedisBloom gives, with out->error_order saying when it is the
// reply (see the table above).
std::string ParseTdigestRequest(const std::vector<std::string_view>& args, TdigestRequest* out);

// MERGE's step 6: the compression of the new digest. COMPRESSION given -> it; else OVERRIDE ->
// the largest over the sources; else dest's when dest exists; else the largest over the sources.
// `dest` is null when dest does not exist; `sources` are the sources' compressions.
int64_t TdigestMergeCompression(const TdigestRequest& req, const Tdigest* dest,
                                const std::vector<int64_t>& sources);

// False when RedisBloom refuses to allocate a digest of this compression.
bool TdigestCompressionFits(int64_t compression);

}  // namespace bloomproxy::filters

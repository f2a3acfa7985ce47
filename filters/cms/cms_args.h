// Argument parsing of the CMS.* commands: RedisBloom's grammar, its check order and its error
// replies verbatim (src/rm_cms.c). Pure; no sockets.
//
// RedisBloom looks at the key before most argument errors, so the parser says *when* each error
// it finds is to be replied (CmsRequest::error_order):
//
//   command      arity   key check (the plan's)                 then the parser's errors
//   INITBYDIM    == 4    exists, any type -> key already exists  invalid width/depth,
//   INITBYPROB   == 4                                            invalid overestimation/prob
//                                                                value, invalid init arguments,
//                                                                Insufficient memory
//   INCRBY       >= 4,   missing -> key does not exist,         Cannot parse number,
//                even    not a sketch -> WRONGTYPE               Number cannot be negative
//   QUERY        >= 3    missing / WRONGTYPE                     (none)
//   INFO         == 2    missing / WRONGTYPE                     (none)
//   MERGE        >= 4    dest missing / WRONGTYPE                invalid numkeys, Number of keys
//                                                                must be positive, wrong number
//                                                                of keys[/weights]; then for
//                                                                i = 0..numkeys-1: invalid weight
//                                                                value (weight i), source i
//                                                                missing / WRONGTYPE /
//                                                                width/depth is not equal
//
// Decided by the plan, never here: key already exists, key does not exist, WRONGTYPE,
// width/depth is not equal, MERGE overflow, the INCRBY overflow element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/cms/cms.h"
#include "protocol/errors.h"

namespace bloomproxy::filters {

// Every CMS reply error, as RedisBloom sends it (RESP2 bytes).
inline constexpr std::string_view kCmsErrKeyExists = "-CMS: key already exists\r\n";
inline constexpr std::string_view kCmsErrInvalidWidth = "-CMS: invalid width\r\n";
inline constexpr std::string_view kCmsErrInvalidDepth = "-CMS: invalid depth\r\n";
inline constexpr std::string_view kCmsErrInvalidOverestimation =
    "-CMS: invalid overestimation value\r\n";
inline constexpr std::string_view kCmsErrInvalidProb = "-CMS: invalid prob value\r\n";
inline constexpr std::string_view kCmsErrInvalidInitArguments = "-CMS: invalid init arguments\r\n";
inline constexpr std::string_view kCmsErrInsufficientMemory =
    "-CMS: Insufficient memory to create the key\r\n";
inline constexpr std::string_view kCmsErrKeyMissing = "-CMS: key does not exist\r\n";
inline constexpr std::string_view kCmsErrWrongType = protocol::errors::kWrongType;
inline constexpr std::string_view kCmsErrCannotParseNumber = "-CMS: Cannot parse number\r\n";
inline constexpr std::string_view kCmsErrNegativeNumber = "-CMS: Number cannot be negative\r\n";
inline constexpr std::string_view kCmsErrIncrByOverflow = "-CMS: INCRBY overflow\r\n";
inline constexpr std::string_view kCmsErrInvalidNumKeys = "-CMS: invalid numkeys\r\n";
inline constexpr std::string_view kCmsErrNumKeysNotPositive =
    "-CMS: Number of keys must be positive\r\n";
inline constexpr std::string_view kCmsErrWrongNumKeys = "-CMS: wrong number of keys\r\n";
inline constexpr std::string_view kCmsErrWrongNumKeysWeights =
    "-CMS: wrong number of keys/weights\r\n";
inline constexpr std::string_view kCmsErrInvalidWeight = "-CMS: invalid weight value\r\n";
inline constexpr std::string_view kCmsErrDimsNotEqual = "-CMS: width/depth is not equal\r\n";
inline constexpr std::string_view kCmsErrMergeOverflow = "-CMS: MERGE overflow\r\n";
// COPY of a sketch: RedisBloom's type has no copy callback.
inline constexpr std::string_view kCmsErrCopyNotSupported =
    "-ERR not supported for this module key\r\n";
// TYPE of a sketch.
inline constexpr std::string_view kCmsTypeName = "CMSk-TYPE";

enum class CmsCommand { kInitByDim, kInitByProb, kIncrBy, kQuery, kMerge, kInfo };

// When an error returned by ParseCmsRequest is the reply.
enum class CmsErrorOrder {
  // Arity: at once, before the key is looked at.
  kNow,
  // Only if the key check passes: for INITBY* the key does not exist (else "key already
  // exists"); for INCRBY the key is a sketch; for MERGE the destination is a sketch.
  kAfterKey,
  // MERGE's "invalid weight value" for weight `bad_weight`: only if the destination is a sketch
  // and sources 0 .. bad_weight-1 are sketches of its width and depth (each source's own error
  // comes first otherwise, in order).
  kAfterSources,
};

inline constexpr size_t kCmsNoBadWeight = static_cast<size_t>(-1);

// One CMS.INCRBY pair.
struct CmsIncrement {
  std::string_view item;
  uint64_t value = 0;  // 0 .. 2^63-1
};

struct CmsRequest {
  CmsCommand command = CmsCommand::kQuery;
  // The sketch (MERGE: the destination). Set whenever the arity is right, errors or not.
  std::string_view key;
  // INITBYDIM / INITBYPROB on success: checked dimensions (>= 1, width*depth within limits).
  uint64_t width = 0;
  uint64_t depth = 0;
  // INITBYPROB: the numbers as parsed.
  double error = 0;
  double prob = 0;
  // INCRBY: every pair, in order (all parsed before any is applied, as RedisBloom does).
  std::vector<CmsIncrement> increments;
  // QUERY: the items, in order (views into the caller's arguments).
  std::vector<std::string_view> items;
  // MERGE: the sources, in order (duplicates and the destination itself allowed), and one weight
  // per source (1 without WEIGHTS). With error_order kAfterSources the sources are all set and
  // weights holds the ones before bad_weight.
  std::vector<std::string_view> sources;
  std::vector<int64_t> weights;
  size_t bad_weight = kCmsNoBadWeight;
  // Meaningful when ParseCmsRequest returned an error.
  CmsErrorOrder error_order = CmsErrorOrder::kNow;
};

// Recognises a CMS command name (any case); false for anything else.
bool LookupCmsCommand(std::string_view name, CmsCommand* out);

// Parses args (args[0] is the command name, any case) into *out. Returns an empty string on
// success, otherwise the complete RESP error reply RedisBloom gives, e.g.
// "-ERR wrong number of arguments for 'cms.incrby' command\r\n" or "-CMS: invalid width\r\n",
// with out->error_order saying when it is the reply (see the table above). `max_bytes` bounds the
// size of a new sketch's cells (see CheckCmsDims); beyond it INITBY* gives
// "CMS: Insufficient memory to create the key".
std::string ParseCmsRequest(const std::vector<std::string_view>& args, CmsRequest* out,
                            uint64_t max_bytes = kCmsDefaultMaxBytes);

// The reply error of a failed dimension check ("" for kOk).
std::string_view CmsDimsError(CmsDimsCheck check);

}  // namespace bloomproxy::filters

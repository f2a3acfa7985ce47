// Argument parsing of the TOPK.* commands: RedisBloom's grammar, its check order and its error
// replies verbatim (src/rm_topk.c). Pure; no sockets.
//
// RedisBloom looks at the key before most argument errors, so the parser says *when* each error
// it finds is to be replied (TopkRequest::error_order):
//
//   command   arity          before the key         key check (the plan's)      then
//   RESERVE   3 or 6         -                      exists, any type ->         invalid k, width,
//                                                   key already exists          depth, decay,
//                                                                               Insufficient memory
//   ADD       >= 3           -                      missing -> key does not     (none)
//   QUERY     >= 3                                  exist, not a Top-K ->
//   COUNT     >= 3                                  WRONGTYPE
//   INFO      == 2
//   LIST      2 or 3         WITHCOUNT keyword      missing / WRONGTYPE         (none)
//                            expected
//   INCRBY    >= 4, even     -                      missing / WRONGTYPE         pair by pair: a bad
//                                                                               increment is the
//                                                                               error element of
//                                                                               its pair, and the
//                                                                               reply stops there
//
// Decided by the plan, never here: key already exists, key does not exist, WRONGTYPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/topk/topk.h"
#include "protocol/errors.h"

namespace bloomproxy::filters {

// Every TOPK reply error, as RedisBloom sends it (RESP2 bytes).
inline constexpr std::string_view kTopkErrKeyExists = "-TopK: key already exists\r\n";
inline constexpr std::string_view kTopkErrInvalidK = "-TopK: invalid k\r\n";
inline constexpr std::string_view kTopkErrInvalidWidth = "-TopK: invalid width\r\n";
inline constexpr std::string_view kTopkErrInvalidDepth = "-TopK: invalid depth\r\n";
inline constexpr std::string_view kTopkErrInvalidDecay =
    "-TopK: invalid decay value. must be '<= 1' & '> 0'\r\n";
inline constexpr std::string_view kTopkErrInsufficientMemory =
    "-ERR Insufficient memory to create topk data structure\r\n";
inline constexpr std::string_view kTopkErrKeyMissing = "-TopK: key does not exist\r\n";
inline constexpr std::string_view kTopkErrWrongType = protocol::errors::kWrongType;
// RedisBloom's literal continues on the next source line with a backslash, so the indentation
// of that line (28 spaces) is part of the message.
inline constexpr std::string_view kTopkErrIncrement =
    "-TopK: increment must be an integer greater or equal to 0"
    "                            "
    "and smaller or equal to 100,000\r\n";
inline constexpr std::string_view kTopkErrWithCount = "-WITHCOUNT keyword expected\r\n";
// COPY of a Top-K: RedisBloom's type has no copy callback.
inline constexpr std::string_view kTopkErrCopyNotSupported =
    "-ERR not supported for this module key\r\n";
// TYPE of a Top-K.
inline constexpr std::string_view kTopkTypeName = "TopK-TYPE";

enum class TopkCommand { kReserve, kAdd, kIncrBy, kQuery, kCount, kList, kInfo };

// When an error returned by ParseTopkRequest is the reply.
enum class TopkErrorOrder {
  // Arity, and LIST's WITHCOUNT keyword: at once, before the key is looked at.
  kNow,
  // RESERVE's argument errors: only if the key does not exist (else "key already exists").
  kAfterKey,
  // INCRBY's bad increment: only if the key is a Top-K. The reply array announces all the pairs;
  // the pairs before the bad one (TopkRequest::increments) are applied and replied, then the
  // error is the next element and nothing follows (a short reply when the bad pair is not the
  // last one, as RedisBloom sends it).
  kInPairs,
};

// One TOPK.INCRBY pair (TOPK.ADD: n = 1 each).
struct TopkIncrement {
  std::string_view item;
  uint32_t n = 0;  // 0 .. 100000
};

struct TopkRequest {
  TopkCommand command = TopkCommand::kQuery;
  // The sketch. Set whenever the arity is right, errors or not.
  std::string_view key;
  // RESERVE on success: checked parameters (defaults for width, depth and decay with 3 args).
  TopkParams params;
  // ADD, QUERY, COUNT: the items, in order (views into the caller's arguments).
  std::vector<std::string_view> items;
  // INCRBY: the pairs up to the first bad increment (all of them when none is bad).
  std::vector<TopkIncrement> increments;
  // INCRBY: the number of pairs, which the reply array announces.
  size_t pairs = 0;
  // LIST: WITHCOUNT given.
  bool with_count = false;
  // Meaningful when ParseTopkRequest returned an error.
  TopkErrorOrder error_order = TopkErrorOrder::kNow;
};

// Recognises a TOPK command name (any case); false for anything else.
bool LookupTopkCommand(std::string_view name, TopkCommand* out);

// Parses args (args[0] is the command name, any case) into *out. Returns an empty string on
// success, otherwise the RESP error RedisBloom gives, e.g.
// "-ERR wrong number of arguments for 'topk.add' command\r\n" or "-TopK: invalid k\r\n", with
// out->error_order saying when it is the reply (see the table above); for kInPairs it is one
// element of the reply array, not the whole reply.
std::string ParseTopkRequest(const std::vector<std::string_view>& args, TopkRequest* out);

// TOPK.LIST's third argument: accepted iff strncasecmp(arg, "WITHCOUNT", len(arg)) == 0, i.e.
// any case-insensitive prefix of WITHCOUNT (the empty string included), and anything that
// matches up to a NUL where WITHCOUNT ends ("WITHCOUNT\0x"). "WITHCOUNTS" and "W\0" are refused.
bool IsWithCountToken(std::string_view arg);

// RESERVE's last check: width * depth <= 2^61 - 1 (else "Insufficient memory").
bool TopkBucketsFit(uint64_t width, uint64_t depth);

}  // namespace bloomproxy::filters

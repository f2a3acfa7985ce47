// Argument parsing of the CF.* commands: RedisBloom's grammar, its check order and its error
// replies verbatim (src/rebloom.c, spec cf-commands.md). Pure; no sockets.
//
// Every argument error RedisBloom gives before it looks at the key is found here; the key's
// errors (WRONGTYPE, "ERR item exists", "ERR not found", ...) come from the filter's script
// (filters/cuckoo/cf_scripts.h). CF.LOADCHUNK is the one command with argument errors *after*
// the key check: its header's and its chunk's (CfLoadVerdict).
//
//   command     arity (module)   checked here, in this order
//   RESERVE     >= 3, odd        Bad capacity; MAXITERATIONS, BUCKETSIZE, EXPANSION (parse,
//                                range; each searched in the whole argument list); capacity
//                                range
//   ADD, ADDNX  == 3
//   INSERT(NX)  >= 4             per argument from the third, by its first letter: CAPACITY
//                                (arity, Bad capacity, range), ITEMS, NOCREATE, else Unknown
//                                argument received; no items: arity
//   EXISTS, COUNT, DEL == 3;  MEXISTS >= 3;  INFO, DEBUG, COMPACT == 2
//   SCANDUMP    == 3             Invalid position (not an integer, or < 0)
//   LOADCHUNK   == 4             Invalid position (not an integer, or 0)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/cuckoo/cuckoo.h"
#include "protocol/errors.h"

namespace bloomproxy::filters {

// Every CF reply error, as RedisBloom sends it (RESP2 bytes).
inline constexpr std::string_view kCfErrBadCapacity = "-Bad capacity\r\n";
inline constexpr std::string_view kCfErrParseMaxIterations = "-Couldn't parse MAXITERATIONS\r\n";
inline constexpr std::string_view kCfErrMaxIterationsRange =
    "-MAXITERATIONS: value must be in the range [1, 65535]\r\n";
inline constexpr std::string_view kCfErrParseBucketSize = "-Couldn't parse BUCKETSIZE\r\n";
inline constexpr std::string_view kCfErrBucketSizeRange =
    "-BUCKETSIZE: value must be in the range [1, 255]\r\n";
inline constexpr std::string_view kCfErrParseExpansion = "-Couldn't parse EXPANSION\r\n";
inline constexpr std::string_view kCfErrExpansionRange =
    "-EXPANSION: value must be in the range [0, 32768]\r\n";
inline constexpr std::string_view kCfErrReserveCapacity =
    "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n";
inline constexpr std::string_view kCfErrInsertCapacity =
    "-Capacity must be in the range [cf-bucket-size * 2, 1073741824]\r\n";
inline constexpr std::string_view kCfErrUnknownArgument = "-Unknown argument received\r\n";
inline constexpr std::string_view kCfErrItemExists = "-ERR item exists\r\n";
inline constexpr std::string_view kCfErrNotFound = "-ERR not found\r\n";
inline constexpr std::string_view kCfErrWrongType = protocol::errors::kWrongType;
inline constexpr std::string_view kCfErrMaxExpansions = "-Maximum expansions reached\r\n";
inline constexpr std::string_view kCfErrFull = "-Filter is full\r\n";
inline constexpr std::string_view kCfErrDelNotFound = "-Not found\r\n";
inline constexpr std::string_view kCfErrCompactNotFound = "-Cuckoo filter was not found\r\n";
inline constexpr std::string_view kCfErrInvalidPosition = "-Invalid position\r\n";
inline constexpr std::string_view kCfErrInvalidHeader = "-Invalid header\r\n";
inline constexpr std::string_view kCfErrCannotCreate = "-Couldn't create filter!\r\n";
inline constexpr std::string_view kCfErrCannotLoadChunk = "-Couldn't load chunk!\r\n";
inline constexpr std::string_view kCfErrInsufficientMemory = "-ERR Insufficient memory\r\n";
// TYPE of a cuckoo filter.
inline constexpr std::string_view kCfTypeName = "MBbloomCF";

enum class CfCommand : uint8_t {
  kReserve,
  kAdd,
  kAddNx,
  kInsert,
  kInsertNx,
  kExists,
  kMExists,
  kCount,
  kDel,
  kCompact,
  kScanDump,
  kLoadChunk,
  kInfo,
  kDebug,
};

// The CF command named `name` (any case); false for any other name.
bool LookupCfCommand(std::string_view name, CfCommand* out);

// A parsed CF command. Views point into the arguments.
struct CfRequest {
  CfCommand command = CfCommand::kAdd;
  std::string_view key;
  std::vector<std::string_view> items;  // ADD(NX), INSERT(NX), EXISTS, MEXISTS, COUNT, DEL
  // The filter RESERVE makes, or ADD and INSERT make on a missing key.
  uint64_t capacity = kCfDefaultCapacity;
  uint64_t bucket_size = kCfDefaultBucketSize;
  uint64_t max_iterations = kCfDefaultMaxIterations;
  uint64_t expansion = kCfDefaultExpansion;  // rounded (CfRoundExpansion)
  bool nocreate = false;                     // INSERT(NX) NOCREATE
  int64_t iterator = 0;                      // SCANDUMP, LOADCHUNK
  std::string_view data;                     // LOADCHUNK

  // Whether the command may write (the plan's connection choice, COMMAND's flags aside:
  // CF.COMPACT is registered read-only but writes).
  bool Writes() const;
  // Whether ADD, ADDNX, INSERTNX: the item is inserted only when absent.
  bool Nx() const { return command == CfCommand::kAddNx || command == CfCommand::kInsertNx; }
};

// Parses CF command `args` (args[0] is the name). Returns "" when the arguments are good, or the
// error reply RedisBloom gives before looking at the key.
std::string ParseCfRequest(const std::vector<std::string_view>& args, CfRequest* out);

// What CF.LOADCHUNK (parsed) will answer once the key check passes: its header's verdict for
// iterator 1, or for a chunk whether RedisBloom refuses it whatever the filter (empty, it < 0,
// it - 1 < length). `offset` is it - length - 1 for a chunk it does not refuse.
struct CfLoadVerdict {
  std::string error;  // "" or the reply (Invalid header, Couldn't create filter!, Couldn't load
                      // chunk!)
  CfHeader header;    // iterator 1, no error: the filter to create
  uint64_t offset = 0;
};
CfLoadVerdict CheckCfLoad(const CfRequest& request, uint64_t max_bytes = kCfMaxBytes);

}  // namespace bloomproxy::filters

// Folding the replies of a command that the cluster router split per slot (MGET, MSET, DEL, ...)
// or sent to every master (DBSIZE, KEYS, FLUSHALL, SCRIPT EXISTS, ...) into the one reply a
// single Redis would give, and the SCAN cursor that walks the masters one after another. Pure:
// replies in and out are RESP2 bytes ("\r\n" included).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {

// How the parts' replies become one. In every kind, the first error reply among the parts (in
// part order) is the reply, as the command would have failed on one server.
enum class Merge : uint8_t {
  kNone,         // not split: the one reply as it is
  kByPosition,   // MGET: each part is an array; element j of part i goes to place
                 // positions[i][j] of the merged array of `total` elements
  kAllOk,        // MSET: +OK when every part said +OK
  kSum,          // DEL, UNLINK, EXISTS, TOUCH, DBSIZE: the sum of the integers
  kConcat,       // KEYS: the arrays' elements one after the other
  kSame,         // FLUSHALL, FLUSHDB, SCRIPT LOAD, SCRIPT FLUSH: the first part's reply
  kAllOne,       // SCRIPT EXISTS: element j is 1 only when it is 1 in every part
  kFirstNonNil,  // RANDOMKEY: the first part's non-nil bulk, nil when all are nil
  kMin,          // WAIT: the smallest integer (the replicas every master reached)
};

// Merges `parts` (each one complete reply) by `kind`. `positions` and `total` are used by
// kByPosition only; places no part fills are nil. A part that is not of the expected type (a
// protocol surprise: a nil array, a MGET part whose length differs from its positions, an
// integer sum that overflows) is returned as it is. With no parts: "" for kNone and kSame, else
// the reply of nothing (+OK, :0, *0, $-1, `total` nils).
std::string MergeReplies(Merge kind, const std::vector<std::string_view>& parts,
                         const std::vector<std::vector<size_t>>& positions = {}, size_t total = 0);

// The client's SCAN cursor over several masters: the master's own cursor times 1024 plus the
// master's index (masters in a stable order, at most 1024). Cursor 0 is master 0's start.
// A master's cursor must be at most kMaxNodeScanCursor to fit; Redis's cursors are bit-reversed
// positions in a hash table (times 2^14 for a per-slot table in Redis 7.4+), far below that.
constexpr size_t kMaxScanNodes = 1024;
constexpr uint64_t kMaxNodeScanCursor = UINT64_MAX / kMaxScanNodes;
// `node_index` < kMaxScanNodes and `node_cursor` <= kMaxNodeScanCursor.
uint64_t EncodeScanCursor(size_t node_index, uint64_t node_cursor);
void DecodeScanCursor(uint64_t cursor, size_t* node_index, uint64_t* node_cursor);
// Reads a client's SCAN cursor argument as Redis does (db.c parseScanCursorOrReply: strtoul,
// base 10, no leading space, nothing after the digits, no overflow; strtoul also takes a sign,
// "-1" being 2^64-1, and "" being 0). False where Redis replies "-ERR invalid cursor".
bool ParseScanCursor(std::string_view arg, uint64_t* cursor);
// Rewrites a master's SCAN reply (*2 [cursor bulk, element array]) for the client: its cursor
// becomes the encoded one for `node_index` (< node_count <= kMaxScanNodes); when the master is
// done (cursor 0) the next master's start (node_index + 1, or 0 when it was the last of
// `node_count`). The element array is kept byte for byte. A master cursor too large to encode
// becomes an "unexpected reply from upstream" error; other replies are returned as they are.
std::string RewriteScanReply(std::string_view reply, size_t node_index, size_t node_count);

}  // namespace bloomproxy::protocol

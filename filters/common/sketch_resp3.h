// BF.*, CMS.*, CF.* and TOPK.* replies to a RESP3 client (HELLO 3), byte for byte as RedisBloom
// gives them. The plans and the scripts inside MULTI always make the RESP2 reply (they read every
// upstream reply in its RESP2 form, protocol/resp3.h, whatever the connection speaks); a RESP3
// client's reply is that reply rewritten. RedisBloom's replies differ in these ways only (spec:
// RedisBloom's `_ReplyMap`, `RedisModule_ReplyWithBool`, `RedisModule_ReplyWithDouble`):
//
//   shape          commands                           RESP2                  RESP3
//   kBool          BF.ADD, BF.EXISTS, CF.ADD,         :1 / :0                #t / #f
//                  CF.ADDNX, CF.EXISTS, CF.DEL
//   kBoolArray     BF.MADD, BF.INSERT, BF.MEXISTS,    *n :1 :0 -err          *n #t #f -err
//                  CF.MEXISTS
//   kCfInsert      CF.INSERT                          *n :1 :-1              *n #t #f
//   kInfoMap       BF.INFO key, CMS.INFO key,         *2n +label value ...   %n +label value ...
//                  CF.INFO key
//   kBfInfo<Field> BF.INFO key FIELD                  *1 value               %1 +Label value
//   kNullInArray   CF.SCANDUMP (its end)              *2 :0 $-1              *2 :0 _
//   kTopkUpdate    TOPK.ADD, TOPK.INCRBY              *n $-1 $1 a            *n _ $1 a
//                  (INCRBY's reply may stop short after its error element: converted as far
//                  as it goes)
//   kBoolArray     TOPK.QUERY                         *n :1 :0               *n #t #f
//   kTopkInfo      TOPK.INFO key                      *8 ... +decay $19 0.9… %4 ... +decay ,0.9…
//   kDouble        TDIGEST.MIN, MAX, TRIMMED_MEAN     $3 inf                 ,inf
//   kDoubleArray   TDIGEST.QUANTILE, CDF, BYRANK,     *n $19 0.1… $3 nan     *n ,0.1… ,nan
//                  BYREVRANK
//   kInfoMap       TDIGEST.INFO                       *18 +label :n ...      %9 +label :n ...
//
// and a null value (BF.INFO's expansion of a NONSCALING filter) is `$-1` in RESP2, `_` in RESP3.
// CF.INSERTNX's 1 / 0 / -1 stay integers in RESP3, as RedisBloom sends them.
// Everything else (errors, whole or inside arrays, +OK, counts, BF.SCANDUMP's chunks) is the same
// in both. Pure; no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {

// How a command's RESP3 reply differs from its RESP2 reply. Fits the reply slot's uint8_t
// (proxy::Pending::resp3_shape); 0 is "no difference". BF.INFO's one-field shapes carry the
// field, whose canonical label the RESP3 reply names whatever the argument's spelling.
enum class Resp3Shape : uint8_t {
  kSame = 0,
  kBool,
  kBoolArray,
  kInfoMap,
  kBfInfoCapacity,   // "Capacity"
  kBfInfoSize,       // "Size"
  kBfInfoFilters,    // "Number of filters"
  kBfInfoItems,      // "Number of items inserted"
  kBfInfoExpansion,  // "Expansion rate"
  kCfInsert,
  kNullInArray,
  kTopkUpdate,
  kTopkInfo,
  kDouble,
  kDoubleArray,
};

// The shape of the reply to sketch command `args` (args[0] is the name, any case). kSame for
// any other command, and for a BF.INFO field RedisBloom does not know (its reply is an error).
// A command with a wrong number of arguments may get a shape: its reply is an error, which
// ToResp3 leaves as it is.
Resp3Shape Resp3ShapeOf(const std::vector<std::string_view>& args);

// RedisBloom's RESP3 reply for the RESP2 reply `resp2` (one complete frame) of a command of
// `shape`. An error reply, kSame, and a reply not of the shape's form (none is made by the
// plans) are returned as they are.
std::string ToResp3(Resp3Shape shape, std::string_view resp2);

}  // namespace bloomproxy::filters

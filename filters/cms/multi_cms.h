// CMS.* inside MULTI (filters/common/multi_command.h): the script every queued CMS command runs,
// and the codes it answers with. Internal to filters/ and its tests. Pure; no sockets.
//
//   client:    MULTI  CMS.INCRBY s a 2  EXEC
//   upstream:  MULTI  EVAL <CmsMultiScript> 2 s {s}:cms:m:s incrby "" {s} 2 a 2  EXEC
//   EXEC:      *1 [*1 :2]  ->  *1 [*1 :2]
//
// The script reads what the keys hold when EXEC runs and does the whole command (RedisBloom's
// checks in its order, creation, increments, queries, INFO, MERGE with its exact overflow
// rules); the proxy turns its answer into RedisBloom's reply (QueuedSketch::Reply).
#pragma once

#include <string>

namespace bloomproxy::filters {

// The script, filters/cms/cms_multi.lua: its prelude (cms_multi_prelude.lua: MurmurHash2 as
// `murmur2(s, seed)` in exact 32-bit arithmetic in Lua's doubles, exact signed integers for
// MERGE, the sketch layout of cms_meta.h), which tests EVAL with lines of their own appended, and
// its body.
const std::string& CmsMultiScript();

// The script's integer answers.
enum CmsMultiCode : int {
  kCmsMultiOk = 0,
  kCmsMultiMissing = 1,     // CMS: key does not exist
  kCmsMultiWrongType = 2,   // WRONGTYPE
  kCmsMultiExists = 3,      // CMS: key already exists
  kCmsMultiArgError = 4,    // the argument error found when the command was queued
  kCmsMultiDimsDiffer = 5,  // CMS: width/depth is not equal
  kCmsMultiOverflow = 6,    // CMS: MERGE overflow
  kCmsMultiDamaged = 7,     // the sketch's metadata does not parse
  kCmsMultiPartSize = 8,    // a part has the wrong size
};

}  // namespace bloomproxy::filters

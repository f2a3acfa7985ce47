// The Lua scripts of the CMS plans (filters/cms/cms_plan.h), for what must be atomic on the
// sketch's server and cannot be one Redis command: finding what a name holds, creating a sketch, an
// increment that spans several parts, removing parts written after the sketch went away, and
// MERGE's check-and-write. Every key a script touches is passed in KEYS and lies in the sketch's
// slot (cms_meta.h), so each runs on one server: standalone, Redis Cluster or behind twemproxy.
// Each script is a file, filters/cms/cms_<what>.lua (cms_fetch.lua, ...), embedded at build time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filters/cms/cms_meta.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters {

// What `name` holds, atomically: 0 (nothing), 1 (not a hash, or a hash without the sketch's
// marker), or HMGET of the sketch fields (CmsMetaFromHmget). Touches nothing but the hash, as
// RedisBloom's lookup would.
void AddCmsFetch(Requests* req, std::string_view name, protocol::UpstreamKind upstream);

// Creates `meta`'s sketch at `name` unless the name holds anything: 1 created, 0 exists.
void AddCmsCreate(Requests* req, std::string_view name, const CmsMeta& meta);

// One BITFIELD request's arguments after the key, for a part: `args`.
struct CmsPartOps {
  std::string key;
  std::vector<std::string> args;
};
// Runs several parts' BITFIELD calls atomically; replies an array with one array of integers
// per call, in order.
void AddCmsMultiBitfield(Requests* req, const std::vector<CmsPartOps>& parts);

// Removes `parts` (written by a plan whose sketch had gone), unless `name` holds the sketch
// `id` again: a removed sketch's keys must not stay behind.
void AddCmsCleanup(Requests* req, std::string_view name, std::string_view id,
                   const std::vector<std::string>& parts);

// MERGE's read: every key of `keys` at one instant, GET of the whole key, or (header[i]) its
// first kCmsHeaderBytes bytes. Replies an array of bulk strings (nil for a missing key).
void AddCmsMergeRead(Requests* req, const std::vector<std::string>& keys,
                     const std::vector<bool>& header, protocol::UpstreamKind upstream);

// MERGE's write: each `checked` sketch (name, id, part 0's key, the version read) must be
// unchanged, then `writes` (key, full content) are written over the destination's parts (their
// expiry kept). Replies 1, or 0 when a sketch changed (nothing written).
struct CmsChecked {
  std::string name;
  std::string id;
  std::string part0;
  std::string version;  // 8 raw bytes
};
void AddCmsMergeCommit(Requests* req, const std::vector<CmsChecked>& checked,
                       const std::vector<std::pair<std::string, std::string>>& writes);

// The scripts, for tests.
std::string_view CmsFetchScript();
std::string_view CmsCreateScript();
std::string_view CmsMultiBitfieldScript();
std::string_view CmsCleanupScript();
std::string_view CmsMergeCommitScript();
std::string_view CmsMergeReadScript();

}  // namespace bloomproxy::filters

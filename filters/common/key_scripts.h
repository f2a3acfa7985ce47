// Key commands on a filter's, a sketch's or a t-digest's name. A structure lives in several keys
// (its name, a hash of metadata; data keys of bits and counts, of cells, of slots, of buckets and
// a heap, or the digest; a marker, see key_layout.h, cms_meta.h, cuckoo/cf_layout.lua,
// filters/topk/ and filters/tdigest/), and the key commands must see it as the one key
// RedisBloom's module type is:
//
//   whole      DEL, UNLINK, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST, RENAME, RENAMENX,
//              MOVE, RESTORE (REPLACE removes every key of the structure it replaces),
//              MEMORY USAGE (the sum over its keys), OBJECT IDLETIME / FREQ (its data keys'
//              and marker's least idle time, highest frequency)
//   answered   TYPE (MBbloom-- / CMSk-TYPE / MBbloomCF / TopK-TYPE / TDIS-TYPE),
//              OBJECT ENCODING (raw), COPY (RedisBloom's "not supported for this module key"),
//              DUMP (not supported: kDumpRefused)
//   WRONGTYPE  every hash command (HGET, HSET, ... HSCAN), as on a module key
//
// Each runs as one Lua script (filters/common/key_<command>.lua, embedded at build time) that
// does the client's command and, for every key that is a filter, the same to its data keys and
// marker, atomically (a windowed filter's data keys: its live slots at the upstream's TIME, whose
// keys never expire later than their slot's end; filters/common/filter_at.lua):
//
//   client:   DEL a f b
//   upstream: EVAL <del script> 3 a f b DEL <prefix of a> <prefix of f> <prefix of b>
//   reply:    the command's own (:3), or its error, byte for byte
//
// A script, not MULTI/EXEC: the client's own connection may hold its WATCH, which EXEC would
// end, or a transaction of its own. The script reads a key's hash only once its marker says it
// is a structure, so no probe counts as a WRONGTYPE error and a plain key is touched exactly as
// the command touches it (EXISTS and TYPE of a marker touch nothing). Its reply goes to the
// client as it is, so the command is pipelined like any other. Commands that only read go with
// EVAL_RO (not held by CLIENT PAUSE WRITE, allowed on replicas), except behind a sharding proxy,
// which forwards EVAL only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// Appends to *request the script request that runs `args` (a client command) on whole filters.
// Returns false, appending nothing, when `args` is not one of the commands above or has a
// number of arguments Redis would refuse (then it goes upstream as it is, for Redis's error).
// Behind a sharding proxy every script goes with EVAL (it refuses EVAL_RO), and the commands of
// one name added for issue 13 (hash commands, DUMP) go as they are when no structure can live
// at the name there (KeptWholeBehindShardingProxy). A hash command other than HSET, HMSET, HDEL
// and HMGET with more than kMaxScriptArgs arguments also goes as it is (a script cannot pass
// them on; those four are run in parts by their script).
bool KeyCommandRequest(const std::vector<std::string_view>& args, std::string* request,
                       protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis);

// The names the command touches (for the proxy's filter cache); empty if not a key command.
std::vector<std::string_view> KeyCommandNames(const std::vector<std::string_view>& args);

// The most arguments a script passes to one redis.call (Lua's unpack stops at 8000).
inline constexpr size_t kMaxScriptArgs = 7000;

// The error DUMP of a filter, sketch or t-digest answers: key_dump.lua holds it word for word (one
// line, no quote: it is a Lua string there; tests/unit/key_scripts_test.cc holds the two equal).
// What the proxy stores is not RedisBloom's RDB format, so no payload could be one.
inline constexpr std::string_view kDumpRefused =
    "ERR bloomproxy: DUMP of a Bloom filter, cuckoo filter, count-min sketch, Top-K sketch or "
    "t-digest is not supported (save a filter with BF.SCANDUMP or CF.SCANDUMP, restore it with "
    "BF.LOADCHUNK or CF.LOADCHUNK)";

// The scripts, filters/common/key_*.lua (what each takes and returns is documented at the top of
// its file), for tests.
std::string_view TypeScript();
std::string_view CopyScript();
std::string_view EncodingScript();
// `writes`: the command writes (its markers are read without tracking, common/marked.lua).
std::string_view HashScript(bool writes);         // any hash command but these two:
std::string_view HashIncrByScript();              // HINCRBY (its result may not fit a Lua number)
std::string_view HashInPartsScript(bool writes);  // more than kMaxScriptArgs arguments
std::string_view DumpScript();
std::string_view DeleteScript();
std::string_view ExpireScript();
std::string_view RenameScript();
std::string_view MoveScript();
std::string_view RestoreScript();
std::string_view MemoryUsageScript();
std::string_view ObjectTimeScript();

}  // namespace bloomproxy::filters

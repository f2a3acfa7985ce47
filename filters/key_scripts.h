// Key commands on a filter's or a count-min sketch's name. A structure lives in several keys (its
// name, a hash of metadata; data keys of bits and counts, or of cells; a marker, see
// key_layout.h and cms_meta.h), and DEL, UNLINK, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST,
// RENAME, RENAMENX, TYPE, COPY (refused, as RedisBloom does) and OBJECT ENCODING ("raw") must
// see it whole.
// Each runs as one Lua script that does the client's command and, for every key that is a filter,
// the same to its data keys and marker, atomically:
//
//   client:   DEL a f b
//   upstream: EVAL <del script> 3 a f b DEL <prefix of a> <prefix of f> <prefix of b>
//   reply:    the command's own (:3), or its error, byte for byte
//
// A script, not MULTI/EXEC: the client's own connection may hold its WATCH, which EXEC would
// end, or a transaction of its own. The script reads a key's hash only once TYPE says it is one,
// so no probe counts as a WRONGTYPE error, and every key is touched exactly as the command
// touches it (TYPE reads the marker instead of the hash, and touches nothing). Its reply goes to
// the client as it is, so the command is pipelined like any other.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// Appends to *request the script request that runs `args` (a client command) on whole filters.
// Returns false, appending nothing, when `args` is not one of the commands above or has a
// number of arguments Redis would refuse (then it goes upstream as it is, for Redis's error).
// Behind a sharding proxy TYPE's script goes with EVAL (it refuses EVAL_RO); RENAME and
// RENAMENX never get there (it refuses them).
bool KeyCommandRequest(const std::vector<std::string_view>& args, std::string* request,
                       protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis);

// The names the command touches (for the proxy's filter cache); empty if not a key command.
std::vector<std::string_view> KeyCommandNames(const std::vector<std::string_view>& args);

// The scripts (what each takes and returns is documented at its text), for tests.
std::string_view TypeScript();
std::string_view DeleteScript();
std::string_view ExpireScript();
std::string_view RenameScript();

}  // namespace bloomproxy::filters

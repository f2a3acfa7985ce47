// The key scripts that only need to know whether a name holds a structure: its markers tell
// (EXISTS and TYPE touch nothing), and the hash itself is never read. Each takes KEYS[1]: the
// name; ARGV[1], ARGV[2]: its filter and sketch markers (MarkerKey, CmsMarkerKey), which
// kMarkersPrologue takes out of ARGV into MK; then ARGV: the client's command, as sent, unless
// said otherwise. The markers are not KEYS: Redis makes a client with CLIENT TRACKING track
// every key a script declares, and its invalidations must name only keys the client knows.
// (COPY keeps its own layout, below.)
#include <string>

#include "filters/common/key_scripts.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kMarkersPrologue = R"lua(
local MK = {table.remove(ARGV, 1), table.remove(ARGV, 1)}
)lua";

// TYPE. RedisBloom's module type names, "MBbloom--" for a filter and "CMSk-TYPE" for a count-min
// sketch; else Redis's answer. ARGV: nothing.
constexpr std::string_view kTypeScript = R"lua(
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' and redis.call('EXISTS', MK[1]) == 1 then return {ok = 'MBbloom--'} end
if t == 'hash' and redis.call('EXISTS', MK[2]) == 1 then return {ok = 'CMSk-TYPE'} end
return {ok = t}
)lua";

// COPY. KEYS[1], KEYS[2]: source and destination; KEYS[3], KEYS[4]: the source's filter and
// sketch markers. A filter or a count-min sketch cannot be copied (RedisBloom's types have no
// copy callback), an error Redis gives only once the options parse, the source is not the
// destination and the destination is free or REPLACE is given; before that, Redis's own reply
// (COPY itself, which then copies nothing). A write: kMarkedFunction (key_scripts.h) comes
// first.
constexpr std::string_view kCopyCheck = R"lua(
if not (marked(KEYS[3]) or marked(KEYS[4])) or redis.call('TYPE', KEYS[1]).ok ~= 'hash' then
  return redis.pcall(unpack(ARGV))
end
local replace, db, i = false, nil, 4
while i <= #ARGV do
  local a = string.lower(ARGV[i])
  if a == 'replace' then replace, i = true, i + 1
  elseif a == 'db' and ARGV[i + 1] then db, i = ARGV[i + 1], i + 2
  else return redis.pcall(unpack(ARGV)) end
end
if db == nil and KEYS[1] == KEYS[2] then return redis.pcall(unpack(ARGV)) end
if not replace then
  if db then
    local selected = redis.pcall('SELECT', db)
    if type(selected) == 'table' and selected.err then return redis.pcall(unpack(ARGV)) end
  end
  if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
end
return {err = 'ERR not supported for this module key'}
)lua";

// OBJECT ENCODING. "raw" for a filter or a sketch, as for RedisBloom's module types; else Redis's
// answer. Touches nothing but what the command itself touches.
constexpr std::string_view kEncodingScript = R"lua(
if redis.call('TYPE', KEYS[1]).ok == 'hash' and
   (redis.call('EXISTS', MK[1]) == 1 or redis.call('EXISTS', MK[2]) == 1) then
  return 'raw'
end
return redis.pcall(unpack(ARGV))
)lua";

// Hash commands (HGET, HSET, ... HSCAN): kHashCheck, then one of the runs below, chosen by the
// request (HINCRBY; more arguments than a Lua call takes; any other), so that the script Redis
// runs for an HGET stays short. On a structure the command runs on its marker, a string key, in
// place of the name: Redis then checks the arguments as it does for any key (HINCRBY's
// increment, HSCAN's cursor, HSET's pairs) and answers WRONGTYPE, exactly as on RedisBloom's
// module key, changing nothing. On anything else the command runs as sent, its reply or error
// Redis's own.
constexpr std::string_view kHashCheck = R"lua(
if redis.call('EXISTS', MK[1], MK[2]) > 0 and redis.call('TYPE', KEYS[1]).ok == 'hash' then)lua";

// Both checks go on with this: the command runs on the structure's marker.
constexpr std::string_view kHashOnMarker = R"lua(
  if redis.call('TYPE', MK[1]).ok == 'string' then ARGV[2] = MK[1]
  elseif redis.call('TYPE', MK[2]).ok == 'string' then ARGV[2] = MK[2]
  else return {err = 'WRONGTYPE Operation against a key holding the wrong kind of value'} end
end
)lua";

// The same for a command that writes: kMarkedFunction (key_scripts.h) comes before it.
constexpr std::string_view kHashWriteCheck = R"lua(
if (marked(MK[1]) or marked(MK[2])) and redis.call('TYPE', KEYS[1]).ok == 'hash' then)lua";

constexpr std::string_view kHashRun = R"lua(
return redis.pcall(unpack(ARGV))
)lua";

// HINCRBY. A Lua number is a double: a result beyond 2^53 is answered with the field's value,
// exact, as a bulk string.
constexpr std::string_view kHashIncrByRun = R"lua(
local r = redis.pcall(unpack(ARGV))
if type(r) == 'number' and (r >= 2^53 or r <= -2^53) then
  return redis.call('HGET', ARGV[2], ARGV[3])
end
return r
)lua";

// HSET, HMSET, HDEL, HMGET with more than kMaxScriptArgs arguments (Lua's unpack stops at
// 8000): run in parts of 6000 arguments, whose replies add up (HSET, HDEL count each field once,
// in order, as one call does), are joined (HMGET) or are OK (HMSET). An odd count of HSET's
// values gets the arity error from a 5-argument call, as Redis checks that before anything else.
constexpr std::string_view kHashInPartsRun = R"lua(
local n = #ARGV
local c = string.lower(ARGV[1])
if (c == 'hset' or c == 'hmset') and n % 2 == 1 then
  return redis.pcall(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
end
local sum, joined, r = 0, {}, nil
for i = 3, n, 6000 do
  r = redis.pcall(ARGV[1], ARGV[2], unpack(ARGV, i, math.min(i + 5999, n)))
  if type(r) == 'table' and r.err then return r end
  if type(r) == 'number' then sum = sum + r
  elseif not r.ok then for j = 1, #r do joined[#joined + 1] = r[j] end end
end
if type(r) == 'number' then return sum end
if r.ok then return r end
return joined
)lua";

// DUMP. A structure is refused (kDumpRefused, spliced in below); anything else gets Redis's
// answer. Touches nothing of a structure.
constexpr std::string_view kDumpHead = R"lua(
if redis.call('EXISTS', MK[1], MK[2]) > 0 and redis.call('TYPE', KEYS[1]).ok == 'hash' then
  return {err = ')lua";
constexpr std::string_view kDumpTail = R"lua('}
end
return redis.pcall(unpack(ARGV))
)lua";

}  // namespace

std::string_view TypeScript() {
  static const std::string text = std::string(kMarkersPrologue) + std::string(kTypeScript);
  return text;
}
std::string_view CopyScript() {
  static const std::string text = std::string(kMarkedFunction) + std::string(kCopyCheck);
  return text;
}
std::string_view EncodingScript() {
  static const std::string text = std::string(kMarkersPrologue) + std::string(kEncodingScript);
  return text;
}

namespace {

// The check for a command that writes or only reads, then `run`.
std::string HashCommandScript(bool writes, std::string_view run) {
  const std::string check = writes ? std::string(kMarkedFunction) + std::string(kHashWriteCheck)
                                   : std::string(kHashCheck);
  return std::string(kMarkersPrologue) + check + std::string(kHashOnMarker) + std::string(run);
}

}  // namespace

std::string_view HashScript(bool writes) {
  static const std::string read = HashCommandScript(false, kHashRun);
  static const std::string write = HashCommandScript(true, kHashRun);
  return writes ? write : read;
}

std::string_view HashIncrByScript() {
  static const std::string text = HashCommandScript(true, kHashIncrByRun);
  return text;
}

std::string_view HashInPartsScript(bool writes) {
  static const std::string read = HashCommandScript(false, kHashInPartsRun);
  static const std::string write = HashCommandScript(true, kHashInPartsRun);
  return writes ? write : read;
}

std::string_view DumpScript() {
  static const std::string text = std::string(kMarkersPrologue) + std::string(kDumpHead) +
                                  std::string(kDumpRefused) + std::string(kDumpTail);
  return text;
}

}  // namespace bloomproxy::filters

#include "protocol/command_keys.h"

#include <cstdint>

namespace bloomproxy::protocol {
namespace {

using Args = std::vector<std::string_view>;

// The rules of db.c's getkeys functions, for the commands whose keys move (kFlagMovableKeys).
// Redis Cluster routes with these functions (cluster.c getNodeByQuery calls getKeysFromCommand),
// not with COMMAND's key specs, and the two differ in a few corners (XREAD's STREAMS search,
// GEORADIUS with both STORE and STOREDIST): the functions are what decides where Redis wants a
// command, so they are what is copied here.
enum class Rule {
  kEval,           // EVAL script numkeys key... arg...          (evalGetKeys, functionGetKeys)
  kNumkeysFirst,   // ZUNION numkeys key... opts...               (zunionInterDiffGetKeys, ...)
  kNumkeysSecond,  // BLMPOP timeout numkeys key... opts...       (blmpopGetKeys, bzmpopGetKeys)
  kStoreNumkeys,   // ZUNIONSTORE dst numkeys key... opts...      (zunionInterDiffStoreGetKeys)
  kSort,           // SORT key ... STORE dst ...                   (sortGetKeys)
  kSortRo,         // SORT_RO key ...                              (sortROGetKeys)
  kMigrate,        // MIGRATE host port key|"" db timeout ... KEYS key... (migrateGetKeys)
  kGeoradius,      // GEORADIUS key ... STORE|STOREDIST dst ...    (georadiusGetKeys)
  kXread,          // XREAD[GROUP] ... STREAMS key... id...        (xreadGetKeys)
};

struct MovableRow {
  std::string_view name;
  Rule rule;
};

// Every kFlagMovableKeys row of Redis 7.0's table (the unit test checks none is missing).
constexpr MovableRow kMovable[] = {
    {"blmpop", Rule::kNumkeysSecond},
    {"bzmpop", Rule::kNumkeysSecond},
    {"eval", Rule::kEval},
    {"eval_ro", Rule::kEval},
    {"evalsha", Rule::kEval},
    {"evalsha_ro", Rule::kEval},
    {"fcall", Rule::kEval},
    {"fcall_ro", Rule::kEval},
    {"georadius", Rule::kGeoradius},
    {"georadiusbymember", Rule::kGeoradius},
    {"lmpop", Rule::kNumkeysFirst},
    {"migrate", Rule::kMigrate},
    {"sintercard", Rule::kNumkeysFirst},
    {"sort", Rule::kSort},
    {"sort_ro", Rule::kSortRo},
    {"xread", Rule::kXread},
    {"xreadgroup", Rule::kXread},
    {"zdiff", Rule::kNumkeysFirst},
    {"zdiffstore", Rule::kStoreNumkeys},
    {"zinter", Rule::kNumkeysFirst},
    {"zintercard", Rule::kNumkeysFirst},
    {"zinterstore", Rule::kStoreNumkeys},
    {"zmpop", Rule::kNumkeysFirst},
    {"zunion", Rule::kNumkeysFirst},
    {"zunionstore", Rule::kStoreNumkeys},
};

const MovableRow* FindMovable(std::string_view name) {
  for (const MovableRow& row : kMovable) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

// strcasecmp against a lower-case keyword. Redis compares the argument as a C string, so it
// ends at its first NUL byte ("streams\0x" is STREAMS to Redis).
bool IsKeyword(std::string_view arg, std::string_view keyword) {
  arg = arg.substr(0, arg.find('\0'));
  if (arg.size() != keyword.size()) return false;
  for (size_t i = 0; i < arg.size(); ++i) {
    char c = arg[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != keyword[i]) return false;
  }
  return true;
}

// C's atoi as glibc has it, (int)strtol(s, NULL, 10), which is how Redis reads numkeys to find
// keys (genericGetKeys): leading white space, a sign, digits up to the first other byte,
// saturation at the 64-bit limits, then truncation to 32 bits. So "2abc" and " +2" are 2 keys
// to Redis (the command fails later, on the node of those keys), and "4294967298" is 2 as well.
int CAtoi(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  constexpr uint64_t kMagnitudeLimit = uint64_t{1} << 63;  // |LONG_MIN|
  uint64_t magnitude = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    magnitude =
        magnitude > (kMagnitudeLimit - digit) / 10 ? kMagnitudeLimit : magnitude * 10 + digit;
  }
  // Two's complement arithmetic on uint64_t: -magnitude, and LONG_MAX when positive overflowed.
  uint64_t value = negative ? 0 - magnitude : magnitude;
  if (!negative && magnitude == kMagnitudeLimit) value = kMagnitudeLimit - 1;
  return static_cast<int32_t>(static_cast<uint32_t>(value));
}

// genericGetKeys: numkeys at args[count_at], that many keys from args[first_at], and the store
// key args[store_at] when store_at is not 0. Redis finds no keys when numkeys is below 1 or
// runs past the arguments; of those, only EVAL's numkeys "0" is a command that can succeed.
bool NumkeysKeys(const Args& args, size_t store_at, size_t count_at, bool zero_ok,
                 std::vector<size_t>* positions) {
  if (count_at >= args.size()) return false;
  const size_t first_at = count_at + 1;
  const int num = CAtoi(args[count_at]);
  if (num < 1 || static_cast<size_t>(num) > args.size() - first_at) {
    return zero_ok && args[count_at] == "0";
  }
  if (store_at != 0) positions->push_back(store_at);
  for (size_t i = 0; i < static_cast<size_t>(num); ++i) positions->push_back(first_at + i);
  return true;
}

// sortGetKeys: the sorted key, and the key after the last STORE. Options are skipped by the
// number of arguments Redis assumes they take (LIMIT 2, GET 1, BY 1, any other 0), so the
// argument right after STORE is itself read as an option.
bool SortKeys(const Args& args, std::vector<size_t>* positions) {
  positions->push_back(1);
  size_t store_at = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    if (IsKeyword(args[i], "limit")) {
      i += 2;
    } else if (IsKeyword(args[i], "get") || IsKeyword(args[i], "by")) {
      i += 1;
    } else if (IsKeyword(args[i], "store") && i + 1 < args.size()) {
      store_at = i + 1;
    }
  }
  if (store_at != 0) positions->push_back(store_at);
  return true;
}

// migrateGetKeys: the key argument (args[3], even empty), or, when it is empty and KEYS follows,
// the arguments after KEYS (none is no key: MIGRATE answers NOKEY). KEYS with a non-empty key
// argument is a syntax error. Options are skipped by their argument counts (AUTH 1, AUTH2 2).
bool MigrateKeys(const Args& args, std::vector<size_t>* positions) {
  size_t first = 3;
  size_t count = 1;
  for (size_t i = 6; i < args.size(); ++i) {
    if (IsKeyword(args[i], "keys")) {
      if (!args[3].empty()) return false;
      first = i + 1;
      count = args.size() - first;
      break;
    }
    if (IsKeyword(args[i], "auth")) {
      i += 1;
    } else if (IsKeyword(args[i], "auth2")) {
      i += 2;
    }
  }
  for (size_t i = 0; i < count; ++i) positions->push_back(first + i);
  return true;
}

// georadiusGetKeys: the key, and the argument after the last STORE or STOREDIST (the command
// stores once, into the last one named). Options are searched from args[5] for GEORADIUS and
// GEORADIUSBYMEMBER alike.
bool GeoradiusKeys(const Args& args, std::vector<size_t>* positions) {
  positions->push_back(1);
  size_t store_at = 0;
  for (size_t i = 5; i < args.size(); ++i) {
    if ((IsKeyword(args[i], "store") || IsKeyword(args[i], "storedist")) && i + 1 < args.size()) {
      store_at = ++i;
    }
  }
  if (store_at != 0) positions->push_back(store_at);
  return true;
}

// xreadGetKeys: the options before STREAMS are walked (BLOCK n, COUNT n, GROUP g c, NOACK), for
// "STREAMS" may also name a group, a consumer or a key; after STREAMS, the first half of the
// arguments are keys and the second half their IDs.
bool XreadKeys(const Args& args, std::vector<size_t>* positions) {
  size_t streams_at = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    if (IsKeyword(args[i], "block") || IsKeyword(args[i], "count")) {
      i += 1;
    } else if (IsKeyword(args[i], "group")) {
      i += 2;
    } else if (IsKeyword(args[i], "noack")) {
      continue;
    } else {
      if (IsKeyword(args[i], "streams")) streams_at = i;
      break;
    }
  }
  if (streams_at == 0) return false;
  const size_t after = args.size() - streams_at - 1;
  if (after == 0 || after % 2 != 0) return false;
  for (size_t i = 0; i < after / 2; ++i) positions->push_back(streams_at + 1 + i);
  return true;
}

bool MovableKeys(Rule rule, const Args& args, std::vector<size_t>* positions) {
  switch (rule) {
    case Rule::kEval:
      return NumkeysKeys(args, 0, 2, /*zero_ok=*/true, positions);
    case Rule::kNumkeysFirst:
      return NumkeysKeys(args, 0, 1, /*zero_ok=*/false, positions);
    case Rule::kNumkeysSecond:
      return NumkeysKeys(args, 0, 2, /*zero_ok=*/false, positions);
    case Rule::kStoreNumkeys:
      return NumkeysKeys(args, 1, 2, /*zero_ok=*/false, positions);
    case Rule::kSort:
      return SortKeys(args, positions);
    case Rule::kSortRo:
      positions->push_back(1);
      return true;
    case Rule::kMigrate:
      return MigrateKeys(args, positions);
    case Rule::kGeoradius:
      return GeoradiusKeys(args, positions);
    case Rule::kXread:
      return XreadKeys(args, positions);
  }
  return false;
}

// getKeysUsingLegacyRangeSpec: first, last (negative: counted from the end), step. Redis finds
// no keys when the range runs past the arguments.
bool RangeKeys(const CommandInfo& info, const Args& args, std::vector<size_t>* positions) {
  if (info.first_key <= 0) return true;
  if (info.key_step <= 0) return false;
  const int64_t argc = static_cast<int64_t>(args.size());
  const int64_t first = info.first_key;
  const int64_t last = info.last_key < 0 ? argc + info.last_key : info.last_key;
  for (int64_t i = first; i <= last; i += info.key_step) {
    if (i >= argc) return false;
    positions->push_back(static_cast<size_t>(i));
  }
  return true;
}

}  // namespace

bool CommandKeys(const CommandInfo& info, const std::vector<std::string_view>& args,
                 std::vector<size_t>* positions) {
  // Redis checks the arity before it looks for keys (processCommand), so a command with the
  // wrong number of arguments is answered by whichever node gets it.
  if (!ArityOk(info, args.size())) return false;
  const size_t before = positions->size();
  bool found;
  if ((info.flags & kFlagMovableKeys) != 0) {
    const MovableRow* row = FindMovable(info.name);
    // A movable-keys command this file has no rule for (a newer table): its keys are unknown.
    found = row != nullptr && MovableKeys(row->rule, args, positions);
  } else {
    found = RangeKeys(info, args, positions);
  }
  if (!found) positions->resize(before);
  return found;
}

}  // namespace bloomproxy::protocol

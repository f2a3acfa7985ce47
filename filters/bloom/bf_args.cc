#include "filters/bloom/bf_args.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "filters/bloom/bloom.h"
#include "filters/common/module_args.h"

namespace bloomproxy::filters {
namespace {

struct CommandName {
  std::string_view upper;  // as matched, case-insensitively
  std::string_view lower;  // as Redis names it in arity errors
  BfCommand command;
};
constexpr CommandName kCommands[] = {
    {"BF.RESERVE", "bf.reserve", BfCommand::kReserve},
    {"BF.ADD", "bf.add", BfCommand::kAdd},
    {"BF.MADD", "bf.madd", BfCommand::kMAdd},
    {"BF.INSERT", "bf.insert", BfCommand::kInsert},
    {"BF.EXISTS", "bf.exists", BfCommand::kExists},
    {"BF.MEXISTS", "bf.mexists", BfCommand::kMExists},
    {"BF.INFO", "bf.info", BfCommand::kInfo},
    {"BF.CARD", "bf.card", BfCommand::kCard},
    {"BF.SCANDUMP", "bf.scandump", BfCommand::kScanDump},
    {"BF.LOADCHUNK", "bf.loadchunk", BfCommand::kLoadChunk},
    {"BF.DEBUG", "bf.debug", BfCommand::kDebug},
};

std::string Error(std::string_view message) {
  std::string out;
  out.reserve(message.size() + 3);
  out.push_back('-');
  out.append(message);
  out.append("\r\n");
  return out;
}

std::string WrongArity(BfCommand command) {
  for (const CommandName& c : kCommands) {
    if (c.command == command) {
      return Error("ERR wrong number of arguments for '" + std::string(c.lower) + "' command");
    }
  }
  return Error("ERR wrong number of arguments");
}

// Where BF.RESERVE looks for its option words: RedisBloom searches the argument list for the
// first exact (case-insensitive) match. It also searches the key and the command name itself;
// that oddity is not copied, the search starts after the capacity.
int FindWord(const std::vector<std::string_view>& args, std::string_view word) {
  for (size_t i = 4; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], word)) return static_cast<int>(i);
  }
  return -1;
}

// A window's length, a slot count, a lifetime: integers as RedisBloom reads its own (Redis's
// string2ll: no '+', no leading zero), within the windowed filters' limits.
bool ParseWindowMs(std::string_view s, uint64_t* out) {
  int64_t v = 0;
  if (!ParseLongLong(s, &v) || v < 1 || static_cast<uint64_t>(v) > kMaxWindowMs) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

bool ParseSlots(std::string_view s, uint32_t* out) {
  int64_t v = 0;
  if (!ParseLongLong(s, &v) || v < kMinWindowSlots || v > kMaxWindowSlots) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// BF.RESERVE's WINDOW ms [SLOTS g], found by the same search as RedisBloom's own words (so in
// any order, and a value spelled like a word is the value of the option before it). Checked
// after RedisBloom's arguments, so that a command RedisBloom refuses still gets RedisBloom's
// error. SLOTS without WINDOW is refused rather than ignored: whoever wrote it wanted a window,
// and a filter that silently never forgets is the worse outcome.
std::string ParseReserveWindow(const std::vector<std::string_view>& args, int window_at,
                               int slots_at, BfRequest* out) {
  if (window_at != -1) {
    const size_t value = static_cast<size_t>(window_at) + 1;
    if (value == args.size() || !ParseWindowMs(args[value], &out->window_ms)) {
      return std::string(kErrBadWindow);
    }
  }
  if (slots_at != -1) {
    const size_t value = static_cast<size_t>(slots_at) + 1;
    if (window_at == -1 || value == args.size() || !ParseSlots(args[value], &out->slots)) {
      return std::string(kErrBadSlots);
    }
  }
  return {};
}

// BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [WINDOW ms [SLOTS g]], checked in
// RedisBloom's order: error rate, capacity, NONSCALING, EXPANSION value, the NONSCALING/EXPANSION
// conflict, the expansion range; then the window's; the key's state comes after all of them.
// Words other than these are ignored, as RedisBloom ignores them.
std::string ParseReserve(const std::vector<std::string_view>& args, const BfDefaults& defaults,
                         BfRequest* out) {
  // RedisBloom takes at most 7 arguments. WINDOW ms, and SLOTS g with it, make room for
  // themselves, so a command that names no window gets RedisBloom's arity error exactly as
  // before (SLOTS alone does not: it is an error anyway, after RedisBloom's own checks).
  const int window_at = FindWord(args, "WINDOW");
  const int slots_at = FindWord(args, "SLOTS");
  size_t max_args = 7;
  if (window_at != -1) max_args += slots_at != -1 ? 4 : 2;
  if (args.size() < 4 || args.size() > max_args) return WrongArity(BfCommand::kReserve);
  out->key = args[1];

  double error_rate = 0;
  if (!ParseDouble(args[2], &error_rate)) return Error("ERR bad error rate");
  if (!(error_rate > 0 && error_rate < 1)) {
    return Error("ERR error rate must be in the range (0.000000, 1.000000)");
  }

  int64_t capacity = 0;
  if (!ParseLongLong(args[3], &capacity)) return Error("ERR bad capacity");
  if (capacity < 1 || static_cast<uint64_t>(capacity) > kMaxCapacity) {
    return Error("ERR capacity must be in the range [1, 1073741824]");
  }

  const bool nonscaling_word = FindWord(args, "NONSCALING") != -1;

  int64_t expansion = defaults.expansion;
  const int at = FindWord(args, "EXPANSION");
  if (at != -1) {
    if (static_cast<size_t>(at) + 1 == args.size()) return Error("ERR no expansion");
    if (!ParseLongLong(args[at + 1], &expansion)) return Error("ERR bad expansion");
    if (nonscaling_word && expansion != 0) return Error("Nonscaling filters cannot expand");
    if (expansion < 0 || expansion > kMaxExpansion) {
      return Error("ERR expansion must be in the range [0, 32768]");
    }
  }

  out->error_rate = error_rate;
  out->capacity = static_cast<uint64_t>(capacity);
  out->expansion = static_cast<uint32_t>(expansion);
  // An expansion of 0 (given, or the configured default) means a chain that never grows.
  out->nonscaling = nonscaling_word || expansion == 0;
  return ParseReserveWindow(args, window_at, slots_at, out);
}

// The value of BF.INSERT's WINDOW, SLOTS or TTL (`word`) into *out: "" or the error. A TTL is
// checked against the window once every option is read (ParseInsert); one over the longest
// window can never fit, so it is refused here already.
std::string ParseInsertWindowValue(std::string_view word, std::string_view value, BfRequest* out) {
  if (EqualsIgnoreCase(word, "WINDOW")) {
    if (!ParseWindowMs(value, &out->window_ms)) return std::string(kErrBadWindow);
  } else if (EqualsIgnoreCase(word, "SLOTS")) {
    if (!ParseSlots(value, &out->slots)) return std::string(kErrBadSlots);
  } else if (!ParseWindowMs(value, &out->ttl_ms)) {
    return std::string(kErrBadTtl);
  }
  return {};
}

bool IsInsertWindowWord(std::string_view word) {
  return EqualsIgnoreCase(word, "WINDOW") || EqualsIgnoreCase(word, "SLOTS") ||
         EqualsIgnoreCase(word, "TTL");
}

// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] [WINDOW ms
// [SLOTS g]] [TTL ms] ITEMS item...
// Options are read left to right and the first bad one is reported. RedisBloom matches them by
// their first letters; here the whole word is required (any case). SLOTS and TTL are then
// checked against the command's WINDOW: SLOTS needs one (in any place), a TTL must not exceed
// it. A TTL without WINDOW is kept for the plan, which checks it against the filter's window.
std::string ParseInsert(const std::vector<std::string_view>& args, const BfDefaults& defaults,
                        BfRequest* out) {
  if (args.size() < 4) return WrongArity(BfCommand::kInsert);
  out->key = args[1];
  out->error_rate = defaults.error_rate;
  out->capacity = defaults.capacity;
  out->expansion = defaults.expansion;
  bool nonscaling = false;

  size_t i = 2;
  size_t items_at = 0;
  while (i < args.size() && items_at == 0) {
    const std::string_view word = args[i];
    if (EqualsIgnoreCase(word, "ITEMS")) {
      items_at = ++i;
    } else if (EqualsIgnoreCase(word, "CAPACITY")) {
      if (++i == args.size()) return WrongArity(BfCommand::kInsert);
      int64_t capacity = 0;
      if (!ParseLongLong(args[i++], &capacity) || capacity < 1 ||
          static_cast<uint64_t>(capacity) > kMaxCapacity) {
        return Error("Bad capacity");
      }
      out->capacity = static_cast<uint64_t>(capacity);
    } else if (EqualsIgnoreCase(word, "ERROR")) {
      if (++i == args.size()) return WrongArity(BfCommand::kInsert);
      double error_rate = 0;
      if (!ParseDouble(args[i++], &error_rate) || !(error_rate > 0 && error_rate < 1)) {
        return Error("Bad error rate");
      }
      out->error_rate = error_rate;
    } else if (EqualsIgnoreCase(word, "EXPANSION")) {
      if (++i == args.size()) return WrongArity(BfCommand::kInsert);
      int64_t expansion = 0;
      if (!ParseLongLong(args[i++], &expansion) || expansion < 0 || expansion > kMaxExpansion) {
        return Error("Bad expansion");
      }
      out->expansion = static_cast<uint32_t>(expansion);
    } else if (EqualsIgnoreCase(word, "NOCREATE")) {
      out->nocreate = true;
      ++i;
    } else if (EqualsIgnoreCase(word, "NONSCALING")) {
      nonscaling = true;
      ++i;
    } else if (IsInsertWindowWord(word)) {
      if (++i == args.size()) return WrongArity(BfCommand::kInsert);
      if (std::string error = ParseInsertWindowValue(word, args[i++], out); !error.empty()) {
        return error;
      }
    } else {
      return Error("Unknown argument received");
    }
  }
  if (items_at == 0 || items_at == args.size()) return WrongArity(BfCommand::kInsert);
  if (out->slots != 0 && out->window_ms == 0) return std::string(kErrBadSlots);
  if (out->window_ms != 0 && out->ttl_ms > out->window_ms) return std::string(kErrBadTtl);

  out->nonscaling = nonscaling || out->expansion == 0;
  out->items.assign(args.begin() + static_cast<std::ptrdiff_t>(items_at), args.end());
  return {};
}

}  // namespace

bool LookupBfCommand(std::string_view name, BfCommand* out) {
  // Most commands the proxy sees are not BF.*: reject them on the first three bytes.
  if (name.size() < 6 || (name[0] | 0x20) != 'b' || (name[1] | 0x20) != 'f' || name[2] != '.') {
    return false;
  }
  for (const CommandName& c : kCommands) {
    // (The length first: the comparison is a call, and this runs several times per command.)
    if (c.upper.size() == name.size() && EqualsIgnoreCase(name, c.upper)) {
      *out = c.command;
      return true;
    }
  }
  return false;
}

std::string ParseBfRequest(const std::vector<std::string_view>& args, const BfDefaults& defaults,
                           BfRequest* out) {
  *out = BfRequest{};
  if (args.empty() || !LookupBfCommand(args[0], &out->command)) {
    return Error("ERR unknown command");
  }
  const BfCommand command = out->command;
  const size_t argc = args.size();

  // ADD/MADD (and INSERT) create a missing key with the configured defaults.
  out->error_rate = defaults.error_rate;
  out->capacity = defaults.capacity;
  out->expansion = defaults.expansion;
  out->nonscaling = defaults.expansion == 0;

  switch (command) {
    case BfCommand::kReserve:
      return ParseReserve(args, defaults, out);
    case BfCommand::kInsert:
      return ParseInsert(args, defaults, out);

    case BfCommand::kAdd:
    case BfCommand::kExists:
      if (argc != 3) return WrongArity(command);
      out->key = args[1];
      out->items.push_back(args[2]);
      return {};

    case BfCommand::kMAdd:
    case BfCommand::kMExists:
      if (argc < 3) return WrongArity(command);
      out->key = args[1];
      out->items.assign(args.begin() + 2, args.end());
      return {};

    case BfCommand::kCard:
    case BfCommand::kDebug:
      if (argc != 2) return WrongArity(command);
      out->key = args[1];
      return {};

    case BfCommand::kInfo: {
      if (argc != 2 && argc != 3) return WrongArity(command);
      out->key = args[1];
      if (argc == 2) return {};
      struct Field {
        std::string_view name;
        InfoField field;
      };
      static constexpr Field kFields[] = {
          {"CAPACITY", InfoField::kCapacity},   {"SIZE", InfoField::kSize},
          {"FILTERS", InfoField::kFilters},     {"ITEMS", InfoField::kItems},
          {"EXPANSION", InfoField::kExpansion},
      };
      for (const Field& f : kFields) {
        if (EqualsIgnoreCase(args[2], f.name)) {
          out->info_field = f.field;
          return {};
        }
      }
      // RedisBloom looks the key up first: "not found"/WRONGTYPE win over this.
      return Error("Invalid information value");
    }

    case BfCommand::kScanDump:
      if (argc != 3) return WrongArity(command);
      out->key = args[1];
      // RedisBloom looks the key up first: "not found"/WRONGTYPE win over this.
      if (!ParseLongLong(args[2], &out->iterator)) {
        return Error("Second argument must be numeric");
      }
      return {};

    case BfCommand::kLoadChunk:
      if (argc != 4) return WrongArity(command);
      out->key = args[1];
      // Unlike SCANDUMP, this is checked before the key (and carries "ERR").
      if (!ParseLongLong(args[2], &out->iterator)) {
        return Error("ERR Second argument must be numeric");
      }
      out->data = args[3];
      return {};
  }
  return Error("ERR unknown command");
}

bool CreatesFilter(const BfRequest& req) {
  switch (req.command) {
    case BfCommand::kReserve:
    case BfCommand::kAdd:
    case BfCommand::kMAdd:
      return true;
    case BfCommand::kInsert:
      return !req.nocreate;
    case BfCommand::kLoadChunk:
      return req.iterator == 1;
    default:
      return false;
  }
}

}  // namespace bloomproxy::filters

// libFuzzer target for ParseBfRequest (BF.* argument parsing), when bit 6 of the first byte is
// set for ParseCfRequest (CF.*: cf_args_fuzz.h, included below, describes its own layout), and
// when bit 7 is set for ParseTdigestRequest (TDIGEST.*: tdigest_args_fuzz.h, likewise).
//
// BF input layout: the first byte picks the command name and how the rest is split:
//   bits 0-3  0..10: the name of one of the eleven BF commands (kNames below);
//             11..15: no pick, the first argument of the rest is the name, as sent
//   bit 4     the picked name in lower case (else upper case)
//   bit 5     arguments are separated by '\n' (else by NUL), so that either byte can be part of
//             an argument
//   bit 6     0 (1 picks CF.*, below)
//   bit 7     0 (1 picks TDIGEST.*, below, whatever bit 6 is)
// The rest, split on the separator, gives the arguments after the name (none when it is empty).
// Each argument gets its own allocation of exactly its size, so ASan catches a read past one.
//
// ParseBfRequest runs with the default BfDefaults. Its result must be either an error reply
// ('-', one line, "\r\n") or a request whose views are the caller's arguments and whose
// creation parameters are within RedisBloom's bounds; the simpler commands must succeed exactly
// when their arity (and numeric argument) is right. BF.RESERVE and BF.INSERT are checked against
// a reference parser written from the grammar (RedisBloom's, plus the windowed filters' WINDOW,
// SLOTS and TTL of docs/windowed-filters.md): the same error bytes, the same numbers. The same
// arguments with the name's letters in the other case, parsed into a request left dirty by an
// earlier use, give the same result; with every argument's letters in the other case, the same
// error and numbers.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bloom.h"
#include "filters/common/module_args.h"
#include "protocol/request_parser.h"

namespace {

using bloomproxy::filters::BfCommand;
using bloomproxy::filters::BfDefaults;
using bloomproxy::filters::BfRequest;
using bloomproxy::filters::InfoField;
using bloomproxy::filters::kMaxCapacity;
using bloomproxy::filters::kMaxExpansion;
using bloomproxy::filters::kMaxWindowMs;
using bloomproxy::filters::kMaxWindowSlots;
using bloomproxy::filters::kMinWindowSlots;
using bloomproxy::filters::LookupBfCommand;
using bloomproxy::filters::ParseBfRequest;

// Aborts with a message, so the crash report says which invariant broke.
#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

struct Name {
  const char* upper;
  const char* lower;
  BfCommand command;
};
constexpr Name kNames[] = {
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
constexpr unsigned kPicks = sizeof(kNames) / sizeof(kNames[0]);

char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }

// ASCII letters only, as Redis compares names.
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Upper(a[i]) != Upper(b[i])) return false;
  }
  return true;
}

// The arguments, each in its own allocation.
class Args {
 public:
  void Add(std::string_view arg) {
    storage_.emplace_back(new char[arg.size() == 0 ? 1 : arg.size()]);
    std::memcpy(storage_.back().get(), arg.data(), arg.size());
    views_.emplace_back(storage_.back().get(), arg.size());
  }
  const std::vector<std::string_view>& views() const { return views_; }

 private:
  std::vector<std::unique_ptr<char[]>> storage_;
  std::vector<std::string_view> views_;
};

bool Same(std::string_view a, std::string_view b) {
  return a.data() == b.data() && a.size() == b.size();
}

bool Within(std::string_view view, const std::vector<std::string_view>& args) {
  for (std::string_view arg : args) {
    if (view.data() >= arg.data() && view.data() + view.size() <= arg.data() + arg.size()) {
      return true;
    }
  }
  return false;
}

// The numbers and flags of two requests (views aside).
bool SameNumbers(const BfRequest& a, const BfRequest& b) {
  // Doubles compared bit for bit: both come from the same strtod.
  return a.command == b.command && a.items.size() == b.items.size() &&
         std::memcmp(&a.error_rate, &b.error_rate, sizeof(double)) == 0 &&
         a.capacity == b.capacity && a.expansion == b.expansion && a.nonscaling == b.nonscaling &&
         a.nocreate == b.nocreate && a.info_field == b.info_field && a.iterator == b.iterator &&
         a.window_ms == b.window_ms && a.slots == b.slots && a.ttl_ms == b.ttl_ms &&
         a.expire_at_ms == b.expire_at_ms;
}

// Also the same views: the same arguments of the same caller.
bool SameRequest(const BfRequest& a, const BfRequest& b) {
  if (!SameNumbers(a, b) || !Same(a.key, b.key) || !Same(a.data, b.data)) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!Same(a.items[i], b.items[i])) return false;
  }
  return true;
}

const Name* FindName(std::string_view name) {
  for (const Name& n : kNames) {
    if (EqualsIgnoreCase(name, n.upper)) return &n;
  }
  return nullptr;
}

bool IsInfoField(std::string_view word) {
  for (const char* f : {"CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"}) {
    if (EqualsIgnoreCase(word, f)) return true;
  }
  return false;
}

bool IsInteger(std::string_view s, int64_t* out) {
  return bloomproxy::protocol::StringToInt64(s, out);
}

// The default creation parameters, untouched (ADD/MADD create a missing key with them), and no
// window: that is a bf-window rule's, which the parser never sees.
bool HasDefaults(const BfRequest& r, const BfDefaults& d) {
  return r.error_rate == d.error_rate && r.capacity == d.capacity && r.expansion == d.expansion &&
         r.nonscaling == (d.expansion == 0) && !r.nocreate && r.window_ms == 0 && r.slots == 0 &&
         r.ttl_ms == 0 && r.expire_at_ms == 0;
}

// ---------------------------------------------------------------------------------------------
// The reference for BF.RESERVE and BF.INSERT, from the grammar:
//   BF.RESERVE key error capacity [EXPANSION n] [NONSCALING] [WINDOW ms [SLOTS g]]
//     words found anywhere after the capacity (the first of each counts), other words ignored;
//     at most 7 arguments, 9 with WINDOW, 11 with WINDOW and SLOTS; RedisBloom's checks in its
//     order, then the window (1..kMaxWindowMs), then SLOTS (kMinWindowSlots..kMaxWindowSlots,
//     and only with WINDOW).
//   BF.INSERT key [CAPACITY n] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] [WINDOW ms]
//             [SLOTS g] [TTL ms] ITEMS item...
//     options left to right, the first bad one reported (an option without its value: arity);
//     then ITEMS and at least one item; then SLOTS needs WINDOW, and TTL <= WINDOW.
// Integers are Redis's string2ll (protocol's StringToInt64); doubles are module_args'
// ParseDouble, whose formats bf_args_test checks one by one.

std::string Line(std::string_view text) { return "-" + std::string(text) + "\r\n"; }

std::string Arity(const Name& name) {
  return std::string("-ERR wrong number of arguments for '") + name.lower + "' command\r\n";
}

bool InRange(std::string_view s, int64_t lo, uint64_t hi, uint64_t* out) {
  int64_t v = 0;
  if (!IsInteger(s, &v) || v < lo || static_cast<uint64_t>(v) > hi) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

// Where `word` first is after the capacity, or 0.
size_t Find(const std::vector<std::string_view>& args, const char* word) {
  for (size_t i = 4; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], word)) return i;
  }
  return 0;
}

std::string RefReserveWindow(const std::vector<std::string_view>& args, size_t window, size_t slots,
                             BfRequest* want) {
  if (window != 0) {
    if (window + 1 == args.size() ||
        !InRange(args[window + 1], 1, kMaxWindowMs, &want->window_ms)) {
      return Line("ERR bad window");
    }
  }
  uint64_t g = 0;
  if (slots != 0 && (window == 0 || slots + 1 == args.size() ||
                     !InRange(args[slots + 1], kMinWindowSlots, kMaxWindowSlots, &g))) {
    return Line("ERR bad slots");
  }
  want->slots = static_cast<uint32_t>(g);
  return {};
}

std::string RefReserve(const std::vector<std::string_view>& args, const Name& name,
                       const BfDefaults& d, BfRequest* want) {
  const size_t window = Find(args, "WINDOW");
  const size_t slots = Find(args, "SLOTS");
  const size_t most = window == 0 ? 7 : slots == 0 ? 9 : 11;
  if (args.size() < 4 || args.size() > most) return Arity(name);
  if (!bloomproxy::filters::ParseDouble(args[2], &want->error_rate)) {
    return Line("ERR bad error rate");
  }
  if (!(want->error_rate > 0 && want->error_rate < 1)) {
    return Line("ERR error rate must be in the range (0.000000, 1.000000)");
  }
  int64_t capacity = 0;
  if (!IsInteger(args[3], &capacity)) return Line("ERR bad capacity");
  if (capacity < 1 || capacity > int64_t{1} << 30) {
    return Line("ERR capacity must be in the range [1, 1073741824]");
  }
  want->capacity = static_cast<uint64_t>(capacity);
  const bool nonscaling = Find(args, "NONSCALING") != 0;
  int64_t expansion = d.expansion;
  if (const size_t at = Find(args, "EXPANSION"); at != 0) {
    if (at + 1 == args.size()) return Line("ERR no expansion");
    if (!IsInteger(args[at + 1], &expansion)) return Line("ERR bad expansion");
    if (nonscaling && expansion != 0) return Line("Nonscaling filters cannot expand");
    if (expansion < 0 || expansion > 32768) {
      return Line("ERR expansion must be in the range [0, 32768]");
    }
  }
  want->expansion = static_cast<uint32_t>(expansion);
  want->nonscaling = nonscaling || expansion == 0;
  return RefReserveWindow(args, window, slots, want);
}

// One BF.INSERT option with a value at args[i] (i < args.size()); "" or its error.
std::string RefInsertValue(std::string_view word, std::string_view value, BfRequest* want) {
  uint64_t v = 0;
  double rate = 0;
  if (EqualsIgnoreCase(word, "CAPACITY")) {
    if (!InRange(value, 1, kMaxCapacity, &want->capacity)) return Line("Bad capacity");
  } else if (EqualsIgnoreCase(word, "ERROR")) {
    if (!bloomproxy::filters::ParseDouble(value, &rate) || !(rate > 0 && rate < 1)) {
      return Line("Bad error rate");
    }
    want->error_rate = rate;
  } else if (EqualsIgnoreCase(word, "EXPANSION")) {
    if (!InRange(value, 0, kMaxExpansion, &v)) return Line("Bad expansion");
    want->expansion = static_cast<uint32_t>(v);
  } else if (EqualsIgnoreCase(word, "WINDOW")) {
    if (!InRange(value, 1, kMaxWindowMs, &want->window_ms)) return Line("ERR bad window");
  } else if (EqualsIgnoreCase(word, "SLOTS")) {
    if (!InRange(value, kMinWindowSlots, kMaxWindowSlots, &v)) return Line("ERR bad slots");
    want->slots = static_cast<uint32_t>(v);
  } else if (!InRange(value, 1, kMaxWindowMs, &want->ttl_ms)) {
    return Line("ERR bad TTL");
  }
  return {};
}

std::string RefInsert(const std::vector<std::string_view>& args, const Name& name,
                      BfRequest* want) {
  if (args.size() < 4) return Arity(name);
  bool nonscaling = false;
  size_t i = 2;
  for (; i < args.size() && !EqualsIgnoreCase(args[i], "ITEMS"); ++i) {
    const std::string_view word = args[i];
    if (EqualsIgnoreCase(word, "NOCREATE")) {
      want->nocreate = true;
    } else if (EqualsIgnoreCase(word, "NONSCALING")) {
      nonscaling = true;
    } else if (EqualsIgnoreCase(word, "CAPACITY") || EqualsIgnoreCase(word, "ERROR") ||
               EqualsIgnoreCase(word, "EXPANSION") || EqualsIgnoreCase(word, "WINDOW") ||
               EqualsIgnoreCase(word, "SLOTS") || EqualsIgnoreCase(word, "TTL")) {
      if (++i == args.size()) return Arity(name);
      if (std::string e = RefInsertValue(word, args[i], want); !e.empty()) return e;
    } else {
      return Line("Unknown argument received");
    }
  }
  if (i + 1 >= args.size()) return Arity(name);  // no ITEMS, or nothing after it
  if (want->slots != 0 && want->window_ms == 0) return Line("ERR bad slots");
  if (want->window_ms != 0 && want->ttl_ms > want->window_ms) return Line("ERR bad TTL");
  want->nonscaling = nonscaling || want->expansion == 0;
  want->items.assign(args.begin() + static_cast<std::ptrdiff_t>(i + 1), args.end());
  return {};
}

// The reference's reply ("" when good) and request, for RESERVE and INSERT.
std::string Reference(const std::vector<std::string_view>& args, const Name& name,
                      const BfDefaults& d, BfRequest* want) {
  *want = BfRequest{};
  want->command = name.command;
  want->error_rate = d.error_rate;
  want->capacity = d.capacity;
  want->expansion = d.expansion;
  if (name.command == BfCommand::kReserve) return RefReserve(args, name, d, want);
  return RefInsert(args, name, want);
}

void CheckError(const std::string& error, const Name* name) {
  FUZZ_CHECK(error.size() >= 3);
  FUZZ_CHECK(error[0] == '-');
  FUZZ_CHECK(error.compare(error.size() - 2, 2, "\r\n") == 0);
  FUZZ_CHECK(error.find_first_of("\r\n") == error.size() - 2);
  if (name == nullptr) {
    FUZZ_CHECK(error == "-ERR unknown command\r\n");
  } else if (error.find("wrong number of arguments") != std::string::npos) {
    FUZZ_CHECK(error ==
               std::string("-ERR wrong number of arguments for '") + name->lower + "' command\r\n");
  }
}

// The contract of a parse of `args` (args[0] names `name`, or nothing known when null).
void Check(const std::vector<std::string_view>& args, const std::string& error,
           const BfRequest& req, const Name* name, const BfDefaults& defaults) {
  BfCommand looked_up = BfCommand::kAdd;
  FUZZ_CHECK(LookupBfCommand(args[0], &looked_up) == (name != nullptr));
  if (name != nullptr) FUZZ_CHECK(looked_up == name->command);

  const size_t argc = args.size();
  int64_t number = 0;
  // Commands whose grammar is just their arity (and a numeric argument): success exactly then.
  if (name != nullptr) {
    bool want_ok = true;
    switch (name->command) {
      case BfCommand::kAdd:
      case BfCommand::kExists:
        want_ok = argc == 3;
        break;
      case BfCommand::kMAdd:
      case BfCommand::kMExists:
        want_ok = argc >= 3;
        break;
      case BfCommand::kCard:
      case BfCommand::kDebug:
        want_ok = argc == 2;
        break;
      case BfCommand::kInfo:
        want_ok = argc == 2 || (argc == 3 && IsInfoField(args[2]));
        break;
      case BfCommand::kScanDump:
        want_ok = argc == 3 && IsInteger(args[2], &number);
        break;
      case BfCommand::kLoadChunk:
        want_ok = argc == 4 && IsInteger(args[2], &number);
        break;
      case BfCommand::kReserve:
      case BfCommand::kInsert: {
        BfRequest want;
        const std::string want_error = Reference(args, *name, defaults, &want);
        FUZZ_CHECK(error == want_error);
        if (error.empty()) FUZZ_CHECK(SameNumbers(req, want));
        want_ok = error.empty();
        if (argc < 4) FUZZ_CHECK(!error.empty());
        break;
      }
    }
    FUZZ_CHECK(error.empty() == want_ok);
  }
  if (!error.empty()) {
    CheckError(error, name);
    return;
  }

  FUZZ_CHECK(name != nullptr);
  FUZZ_CHECK(req.command == name->command);
  FUZZ_CHECK(argc >= 2);
  FUZZ_CHECK(Same(req.key, args[1]));
  for (std::string_view item : req.items) FUZZ_CHECK(Within(item, args));
  if (req.command == BfCommand::kLoadChunk) {
    FUZZ_CHECK(Within(req.data, args));
  } else {
    FUZZ_CHECK(req.data.empty());
  }

  // RedisBloom's bounds.
  FUZZ_CHECK(req.error_rate > 0 && req.error_rate < 1);
  FUZZ_CHECK(req.capacity >= 1 && req.capacity <= kMaxCapacity);
  FUZZ_CHECK(req.expansion <= kMaxExpansion);
  if (req.expansion == 0) FUZZ_CHECK(req.nonscaling);

  // The window's bounds; only RESERVE and INSERT give a window, only INSERT a lifetime, and
  // the slots' expiry is never the client's.
  FUZZ_CHECK(req.window_ms <= kMaxWindowMs && req.ttl_ms <= kMaxWindowMs);
  FUZZ_CHECK(req.slots == 0 ||
             (req.window_ms != 0 && req.slots >= kMinWindowSlots && req.slots <= kMaxWindowSlots));
  if (req.window_ms != 0) FUZZ_CHECK(req.ttl_ms <= req.window_ms);
  if (req.command != BfCommand::kReserve && req.command != BfCommand::kInsert) {
    FUZZ_CHECK(req.window_ms == 0);
  }
  if (req.command != BfCommand::kInsert) FUZZ_CHECK(req.ttl_ms == 0);
  FUZZ_CHECK(req.expire_at_ms == 0);

  switch (req.command) {
    case BfCommand::kReserve: {
      FUZZ_CHECK(req.items.empty());
      FUZZ_CHECK(!req.nocreate);
      bool nonscaling_word = false;
      for (size_t i = 4; i < argc; ++i) nonscaling_word |= EqualsIgnoreCase(args[i], "NONSCALING");
      FUZZ_CHECK(req.nonscaling == (nonscaling_word || req.expansion == 0));
      break;
    }
    case BfCommand::kInsert: {
      // ITEMS, then at least one item: the rest of the arguments, in order.
      const size_t n = req.items.size();
      FUZZ_CHECK(n >= 1 && n + 3 <= argc);
      FUZZ_CHECK(EqualsIgnoreCase(args[argc - n - 1], "ITEMS"));
      for (size_t i = 0; i < n; ++i) FUZZ_CHECK(Same(req.items[i], args[argc - n + i]));
      break;
    }
    case BfCommand::kAdd:
    case BfCommand::kExists:
    case BfCommand::kMAdd:
    case BfCommand::kMExists:
      FUZZ_CHECK(HasDefaults(req, defaults));
      FUZZ_CHECK(req.items.size() == argc - 2);
      for (size_t i = 0; i < req.items.size(); ++i) FUZZ_CHECK(Same(req.items[i], args[i + 2]));
      break;
    case BfCommand::kInfo:
      FUZZ_CHECK(req.items.empty());
      if (argc == 2) FUZZ_CHECK(req.info_field == InfoField::kAll);
      if (argc == 3) FUZZ_CHECK(req.info_field != InfoField::kAll);
      break;
    case BfCommand::kCard:
    case BfCommand::kDebug:
      FUZZ_CHECK(req.items.empty());
      break;
    case BfCommand::kScanDump:
      FUZZ_CHECK(req.iterator == number);
      break;
    case BfCommand::kLoadChunk:
      FUZZ_CHECK(req.iterator == number);
      FUZZ_CHECK(Same(req.data, args[3]));
      break;
  }
}

}  // namespace

#include "tests/fuzz/cf_args_fuzz.h"
#include "tests/fuzz/tdigest_args_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 1) return 0;
  if (bytes[0] & 0x80) return td_fuzz::FuzzTd(bytes, size);
  if (bytes[0] & 0x40) return cf_fuzz::FuzzCf(bytes, size);
  const unsigned pick = bytes[0] & 0x0f;
  const bool lower = (bytes[0] & 0x10) != 0;
  const char separator = (bytes[0] & 0x20) ? '\n' : '\0';
  const std::string_view rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);

  std::vector<std::string_view> parts;
  if (!rest.empty()) {
    for (size_t start = 0;;) {
      const size_t end = rest.find(separator, start);
      parts.push_back(rest.substr(start, end == std::string_view::npos ? end : end - start));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
  }

  std::string name;
  size_t first = 0;
  if (pick < kPicks) {
    name = lower ? kNames[pick].lower : kNames[pick].upper;
  } else {
    if (parts.empty()) return 0;
    name.assign(parts[0]);
    first = 1;
  }
  // The same name with every ASCII letter in the other case.
  std::string flipped = name;
  for (char& c : flipped) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) c = static_cast<char>(c ^ 0x20);
  }

  Args args;
  args.Add(name);
  for (size_t i = first; i < parts.size(); ++i) args.Add(parts[i]);
  Args args2;  // the flipped name, then the same argument allocations
  args2.Add(flipped);
  std::vector<std::string_view> views2 = args2.views();
  views2.insert(views2.end(), args.views().begin() + 1, args.views().end());

  const Name* known = FindName(name);
  if (pick < kPicks) FUZZ_CHECK(known == &kNames[pick]);
  const BfDefaults defaults;

  BfRequest req;
  const std::string error = ParseBfRequest(args.views(), defaults, &req);
  Check(args.views(), error, req, known, defaults);

  // A request left dirty by an earlier use.
  BfRequest req2;
  req2.command = BfCommand::kLoadChunk;
  req2.key = flipped;
  req2.error_rate = 0.5;
  req2.capacity = 7;
  req2.expansion = 0;
  req2.nonscaling = true;
  req2.nocreate = true;
  req2.items.assign(3, flipped);
  req2.info_field = InfoField::kExpansion;
  req2.iterator = -5;
  req2.data = flipped;
  req2.window_ms = 9;
  req2.slots = 4;
  req2.ttl_ms = 3;
  req2.expire_at_ms = 11;
  const std::string error2 = ParseBfRequest(views2, defaults, &req2);
  FUZZ_CHECK(error2 == error);
  if (error.empty()) FUZZ_CHECK(SameRequest(req, req2));

  // Every argument's letters in the other case (option words, ITEMS, "inf" and "1e-3"
  // included): the same error and numbers, the views now into the flipped arguments.
  Args all;
  for (std::string_view a : args.views()) {
    std::string f(a);
    for (char& c : f) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) c = static_cast<char>(c ^ 0x20);
    }
    all.Add(f);
  }
  BfRequest req3;
  const std::string error3 = ParseBfRequest(all.views(), defaults, &req3);
  Check(all.views(), error3, req3, known, defaults);
  FUZZ_CHECK(error3 == error);
  if (error.empty()) FUZZ_CHECK(SameNumbers(req, req3));
  return 0;
}

// libFuzzer target for ParseBfRequest (BF.* argument parsing) and, when bit 6 of the first byte is
// set, for ParseCfRequest (CF.*: cf_args_fuzz.h, included below, describes its own layout).
//
// BF input layout: the first byte picks the command name and how the rest is split:
//   bits 0-3  0..10: the name of one of the eleven BF commands (kNames below);
//             11..15: no pick, the first argument of the rest is the name, as sent
//   bit 4     the picked name in lower case (else upper case)
//   bit 5     arguments are separated by '\n' (else by NUL), so that either byte can be part of
//             an argument
//   bit 6     0 (1 picks CF.*, below)
//   bit 7     unused
// The rest, split on the separator, gives the arguments after the name (none when it is empty).
// Each argument gets its own allocation of exactly its size, so ASan catches a read past one.
//
// ParseBfRequest runs with the default BfDefaults. Its result must be either an error reply
// ('-', one line, "\r\n") or a request whose views are the caller's arguments and whose
// creation parameters are within RedisBloom's bounds; the simpler commands must succeed exactly
// when their arity (and numeric argument) is right. The same arguments with the name's letters
// in the other case, parsed into a request left dirty by an earlier use, give the same result.
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
#include "protocol/request_parser.h"

namespace {

using bloomproxy::filters::BfCommand;
using bloomproxy::filters::BfDefaults;
using bloomproxy::filters::BfRequest;
using bloomproxy::filters::InfoField;
using bloomproxy::filters::kMaxCapacity;
using bloomproxy::filters::kMaxExpansion;
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

bool SameRequest(const BfRequest& a, const BfRequest& b) {
  if (a.items.size() != b.items.size()) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!Same(a.items[i], b.items[i])) return false;
  }
  // Doubles compared bit for bit: both come from the same strtod.
  return a.command == b.command && Same(a.key, b.key) &&
         std::memcmp(&a.error_rate, &b.error_rate, sizeof(double)) == 0 &&
         a.capacity == b.capacity && a.expansion == b.expansion && a.nonscaling == b.nonscaling &&
         a.nocreate == b.nocreate && a.info_field == b.info_field && a.iterator == b.iterator &&
         Same(a.data, b.data);
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

// The default creation parameters, untouched (ADD/MADD create a missing key with them).
bool HasDefaults(const BfRequest& r, const BfDefaults& d) {
  return r.error_rate == d.error_rate && r.capacity == d.capacity && r.expansion == d.expansion &&
         r.nonscaling == (d.expansion == 0) && !r.nocreate;
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
        want_ok = error.empty();  // checked below, one way only
        if (argc < 4 || argc > 7) FUZZ_CHECK(!error.empty());
        break;
      case BfCommand::kInsert:
        want_ok = error.empty();
        if (argc < 4) FUZZ_CHECK(!error.empty());
        break;
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 1) return 0;
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
  const std::string error2 = ParseBfRequest(views2, defaults, &req2);
  FUZZ_CHECK(error2 == error);
  if (error.empty()) FUZZ_CHECK(SameRequest(req, req2));
  return 0;
}

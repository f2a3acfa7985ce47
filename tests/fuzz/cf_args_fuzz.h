// The CF.* half of bf_args_fuzzer.cc (one target, so CI fuzzes both in the time it had for BF):
// ParseCfRequest checked against a reference parser written from the spec's grammar
// (cf-commands.md, "Commands, parsing and error precedence"). Included by bf_args_fuzzer.cc
// after its helpers (FUZZ_CHECK, Args, Same, EqualsIgnoreCase, IsInteger), which it uses.
//
// Input layout: the first byte picks the command name and how the rest is split:
//   bits 0-3  0..13: the name of one of the fourteen CF commands (kCfNames below);
//             14..15: no pick, the first argument of the rest is the name, as sent
//   bit 4     the picked name in lower case (else upper case)
//   bit 5     arguments are separated by '\n' (else by NUL)
//   bit 6     1 (CF)
//   bit 7     0 (1 picks TDIGEST.*: tdigest_args_fuzz.h)
// The rest, split on the separator, gives the arguments after the name.
//
// Checked: the reply (exact error bytes) and every field of the request equal the reference's;
// the key is args[1]; items and data are views of the caller's arguments; the same arguments with
// the name's letters in the other case, parsed into a request left dirty by an earlier use, give
// the same request; every argument with its letters in the other case gives the same error and
// the same numbers. For a good CF.LOADCHUNK, CheckCfLoad's verdict against the spec's rules.
#pragma once

#include "filters/cuckoo/cf_args.h"
#include "filters/cuckoo/cuckoo.h"

namespace {
namespace cf_fuzz {

using bloomproxy::filters::CfCommand;
using bloomproxy::filters::CfRequest;

struct CfName {
  const char* upper;
  const char* lower;
  CfCommand command;
};
constexpr CfName kCfNames[] = {
    {"CF.RESERVE", "cf.reserve", CfCommand::kReserve},
    {"CF.ADD", "cf.add", CfCommand::kAdd},
    {"CF.ADDNX", "cf.addnx", CfCommand::kAddNx},
    {"CF.INSERT", "cf.insert", CfCommand::kInsert},
    {"CF.INSERTNX", "cf.insertnx", CfCommand::kInsertNx},
    {"CF.EXISTS", "cf.exists", CfCommand::kExists},
    {"CF.MEXISTS", "cf.mexists", CfCommand::kMExists},
    {"CF.COUNT", "cf.count", CfCommand::kCount},
    {"CF.DEL", "cf.del", CfCommand::kDel},
    {"CF.COMPACT", "cf.compact", CfCommand::kCompact},
    {"CF.SCANDUMP", "cf.scandump", CfCommand::kScanDump},
    {"CF.LOADCHUNK", "cf.loadchunk", CfCommand::kLoadChunk},
    {"CF.INFO", "cf.info", CfCommand::kInfo},
    {"CF.DEBUG", "cf.debug", CfCommand::kDebug},
};
constexpr unsigned kCfNameCount = sizeof(kCfNames) / sizeof(kCfNames[0]);

const CfName* FindCfName(std::string_view name) {
  for (const CfName& n : kCfNames) {
    if (EqualsIgnoreCase(name, n.upper)) return &n;
  }
  return nullptr;
}

std::string Line(std::string_view text) { return "-" + std::string(text) + "\r\n"; }

std::string ArityError(const CfName& name) {
  return std::string("-ERR wrong number of arguments for '") + name.lower + "' command\r\n";
}

bool ArityOk(CfCommand c, size_t argc) {
  switch (c) {
    case CfCommand::kReserve:
      return argc >= 3 && argc % 2 == 1;
    case CfCommand::kInsert:
    case CfCommand::kInsertNx:
      return argc >= 4;
    case CfCommand::kMExists:
      return argc >= 3;
    case CfCommand::kCompact:
    case CfCommand::kInfo:
    case CfCommand::kDebug:
      return argc == 2;
    case CfCommand::kLoadChunk:
      return argc == 4;
    default:  // ADD, ADDNX, EXISTS, COUNT, DEL, SCANDUMP
      return argc == 3;
  }
}

uint64_t NextPow2(uint64_t x) {
  if (x == 0) return 0;
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

// A RESERVE option: the first argument anywhere spelled `word` (any case); its value follows.
std::string Option(const std::vector<std::string_view>& args, const char* word, int64_t lo,
                   int64_t hi, uint64_t* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!EqualsIgnoreCase(args[i], word)) continue;
    int64_t v = 0;
    if (i + 1 >= args.size() || !IsInteger(args[i + 1], &v)) {
      return Line(std::string("Couldn't parse ") + word);
    }
    if (v < lo || v > hi) {
      return Line(std::string(word) + ": value must be in the range [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    }
    *out = static_cast<uint64_t>(v);
    return {};
  }
  return {};
}

std::string RefReserve(const std::vector<std::string_view>& args, CfRequest* want) {
  int64_t capacity = 0;
  if (!IsInteger(args[2], &capacity)) return Line("Bad capacity");
  uint64_t expansion = 1;
  std::string e = Option(args, "MAXITERATIONS", 1, 65535, &want->max_iterations);
  if (e.empty()) e = Option(args, "BUCKETSIZE", 1, 255, &want->bucket_size);
  if (e.empty()) e = Option(args, "EXPANSION", 0, 32768, &expansion);
  if (!e.empty()) return e;
  if (2 * static_cast<int64_t>(want->bucket_size) > capacity || capacity > (int64_t{1} << 30)) {
    return Line("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]");
  }
  want->capacity = static_cast<uint64_t>(capacity);
  want->expansion = NextPow2(expansion);
  return {};
}

std::string RefInsert(const std::vector<std::string_view>& args, const CfName& name,
                      CfRequest* want) {
  for (size_t i = 2; i < args.size(); ++i) {
    const char c = args[i].empty() ? '\0' : Upper(args[i][0]);
    if (c == 'I') {
      if (i + 1 == args.size()) return ArityError(name);
      want->items.assign(args.begin() + static_cast<std::ptrdiff_t>(i + 1), args.end());
      return {};
    }
    if (c == 'N') {
      want->nocreate = true;
    } else if (c == 'C') {
      if (++i == args.size()) return ArityError(name);
      int64_t capacity = 0;
      if (!IsInteger(args[i], &capacity)) return Line("Bad capacity");
      if (capacity < 4 || capacity > (int64_t{1} << 30)) {
        return Line("Capacity must be in the range [cf-bucket-size * 2, 1073741824]");
      }
      want->capacity = static_cast<uint64_t>(capacity);
    } else {
      return Line("Unknown argument received");
    }
  }
  return ArityError(name);
}

// The reference: the reply RedisBloom gives before looking at the key ("" when none), and the
// request for a good command. `want` starts fresh.
std::string Reference(const std::vector<std::string_view>& args, const CfName& name,
                      CfRequest* want) {
  want->command = name.command;
  if (!ArityOk(name.command, args.size())) return ArityError(name);
  want->key = args[1];
  switch (name.command) {
    case CfCommand::kReserve:
      return RefReserve(args, want);
    case CfCommand::kInsert:
    case CfCommand::kInsertNx:
      return RefInsert(args, name, want);
    case CfCommand::kScanDump:
      if (!IsInteger(args[2], &want->iterator) || want->iterator < 0) {
        return Line("Invalid position");
      }
      return {};
    case CfCommand::kLoadChunk:
      if (!IsInteger(args[2], &want->iterator) || want->iterator == 0) {
        return Line("Invalid position");
      }
      want->data = args[3];
      return {};
    case CfCommand::kCompact:
    case CfCommand::kInfo:
    case CfCommand::kDebug:
      return {};
    default:  // ADD, ADDNX, EXISTS, MEXISTS, COUNT, DEL
      want->items.assign(args.begin() + 2, args.end());
      return {};
  }
}

// The numbers and flags of two requests (views aside).
bool SameNumbers(const CfRequest& a, const CfRequest& b) {
  return a.command == b.command && a.capacity == b.capacity && a.bucket_size == b.bucket_size &&
         a.max_iterations == b.max_iterations && a.expansion == b.expansion &&
         a.nocreate == b.nocreate && a.iterator == b.iterator && a.items.size() == b.items.size();
}

// Also the same views: the same arguments of the same caller.
bool SameCfRequest(const CfRequest& a, const CfRequest& b) {
  if (!SameNumbers(a, b) || !Same(a.key, b.key) || !Same(a.data, b.data)) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!Same(a.items[i], b.items[i])) return false;
  }
  return true;
}

void CheckErrorLine(const std::string& error) {
  FUZZ_CHECK(error.size() >= 3 && error[0] == '-');
  FUZZ_CHECK(error.find_first_of("\r\n") == error.size() - 2);
  FUZZ_CHECK(error.compare(error.size() - 2, 2, "\r\n") == 0);
}

// CheckCfLoad of a good CF.LOADCHUNK, against the spec: a header chunk (iterator 1) must be 38
// bytes and a valid header; another chunk is refused when empty, at a negative iterator, or when
// it - 1 < its length.
void CheckLoad(const CfRequest& req) {
  namespace f = bloomproxy::filters;
  const f::CfLoadVerdict v = f::CheckCfLoad(req);
  const auto len = static_cast<int64_t>(req.data.size());
  if (req.iterator != 1) {
    const bool refused = len == 0 || req.iterator < 0 || req.iterator - 1 < len;
    if (refused) {
      FUZZ_CHECK(v.error == f::kCfErrCannotLoadChunk);
      return;
    }
    // Past 2 * kCfMaxBytes no filter reaches: refused whatever the filter.
    FUZZ_CHECK(v.offset == static_cast<uint64_t>(req.iterator - 1 - len));
    FUZZ_CHECK(v.error == (v.offset >= 2 * f::kCfMaxBytes ? f::kCfErrCannotLoadChunk : ""));
    return;
  }
  if (req.data.size() != f::kCfHeaderBytes) {
    FUZZ_CHECK(v.error == f::kCfErrInvalidHeader);
    return;
  }
  if (!v.error.empty()) {
    FUZZ_CHECK(v.error == f::kCfErrCannotCreate);
    return;
  }
  const f::CfHeader& h = v.header;
  FUZZ_CHECK(h.num_filters >= 1 && h.num_filters <= 65535);
  FUZZ_CHECK(h.bucket_size >= 1 && h.bucket_size <= 255 && h.max_iterations >= 1);
  FUZZ_CHECK(h.expansion <= 32768 && (h.expansion != 0 || h.num_filters == 1));
  FUZZ_CHECK(h.num_buckets >= 1 && (h.num_buckets & (h.num_buckets - 1)) == 0);
  FUZZ_CHECK(h.InfoSize() < f::kCfMaxBytes + 40 + 16 * h.num_filters);
  // Encoded back: the same bytes, but numFilters' upper 48 bits (RedisBloom keeps 16).
  std::string again = f::EncodeCfHeader(h);
  FUZZ_CHECK(again.size() == f::kCfHeaderBytes);
  for (size_t i = 0; i < again.size(); ++i) {
    if (i >= 26 && i < 32) continue;
    FUZZ_CHECK(again[i] == req.data[i]);
  }
}

// Every argument with its ASCII letters in the other case, each in its own allocation.
void FlipAll(const std::vector<std::string_view>& in, Args* out) {
  for (std::string_view a : in) {
    std::string s(a);
    for (char& c : s) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) c = static_cast<char>(c ^ 0x20);
    }
    out->Add(s);
  }
}

void Dirty(CfRequest* r, std::string_view junk) {
  r->command = CfCommand::kLoadChunk;
  r->key = junk;
  r->items.assign(3, junk);
  r->capacity = 7;
  r->bucket_size = 9;
  r->max_iterations = 11;
  r->expansion = 0;
  r->nocreate = true;
  r->iterator = -5;
  r->data = junk;
}

// Parses `args` and checks it against the reference; returns the error.
std::string ParseAndCheck(const std::vector<std::string_view>& args, const CfName* name,
                          CfRequest* req) {
  const std::string error = bloomproxy::filters::ParseCfRequest(args, req);
  CfCommand looked_up = CfCommand::kAdd;
  FUZZ_CHECK(bloomproxy::filters::LookupCfCommand(args[0], &looked_up) == (name != nullptr));
  if (name == nullptr) {
    CheckErrorLine(error);  // not a CF command: the proxy never asks
    return error;
  }
  FUZZ_CHECK(looked_up == name->command);
  CfRequest want;
  const std::string want_error = Reference(args, *name, &want);
  FUZZ_CHECK(error == want_error);
  if (!error.empty()) {
    CheckErrorLine(error);
    return error;
  }
  FUZZ_CHECK(SameCfRequest(*req, want));
  FUZZ_CHECK(Same(req->key, args[1]));
  FUZZ_CHECK(req->Nx() ==
             (name->command == CfCommand::kAddNx || name->command == CfCommand::kInsertNx));
  if (req->command == CfCommand::kLoadChunk) CheckLoad(*req);
  return error;
}

int FuzzCf(const uint8_t* bytes, size_t size) {
  const unsigned pick = bytes[0] & 0x0f;
  const bool lower = (bytes[0] & 0x10) != 0;
  const char separator = (bytes[0] & 0x20) ? '\n' : '\0';
  const std::string_view rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  std::vector<std::string_view> parts;
  for (size_t start = 0; !rest.empty();) {
    const size_t end = rest.find(separator, start);
    parts.push_back(rest.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::string name;
  size_t first = 0;
  if (pick < kCfNameCount) {
    name = lower ? kCfNames[pick].lower : kCfNames[pick].upper;
  } else {
    if (parts.empty()) return 0;
    name.assign(parts[0]);
    first = 1;
  }
  Args args;
  args.Add(name);
  for (size_t i = first; i < parts.size(); ++i) args.Add(parts[i]);
  const CfName* known = FindCfName(name);
  if (pick < kCfNameCount) FUZZ_CHECK(known == &kCfNames[pick]);

  CfRequest req;
  const std::string error = ParseAndCheck(args.views(), known, &req);

  // The name's letters flipped, the same argument allocations, a dirty request: the same result.
  Args flipped_name;
  FlipAll({args.views()[0]}, &flipped_name);
  std::vector<std::string_view> views2 = flipped_name.views();
  views2.insert(views2.end(), args.views().begin() + 1, args.views().end());
  CfRequest req2;
  Dirty(&req2, flipped_name.views()[0]);
  FUZZ_CHECK(ParseAndCheck(views2, known, &req2) == error);
  if (error.empty()) FUZZ_CHECK(SameCfRequest(req, req2));

  // Every letter flipped (option words, ITEMS/NOCREATE/CAPACITY included): the same error and
  // numbers, the views now into the flipped arguments.
  Args flipped_all;
  FlipAll(args.views(), &flipped_all);
  CfRequest req3;
  Dirty(&req3, flipped_all.views()[0]);
  FUZZ_CHECK(ParseAndCheck(flipped_all.views(), known, &req3) == error);
  if (error.empty()) FUZZ_CHECK(SameNumbers(req, req3));
  return 0;
}

}  // namespace cf_fuzz
}  // namespace

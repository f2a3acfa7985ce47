// libFuzzer target for RequestParser.
//
// Input layout: the first byte picks how the rest is fed and parsed:
//   bits 0-5  chunk size - 1 (1..64 bytes per read)
//   bit 6     the client is authenticated (else the unauthenticated limits apply)
//   bit 7     tiny limits, so the "too big" and length limits are reachable by short inputs
// The rest is what a client sends. It is parsed twice, whole and in chunks, like a caller that
// drains every complete command after each read, and the two must agree. Along the way every
// call's result is checked against the parser's contract (see CheckCommand), and every command,
// inline or multibulk, is re-encoded with protocol::AppendCommand and re-parsed: it must come
// back with the same arguments (see CheckReencoded).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"
#include "protocol/request_parser.h"

namespace {

using bloomproxy::protocol::Command;
using bloomproxy::protocol::ParserLimits;
using bloomproxy::protocol::ParseStatus;
using bloomproxy::protocol::RequestParser;

// Aborts with a message, so the crash report says which invariant broke.
#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

struct Parsed {
  std::vector<std::string> args;
  std::string raw;
  bool is_inline = false;

  bool operator==(const Parsed& o) const {
    return args == o.args && raw == o.raw && is_inline == o.is_inline;
  }
};

struct Run {
  std::vector<Parsed> commands;
  std::string error;
  size_t leftover = 0;
  size_t expected = 0;
};

std::string Encode(const std::vector<std::string_view>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out.append(a);
    out += "\r\n";
  }
  return out;
}

// Parses `bytes` with a fresh parser from a fresh allocation of exactly its size (so ASan sees a
// read past its end) and checks that it is exactly one complete command.
void ParseOne(const std::string& bytes, const ParserLimits& limits, bool authenticated,
              const std::vector<std::string_view>& want) {
  std::unique_ptr<char[]> copy(new char[bytes.size()]);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  const std::string_view input(copy.get(), bytes.size());
  RequestParser parser(limits);
  Command cmd;
  size_t consumed = 0;
  FUZZ_CHECK(parser.Parse(input, authenticated, &consumed, &cmd) == ParseStatus::kOk);
  FUZZ_CHECK(consumed == input.size());
  FUZZ_CHECK(!cmd.is_inline);
  FUZZ_CHECK(cmd.args == want);
  // Canonical multibulk: forwarded as it came.
  FUZZ_CHECK(cmd.raw.data() == input.data());
  FUZZ_CHECK(cmd.raw.size() == input.size());
}

// Decoded commands re-encoded and re-parsed must match: the proxy forwards inline commands (and
// non-canonical multibulk) re-encoded with AppendCommand, and Redis must see the same arguments.
// AppendCommand must also agree with this file's own encoder. A multibulk command fits the
// limits it came in under, so it is re-parsed under them. An inline one may not: its words are
// not held to the unauthenticated multibulk and bulk limits, and a line that arrives whole may
// be longer than max_inline_len (as in Redis), so it is re-parsed as Redis would parse what the
// proxy forwards: authenticated, default limits.
void CheckReencoded(const Command& cmd, const ParserLimits& limits, bool authenticated) {
  std::string encoded;
  bloomproxy::protocol::AppendCommand(&encoded, cmd.args);
  FUZZ_CHECK(encoded == Encode(cmd.args));
  if (cmd.is_inline) {
    ParseOne(encoded, ParserLimits(), true, cmd.args);
  } else {
    ParseOne(encoded, limits, authenticated, cmd.args);
  }
}

bool Within(std::string_view inner, const char* begin, size_t size) {
  return inner.data() >= begin && inner.data() + inner.size() <= begin + size;
}

// The contract of a kOk result for `input` of which `consumed` bytes were used.
void CheckCommand(const Command& cmd, std::string_view input, size_t consumed,
                  const ParserLimits& limits, bool authenticated) {
  FUZZ_CHECK(consumed > 0);
  FUZZ_CHECK(consumed <= input.size());
  FUZZ_CHECK(!cmd.args.empty());
  for (std::string_view arg : cmd.args) {
    bool ok = Within(arg, input.data(), consumed);
    for (const std::string& s : cmd.owned) ok = ok || Within(arg, s.data(), s.size());
    FUZZ_CHECK(ok);
  }
  CheckReencoded(cmd, limits, authenticated);
  if (cmd.is_inline) {
    FUZZ_CHECK(cmd.raw.empty());
    return;
  }
  FUZZ_CHECK(cmd.owned.empty());
  if (cmd.raw.empty()) return;
  // raw is the tail of the consumed bytes (empty commands may precede it) and is exactly the
  // canonical encoding of the arguments.
  FUZZ_CHECK(cmd.raw.data() >= input.data());
  FUZZ_CHECK(cmd.raw.data() + cmd.raw.size() == input.data() + consumed);
  FUZZ_CHECK(cmd.raw == Encode(cmd.args));
  // On its own it parses back to itself.
  RequestParser again(limits);
  Command cmd2;
  size_t consumed2 = 0;
  FUZZ_CHECK(again.Parse(cmd.raw, authenticated, &consumed2, &cmd2) == ParseStatus::kOk);
  FUZZ_CHECK(consumed2 == cmd.raw.size());
  FUZZ_CHECK(cmd2.args == cmd.args);
  FUZZ_CHECK(cmd2.raw.data() == cmd.raw.data());
}

Parsed Copy(const Command& cmd) {
  Parsed p;
  for (std::string_view a : cmd.args) p.args.emplace_back(a);
  p.raw.assign(cmd.raw);
  p.is_inline = cmd.is_inline;
  return p;
}

// Feeds `data` `chunk` bytes at a time. Every call gets its bytes in a fresh allocation (the
// previous one freed) so that ASan catches a parser that keeps pointers between calls.
Run Feed(std::string_view data, size_t chunk, const ParserLimits& limits, bool authenticated) {
  Run run;
  RequestParser parser(limits);
  Command cmd;
  std::string pending;
  for (size_t fed = 0; fed < data.size();) {
    const size_t n = std::min(chunk, data.size() - fed);
    pending.append(data.substr(fed, n));
    fed += n;
    while (true) {
      std::unique_ptr<char[]> copy(new char[pending.size() + 1]);
      std::memcpy(copy.get(), pending.data(), pending.size());
      const std::string_view input(copy.get(), pending.size());
      size_t consumed = 0;
      const ParseStatus status = parser.Parse(input, authenticated, &consumed, &cmd);
      if (status == ParseStatus::kError) {
        run.error = parser.error();
        FUZZ_CHECK(run.error.rfind("ERR Protocol error: ", 0) == 0);
        FUZZ_CHECK(cmd.args.empty());
        // Sticky until Reset().
        FUZZ_CHECK(parser.Parse(input, authenticated, &consumed, &cmd) == ParseStatus::kError);
        FUZZ_CHECK(parser.error() == run.error);
        return run;
      }
      FUZZ_CHECK(consumed <= input.size());
      if (status == ParseStatus::kNeedMore) {
        FUZZ_CHECK(cmd.args.empty());
        FUZZ_CHECK(parser.expected_size() == 0 || parser.expected_size() > input.size() - consumed);
        pending.erase(0, consumed);
        break;
      }
      FUZZ_CHECK(status == ParseStatus::kOk);
      CheckCommand(cmd, input, consumed, limits, authenticated);
      run.commands.push_back(Copy(cmd));
      pending.erase(0, consumed);
    }
  }
  run.leftover = pending.size();
  run.expected = parser.expected_size();
  return run;
}

bool IsTooBig(const std::string& error) { return error.find("too big") != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 1) return 0;
  const size_t chunk = 1 + (bytes[0] & 0x3f);
  const bool authenticated = (bytes[0] & 0x40) != 0;
  ParserLimits limits;
  if (bytes[0] & 0x80) {
    limits.max_inline_len = 24;
    limits.max_bulk_len = 40;
    limits.unauth_max_multibulk_len = 3;
    limits.unauth_max_bulk_len = 8;
  }
  const std::string_view data(reinterpret_cast<const char*>(bytes) + 1, size - 1);

  const Run whole = Feed(data, data.size() == 0 ? 1 : data.size(), limits, authenticated);
  const Run chunked = Feed(data, chunk, limits, authenticated);

  if (IsTooBig(chunked.error)) {
    // The one legitimate difference, as in Redis: a line longer than the limit is refused as
    // soon as a read leaves it without its end, even if the whole input would have ended it
    // (possibly to fail the same way later). Everything before must agree.
    FUZZ_CHECK(chunked.commands.size() <= whole.commands.size());
    for (size_t i = 0; i < chunked.commands.size(); ++i) {
      FUZZ_CHECK(chunked.commands[i] == whole.commands[i]);
    }
    return 0;
  }
  FUZZ_CHECK(chunked.commands == whole.commands);
  FUZZ_CHECK(chunked.error == whole.error);
  FUZZ_CHECK(chunked.leftover == whole.leftover);
  FUZZ_CHECK(chunked.expected == whole.expected);
  return 0;
}

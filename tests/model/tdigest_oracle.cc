// tdigest_oracle: RedisBloom's replies to TDIGEST.* commands, byte for byte, from the model of
// tdigest_keyspace.h (TDIGEST.* and the plain commands it knows: DEL, EXISTS, TYPE, ...). A test
// helper, never installed: tests/integration/test_tdigest_model.py holds the proxy to it.
//
//   tdigest_oracle [--resp3] < commands > replies
//
// Commands come one after another on stdin, as RESP arrays of bulk strings (what a client sends)
// or as inline lines of words separated by spaces (by hand: `TDIGEST.ADD t 1 2`); blank lines are
// skipped. Each gets exactly one reply on stdout, flushed at once, in RESP2 (RESP3 with --resp3,
// as after HELLO 3). A command the model does not know is answered
// "-ERR tdigest_oracle: unknown command '<name>'". Malformed input: a message on stderr, exit 2.
//
// One command of its own, for tests that compare state rather than replies:
//   ORACLE.STATE key  -> the digest as the proxy's data key holds it (tdigest_layout.lua: the
//                        56-byte header, then every node; little-endian) as a bulk string, or
//                        a nil when `key` holds no digest.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/model/tdigest_keyspace.h"

namespace {

constexpr long kMaxLength = 512L << 20;  // Redis's limits: 512 MB per argument

[[noreturn]] void Fail(const std::string& why) {
  std::cerr << "tdigest_oracle: " << why << "\n";
  std::exit(2);
}

// The number after the type byte of RESP header `line` ("*3", "$5"), within [0, kMaxLength].
long HeaderNumber(const std::string& line, char type) {
  if (line.size() < 2 || line[0] != type) Fail("expected '" + std::string(1, type) + "': " + line);
  char* end = nullptr;
  const long n = std::strtol(line.c_str() + 1, &end, 10);
  if (*end != '\0' || n < 0 || n > kMaxLength) Fail("bad length: " + line);
  return n;
}

// A line without its "\r\n" (or "\n"); false at the end of the input.
bool ReadLine(std::istream& in, std::string* line) {
  if (!std::getline(in, *line)) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

// The rest of a RESP array whose header line is `header`.
std::vector<std::string> ReadArray(std::istream& in, const std::string& header) {
  const long argc = HeaderNumber(header, '*');
  std::vector<std::string> args;
  std::string line;
  for (long i = 0; i < argc; ++i) {
    if (!ReadLine(in, &line)) Fail("input ends inside a command");
    std::string arg(static_cast<size_t>(HeaderNumber(line, '$')), '\0');
    char crlf[2];
    if (!in.read(arg.data(), static_cast<std::streamsize>(arg.size())) || !in.read(crlf, 2) ||
        crlf[0] != '\r' || crlf[1] != '\n') {
      Fail("bad bulk string");
    }
    args.push_back(std::move(arg));
  }
  return args;
}

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);  // x86-64 and aarch64: little-endian already
  out->append(bytes, sizeof v);
}

// ORACLE.STATE's reply: the digest in the proxy's data-key layout.
std::string StateReply(const bloomproxy::filters::Tdigest* t) {
  if (t == nullptr) return "$-1\r\n";
  std::string s;
  Put(&s, static_cast<double>(t->compression));
  Put(&s, t->min);
  Put(&s, t->max);
  Put(&s, static_cast<uint32_t>(t->merged));
  Put(&s, static_cast<uint32_t>(t->nodes.size() - t->merged));
  Put(&s, t->merged_weight);
  Put(&s, t->unmerged_weight);
  Put(&s, t->total_compressions);
  for (const bloomproxy::filters::TdigestNode& n : t->nodes) {
    Put(&s, n.mean);
    Put(&s, n.weight);
  }
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::vector<std::string> SplitWords(const std::string& line) {
  std::istringstream words(line);
  std::vector<std::string> args;
  for (std::string w; words >> w;) args.push_back(w);
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  bool resp3 = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--resp3") Fail("usage: tdigest_oracle [--resp3]");
    resp3 = true;
  }
  std::ios::sync_with_stdio(false);
  bloomproxy::filters::TdigestKeyspace model;
  std::string line;
  while (ReadLine(std::cin, &line)) {
    const std::vector<std::string> args =
        line.rfind('*', 0) == 0 ? ReadArray(std::cin, line) : SplitWords(line);
    if (args.empty()) continue;
    std::string reply = args[0] == "ORACLE.STATE" && args.size() == 2
                            ? StateReply(model.FindDigest(args[1]))
                            : model.Run(args, resp3);
    if (reply.empty()) reply = "-ERR tdigest_oracle: unknown command '" + args[0] + "'\r\n";
    std::cout << reply << std::flush;
  }
  return 0;
}

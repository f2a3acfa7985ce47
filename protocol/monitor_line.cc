#include "protocol/monitor_line.h"

#include <cctype>

namespace bloomproxy::protocol {
namespace {

constexpr std::string_view kEscapes = "nrtab\"\\";
constexpr std::string_view kEscaped = "\n\r\t\a\b\"\\";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads one quoted argument at s[*pos] ('"'), unquoting it into *out when `out` is not null.
// *pos ends past the closing quote.
bool ReadQuoted(std::string_view s, size_t* pos, std::string* out) {
  size_t i = *pos;
  if (i >= s.size() || s[i] != '"') return false;
  ++i;
  while (i < s.size() && s[i] != '"') {
    char c = s[i];
    if (c != '\\') {
      if (out != nullptr) out->push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= s.size()) return false;
    const char e = s[i + 1];
    i += 2;
    if (e == 'x') {
      if (i + 2 > s.size()) return false;
      const int hi = HexValue(s[i]), lo = HexValue(s[i + 1]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      // The other escapes sdscatrepr writes: \n \r \t \a \b \" \\.
      const size_t at = kEscapes.find(e);
      if (at == std::string_view::npos) return false;
      c = kEscaped[at];
    }
    if (out != nullptr) out->push_back(c);
  }
  if (i >= s.size()) return false;
  *pos = i + 1;
  return true;
}

}  // namespace

bool ParseMonitorLine(std::string_view frame, MonitorLine* out, size_t max_args) {
  std::string_view s = frame;
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.size() >= 2 && s.substr(s.size() - 2) == "\r\n") s.remove_suffix(2);
  out->args.clear();
  out->argc = 0;
  const size_t space = s.find(' ');
  if (space == 0 || space == std::string_view::npos) return false;
  out->time = s.substr(0, space);
  for (char c : out->time) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  size_t i = space + 1;
  if (i >= s.size() || s[i] != '[') return false;
  ++i;
  int64_t db = 0;
  const size_t db_start = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - db_start < 18) {
    db = db * 10 + (s[i++] - '0');
  }
  if (i == db_start || i >= s.size() || s[i] != ' ') return false;
  out->db = db;
  // The sender ends at the first "] \"": its quoted arguments follow (an argument's own quotes
  // are escaped, and the sender, an address or a socket path, holds no such sequence).
  const size_t end = s.find("] \"", i + 1);
  if (end == std::string_view::npos || end == i + 1) return false;
  out->sender = s.substr(i + 1, end - i - 1);
  i = end + 2;
  while (true) {
    std::string* arg = nullptr;
    if (out->args.size() < max_args) arg = &out->args.emplace_back();
    if (!ReadQuoted(s, &i, arg)) return false;
    ++out->argc;
    if (i == s.size()) return true;
    if (s[i] != ' ') return false;
    ++i;
  }
}

std::string QuoteMonitorArg(std::string_view arg) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : arg) {
    const size_t at = kEscaped.find(c);
    if (at != std::string_view::npos) {
      out.push_back('\\');
      out.push_back(kEscapes[at]);
    } else if (std::isprint(static_cast<unsigned char>(c))) {
      out.push_back(c);
    } else {
      const auto u = static_cast<unsigned char>(c);
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  out.push_back('"');
  return out;
}

bool IsCommandName(std::string_view a, std::string_view name) {
  if (a.size() != name.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != name[i]) return false;
  }
  return true;
}

std::vector<std::string> MonitorArgs(std::initializer_list<std::string_view> args) {
  std::vector<std::string> out(args.begin(), args.end());
  if (out.empty()) return out;
  if (IsCommandName(out[0], "auth")) {
    for (size_t i = 1; i < out.size(); ++i) out[i] = "(redacted)";
  } else if (IsCommandName(out[0], "hello")) {
    for (size_t i = 2; i < out.size(); ++i) {
      if (IsCommandName(out[i], "auth") && i + 2 < out.size()) {
        out[i + 1] = out[i + 2] = "(redacted)";
        i += 2;
      } else if (IsCommandName(out[i], "setname")) {
        ++i;
      }
    }
  }
  return out;
}

}  // namespace bloomproxy::protocol

#include "conf/values.h"

#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "conf/loader.h"

namespace bloomproxy::conf {

char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// Value parsers. Each returns false and sets *error (without the directive name, which the
// caller prefixes) when `s` is not acceptable.

bool ParseInt(std::string_view s, int64_t min, int64_t max, int64_t* out, std::string* error) {
  int64_t value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec == std::errc::invalid_argument || ptr != end) {
    *error = Quote(s) + " is not a valid number";
    return false;
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    *error = Quote(s) + (max == INT_MAX ? " must be at least " + std::to_string(min)
                                        : " is out of range (" + std::to_string(min) + ".." +
                                              std::to_string(max) + ")");
    return false;
  }
  *out = value;
  return true;
}

bool ParseIntField(std::string_view s, int min, int max, int* out, std::string* error) {
  int64_t value = 0;
  if (!ParseInt(s, min, max, &value, error)) return false;
  *out = static_cast<int>(value);
  return true;
}

// A TCP port: digits only, min..65535.
bool ParsePort(std::string_view s, int min, int* out) {
  int value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc() || ptr != end || value < min || value > 65535) return false;
  *out = value;
  return true;
}

// Memory sizes as in redis.conf: a number with an optional unit, case-insensitive:
// b, k = 1000, kb = 1024, m = 1000^2, mb = 1024^2, g = 1000^3, gb = 1024^3.
bool ParseMemory(std::string_view s, int64_t min, int64_t* out, std::string* error) {
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  std::string_view unit = s.substr(digits);
  int64_t multiplier = 0;
  if (unit.empty() || EqualsIgnoreCase(unit, "b")) {
    multiplier = 1;
  } else if (EqualsIgnoreCase(unit, "k")) {
    multiplier = 1000;
  } else if (EqualsIgnoreCase(unit, "kb")) {
    multiplier = 1024;
  } else if (EqualsIgnoreCase(unit, "m")) {
    multiplier = 1000 * 1000;
  } else if (EqualsIgnoreCase(unit, "mb")) {
    multiplier = kMb;
  } else if (EqualsIgnoreCase(unit, "g")) {
    multiplier = 1000 * 1000 * 1000;
  } else if (EqualsIgnoreCase(unit, "gb")) {
    multiplier = kMb * 1024;
  }
  int64_t number = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + digits, number);
  if (digits == 0 || multiplier == 0 || ptr != s.data() + digits) {
    *error = Quote(s) + " is not a valid memory size (e.g. 1048576, 64mb, 1gb)";
    return false;
  }
  if (ec == std::errc::result_out_of_range || number > INT64_MAX / multiplier) {
    *error = Quote(s) + " is too large";
    return false;
  }
  if (number * multiplier < min) {
    *error = Quote(s) + " is below the minimum of " + std::to_string(min / kMb) + "mb";
    return false;
  }
  *out = number * multiplier;
  return true;
}

// An error rate: a decimal number strictly between 0 and 1.
bool ParseRate(std::string_view s, double* out, std::string* error) {
  double value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc() || ptr != end || !(value > 0 && value < 1)) {
    *error = Quote(s) + " is not an error rate in (0, 1)";
    return false;
  }
  *out = value;
  return true;
}

bool CheckAtMost(std::string_view s, int64_t value, int64_t max, std::string* error) {
  if (value <= max) return true;
  *error = Quote(s) + " is above the maximum of " + std::to_string(max / kMb) + "mb";
  return false;
}

std::string ShowDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

bool IsIpLiteral(const std::string& s, int family) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(family, s.c_str(), buf) == 1;
}

// "HOST:PORT", "[IPv6]:PORT" or "unix:/path".
bool ParseUpstream(const std::string& s, std::string* error) {
  const std::string kForms = " (expected HOST:PORT, [IPv6]:PORT or unix:/path)";
  if (s.compare(0, 5, "unix:") == 0) {
    std::string_view path = std::string_view(s).substr(5);
    if (path.empty()) {
      *error = Quote(s) + " has an empty socket path" + kForms;
      return false;
    }
    if (path.size() > kMaxUnixPathLength) {
      *error =
          Quote(s) + ": socket path longer than " + std::to_string(kMaxUnixPathLength) + " bytes";
      return false;
    }
    return true;
  }
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) {
    *error = Quote(s) + " has no port" + kForms;
    return false;
  }
  std::string host = s.substr(0, colon);
  int port = 0;
  if (!ParsePort(std::string_view(s).substr(colon + 1), 1, &port)) {
    *error = Quote(s) + " has an invalid port (1..65535)";
    return false;
  }
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']' ||
        !IsIpLiteral(host.substr(1, host.size() - 2), AF_INET6)) {
      *error = Quote(s) + " has an invalid IPv6 address" + kForms;
      return false;
    }
    return true;
  }
  if (host.find(':') != std::string::npos) {
    *error = Quote(s) + ": an IPv6 address must be in brackets, e.g. [::1]:6379";
    return false;
  }
  bool host_ok = !host.empty();
  for (char c : host) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '-' || c == '_';
    host_ok = host_ok && allowed;
  }
  if (!host_ok) {
    *error = Quote(s) + " has an invalid host" + kForms;
    return false;
  }
  return true;
}

// upstream-cluster: comma-separated HOST:PORT seeds (no unix sockets: cluster nodes announce
// TCP addresses).
bool ParseSeeds(const std::string& s, std::vector<std::string>* seeds, std::string* error) {
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string seed = s.substr(start, comma - start);
    if (seed.empty() || seed.compare(0, 5, "unix:") == 0) {
      *error = Quote(s) + ": each seed must be HOST:PORT or [IPv6]:PORT, separated by commas";
      return false;
    }
    if (!ParseUpstream(seed, error)) return false;
    seeds->push_back(std::move(seed));
    start = comma + 1;
  }
  return true;
}

std::string JoinSeeds(const std::vector<std::string>& seeds) {
  std::string out;
  for (const std::string& seed : seeds) out += (out.empty() ? "" : ",") + seed;
  return out;
}

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  for (LogLevel level :
       {LogLevel::kDebug, LogLevel::kVerbose, LogLevel::kNotice, LogLevel::kWarning}) {
    if (EqualsIgnoreCase(s, LogLevelName(level))) {
      *out = level;
      return true;
    }
  }
  return false;
}

std::string ShowMemory(int64_t bytes) {
  static constexpr struct {
    int64_t size;
    const char* unit;
  } kUnits[] = {{kMb * 1024, "gb"}, {kMb, "mb"}, {1024, "kb"}};
  for (const auto& u : kUnits) {
    if (bytes != 0 && bytes % u.size == 0) return std::to_string(bytes / u.size) + u.unit;
  }
  return std::to_string(bytes);
}

std::string ShowString(const std::string& s, const char* if_empty) {
  return s.empty() ? if_empty : s;
}

std::string ShowSecret(const std::string& s) { return s.empty() ? "none" : "(set)"; }

}  // namespace bloomproxy::conf

// Reading and showing one option value: numbers, ports, memory sizes, rates, addresses, the
// upstream and the cluster seeds, log levels. Each parser returns false and sets *error
// (without the directive name, which the caller prefixes) when the value is not acceptable;
// each Show* gives the value as `--help` and `--test-conf` print it.
#pragma once

#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "conf/options.h"

namespace bloomproxy::conf {

// Longest usable Unix socket path (sun_path holds a terminating NUL).
inline constexpr size_t kMaxUnixPathLength = sizeof(sockaddr_un::sun_path) - 1;
inline constexpr int64_t kMb = 1024 * 1024;

char ToLower(char c);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// 'value', for messages.
std::string Quote(std::string_view s);

bool ParseInt(std::string_view s, int64_t min, int64_t max, int64_t* out, std::string* error);
bool ParseIntField(std::string_view s, int min, int max, int* out, std::string* error);
// A port in [min, 65535]; no message (callers word it).
bool ParsePort(std::string_view s, int min, int* out);
// "64mb", "1gb", "100" (bytes), as redis.conf writes sizes; at least `min`.
bool ParseMemory(std::string_view s, int64_t min, int64_t* out, std::string* error);
// A false-positive rate in (0, 1).
bool ParseRate(std::string_view s, double* out, std::string* error);
bool CheckAtMost(std::string_view s, int64_t value, int64_t max, std::string* error);
// An IPv4 (AF_INET) or IPv6 (AF_INET6) literal.
bool IsIpLiteral(const std::string& s, int family);
// HOST:PORT, [IPv6]:PORT or unix:/path.
bool ParseUpstream(const std::string& s, std::string* error);
// upstream-cluster: comma-separated HOST:PORT seeds.
bool ParseSeeds(const std::string& s, std::vector<std::string>* seeds, std::string* error);
std::string JoinSeeds(const std::vector<std::string>& seeds);
bool ParseLogLevel(std::string_view s, LogLevel* out);

std::string ShowDouble(double v);
std::string ShowMemory(int64_t bytes);
std::string ShowString(const std::string& s, const char* if_empty);
std::string ShowSecret(const std::string& s);

}  // namespace bloomproxy::conf

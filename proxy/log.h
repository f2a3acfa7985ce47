// Logging in Redis's format ("pid:role dd Mon yyyy hh:mm:ss.mmm <level> message").
#pragma once

#include <string>

#include "conf/options.h"

namespace bloomproxy::proxy {

void SetLogLevel(conf::LogLevel level);
// Sends log lines to `path` (appending) instead of stderr. False if it cannot be opened.
bool SetLogFile(const std::string& path);
bool LogEnabled(conf::LogLevel level);
void Log(conf::LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace bloomproxy::proxy

#define BP_LOG(level, ...)                                                                    \
  do {                                                                                        \
    if (::bloomproxy::proxy::LogEnabled(level)) ::bloomproxy::proxy::Log(level, __VA_ARGS__); \
  } while (0)
#define LOG_DEBUG(...) BP_LOG(::bloomproxy::conf::LogLevel::kDebug, __VA_ARGS__)
#define LOG_VERBOSE(...) BP_LOG(::bloomproxy::conf::LogLevel::kVerbose, __VA_ARGS__)
#define LOG_NOTICE(...) BP_LOG(::bloomproxy::conf::LogLevel::kNotice, __VA_ARGS__)
#define LOG_WARNING(...) BP_LOG(::bloomproxy::conf::LogLevel::kWarning, __VA_ARGS__)

// The process's log: Redis's text format ("pid:role dd Mon yyyy hh:mm:ss.mmm <mark> message",
// the default) or one JSON object per line (log-format json), to stderr or the logfile. Every
// line has the configured secrets (passwords, passphrases) masked, whatever the call site.
//
// Call sites use the macros, which format nothing when the level is off:
//   LOG_WARNING("upstream %s: connection failed: %s", up, why);
//   LOG_WARNING_F({{"upstream", up}}, "upstream %s: connection failed: %s", up, why);
// The _F forms attach fields (proxy/server/log_format.h LogField: a string or an integer) that JSON
// lines carry as keys ("client", "client_id", "upstream", "command", ...); text lines show the
// message alone, so a message should still say in words what its fields hold.
//
// The setters may be called from any thread at any time (startup, reload); lines written
// concurrently by several event loops never interleave.
#pragma once

#include <string>

#include "conf/options.h"
#include "proxy/server/log_format.h"

namespace bloomproxy::proxy {

void SetLogLevel(conf::LogLevel level);
void SetLogFormat(LogFormat format);
// Replaces the strings masked in every line with the passwords `options` holds (requirepass,
// each user's password, upstream-password, tls-key-file-pass).
void SetLogSecrets(const conf::Options& options);
// Level, format and secrets from `options`: at startup and on reload. Not the logfile.
void ApplyLogOptions(const conf::Options& options);
// Sends log lines to `path` (appending) instead of stderr, closing the previous logfile. False
// if it cannot be opened (the current destination is kept).
bool SetLogFile(const std::string& path);

bool LogEnabled(conf::LogLevel level);
void Log(conf::LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void LogWith(conf::LogLevel level, LogFields fields, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace bloomproxy::proxy

#define BP_LOG(level, ...)                                                                    \
  do {                                                                                        \
    if (::bloomproxy::proxy::LogEnabled(level)) ::bloomproxy::proxy::Log(level, __VA_ARGS__); \
  } while (0)
#define LOG_DEBUG(...) BP_LOG(::bloomproxy::conf::LogLevel::kDebug, __VA_ARGS__)
#define LOG_VERBOSE(...) BP_LOG(::bloomproxy::conf::LogLevel::kVerbose, __VA_ARGS__)
#define LOG_NOTICE(...) BP_LOG(::bloomproxy::conf::LogLevel::kNotice, __VA_ARGS__)
#define LOG_WARNING(...) BP_LOG(::bloomproxy::conf::LogLevel::kWarning, __VA_ARGS__)

// The first argument is a braced list of fields: LOG_NOTICE_F({{"client", addr}}, "fmt", ...).
// (The preprocessor splits the list at its commas; __VA_ARGS__ puts it back together.)
#define BP_LOG_F(level, ...)                                                                      \
  do {                                                                                            \
    if (::bloomproxy::proxy::LogEnabled(level)) ::bloomproxy::proxy::LogWith(level, __VA_ARGS__); \
  } while (0)
#define LOG_DEBUG_F(...) BP_LOG_F(::bloomproxy::conf::LogLevel::kDebug, __VA_ARGS__)
#define LOG_VERBOSE_F(...) BP_LOG_F(::bloomproxy::conf::LogLevel::kVerbose, __VA_ARGS__)
#define LOG_NOTICE_F(...) BP_LOG_F(::bloomproxy::conf::LogLevel::kNotice, __VA_ARGS__)
#define LOG_WARNING_F(...) BP_LOG_F(::bloomproxy::conf::LogLevel::kWarning, __VA_ARGS__)

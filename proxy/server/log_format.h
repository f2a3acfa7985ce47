// The layout of one log line, as pure functions of their inputs (no clock, no file, no loop):
// the text format (Redis's "pid:role dd Mon yyyy hh:mm:ss.mmm <mark> message") and the JSON
// format (one object per line), JSON string escaping, and the masking of secrets.
#pragma once

#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "conf/options.h"

namespace bloomproxy::proxy {

enum class LogFormat { kText, kJson };

// "text" or "json" (the log-format directive's values). False leaves *format unchanged.
bool ParseLogFormat(std::string_view name, LogFormat* format);

// One structured field of a log line: a string or an integer. It only views its key and text,
// which must outlive the logging call (temporaries of the call's full expression do).
struct LogField {
  LogField(const char* k, std::string_view v) : key(k), text(v) {}
  LogField(const char* k, const std::string& v) : key(k), text(v) {}
  LogField(const char* k, const char* v) : key(k), text(v) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  LogField(const char* k, T v) : key(k), number(static_cast<int64_t>(v)), is_number(true) {}

  const char* key;
  std::string_view text;
  int64_t number = 0;
  bool is_number = false;
};
using LogFields = std::initializer_list<LogField>;

// Secrets shorter than this are not masked: a two-letter password would otherwise blank out
// every word that contains it, and such a password offers no protection anyway.
constexpr size_t kMinMaskedSecret = 4;
constexpr std::string_view kMasked = "(redacted)";

// `text` with every occurrence of each secret (of kMinMaskedSecret bytes or more) replaced by
// kMasked. `secrets` should be sorted longest first, so that a secret that contains another is
// masked whole.
std::string MaskSecrets(std::string_view text, const std::vector<std::string>& secrets);

// Appends `s` as a JSON string, quotes included. Quote, backslash and control characters are
// escaped (\n, \t, ... or \u00XX); valid UTF-8 is copied; each byte of an invalid UTF-8 sequence
// becomes \ufffd, so that the result is always valid JSON whatever the input bytes.
void AppendJsonString(std::string* out, std::string_view s);

// "2026-11-24T06:57:26.157Z" (RFC 3339, UTC, milliseconds).
std::string Rfc3339Utc(time_t sec, int msec);

// The text line, newline included, with `secrets` masked in the message. Fields are not shown:
// each message already names its client or upstream in words, and the text format stays what
// it has always been.
std::string FormatTextLine(conf::LogLevel level, int pid, time_t sec, int msec,
                           std::string_view msg, const std::vector<std::string>& secrets);

// The JSON line, newline included: {"ts":..,"level":..,"pid":..,"msg":.., then the fields in
// order}, with `secrets` masked in the message and in every string field. A field whose key is
// already present is skipped, so the line is always one object with unique keys.
std::string FormatJsonLine(conf::LogLevel level, int pid, time_t sec, int msec,
                           std::string_view msg, LogFields fields,
                           const std::vector<std::string>& secrets);

}  // namespace bloomproxy::proxy

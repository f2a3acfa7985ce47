// One line of MONITOR's output, as Redis writes it (replicationFeedMonitors):
//
//   +1700000000.123456 [0 127.0.0.1:52000] "SET" "k" "v"\r\n     a client over TCP
//   +1700000000.123457 [0 lua] "get" "a"\r\n                      a command a script ran
//   +1700000000.123458 [0 unix:/tmp/redis.sock] "PING"\r\n        a client over a Unix socket
//
// The sender is the client's address as Redis sees it (the connection's local address on the
// client's side, unless something translates addresses in between). Every argument is quoted as
// sdscatrepr quotes it (\" \\ \n \r \t \a \b, \xHH for any other unprintable byte); the
// arguments Redis redacts read "(redacted)". Pure: no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {

struct MonitorLine {
  std::string_view time;  // "1700000000.123456"
  int64_t db = 0;
  std::string_view sender;        // "127.0.0.1:52000", "[::1]:52000", "lua", "unix:/tmp/redis.sock"
  std::vector<std::string> args;  // unquoted; at most ParseMonitorLine's max_args of them
  size_t argc = 0;                // how many the line has

  bool from_script() const { return sender == "lua"; }
  bool from_unix_socket() const { return sender.substr(0, 5) == "unix:"; }
};

// Parses a MONITOR line (`frame` with or without its leading '+' and trailing CRLF). Only the
// first `max_args` arguments are unquoted (the others are counted). False for anything else.
bool ParseMonitorLine(std::string_view frame, MonitorLine* out, size_t max_args = SIZE_MAX);

// An argument quoted as MONITOR shows it (sdscatrepr).
std::string QuoteMonitorArg(std::string_view arg);

// A command's arguments as MONITOR shows them: AUTH's arguments and HELLO's AUTH pair read
// "(redacted)" (Redis's redactClientCommandArgument).
std::vector<std::string> MonitorArgs(std::initializer_list<std::string_view> args);

// Whether `a` names the command `name` (lower case), as Redis compares names: case-insensitive.
bool IsCommandName(std::string_view a, std::string_view name);

}  // namespace bloomproxy::protocol

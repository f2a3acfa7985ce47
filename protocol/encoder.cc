#include "protocol/encoder.h"

#include <cctype>
#include <charconv>

#include "protocol/errors.h"

namespace bloomproxy::protocol {
namespace {

void AppendLine(std::string* out, char type, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->push_back(type);
  out->append(buf, res.ptr);
  out->append("\r\n", 2);
}

}  // namespace

void AppendSimple(std::string* out, std::string_view s) {
  out->push_back('+');
  out->append(s);
  out->append("\r\n", 2);
}

void AppendError(std::string* out, std::string_view s) {
  out->push_back('-');
  // An error line cannot carry a newline; Redis replaces them with spaces the same way
  // (addReplyErrorLength).
  for (char c : s) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out->append("\r\n", 2);
}

void AppendInteger(std::string* out, int64_t v) { AppendLine(out, ':', v); }

void AppendBulk(std::string* out, std::string_view s) {
  AppendLine(out, '$', static_cast<int64_t>(s.size()));
  out->append(s);
  out->append("\r\n", 2);
}

void AppendNullBulk(std::string* out) { out->append("$-1\r\n", 5); }

void AppendArrayHeader(std::string* out, int64_t n) { AppendLine(out, '*', n); }

void AppendMapHeader(std::string* out, int64_t pairs) { AppendLine(out, '%', pairs); }
void AppendSetHeader(std::string* out, int64_t n) { AppendLine(out, '~', n); }
void AppendPushHeader(std::string* out, int64_t n) { AppendLine(out, '>', n); }
void AppendBool(std::string* out, bool v) { out->append(v ? "#t\r\n" : "#f\r\n", 4); }
void AppendNull(std::string* out) { out->append("_\r\n", 3); }

void AppendVerbatim(std::string* out, std::string_view s) {
  AppendLine(out, '=', static_cast<int64_t>(s.size() + 4));
  out->append("txt:", 4);
  out->append(s);
  out->append("\r\n", 2);
}

void AppendMapHeader(std::string* out, int64_t pairs, Resp resp) {
  if (resp == Resp::k3) return AppendMapHeader(out, pairs);
  AppendArrayHeader(out, pairs * 2);
}

void AppendSetHeader(std::string* out, int64_t n, Resp resp) {
  if (resp == Resp::k3) return AppendSetHeader(out, n);
  AppendArrayHeader(out, n);
}

void AppendNull(std::string* out, Resp resp) {
  if (resp == Resp::k3) return AppendNull(out);
  AppendNullBulk(out);
}

void AppendNullArray(std::string* out, Resp resp) {
  if (resp == Resp::k3) return AppendNull(out);
  out->append("*-1\r\n", 5);
}

void AppendBool(std::string* out, bool v, Resp resp) {
  if (resp == Resp::k3) return AppendBool(out, v);
  AppendInteger(out, v ? 1 : 0);
}

void AppendVerbatim(std::string* out, std::string_view s, Resp resp) {
  if (resp == Resp::k3) return AppendVerbatim(out, s);
  AppendBulk(out, s);
}

namespace errors {

std::string WrongArity(std::string_view command) {
  std::string s = "-ERR wrong number of arguments for '";
  for (char c : command)
    s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  s += "' command\r\n";
  return s;
}

std::string UnknownCommand(std::string_view command, const std::string_view* args, size_t nargs) {
  // Redis: "unknown command '%.128s', with args beginning with: " then "'%.*s' " per argument
  // while the list is shorter than 128 bytes (src/server.c processCommand).
  std::string list;
  for (size_t i = 0; i < nargs && list.size() < 128; ++i) {
    list += '\'';
    list.append(args[i].substr(0, 128 - list.size() + 1));
    list += "' ";
  }
  std::string text = "ERR unknown command '";
  text.append(command.substr(0, 128));
  text += "', with args beginning with: ";
  text += list;
  std::string out;
  AppendError(&out, text);
  return out;
}

std::string UnknownSubcommand(std::string_view command, std::string_view sub) {
  std::string text = "ERR unknown subcommand '";
  text.append(sub.substr(0, 128));
  text += "'. Try ";
  for (char c : command)
    text.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  text += " HELP.";
  std::string out;
  AppendError(&out, text);
  return out;
}

std::string NoPermission(std::string_view full_name) {
  std::string text = "NOPERM this user has no permissions to run the '";
  text.append(full_name);
  text += "' command";
  std::string out;
  AppendError(&out, text);
  return out;
}

std::string UpstreamUnavailable(std::string_view reason) {
  std::string out(kUpstreamUnavailablePrefix);
  out += " (";
  out += reason;
  out += ")\r\n";
  return out;
}

}  // namespace errors
}  // namespace bloomproxy::protocol

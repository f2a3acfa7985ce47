#include "protocol/module_replies.h"

#include <cctype>

#include "protocol/reply_framer.h"
#include "protocol/request_parser.h"

namespace bloomproxy::protocol {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The name at the start of a "name + docs" pair: the bulk string's content, or empty.
std::string_view BulkContent(std::string_view element) {
  const size_t eol = element.find("\r\n");
  if (element.empty() || element[0] != '$' || eol == std::string_view::npos) return {};
  int64_t n = 0;
  if (!StringToInt64(element.substr(1, eol - 1), &n) || n < 0 ||
      element.size() < eol + 2 + static_cast<size_t>(n)) {
    return {};
  }
  return element.substr(eol + 2, static_cast<size_t>(n));
}

}  // namespace

std::string WithModuleLine(std::string_view info, const ModuleFace& module) {
  // Redis 7's genModulesInfoString, one line per module.
  constexpr std::string_view kHeader = "# Modules\r\n";
  const size_t header = info.find(kHeader);
  if (header == std::string_view::npos) return std::string(info);
  const std::string name_field = "module:name=" + std::string(module.name) + ",";
  size_t end = info.find("\r\n\r\n", header);
  end = end == std::string_view::npos ? info.size() : end + 2;
  const std::string_view section = info.substr(header, end - header);
  if (section.find("\r\n" + name_field) != std::string_view::npos) return std::string(info);
  std::string line = name_field + "ver=" + std::to_string(module.version) +
                     ",api=1,filters=0,usedby=[],using=[],options=[" + std::string(module.options) +
                     "]\r\n";
  // A section that ends the text may lack its last CRLF (INFO modules alone).
  std::string out(info.substr(0, end));
  if (out.size() < 2 || out.compare(out.size() - 2, 2, "\r\n") != 0) out += "\r\n";
  out += line;
  out.append(info.substr(end));
  return out;
}

void AppendModuleEntry(std::string* out, const ModuleFace& module, Resp resp) {
  // Redis 7's addReplyLoadedModules.
  AppendMapHeader(out, 4, resp);
  AppendBulk(out, "name");
  AppendBulk(out, module.name);
  AppendBulk(out, "ver");
  AppendInteger(out, module.version);
  AppendBulk(out, "path");
  AppendBulk(out, module.path);
  AppendBulk(out, "args");
  AppendArrayHeader(out, 0);
}

std::string WithModuleEntry(std::string_view reply, const ModuleFace& module, Resp resp) {
  char type = 0;
  std::vector<std::string_view> entries;
  if (!SplitAggregate(reply, &type, &entries) || type != '*') return std::string(reply);
  std::string name_pair = "$4\r\nname\r\n";
  AppendBulk(&name_pair, module.name);
  for (std::string_view e : entries) {
    if (e.find(name_pair) != std::string_view::npos) return std::string(reply);
  }
  std::string entry;
  AppendModuleEntry(&entry, module, resp);
  return AppendToAggregate(reply, {entry}, 1);
}

bool SplitAggregate(std::string_view reply, char* type, std::vector<std::string_view>* elements) {
  const size_t eol = reply.find("\r\n");
  int64_t n = 0;
  if (reply.empty() || eol == std::string_view::npos ||
      (reply[0] != '*' && reply[0] != '%' && reply[0] != '~') ||
      !StringToInt64(reply.substr(1, eol - 1), &n) || n < 0) {
    return false;
  }
  *type = reply[0];
  const int64_t count = reply[0] == '%' ? 2 * n : n;
  std::string_view rest = reply.substr(eol + 2);
  for (int64_t i = 0; i < count; ++i) {
    ReplyFramer framer;
    size_t len = 0;
    if (framer.Next(rest, &len) != FrameStatus::kComplete) return false;
    elements->push_back(rest.substr(0, len));
    rest.remove_prefix(len);
  }
  return rest.empty();
}

std::string AppendToAggregate(std::string_view reply, const std::vector<std::string>& extra,
                              int64_t added) {
  const size_t eol = reply.find("\r\n");
  int64_t n = 0;
  if (reply.empty() || eol == std::string_view::npos ||
      !StringToInt64(reply.substr(1, eol - 1), &n)) {
    return std::string(reply);
  }
  std::string out(1, reply[0]);
  out += std::to_string(n + added);
  out.append(reply.substr(eol));
  for (const std::string& e : extra) out += e;
  return out;
}

std::string MergeCommandDocs(std::string_view reply, const std::vector<std::string_view>& names,
                             const std::function<std::string(std::string_view)>& local) {
  char type = 0;
  std::vector<std::string_view> elements;
  if (!SplitAggregate(reply, &type, &elements) || (type != '%' && type != '*') ||
      elements.size() % 2 != 0) {
    return std::string(reply);
  }
  // The upstream's entries, without those of the names the proxy answers.
  std::vector<std::pair<std::string_view, std::string_view>> upstream;
  for (size_t i = 0; i < elements.size(); i += 2) {
    if (local(BulkContent(elements[i])).empty())
      upstream.emplace_back(elements[i], elements[i + 1]);
  }
  std::string body;
  int64_t pairs = 0;
  size_t next = 0;
  for (std::string_view name : names) {
    std::string mine = local(name);
    if (!mine.empty()) {
      body += mine;
      ++pairs;
    } else if (next < upstream.size() && BulkContent(upstream[next].first) == Lower(name)) {
      body.append(upstream[next].first);
      body.append(upstream[next].second);
      ++next;
      ++pairs;
    }
  }
  // Entries the names could not be matched with (a name Redis spells otherwise) keep their
  // place after the others rather than being lost.
  for (; next < upstream.size(); ++next) {
    body.append(upstream[next].first);
    body.append(upstream[next].second);
    ++pairs;
  }
  std::string out(1, type);
  out += std::to_string(type == '%' ? pairs : 2 * pairs);
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace bloomproxy::protocol

// The module's face: while the proxy emulates a sketch family, a client sees a Redis server with
// RedisBloom loaded. MODULE LIST and HELLO list the module "bf", and the COMMAND family covers
// the sketch commands (COMMAND, COUNT, INFO, LIST, DOCS, GETKEYS) with RedisBloom's metadata
// (filters/common/sketch_commands.h); INFO's module line is added in reply_hooks.cc. With every
// family forwarded nothing here runs: the upstream's answers pass through unchanged.
#include "filters/common/sketch_commands.h"
#include "protocol/command_table.h"
#include "protocol/encoder.h"
#include "protocol/module_replies.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {

using protocol::Command;

namespace {

// The filter of COMMAND LIST FILTERBY type value (the last one given wins, as in Redis).
filters::ListFilter ParseListFilter(const std::vector<std::string>& args, std::string* value) {
  filters::ListFilter filter = filters::ListFilter::kNone;
  for (size_t i = 2; i + 2 < args.size(); i += 3) {
    if (!IEquals(args[i], "filterby")) break;
    const std::string& type = args[i + 1];
    filter = IEquals(type, "module")   ? filters::ListFilter::kModule
             : IEquals(type, "aclcat") ? filters::ListFilter::kAclCat
                                       : filters::ListFilter::kPattern;
    *value = args[i + 2];
  }
  return filter;
}

}  // namespace

protocol::ModuleFace Client::BloomModule() {
  // RedisBloom declares that it handles RDB load errors itself (handle-io-errors). It is loaded
  // from no file here: the path names the proxy.
  return {filters::kModuleName, filters::kModuleVersion, "handle-io-errors", "bloomproxy"};
}

std::string Client::HelloModules() const {
  std::string out;
  if (server_->emulated() == 0) {
    protocol::AppendArrayHeader(&out, 0);
    return out;
  }
  protocol::AppendArrayHeader(&out, 1);
  protocol::AppendModuleEntry(&out, BloomModule(), resp_);
  return out;
}

bool Client::FaceHook(const Command& cmd, std::string_view name, Outgoing* out) {
  const size_t argc = cmd.args.size();
  if (name == "module") {
    if (argc != 2 || !IEquals(cmd.args[1], "list")) return false;
    out->hook = Hook::kModuleList;
    return true;
  }
  if (name != "command") return false;
  const std::string_view sub = argc > 1 ? cmd.args[1] : std::string_view();
  if (argc == 1 || (argc == 2 && (IEquals(sub, "list") || IEquals(sub, "info")))) {
    out->hook = Hook::kCommandAll;
    out->arg = IEquals(sub, "list") ? 1 : 0;  // names, not entries
    return true;
  }
  if (argc == 2 && IEquals(sub, "count")) {
    out->hook = Hook::kCommandCount;
    return true;
  }
  if (IEquals(sub, "info")) {
    out->hook = Hook::kCommandInfo;
  } else if (IEquals(sub, "list")) {
    out->hook = Hook::kCommandList;
  } else if (IEquals(sub, "docs")) {
    out->hook = Hook::kCommandDocs;
  } else {
    return false;
  }
  out->arg = ++face_seq_;
  face_asks_[out->arg].assign(cmd.args.begin(), cmd.args.end());
  return true;
}

std::string Client::CompleteFace(Pending* slot, std::string_view frame) {
  std::vector<std::string> args;
  const bool asked = slot->hook == Hook::kCommandInfo || slot->hook == Hook::kCommandList ||
                     slot->hook == Hook::kCommandDocs;
  if (asked) {
    auto it = face_asks_.find(slot->arg);
    if (it == face_asks_.end()) return std::string(frame);
    args = std::move(it->second);
    face_asks_.erase(it);
  }
  if (frame.empty() || frame[0] == '-') return std::string(frame);
  const filters::SketchFamilies families = server_->emulated();
  switch (slot->hook) {
    case Hook::kModuleList:
      return protocol::WithModuleEntry(frame, BloomModule(), resp_);
    case Hook::kCommandCount: {
      int64_t n = 0;
      if (frame[0] != ':' || !protocol::StringToInt64(frame.substr(1, frame.size() - 3), &n)) {
        return std::string(frame);
      }
      std::string out;
      protocol::AppendInteger(
          &out, n + static_cast<int64_t>(filters::SketchCommandEntries(families).size()));
      return out;
    }
    case Hook::kCommandAll: {
      std::vector<std::string> extra;
      if (slot->arg == 1) {
        for (std::string_view n : filters::SketchCommandList(families, {}, {})) {
          extra.emplace_back();
          protocol::AppendBulk(&extra.back(), n);
        }
      } else {
        extra = filters::SketchCommandEntries(families, resp_);
      }
      return protocol::AppendToAggregate(frame, extra, static_cast<int64_t>(extra.size()));
    }
    case Hook::kCommandInfo:
      return FillCommandInfo(args, frame);
    case Hook::kCommandList: {
      std::string value;
      const filters::ListFilter filter = ParseListFilter(args, &value);
      std::vector<std::string> extra;
      for (std::string_view n : filters::SketchCommandList(families, filter, value)) {
        extra.emplace_back();
        protocol::AppendBulk(&extra.back(), n);
      }
      return protocol::AppendToAggregate(frame, extra, static_cast<int64_t>(extra.size()));
    }
    case Hook::kCommandDocs: {
      if (args.size() == 2) {
        const std::vector<std::string> docs = filters::SketchCommandDocsAll(families, resp_);
        // A RESP2 map is a flat array: it counts keys and values.
        const auto pairs = static_cast<int64_t>(docs.size());
        return protocol::AppendToAggregate(frame, docs, frame[0] == '%' ? pairs : 2 * pairs);
      }
      const std::vector<std::string_view> names(args.begin() + 2, args.end());
      return protocol::MergeCommandDocs(frame, names, [&](std::string_view name) {
        return filters::SketchCommandDocs(name, families, resp_);
      });
    }
    default:
      return std::string(frame);
  }
}

std::string Client::FillCommandInfo(const std::vector<std::string>& args,
                                    std::string_view frame) const {
  // The upstream answers nil for the names it does not know: the sketch commands' entries take
  // their places.
  char type = 0;
  std::vector<std::string_view> elements;
  if (!protocol::SplitAggregate(frame, &type, &elements) || type != '*' ||
      elements.size() + 2 != args.size()) {
    return std::string(frame);
  }
  std::string out(frame.substr(0, frame.find("\r\n") + 2));
  for (size_t i = 0; i < elements.size(); ++i) {
    const std::string entry = filters::SketchCommandEntry(args[i + 2], server_->emulated(), resp_);
    out += entry.empty() ? std::string(elements[i]) : entry;
  }
  return out;
}

Client::Dispatched Client::HandleGetKeys(const Command& cmd) {
  // The upstream does not know the sketch commands ("Invalid command specified"): the proxy
  // answers from their key specs, as Redis would with the module loaded.
  const size_t argc = cmd.args.size();
  if (argc < 3 || !(IEquals(cmd.args[1], "getkeys") || IEquals(cmd.args[1], "getkeysandflags"))) {
    return Dispatched::kForward;
  }
  // GETKEYS's own arity first, as Redis checks it (the upstream's error then).
  const std::string full =
      IEquals(cmd.args[1], "getkeys") ? "command|getkeys" : "command|getkeysandflags";
  const protocol::CommandInfo* sub = protocol::LookupFullName(full);
  if (sub == nullptr || !protocol::ArityOk(*sub, argc)) return Dispatched::kForward;
  const std::vector<std::string_view> args(cmd.args.begin() + 2, cmd.args.end());
  const std::string reply = filters::SketchGetKeys(args, IEquals(cmd.args[1], "getkeysandflags"),
                                                   server_->emulated(), resp_);
  if (reply.empty()) return Dispatched::kForward;
  ReplyLocal(reply);
  return Dispatched::kDone;
}

}  // namespace bloomproxy::proxy

#include "filters/bf_commands.h"

#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"

namespace bloomproxy::filters {

// ---------------------------------------------------------------------------------------------
// COMMAND entries.

namespace {

struct BfCommandDoc {
  const char* name;
  int arity;
  std::initializer_list<const char*> flags;
  const char* category;
};

const BfCommandDoc kBfDocs[] = {
    {"bf.reserve", -4, {"write", "denyoom"}, "@write"},
    {"bf.add", 3, {"write", "denyoom"}, "@write"},
    {"bf.madd", -3, {"write", "denyoom"}, "@write"},
    {"bf.insert", -4, {"write", "denyoom"}, "@write"},
    {"bf.exists", 3, {"readonly"}, "@read"},
    {"bf.mexists", -3, {"readonly"}, "@read"},
    {"bf.info", -2, {"readonly"}, "@read"},
    {"bf.card", 2, {"readonly"}, "@read"},
    {"bf.scandump", 3, {"readonly"}, "@read"},
    {"bf.loadchunk", 4, {"write", "denyoom"}, "@write"},
};

std::string EncodeEntry(const BfCommandDoc& d) {
  std::string out;
  protocol::AppendArrayHeader(&out, 10);
  protocol::AppendBulk(&out, d.name);
  protocol::AppendInteger(&out, d.arity);
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(d.flags.size() + 1));
  for (const char* f : d.flags) protocol::AppendSimple(&out, f);
  protocol::AppendSimple(&out, "module");
  protocol::AppendInteger(&out, 1);  // first key
  protocol::AppendInteger(&out, 1);  // last key
  protocol::AppendInteger(&out, 1);  // step
  protocol::AppendArrayHeader(&out, 2);
  protocol::AppendSimple(&out, d.category);
  protocol::AppendSimple(&out, "@bloom");
  protocol::AppendArrayHeader(&out, 0);  // tips
  protocol::AppendArrayHeader(&out, 0);  // key specs
  protocol::AppendArrayHeader(&out, 0);  // subcommands
  return out;
}

}  // namespace

std::vector<BfCommandName> BfCommandNames() {
  std::vector<BfCommandName> out;
  for (const BfCommandDoc& d : kBfDocs) {
    out.push_back({d.name, std::string_view(d.category) == "@write"});
  }
  return out;
}

std::vector<std::string> BfCommandEntries() {
  std::vector<std::string> out;
  for (const BfCommandDoc& d : kBfDocs) out.push_back(EncodeEntry(d));
  return out;
}

std::string BfCommandEntry(std::string_view name) {
  for (const BfCommandDoc& d : kBfDocs) {
    std::string_view n = d.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = n[i] == static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    }
    if (same) return EncodeEntry(d);
  }
  return {};
}

}  // namespace bloomproxy::filters

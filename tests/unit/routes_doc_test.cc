// docs/connections.md states which connection every command takes: its tables must say what the
// rows of protocol/command_routes.inc say, and list every row that is not plainly shared.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/command_table.h"

namespace bloomproxy::protocol {
namespace {

const Route& RouteOf(std::string_view name) {
  const CommandInfo* info = LookupFullName(name);
  EXPECT_NE(info, nullptr) << name;
  static const Route kMissing{};
  return info != nullptr ? info->route : kMissing;
}

// The command names of a docs/connections.md table cell: "`CLIENT ID`, `PING`" gives
// "client|id" and "ping"; "`CLIENT` (other subcommands)" gives "client".
std::vector<std::string> DocNames(std::string_view cell) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = cell.find('`', pos)) != std::string_view::npos) {
    const size_t end = cell.find('`', pos + 1);
    std::string name(cell.substr(pos + 1, end - pos - 1));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t space = name.find(' ');
    if (space != std::string::npos) name[space] = '|';
    out.push_back(name);
    pos = end + 1;
  }
  return out;
}

// The rows of the table under `heading`: {names cell, second cell}.
std::vector<std::pair<std::string, std::string>> DocTable(const std::string& doc,
                                                          std::string_view heading) {
  std::vector<std::pair<std::string, std::string>> rows;
  size_t pos = doc.find(heading);
  EXPECT_NE(pos, std::string::npos) << heading;
  if (pos == std::string::npos) return rows;
  pos = doc.find("\n|", pos);
  while (pos != std::string::npos && pos + 1 < doc.size() && doc[pos + 1] == '|') {
    const size_t eol = doc.find('\n', pos + 1);
    const std::string line = doc.substr(pos + 1, eol - pos - 1);
    const size_t a = line.find('|', 1), b = line.find('|', a + 1);
    std::string first = line.substr(1, a - 1), second = line.substr(a + 1, b - a - 1);
    auto trim = [](std::string t) {
      t.erase(0, t.find_first_not_of(' '));
      t.erase(t.find_last_not_of(' ') + 1);
      return t;
    };
    if (first.find('`') != std::string::npos) rows.emplace_back(trim(first), trim(second));
    pos = eol;
  }
  return rows;
}

// Checks the table under `heading`: each command is documented with the word `words` gives for
// field(route), and exactly the rows `listed` picks are documented.
template <typename T>
void CheckDocTable(const std::string& doc, std::string_view heading,
                   const std::map<std::string, T>& words, T (*field)(const Route&),
                   bool (*listed)(const Route&)) {
  std::set<std::string> documented;
  for (const auto& [cell, word] : DocTable(doc, heading)) {
    ASSERT_TRUE(words.count(word)) << heading << ": " << word;
    for (const std::string& name : DocNames(cell)) {
      EXPECT_TRUE(field(RouteOf(name)) == words.at(word)) << name << " is documented as " << word;
      documented.insert(name);
    }
  }
  for (std::string_view name : RouteRowNames()) {
    EXPECT_EQ(documented.count(std::string(name)), listed(RouteOf(name)) ? 1u : 0u)
        << heading << ": " << name;
  }
}

TEST(RoutesDocTest, DocsSayWhatTheRowsSay) {
  std::ifstream in(std::string(BP_DOCS) + "/connections.md");
  ASSERT_TRUE(in) << "docs/connections.md";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CheckDocTable<Conn>(
      doc, "## Every command that is not plainly shared",
      {{"shared", Conn::kShared},
       {"local", Conn::kLocal},
       {"pinned", Conn::kPinned},
       {"dedicated", Conn::kDedicated},
       {"tunnel", Conn::kTunnel},
       {"closed", Conn::kCloseClient}},
      [](const Route& r) { return r.conn; },
      [](const Route& r) {
        return !(r.conn == Conn::kShared && r.effect == Effect::kNone &&
                 r.in_multi == InMulti::kQueue && r.traits == 0);
      });
  CheckDocTable<InMulti>(
      doc, "## Inside MULTI",
      {{"at EXEC", InMulti::kAtExec}, {"followed", InMulti::kTrack}, {"tunnel", InMulti::kTunnel}},
      [](const Route& r) { return r.in_multi; },
      [](const Route& r) { return r.in_multi != InMulti::kQueue; });
}

}  // namespace
}  // namespace bloomproxy::protocol

// The BF.* commands the proxy answers, as COMMAND describes them (arity, flags, key positions,
// ACL categories): added to the upstream's COMMAND output, and read by the ACL compiler.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {

// COMMAND entries of the BF.* commands (RESP2 arrays, Redis 7 layout), for the proxy to add to
// the upstream's COMMAND output.
std::vector<std::string> BfCommandEntries();

// The BF.* commands the proxy answers (lower case) and whether each writes: its COMMAND entry's
// ACL category is @write, else @read (both with @bloom).
struct BfCommandName {
  std::string_view name;
  bool writes;
};
std::vector<BfCommandName> BfCommandNames();
// The entry of one BF command by name (any case), or empty.
std::string BfCommandEntry(std::string_view name);

}  // namespace bloomproxy::filters

// Where a command's keys are, as Redis Cluster finds them to route a command (cluster.c
// getNodeByQuery calls db.c getKeysFromCommand): the command table's first/last/step, or, for
// commands with movable keys, the command's own rule (EVAL script numkeys key..., ZUNIONSTORE
// dst numkeys key..., XREAD ... STREAMS key... id..., SORT ... STORE dst, MIGRATE ... KEYS
// key..., GEORADIUS ... STORE/STOREDIST dst, ...). Where COMMAND GETKEYS (which prefers key
// specs) differs from those rules, the rules win: they decide which node Redis wants.
// Pure; the cluster router sends a command to the node of its keys' slot.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "protocol/command_table.h"

namespace bloomproxy::protocol {

// Appends to *positions the indices into `args` (args[0] is the command name; for a
// subcommand row args[1] is the subcommand) of every key of the command, in argument order.
// `info` is the command's row (the subcommand's row for container commands). Returns false,
// adding nothing, when the arguments do not let the keys be found (wrong arity, numkeys not a
// number, below 1 (EVAL and FCALL: "0" is fine) or larger than the arguments, STREAMS without
// an even number of arguments after it, ...): Redis finds no keys either and answers its own
// error, so the command may go to any node. numkeys is read as Redis reads it to find keys (C
// atoi), so "2abc" gives 2 keys: Redis routes by them before the command itself rejects the
// number. A command without keys returns true with no positions added.
bool CommandKeys(const CommandInfo& info, const std::vector<std::string_view>& args,
                 std::vector<size_t>* positions);

}  // namespace bloomproxy::protocol

// A plan of ONE script call (CF.* commands, TOPK reads and RESERVE): sent by its SHA1 first, then
// by its text when the server did not have it (NOSCRIPT), and the answer folded into the
// client's reply (or, for coalesced commands, each member's). Pure; no sockets.
//
//   step 1   EVALSHA[_RO] <sha> ...   -> answer -> reply
//   (step 2  EVAL[_RO] <text> ...     when step 1 met NOSCRIPT)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/plan.h"

namespace bloomproxy::filters {

// Appends the call to `out`: by its SHA1, or with `body` by its text.
using AppendScriptCall = std::function<void(std::string* out, bool body)>;
// Makes the client's reply (or fills *member_replies for a batch) from the answer: one complete
// frame, and the same decoded (null for an error reply or when it cannot be decoded).
using FoldScriptAnswer = std::function<std::string(
    std::string_view answer, const redisReply* decoded, std::vector<std::string>* member_replies)>;

std::unique_ptr<Plan> MakeScriptPlan(AppendScriptCall append, FoldScriptAnswer fold);

// The client's error for a script answer that makes no sense: the unexpected-reply error, never a
// made-up reply.
std::string ScriptNonsense(std::string_view answer);

// The reply for a structure script's status that says what the name holds: WRONGTYPE ->
// `wrong_type`, MISSING -> `missing`, "DAMAGED <why>" -> the unexpected-reply error naming
// `structure` ("the t-digest") and why. Empty for any other status.
std::string ScriptStatusReply(std::string_view status, std::string_view wrong_type,
                              std::string_view missing, std::string_view structure);

}  // namespace bloomproxy::filters

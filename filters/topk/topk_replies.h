// RedisBloom's replies to TOPK commands, made of what their scripts answer (topk_scripts.h):
// shared by the plans (topk_plan.h) and by TOPK.* inside MULTI (multi_topk.cc). Every reply is
// the RESP2 one; filters/common/sketch_resp3.h rewrites it for a RESP3 client. An answer that
// makes no sense becomes an error reply, never a made-up answer. Pure; no sockets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filters/topk/topk_args.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// One TOPK.ADD / TOPK.INCRBY in an update call (TopkAddCall): how many of its items the call
// applied, how many elements its reply announces (INCRBY: its pairs), and the error element that
// follows the applied ones (INCRBY's bad increment; empty for none).
struct TopkAddMember {
  size_t applied = 0;
  size_t announced = 0;
  std::string error;
};

// The reply of each member from topk_add.lua's answer (one complete RESP2 frame, and the same
// decoded, null when it could not be). An answer that concerns them all (an error, MISSING,
// WRONGTYPE, a damaged sketch) gives every member the same reply.
std::vector<std::string> TopkAddReplies(std::string_view answer, const redisReply* decoded,
                                        const std::vector<TopkAddMember>& members);

// A member's reply from the items it expelled (one per applied item), worked out by the proxy
// (topk_snapshot.h).
std::string TopkAddMemberReply(const std::vector<TopkExpelled>& expelled, const TopkAddMember& m);

// The reply to TOPK.QUERY, COUNT, LIST or INFO (`request`) from topk_read.lua's answer.
std::string TopkReadReply(const TopkRequest& request, std::string_view answer,
                          const redisReply* decoded);

// The reply to TOPK.RESERVE from topk_reserve.lua's answer; `refusal` is the argument error to
// reply when the name is free (empty when the sketch was to be created).
std::string TopkReserveReply(std::string_view refusal, std::string_view answer);

// The fields an answer ends with (topk_add.lua, topk_read.lua), or null.
const redisReply* TopkAnswerFields(const redisReply* decoded);

}  // namespace bloomproxy::filters

// RedisBloom's replies to CF commands, made of what their scripts answer (cf_scripts.h): shared
// by the plans (cf_plan.h) and by CF.* inside MULTI (multi_cf.h). Every reply is the RESP2 one;
// filters/common/sketch_resp3.h rewrites it for a RESP3 client. An answer that makes no sense
// becomes an error reply, never a made-up answer. Pure; no sockets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filters/common/lua_script.h"
#include "filters/common/plan.h"
#include "filters/cuckoo/cf_args.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// The reply to `request` from its script's answer: one complete RESP2 frame (an error frame is
// the upstream's, e.g. OOM), and the same decoded (null when it could not be).
std::string CfReply(const CfRequest& request, std::string_view answer, const redisReply* decoded);

// The replies of coalesced commands (CfInsertCall, CfCheckCall) from their call's answer: one
// per member, a single integer (CF.ADD, CF.ADDNX, CF.EXISTS, CF.COUNT) or an array
// (member.multi: CF.MEXISTS). An answer that concerns them all (an error, WRONGTYPE, a damaged
// filter) gives every member the same reply.
std::vector<std::string> CfInsertReplies(std::string_view answer, const redisReply* decoded,
                                         const std::vector<PlanMember>& members);
std::vector<std::string> CfCheckReplies(std::string_view answer, const redisReply* decoded,
                                        const std::vector<PlanMember>& members);

}  // namespace bloomproxy::filters

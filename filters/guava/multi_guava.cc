// BF.* inside MULTI on a key a bf-layout rule names (filters/common/multi_command.h,
// filters/guava/guava_plan.h): the command is queued as one script that does it whole when EXEC
// runs (reading the cursor, setting the bits, rolling an expanding filter over to its next key);
// the items' bit indexes are worked out here, and the script's raw answer becomes RedisBloom's
// reply.
#include "filters/guava/multi_guava.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/bloom/bf_replies.h"
#include "filters/common/plan_requests.h"
#include "filters/guava/guava_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// KEYS: the key (NAME-0 for an expanding filter), the cursor key (expanding only).
// ARGV: op (add, exists, counts, reserve), bits, k, items, NAME ("" unless expanding),
// nocreate, then k indexes per item (reserve: the refusal when the parameters differ).
// Errors of the commands (WRONGTYPE, ...) are answered as they are (pcall).
// Answers: add/exists: 0/1 per item; counts: {found, BITCOUNT of each data key}.
constexpr std::string_view kScript = R"lua(
local op, bits, k, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local name, nocreate, base = ARGV[5], ARGV[6] == '1', 6
local expanding = name ~= ''
local function key(i) if expanding then return name .. '-' .. i end return KEYS[1] end
local function call(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil, r end
  return r
end
local c, e, found, _ = 0, nil, false, nil
if expanding then
  local v
  v, e = call('GET', KEYS[2]); if e then return e end
  if v then
    c = tonumber(v)
    if c == nil or c < 0 or c > 65535 or c ~= math.floor(c) then
      return redis.error_reply('ERR bloomproxy: the cursor key of this expanding filter does not hold an integer in 0..65535')
    end
    found = true
  end
end
if not found then
  local x
  if op ~= 'exists' then
    _, e = call('STRLEN', key(0)); if e then return e end
  end
  x, e = call('EXISTS', key(0)); if e then return e end
  found = x == 1
end
if op == 'reserve' then
  if found then return redis.error_reply('ERR item exists') end
  if ARGV[7] ~= '' then return redis.error_reply(ARGV[7]) end
  _, e = call('SETBIT', key(0), bits - 1, 0); if e then return e end
  return redis.status_reply('OK')
end
local out = {found and 1 or 0}
if op == 'counts' then
  for i = 0, c do
    local b
    b, e = call('BITCOUNT', key(i)); if e then return e end
    out[#out + 1] = b
  end
  return out
end
if op == 'add' and nocreate and not found then return redis.error_reply('ERR not found') end
local function has(i, j)
  for h = 1, k do
    local b, err = call('GETBIT', key(i), ARGV[base + (j - 1) * k + h])
    -- RedisBloom answers EXISTS on a key of another type as on a missing one.
    if err and op == 'exists' and string.sub(err.err, 1, 9) == 'WRONGTYPE' then return false end
    if err then return nil, err end
    if b == 0 then return false end
  end
  return true
end
for j = 1, n do
  local present = false
  if op == 'exists' or expanding then
    for i = 0, c do
      local p
      p, e = has(i, j); if e then return e end
      if p then present = true break end
    end
  end
  if op == 'exists' or present then
    out[#out + 1] = present and op == 'exists' and 1 or 0
  else
    local changed = 0
    for h = 1, k do
      local old
      old, e = call('SETBIT', key(c), ARGV[base + (j - 1) * k + h], 1); if e then return e end
      if old == 0 then changed = 1 end
    end
    out[#out + 1] = changed
    if expanding then
      local b
      b, e = call('BITCOUNT', key(c)); if e then return e end
      if b * 2 > bits then
        c, e = call('INCR', KEYS[2]); if e then return e end
        _, e = call('SETBIT', key(c), bits - 1, 0); if e then return e end
      end
    end
  end
end
return out
)lua";

const char* OpName(BfCommand command) {
  switch (command) {
    case BfCommand::kAdd:
    case BfCommand::kMAdd:
    case BfCommand::kInsert:
      return "add";
    case BfCommand::kExists:
    case BfCommand::kMExists:
      return "exists";
    case BfCommand::kReserve:
      return "reserve";
    default:
      return "counts";
  }
}

class GuavaQueued : public QueuedSketch {
 public:
  GuavaQueued(guava_plan::GuavaRequest req, const LayoutRule& rule, std::string deferred);
  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override;

 private:
  std::string CountsReply(const redisReply* r) const;

  guava_plan::GuavaRequest req_;
  LayoutRule rule_;
  std::string deferred_;
};

GuavaQueued::GuavaQueued(guava_plan::GuavaRequest req, const LayoutRule& rule, std::string deferred)
    : req_(std::move(req)), rule_(rule), deferred_(std::move(deferred)) {
  const std::string first = rule_.expanding() ? LayoutRule::DataKey(req_.key, 0) : req_.key;
  std::vector<std::string> args = {"EVAL", std::string(kScript), rule_.expanding() ? "2" : "1",
                                   first};
  if (rule_.expanding()) args.push_back(rule_.CursorKey(req_.key));
  args.insert(args.end(), {OpName(req_.command), U64(rule_.bits), std::to_string(rule_.k),
                           std::to_string(req_.items), rule_.expanding() ? req_.key : "",
                           req_.nocreate ? "1" : "0"});
  if (req_.command == BfCommand::kReserve) {
    const bool same = guava_plan::SameParameters(req_, rule_);
    // The script answers it as a Redis error: without the leading '-' and the CRLF.
    const std::string refusal = guava_plan::ReserveMismatch(rule_);
    args.push_back(same ? "" : refusal.substr(1, refusal.size() - 3));
  }
  for (uint64_t index : req_.indexes) args.push_back(U64(index));
  protocol::AppendArrayHeader(&request_, static_cast<int64_t>(args.size()));
  for (const std::string& a : args) protocol::AppendBulk(&request_, a);
  req_.indexes.clear();
}

std::string GuavaQueued::Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const {
  if (!answer.empty() && (answer[0] == '-' || answer[0] == '+')) return std::string(answer);
  protocol::ReplyPtr r = decoder->Decode(answer);
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
    return guava_plan::Unexpected("the transaction's script", answer);
  }
  for (size_t i = 0; i < r->elements; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0) {
      return guava_plan::Unexpected("the transaction's script", answer);
    }
  }
  if (req_.command == BfCommand::kCard || req_.command == BfCommand::kInfo) {
    return CountsReply(r.get());
  }
  std::vector<uint8_t> results;
  for (size_t i = 1; i < r->elements; ++i) results.push_back(r->element[i]->integer != 0);
  if (results.size() != req_.items) {
    return guava_plan::Unexpected("the transaction's script", answer);
  }
  return guava_plan::ItemsReply(guava_plan::MultiItem(req_.command), results);
}

std::string GuavaQueued::CountsReply(const redisReply* r) const {
  const bool found = r->element[0]->integer != 0;
  if (req_.command == BfCommand::kInfo && !found) return std::string(kNotFound);
  if (req_.command == BfCommand::kInfo && !deferred_.empty()) return deferred_;
  std::vector<int64_t> bitcounts;
  for (size_t i = 1; i < r->elements; ++i) bitcounts.push_back(r->element[i]->integer);
  return guava_plan::CountsReply(req_, rule_, bitcounts);
}

}  // namespace

std::unique_ptr<QueuedSketch> QueueGuavaCommand(const BfRequest& request, const LayoutRule& rule,
                                                std::string deferred_error) {
  guava_plan::GuavaRequest kept = guava_plan::KeepRequest(request, rule);
  if (!kept.error.empty()) return std::make_unique<KnownReply>(std::move(kept.error));
  return std::make_unique<GuavaQueued>(std::move(kept), rule, std::move(deferred_error));
}

}  // namespace bloomproxy::filters

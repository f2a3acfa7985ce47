#include "filters/bloom/add_script.h"

#include <charconv>
#include <utility>

#include "filters/bloom/bf_meta.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// BITFIELD commands of at most 1000 operations each: Lua's unpack() takes at most 8000 values.
constexpr std::string_view kAdd = R"lua(
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return -1 end
local m = redis.call('HMGET', KEYS[1], ARGV[1], 'id', ARGV[4])
if m[1] ~= ARGV[2] or m[2] ~= ARGV[3] or m[3] then return -1 end
local n, groups, a = tonumber(ARGV[5]), tonumber(ARGV[6]), 7
local found, out = {}, {}
for g = 1, groups do
  local set = g == groups
  local k = tonumber(ARGV[a])
  a = a + 1
  local cmds, cur, wc, wp = {}, {}, {}, {}
  for j = 1, n do
    for b = 1, k do
      if not found[j] then
        local key = tonumber(ARGV[a])
        local c = cur[key]
        if c == nil or c.ops == 1000 then
          c = {args = {KEYS[key]}, len = 1, ops = 0}
          cmds[#cmds + 1] = c
          cur[key] = c
        end
        local args, len = c.args, c.len
        if set then
          args[len + 1], args[len + 2], args[len + 3], args[len + 4] = 'SET', 'u1', ARGV[a + 1], '1'
          c.len = len + 4
        else
          args[len + 1], args[len + 2], args[len + 3] = 'GET', 'u1', ARGV[a + 1]
          c.len = len + 3
        end
        c.ops = c.ops + 1
        local x = (j - 1) * k + b
        wc[x], wp[x] = c, c.ops
      end
      a = a + 2
    end
  end
  for _, c in ipairs(cmds) do c.bits = redis.call('BITFIELD', unpack(c.args)) end
  for j = 1, n do
    if found[j] then
      if set then out[j] = 2 end
    else
      local ones = true
      for x = (j - 1) * k + 1, j * k do
        if wc[x].bits[wp[x]] ~= 1 then
          ones = false
          break
        end
      end
      if set then out[j] = ones and 0 or 1 else found[j] = ones end
    end
  end
end
return out
)lua";

void AppendNumber(std::string* out, uint64_t v) {
  char digits[24];
  const auto res = std::to_chars(digits, digits + sizeof(digits), v);
  protocol::AppendBulk(out, std::string_view(digits, static_cast<size_t>(res.ptr - digits)));
}

}  // namespace

std::string_view AddScript() { return kAdd; }

AddScriptRequest::AddScriptRequest(std::string_view name, std::string_view id, size_t links,
                                   size_t items)
    : name_(name), items_(items) {
  protocol::AppendBulk(&argv_, kMarkerField);
  protocol::AppendBulk(&argv_, kMarkerValue);
  protocol::AppendBulk(&argv_, id);
  protocol::AppendBulk(&argv_, "l" + std::to_string(links));
  AppendNumber(&argv_, items);
}

uint32_t AddScriptRequest::Key(std::string key) {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return static_cast<uint32_t>(i + 2);
  }
  keys_.push_back(std::move(key));
  return static_cast<uint32_t>(keys_.size() + 1);
}

void AddScriptRequest::BeginGroup(uint32_t k) {
  groups_ += 1;
  AppendNumber(&body_, k);
  argc_ += 1;
}

void AddScriptRequest::Bit(uint32_t key, uint64_t offset) {
  AppendNumber(&body_, key);
  AppendNumber(&body_, offset);
  argc_ += 2;
}

void AddScriptRequest::AddTo(Requests* req, uint32_t link) {
  std::string& out =
      req->Begin(kAdd.size() + argv_.size() + body_.size() + 64 * (keys_.size() + 1));
  // EVAL script numkeys name keys..., the 5 arguments of argv_, the number of groups, body_.
  protocol::AppendArrayHeader(&out, 4 + static_cast<int64_t>(keys_.size()) + 5 + 1 + argc_);
  protocol::AppendBulk(&out, "EVAL");
  protocol::AppendBulk(&out, kAdd);
  AppendNumber(&out, 1 + keys_.size());
  protocol::AppendBulk(&out, name_);
  for (const std::string& k : keys_) protocol::AppendBulk(&out, k);
  out += argv_;
  AppendNumber(&out, groups_);
  out += body_;
  req->End("EVAL");
  ReplyCheck& check = req->Last();
  check.kind = ReplyCheck::Kind::kAddResults;
  check.role = ReplyCheck::Role::kAdd;
  check.link = link;
  check.n = items_;
}

}  // namespace bloomproxy::filters

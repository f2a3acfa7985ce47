#include "filters/bloom/add_script.h"

#include <charconv>
#include <utility>

#include "filters/bloom/bf_add.lua.h"
#include "filters/bloom/bf_meta.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

void AppendNumber(std::string* out, uint64_t v) {
  char digits[24];
  const auto res = std::to_chars(digits, digits + sizeof(digits), v);
  protocol::AppendBulk(out, std::string_view(digits, static_cast<size_t>(res.ptr - digits)));
}

}  // namespace

std::string_view AddScript() { return lua::kBfAdd.body; }

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
  const std::string_view script = lua::kBfAdd.body;
  std::string& out =
      req->Begin(script.size() + argv_.size() + body_.size() + 64 * (keys_.size() + 1));
  // EVAL script numkeys name keys..., the 5 arguments of argv_, the number of groups, body_.
  protocol::AppendArrayHeader(&out, 4 + static_cast<int64_t>(keys_.size()) + 5 + 1 + argc_);
  protocol::AppendBulk(&out, "EVAL");
  protocol::AppendBulk(&out, script);
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

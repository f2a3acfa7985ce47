#include "filters/bloom/window/window_replies.h"

#include <cstdint>

#include "filters/bloom/bf_replies.h"
#include "filters/common/plan_requests.h"
#include "protocol/reply_decoder.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {
namespace {

// The lines of an array reply whose elements are one line each (":1", "-ERR ..."), or of a
// single-line reply; false for anything else.
bool Lines(std::string_view reply, std::vector<std::string_view>* out) {
  out->clear();
  if (reply.empty()) return false;
  size_t eol = reply.find("\r\n");
  if (eol == std::string_view::npos) return false;
  if (reply[0] != '*') {
    out->push_back(reply.substr(0, eol + 2));
    return true;
  }
  int64_t n = 0;
  if (!protocol::StringToInt64(reply.substr(1, eol - 1), &n) || n < 0) return false;
  size_t pos = eol + 2;
  for (int64_t i = 0; i < n; ++i) {
    if (pos >= reply.size() || (reply[pos] != ':' && reply[pos] != '-' && reply[pos] != '+')) {
      return false;
    }
    eol = reply.find("\r\n", pos);
    if (eol == std::string_view::npos) return false;
    out->push_back(reply.substr(pos, eol + 2 - pos));
    pos = eol + 2;
  }
  return pos == reply.size();
}

std::string Array(const std::vector<std::string>& elements) {
  std::string out = "*" + std::to_string(elements.size()) + "\r\n";
  for (const std::string& e : elements) out += e;
  return out;
}

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

bool IsNotFound(std::string_view reply) { return reply == kNotFound; }

}  // namespace

bool FoundItems(std::string_view reply, std::vector<bool>* found, std::string* error) {
  std::vector<std::string_view> lines;
  if (!reply.empty() && reply[0] == '-') {
    error->assign(reply);
    return false;
  }
  if (reply.empty() || reply[0] != '*' || !Lines(reply, &lines) || lines.size() != found->size()) {
    *error = Unexpected(Named("BF.MEXISTS"), "a slot's lookup answered " + DescribeFrame(reply));
    return false;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == ":1\r\n") {
      (*found)[i] = true;
    } else if (lines[i] != ":0\r\n") {
      *error = Unexpected(Named("BF.MEXISTS"), "a slot's lookup answered " + DescribeFrame(reply));
      return false;
    }
  }
  return true;
}

bool FoundInMembers(const std::string& reply, const std::vector<std::string>& member_replies,
                    const std::vector<BfMember>& members, std::vector<bool>* found,
                    std::string* error) {
  if (member_replies.size() != members.size()) {
    *error =
        !reply.empty() && reply[0] == '-'
            ? reply
            : Unexpected(Named("BF.MEXISTS"), "a slot's lookup answered " + DescribeFrame(reply));
    return false;
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const std::string& r = member_replies[m];
    std::vector<bool> mine(members[m].count, false);
    if (members[m].multi) {
      if (!FoundItems(r, &mine, error)) return false;
    } else if (r == ":1\r\n" || r == ":0\r\n") {
      mine.assign(1, r == ":1\r\n");
    } else {
      *error = r.empty() || r[0] != '-'
                   ? Unexpected(Named("BF.EXISTS"), "a slot's lookup answered " + DescribeFrame(r))
                   : r;
      return false;
    }
    for (size_t i = 0; i < mine.size(); ++i) {
      if (mine[i] && members[m].start + i < found->size()) (*found)[members[m].start + i] = true;
    }
  }
  return true;
}

std::string LookupReply(const BfMember& member, const std::vector<bool>& found) {
  std::vector<std::string> out;
  for (size_t i = member.start; i < member.start + member.count && i < found.size(); ++i) {
    out.push_back(Integer(found[i] ? 1 : 0));
  }
  if (!member.multi) return out.empty() ? Integer(0) : out[0];
  return Array(out);
}

std::string CardOfSlots(const std::vector<std::string>& replies) {
  int64_t total = 0;
  for (const std::string& reply : replies) {
    int64_t v = 0;
    if (!FrameInt(reply, &v)) return reply;
    total += v;
  }
  return Integer(total);
}

std::string InfoOfSlots(const std::vector<std::string>& replies, InfoField field,
                        const FilterMeta& meta) {
  protocol::ReplyDecoder decoder;
  int64_t size = 0, filters = 0, items = 0;
  for (const std::string& reply : replies) {
    if (IsNotFound(reply)) continue;  // a slot nobody added to, or one that just ended
    protocol::ReplyPtr r = decoder.Decode(reply);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 10) {
      if (!reply.empty() && reply[0] == '-') return reply;
      return Unexpected(Named("BF.INFO"), "a slot's BF.INFO answered " + DescribeFrame(reply));
    }
    size += Int(r->element[3]);
    filters += Int(r->element[5]);
    items += Int(r->element[7]);
  }
  const int64_t expansion = meta.nonscaling() ? -1 : static_cast<int64_t>(meta.expansion);
  std::string out =
      InfoReply(field, static_cast<int64_t>(meta.capacity), size, filters, items, expansion);
  if (field != InfoField::kAll || out.rfind("*10\r\n", 0) != 0) return out;
  out.replace(0, 5, "*14\r\n");
  out += "+Window\r\n" + Integer(static_cast<int64_t>(meta.window_ms));
  out += "+Slots\r\n" + Integer(meta.slots);
  return out;
}

std::string DebugOfSlots(const std::vector<std::string>& replies) {
  protocol::ReplyDecoder decoder;
  int64_t total = 0;
  std::vector<std::string> links;
  for (const std::string& reply : replies) {
    if (IsNotFound(reply)) continue;
    protocol::ReplyPtr r = decoder.Decode(reply);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1) {
      if (!reply.empty() && reply[0] == '-') return reply;
      return Unexpected(Named("BF.DEBUG"), "a slot's BF.DEBUG answered " + DescribeFrame(reply));
    }
    const std::string_view head = Str(r->element[0]);
    int64_t n = 0;
    if (head.rfind("size:", 0) == 0 && protocol::StringToInt64(head.substr(5), &n)) total += n;
    for (size_t i = 1; i < r->elements; ++i) links.push_back(Bulk(Str(r->element[i])));
  }
  std::vector<std::string> out = {Bulk("size:" + std::to_string(total))};
  out.insert(out.end(), links.begin(), links.end());
  return Array(out);
}

}  // namespace bloomproxy::filters

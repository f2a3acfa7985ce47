#include "filters/sketch_resp3.h"

#include "filters/bf_args.h"
#include "filters/cms_args.h"
#include "protocol/reply_framer.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kNullBulk = "$-1\r\n";
constexpr std::string_view kNull = "_\r\n";

// The canonical label of a one-field BF.INFO shape (the key of the whole reply's map).
std::string_view FieldLabel(Resp3Shape shape) {
  switch (shape) {
    case Resp3Shape::kBfInfoCapacity:
      return "Capacity";
    case Resp3Shape::kBfInfoSize:
      return "Size";
    case Resp3Shape::kBfInfoFilters:
      return "Number of filters";
    case Resp3Shape::kBfInfoItems:
      return "Number of items inserted";
    case Resp3Shape::kBfInfoExpansion:
      return "Expansion rate";
    default:
      return {};
  }
}

Resp3Shape FieldShape(InfoField field) {
  switch (field) {
    case InfoField::kCapacity:
      return Resp3Shape::kBfInfoCapacity;
    case InfoField::kSize:
      return Resp3Shape::kBfInfoSize;
    case InfoField::kFilters:
      return Resp3Shape::kBfInfoFilters;
    case InfoField::kItems:
      return Resp3Shape::kBfInfoItems;
    case InfoField::kExpansion:
      return Resp3Shape::kBfInfoExpansion;
    case InfoField::kAll:
      break;
  }
  return Resp3Shape::kInfoMap;
}

// The element count of an array header "*n\r\n" at the start of `reply`, and the header's
// length; false when `reply` does not start with one.
bool ArrayHeader(std::string_view reply, int64_t* n, size_t* length) {
  const size_t eol = reply.find("\r\n");
  if (reply.empty() || reply[0] != '*' || eol == std::string_view::npos ||
      !protocol::StringToInt64(reply.substr(1, eol - 1), n) || *n < 0) {
    return false;
  }
  *length = eol + 2;
  return true;
}

// A 0/1 integer meaning false/true as a RESP3 boolean; any other value as it is.
void AppendBoolOrSame(std::string_view value, std::string* out) {
  if (value == ":1\r\n") {
    *out += "#t\r\n";
  } else if (value == ":0\r\n") {
    *out += "#f\r\n";
  } else {
    out->append(value);
  }
}

// A value of an info reply: the null bulk becomes RESP3's null.
void AppendValue(std::string_view value, std::string* out) {
  out->append(value == kNullBulk ? kNull : value);
}

// Rewrites the `n` elements after the array header of `reply` (`header` bytes) with `each`,
// after `out`'s new header; false when they do not frame as exactly `n` complete values.
template <typename Each>
bool RewriteElements(std::string_view reply, size_t header, int64_t n, std::string* out,
                     Each each) {
  std::string_view rest = reply.substr(header);
  protocol::ReplyFramer framer;
  for (int64_t i = 0; i < n; ++i) {
    size_t len = 0;
    if (framer.Next(rest, &len) != protocol::FrameStatus::kComplete) return false;
    each(i, rest.substr(0, len), out);
    rest.remove_prefix(len);
  }
  return rest.empty();
}

}  // namespace

Resp3Shape Resp3ShapeOf(const std::vector<std::string_view>& args) {
  if (args.empty()) return Resp3Shape::kSame;
  BfCommand bf;
  if (LookupBfCommand(args[0], &bf)) {
    switch (bf) {
      case BfCommand::kAdd:
      case BfCommand::kExists:
        return Resp3Shape::kBool;
      case BfCommand::kMAdd:
      case BfCommand::kInsert:
      case BfCommand::kMExists:
        return Resp3Shape::kBoolArray;
      case BfCommand::kInfo: {
        if (args.size() != 3) return Resp3Shape::kInfoMap;
        // The field's spellings are the argument parser's (case-insensitive); an unknown one
        // is answered with an error.
        BfRequest request;
        if (!ParseBfRequest(args, BfDefaults{}, &request).empty()) return Resp3Shape::kSame;
        return FieldShape(request.info_field);
      }
      default:
        return Resp3Shape::kSame;
    }
  }
  CmsCommand cms;
  if (LookupCmsCommand(args[0], &cms) && cms == CmsCommand::kInfo) return Resp3Shape::kInfoMap;
  return Resp3Shape::kSame;
}

std::string ToResp3(Resp3Shape shape, std::string_view resp2) {
  if (shape == Resp3Shape::kSame || resp2.empty() || resp2[0] == '-') return std::string(resp2);
  if (shape == Resp3Shape::kBool) {
    std::string out;
    AppendBoolOrSame(resp2, &out);
    return out;
  }
  int64_t n = 0;
  size_t header = 0;
  if (!ArrayHeader(resp2, &n, &header)) return std::string(resp2);
  std::string out;
  out.reserve(resp2.size() + 32);
  bool ok = false;
  switch (shape) {
    case Resp3Shape::kBoolArray:
      out.append(resp2.substr(0, header));
      ok = RewriteElements(resp2, header, n, &out, [](int64_t, std::string_view e, std::string* o) {
        AppendBoolOrSame(e, o);
      });
      break;
    case Resp3Shape::kInfoMap:
      // Labels at even places, values at odd ones: n/2 pairs.
      if (n % 2 != 0) return std::string(resp2);
      out = "%" + std::to_string(n / 2) + "\r\n";
      ok = RewriteElements(resp2, header, n, &out,
                           [](int64_t i, std::string_view e, std::string* o) {
                             if (i % 2 == 0) {
                               o->append(e);
                             } else {
                               AppendValue(e, o);
                             }
                           });
      break;
    default: {
      // One BF.INFO field: RESP2 has its value alone, RESP3 a one-pair map with its label.
      const std::string_view label = FieldLabel(shape);
      if (label.empty() || n != 1) return std::string(resp2);
      out = "%1\r\n+";
      out.append(label);
      out += "\r\n";
      ok = RewriteElements(resp2, header, n, &out,
                           [](int64_t, std::string_view e, std::string* o) { AppendValue(e, o); });
      break;
    }
  }
  return ok ? out : std::string(resp2);
}

}  // namespace bloomproxy::filters

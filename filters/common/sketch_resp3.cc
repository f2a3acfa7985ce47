#include "filters/common/sketch_resp3.h"

#include "filters/bloom/bf_args.h"
#include "filters/cms/cms_args.h"
#include "filters/cuckoo/cf_args.h"
#include "filters/tdigest/tdigest_args.h"
#include "filters/topk/topk_args.h"
#include "protocol/encoder.h"
#include "protocol/reply_framer.h"

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

Resp3Shape CfShape(CfCommand cf) {
  switch (cf) {
    case CfCommand::kAdd:
    case CfCommand::kAddNx:
    case CfCommand::kExists:
    case CfCommand::kDel:
      return Resp3Shape::kBool;
    case CfCommand::kMExists:
      return Resp3Shape::kBoolArray;
    case CfCommand::kInsert:
      return Resp3Shape::kCfInsert;
    case CfCommand::kInfo:
      return Resp3Shape::kInfoMap;
    case CfCommand::kScanDump:
      return Resp3Shape::kNullInArray;
    default:
      return Resp3Shape::kSame;
  }
}

Resp3Shape TopkShape(TopkCommand topk) {
  switch (topk) {
    case TopkCommand::kAdd:
    case TopkCommand::kIncrBy:
      return Resp3Shape::kTopkUpdate;
    case TopkCommand::kQuery:
      return Resp3Shape::kBoolArray;
    case TopkCommand::kInfo:
      return Resp3Shape::kTopkInfo;
    default:
      return Resp3Shape::kSame;
  }
}

Resp3Shape TdigestShape(TdigestCommand command) {
  switch (command) {
    case TdigestCommand::kMin:
    case TdigestCommand::kMax:
    case TdigestCommand::kTrimmedMean:
      return Resp3Shape::kDouble;
    case TdigestCommand::kQuantile:
    case TdigestCommand::kCdf:
    case TdigestCommand::kByRank:
    case TdigestCommand::kByRevRank:
      return Resp3Shape::kDoubleArray;
    case TdigestCommand::kInfo:
      return Resp3Shape::kInfoMap;
    default:
      return Resp3Shape::kSame;
  }
}

// A bulk string holding a double ("$3\r\ninf\r\n") as RESP3's double (",inf\r\n"); anything else
// as it is.
void AppendDoubleOrSame(std::string_view bulk, std::string* out) {
  const size_t eol = bulk.find("\r\n");
  if (bulk.empty() || bulk[0] != '$' || eol == std::string_view::npos || bulk.size() < eol + 4) {
    out->append(bulk);
    return;
  }
  *out += ',';
  out->append(bulk.substr(eol + 2, bulk.size() - eol - 4));
  *out += "\r\n";
}

// TOPK.ADD / INCRBY: every null element as RESP3's null, for as many elements as the reply holds
// (an INCRBY's reply stops after its error element, short of what its header announced).
std::string TopkUpdateToResp3(std::string_view resp2) {
  const size_t eol = resp2.find("\r\n");
  if (resp2.empty() || resp2[0] != '*' || eol == std::string_view::npos) {
    return std::string(resp2);
  }
  std::string out(resp2.substr(0, eol + 2));
  std::string_view rest = resp2.substr(eol + 2);
  while (!rest.empty()) {
    protocol::ReplyFramer framer;
    size_t len = 0;
    if (framer.Next(rest, &len) != protocol::FrameStatus::kComplete) return std::string(resp2);
    AppendValue(rest.substr(0, len), &out);
    rest.remove_prefix(len);
  }
  return out;
}

// TOPK.INFO: a map whose last value, the decay, is a bulk string in RESP2 and a double in RESP3.
std::string TopkInfoToResp3(const std::vector<std::string_view>& elements, std::string_view resp2) {
  if (elements.size() != 8 || elements[7].empty() || elements[7][0] != '$') {
    return std::string(resp2);
  }
  std::string out;
  protocol::AppendMapHeader(&out, 4);
  for (size_t i = 0; i < 7; ++i) out.append(elements[i]);
  const std::string_view bulk = elements[7];
  const size_t eol = bulk.find("\r\n");
  out += ',';
  out.append(bulk.substr(eol + 2, bulk.size() - eol - 4));
  out += "\r\n";
  return out;
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
  CfCommand cf;
  if (LookupCfCommand(args[0], &cf)) return CfShape(cf);
  TopkCommand topk;
  if (LookupTopkCommand(args[0], &topk)) return TopkShape(topk);
  TdigestCommand tdigest;
  if (LookupTdigestCommand(args[0], &tdigest)) return TdigestShape(tdigest);
  return Resp3Shape::kSame;
}

std::string ToResp3(Resp3Shape shape, std::string_view resp2) {
  if (shape == Resp3Shape::kSame || resp2.empty() || resp2[0] == '-') return std::string(resp2);
  std::string out;
  if (shape == Resp3Shape::kBool) {
    AppendBoolOrSame(resp2, &out);
    return out;
  }
  if (shape == Resp3Shape::kTopkUpdate) return TopkUpdateToResp3(resp2);
  if (shape == Resp3Shape::kDouble) {
    AppendDoubleOrSame(resp2, &out);
    return out;
  }
  std::vector<std::string_view> elements;
  if (!protocol::SplitArray(resp2, &elements)) return std::string(resp2);
  out.reserve(resp2.size() + 32);
  switch (shape) {
    case Resp3Shape::kBoolArray:
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(elements.size()));
      for (std::string_view e : elements) AppendBoolOrSame(e, &out);
      return out;
    case Resp3Shape::kCfInsert:
      // RedisBloom's CF.INSERT replies with a boolean per item: -1 (no room) is false too.
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(elements.size()));
      for (std::string_view e : elements) AppendBoolOrSame(e == ":-1\r\n" ? ":0\r\n" : e, &out);
      return out;
    case Resp3Shape::kNullInArray:
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(elements.size()));
      for (std::string_view e : elements) AppendValue(e, &out);
      return out;
    case Resp3Shape::kTopkInfo:
      return TopkInfoToResp3(elements, resp2);
    case Resp3Shape::kDoubleArray:
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(elements.size()));
      for (std::string_view e : elements) AppendDoubleOrSame(e, &out);
      return out;
    case Resp3Shape::kInfoMap:
      // Labels at even places, values at odd ones.
      if (elements.size() % 2 != 0) return std::string(resp2);
      protocol::AppendMapHeader(&out, static_cast<int64_t>(elements.size() / 2));
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i % 2 == 0) {
          out.append(elements[i]);
        } else {
          AppendValue(elements[i], &out);
        }
      }
      return out;
    default: {
      // One BF.INFO field: RESP2 has its value alone, RESP3 a one-pair map with its label.
      const std::string_view label = FieldLabel(shape);
      if (label.empty() || elements.size() != 1) return std::string(resp2);
      protocol::AppendMapHeader(&out, 1);
      out += '+';
      out.append(label);
      out += "\r\n";
      AppendValue(elements[0], &out);
      return out;
    }
  }
}

}  // namespace bloomproxy::filters

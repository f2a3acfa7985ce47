#include "protocol/reply_merge.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/reply_framer.h"
#include "protocol/request_parser.h"

namespace bloomproxy::protocol {
namespace {

constexpr std::string_view kOk = "+OK\r\n";
constexpr std::string_view kNil = "$-1\r\n";

bool IsError(std::string_view part) { return !part.empty() && part[0] == '-'; }

// ":<int64>\r\n" and nothing else.
bool ReadInteger(std::string_view part, int64_t* v) {
  if (part.size() < 4 || part[0] != ':' || part.substr(part.size() - 2) != "\r\n") return false;
  return StringToInt64(part.substr(1, part.size() - 3), v);
}

// One complete bulk string ("$-1\r\n" included) and nothing else.
bool IsBulk(std::string_view part) {
  ReplyFramer framer;
  size_t len = 0;
  return !part.empty() && part[0] == '$' && framer.Next(part, &len) == FrameStatus::kComplete &&
         len == part.size();
}

// MGET: element j of part i goes to place positions[i][j]; places nobody fills stay nil.
std::string MergeByPosition(const std::vector<std::string_view>& parts,
                            const std::vector<std::vector<size_t>>& positions, size_t total) {
  std::vector<std::string_view> placed(total);
  std::vector<std::string_view> elements;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!SplitArray(parts[i], &elements) || i >= positions.size() ||
        positions[i].size() != elements.size()) {
      return std::string(parts[i]);
    }
    for (size_t j = 0; j < elements.size(); ++j) {
      if (positions[i][j] >= total) return std::string(parts[i]);
      placed[positions[i][j]] = elements[j];
    }
  }
  std::string out;
  AppendArrayHeader(&out, static_cast<int64_t>(total));
  for (const std::string_view e : placed) out.append(e.empty() ? kNil : e);
  return out;
}

std::string MergeAllOk(const std::vector<std::string_view>& parts) {
  for (const std::string_view p : parts) {
    if (p != kOk) return std::string(p);
  }
  return std::string(kOk);
}

// kSum and kMin.
std::string MergeIntegers(const std::vector<std::string_view>& parts, bool min) {
  int64_t result = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t v = 0;
    if (!ReadInteger(parts[i], &v)) return std::string(parts[i]);
    if (min) {
      result = i == 0 ? v : std::min(result, v);
    } else if (__builtin_add_overflow(result, v, &result)) {
      return std::string(parts[i]);
    }
  }
  std::string out;
  AppendInteger(&out, result);
  return out;
}

std::string MergeConcat(const std::vector<std::string_view>& parts) {
  std::vector<std::string_view> elements;
  std::string body;
  int64_t count = 0;
  for (const std::string_view p : parts) {
    if (!SplitArray(p, &elements)) return std::string(p);
    for (const std::string_view e : elements) body.append(e);
    count += static_cast<int64_t>(elements.size());
  }
  std::string out;
  AppendArrayHeader(&out, count);
  out += body;
  return out;
}

// SCRIPT EXISTS: a script exists for the cluster only when every master has it.
std::string MergeAllOne(const std::vector<std::string_view>& parts) {
  std::vector<bool> all_one;
  std::vector<std::string_view> elements;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!SplitArray(parts[i], &elements)) return std::string(parts[i]);
    if (i == 0) all_one.assign(elements.size(), true);
    if (elements.size() != all_one.size()) return std::string(parts[i]);
    for (size_t j = 0; j < elements.size(); ++j) {
      int64_t v = 0;
      if (!ReadInteger(elements[j], &v)) return std::string(parts[i]);
      if (v != 1) all_one[j] = false;
    }
  }
  std::string out;
  AppendArrayHeader(&out, static_cast<int64_t>(all_one.size()));
  for (const bool one : all_one) AppendInteger(&out, one ? 1 : 0);
  return out;
}

std::string MergeFirstNonNil(const std::vector<std::string_view>& parts) {
  for (const std::string_view p : parts) {
    if (!IsBulk(p)) return std::string(p);
  }
  for (const std::string_view p : parts) {
    if (p != kNil) return std::string(p);
  }
  return std::string(kNil);
}

// The decimal digits of an upstream's cursor, strictly: Redis never sends anything else.
bool ReadUnsigned(std::string_view s, uint64_t* v) {
  const char* end = s.data() + s.size();
  auto res = std::from_chars(s.data(), end, *v);
  return !s.empty() && res.ec == std::errc() && res.ptr == end;
}

}  // namespace

std::string MergeReplies(Merge kind, const std::vector<std::string_view>& parts,
                         const std::vector<std::vector<size_t>>& positions, size_t total) {
  for (const std::string_view p : parts) {
    if (IsError(p)) return std::string(p);
  }
  switch (kind) {
    case Merge::kByPosition:
      return MergeByPosition(parts, positions, total);
    case Merge::kAllOk:
      return MergeAllOk(parts);
    case Merge::kSum:
      return MergeIntegers(parts, /*min=*/false);
    case Merge::kMin:
      return MergeIntegers(parts, /*min=*/true);
    case Merge::kConcat:
      return MergeConcat(parts);
    case Merge::kAllOne:
      return MergeAllOne(parts);
    case Merge::kFirstNonNil:
      return MergeFirstNonNil(parts);
    case Merge::kNone:
    case Merge::kSame:
      break;
  }
  return parts.empty() ? std::string() : std::string(parts[0]);
}

uint64_t EncodeScanCursor(size_t node_index, uint64_t node_cursor) {
  return node_cursor * kMaxScanNodes + node_index;
}

void DecodeScanCursor(uint64_t cursor, size_t* node_index, uint64_t* node_cursor) {
  *node_index = static_cast<size_t>(cursor % kMaxScanNodes);
  *node_cursor = cursor / kMaxScanNodes;
}

bool ParseScanCursor(std::string_view arg, uint64_t* cursor) {
  // strtoull needs a terminated string; like Redis's argument objects it stops at a NUL.
  const std::string s(arg);
  if (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  *cursor = v;
  return true;
}

std::string RewriteScanReply(std::string_view reply, size_t node_index, size_t node_count) {
  //   *2\r\n $<n>\r\n<cursor>\r\n *<m>\r\n<elements...>
  //          ^ re-encoded         ^ kept as it is
  constexpr std::string_view kHeader = "*2\r\n";
  if (reply.substr(0, kHeader.size()) != kHeader) return std::string(reply);
  std::string_view rest = reply.substr(kHeader.size());
  ReplyFramer framer;
  size_t cursor_len = 0;
  size_t array_len = 0;
  if (rest.empty() || rest[0] != '$' || framer.Next(rest, &cursor_len) != FrameStatus::kComplete) {
    return std::string(reply);
  }
  const std::string_view cursor_frame = rest.substr(0, cursor_len);
  const std::string_view array = rest.substr(cursor_len);
  // The framer checked the bulk: its text sits between the length line and the final CRLF.
  std::string_view cursor_text = cursor_frame.substr(cursor_frame.find("\r\n") + 2);
  if (cursor_text.size() >= 2) cursor_text.remove_suffix(2);
  uint64_t node_cursor = 0;
  if (array.empty() || array[0] != '*' ||
      framer.Next(array, &array_len) != FrameStatus::kComplete || array_len != array.size() ||
      !ReadUnsigned(cursor_text, &node_cursor)) {
    return std::string(reply);
  }
  uint64_t cursor = 0;
  if (node_cursor == 0) {
    cursor = node_index + 1 < node_count ? EncodeScanCursor(node_index + 1, 0) : 0;
  } else if (node_cursor <= kMaxNodeScanCursor) {
    cursor = EncodeScanCursor(node_index, node_cursor);
  } else {
    return errors::UnexpectedUpstreamReply(
        "SCAN of master " + std::to_string(node_index),
        "cursor " + std::to_string(node_cursor) + " is too large to combine with a master index");
  }
  std::string out(kHeader);
  AppendBulk(&out, std::to_string(cursor));
  out.append(array);
  return out;
}

}  // namespace bloomproxy::protocol

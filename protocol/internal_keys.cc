#include "protocol/internal_keys.h"

#include <cstdint>
#include <vector>

#include "protocol/key_slot.h"

namespace bloomproxy::protocol {
namespace {

constexpr std::string_view kBf = ":bf:";
constexpr std::string_view kCms = ":cms:";
constexpr std::string_view kMarker = ":bf:m:";
constexpr std::string_view kCmsMarker = ":cms:m:";
constexpr std::string_view kCf = ":cf:";
constexpr std::string_view kCfMarker = ":cf:m:";
constexpr std::string_view kTk = ":tk:";
constexpr std::string_view kTkMarker = ":tk:m:";
constexpr std::string_view kTd = ":td:";
constexpr std::string_view kTdMarker = ":td:m:";
constexpr size_t kIdLength = 16;
constexpr size_t kMaxDigits = 20;  // std::to_string of a 64-bit size_t

bool HasTag(std::string_view prefix) {
  bool has_tag = false;
  HashTag(prefix, &has_tag);
  return has_tag;
}

// What follows "P:bf:" in a Bloom filter's data or temporary key: "H:D.D", "H:D:n", "H:D.D:H",
// "H:new", or in a windowed filter's slot name: "H:wD".
bool IsBloomSuffix(std::string_view s) {
  if (s.size() <= kIdLength || !IsInternalKeyId(s.substr(0, kIdLength)) || s[kIdLength] != ':')
    return false;
  s.remove_prefix(kIdLength + 1);
  if (s == "new") return true;
  if (!s.empty() && s[0] == 'w') return IsKeyNumber(s.substr(1));
  std::string_view link, rest;
  if (SplitAt(s, ':', &link, &rest)) {
    // "D:n", or "D.D:H".
    if (rest == "n") return IsKeyNumber(link);
    std::string_view shard;
    return IsInternalKeyId(rest) && SplitAt(link, '.', &link, &shard) && IsKeyNumber(link) &&
           IsKeyNumber(shard);
  }
  std::string_view shard;
  return SplitAt(s, '.', &link, &shard) && IsKeyNumber(link) && IsKeyNumber(shard);
}

// What follows "P:cms:": "H:D".
bool IsSketchSuffix(std::string_view s) {
  return s.size() > kIdLength + 1 && IsInternalKeyId(s.substr(0, kIdLength)) &&
         s[kIdLength] == ':' && IsKeyNumber(s.substr(kIdLength + 1));
}

// What follows "P:cf:": "H:D.D" (a cuckoo filter's sub-filter D, its data key D).
bool IsCuckooSuffix(std::string_view s) {
  if (s.size() <= kIdLength + 1 || !IsInternalKeyId(s.substr(0, kIdLength)) || s[kIdLength] != ':')
    return false;
  std::string_view subfilter, shard;
  return SplitAt(s.substr(kIdLength + 1), '.', &subfilter, &shard) && IsKeyNumber(subfilter) &&
         IsKeyNumber(shard);
}

// What follows "P:tk:": "H:b.D" (a Top-K sketch's bucket shard D), "H:h" (its heap), "H:i" (its
// heap's items).
bool IsTopkSuffix(std::string_view s) {
  if (s.size() <= kIdLength + 1 || !IsInternalKeyId(s.substr(0, kIdLength)) || s[kIdLength] != ':')
    return false;
  const std::string_view rest = s.substr(kIdLength + 1);
  return rest == "h" || rest == "i" || (rest.substr(0, 2) == "b." && IsKeyNumber(rest.substr(2)));
}

// What follows "P:td:": "H:d" (a t-digest's data).
bool IsTdigestSuffix(std::string_view s) {
  return s.size() == kIdLength + 2 && IsInternalKeyId(s.substr(0, kIdLength)) &&
         s.substr(kIdLength) == ":d";
}

// Whether `prefix` is filters::DataKeyPrefix(name) (the same three rules,
// filters/common/key_layout.cc; protocol/ cannot call filters/, and internal_keys_test checks that
// both agree).
bool IsPrefixOf(std::string_view prefix, std::string_view name) {
  if (HasTag(name)) return prefix == name;
  if (!name.empty() && name.find_first_of("{}") == std::string_view::npos) {
    return prefix.size() == name.size() + 2 && prefix.front() == '{' && prefix.back() == '}' &&
           prefix.substr(1, name.size()) == name;
  }
  constexpr size_t kTagged = 6;  // "{" + 4-character tag + "}"
  return prefix.size() == name.size() + kTagged && prefix.substr(kTagged) == name &&
         prefix.front() == '{' && prefix[kTagged - 1] == '}' &&
         prefix.substr(1, kTagged - 2) == SlotTag(KeySlot(name));
}

// A name may itself hold ":bf:m:" (or ":cms:m:", ":cf:m:", ":tk:m:", ":td:m:"), so every
// occurrence is a candidate split.
bool IsMarker(std::string_view key, std::string_view infix) {
  for (size_t at = key.find(infix); at != std::string_view::npos; at = key.find(infix, at + 1)) {
    if (IsPrefixOf(key.substr(0, at), key.substr(at + infix.size()))) return true;
  }
  return false;
}

// The suffix of a data key holds no ":bf:", ":cms:", ":cf:", ":tk:" or ":td:" (ids are hex, the
// rest digits, "b.", "h", "i" or "d"), so the last occurrence is the only split that can match.
bool IsDataKey(std::string_view key, std::string_view infix, bool (*suffix_ok)(std::string_view)) {
  const size_t at = key.rfind(infix);
  return at != std::string_view::npos && suffix_ok(key.substr(at + infix.size())) &&
         HasTag(key.substr(0, at));
}

// A cursor over one reply's bytes; every Read* returns false, and moves nowhere useful, on
// anything but the expected type.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  size_t pos() const { return pos_; }
  bool AtEnd() const { return pos_ == in_.size(); }

  // "<type><n>\r\n" with type one of `types`, n >= 0.
  bool ReadHeader(std::string_view types, int64_t* n) {
    if (pos_ >= in_.size() || types.find(in_[pos_]) == std::string_view::npos) return false;
    const size_t cr = in_.find("\r\n", pos_);
    if (cr == std::string_view::npos) return false;
    const std::string_view digits = in_.substr(pos_ + 1, cr - pos_ - 1);
    if (digits.empty() || digits.size() > 18) return false;
    int64_t v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *n = v;
    pos_ = cr + 2;
    return true;
  }

  // "$<len>\r\n<bytes>\r\n".
  bool ReadBulk(std::string_view* value) {
    int64_t len = 0;
    if (!ReadHeader("$", &len)) return false;
    const size_t n = static_cast<size_t>(len);
    if (in_.size() - pos_ < n + 2 || in_.substr(pos_ + n, 2) != "\r\n") return false;
    *value = in_.substr(pos_, n);
    pos_ += n + 2;
    return true;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// Reads the key array at the reader's position; on success appends to *out the array without
// internal keys, and sets *hidden to how many were dropped.
bool FilterKeyArray(Reader* r, std::string_view frame, std::string* out, size_t* hidden) {
  if (r->AtEnd()) return false;
  const char type = frame[r->pos()];
  int64_t n = 0;
  if (!r->ReadHeader("*~", &n)) return false;
  // Bound before allocating: every element takes at least 6 bytes ("$0\r\n\r\n").
  if (static_cast<uint64_t>(n) > (frame.size() - r->pos()) / 6) return false;
  std::vector<std::pair<size_t, size_t>> kept;  // byte ranges of the kept elements
  kept.reserve(static_cast<size_t>(n));
  *hidden = 0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t start = r->pos();
    std::string_view key;
    if (!r->ReadBulk(&key)) return false;
    if (IsInternalKey(key)) {
      ++*hidden;
    } else {
      kept.emplace_back(start, r->pos() - start);
    }
  }
  out->push_back(type);
  out->append(std::to_string(kept.size()));
  out->append("\r\n");
  for (const auto& [start, len] : kept) out->append(frame.substr(start, len));
  return true;
}

}  // namespace

bool IsInternalKeyId(std::string_view s) {
  if (s.size() != kIdLength) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsKeyNumber(std::string_view s) {
  if (s.empty() || s.size() > kMaxDigits || (s[0] == '0' && s.size() > 1)) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool SplitAt(std::string_view s, char sep, std::string_view* head, std::string_view* tail) {
  const size_t at = s.find(sep);
  if (at == std::string_view::npos) return false;
  *head = s.substr(0, at);
  *tail = s.substr(at + 1);
  return true;
}

bool IsInternalKey(std::string_view key) {
  return IsDataKey(key, kBf, IsBloomSuffix) || IsDataKey(key, kCms, IsSketchSuffix) ||
         IsDataKey(key, kCf, IsCuckooSuffix) || IsDataKey(key, kTk, IsTopkSuffix) ||
         IsDataKey(key, kTd, IsTdigestSuffix) || IsMarker(key, kMarker) ||
         IsMarker(key, kCmsMarker) || IsMarker(key, kCfMarker) || IsMarker(key, kTkMarker) ||
         IsMarker(key, kTdMarker);
}

std::string HideInternalKeys(std::string_view frame, bool scan) {
  // Most replies name no internal key at all: leave them untouched without parsing.
  if (frame.find(kBf) == std::string_view::npos && frame.find(kCms) == std::string_view::npos &&
      frame.find(kCf) == std::string_view::npos && frame.find(kTk) == std::string_view::npos &&
      frame.find(kTd) == std::string_view::npos) {
    return std::string(frame);
  }
  Reader r(frame);
  std::string out;
  out.reserve(frame.size());
  if (scan) {
    int64_t two = 0;
    std::string_view cursor;
    if (!r.ReadHeader("*", &two) || two != 2 || !r.ReadBulk(&cursor)) return std::string(frame);
    out.append(frame.substr(0, r.pos()));
  }
  size_t hidden = 0;
  if (!FilterKeyArray(&r, frame, &out, &hidden) || !r.AtEnd() || hidden == 0) {
    return std::string(frame);
  }
  return out;
}

}  // namespace bloomproxy::protocol

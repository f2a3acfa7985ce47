#include "filters/common/plan.h"

#include <algorithm>
#include <memory>

#include "protocol/request_parser.h"

namespace bloomproxy::filters {

// ---------------------------------------------------------------------------------------------
// StepReplies

void StepReplies::Add(std::string_view frame) {
  bytes_.append(frame);
  ends_.push_back(bytes_.size());
}

std::string_view StepReplies::Frame(size_t i) const {
  const size_t k = first_ + i;
  const size_t begin = k == 0 ? 0 : ends_[k - 1];
  return std::string_view(bytes_).substr(begin, ends_[k] - begin);
}

const redisReply* StepReplies::Get(size_t i) {
  if (i >= size()) return nullptr;
  const size_t k = first_ + i;
  if (decoded_.size() < ends_.size()) decoded_.resize(ends_.size());
  if (!decoded_[k]) decoded_[k] = decoder_->Decode(Frame(i));
  return decoded_[k].get();
}

const std::vector<int64_t>* StepReplies::Ints(size_t i) {
  if (i >= size()) return nullptr;
  const size_t k = first_ + i;
  if (ints_.size() < ends_.size()) ints_.resize(ends_.size());
  if (ints_[k]) return ints_[k].get();
  // "*<n>\r\n" then n times ":<v>\r\n" (the framer already checked the framing).
  std::string_view f = Frame(i);
  if (f.empty() || f[0] != '*') return nullptr;
  size_t eol = f.find('\r');
  int64_t n = 0;
  if (eol == std::string_view::npos || !protocol::StringToInt64(f.substr(1, eol - 1), &n)) {
    return nullptr;
  }
  auto values = std::make_unique<std::vector<int64_t>>();
  values->reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  size_t pos = eol + 2;
  for (int64_t e = 0; e < n; ++e) {
    if (pos >= f.size() || f[pos] != ':') return nullptr;
    if (pos + 3 < f.size() && f[pos + 2] == '\r' && f[pos + 1] >= '0' && f[pos + 1] <= '9') {
      values->push_back(f[pos + 1] - '0');  // one digit: BITFIELD's bits, mostly
      pos += 4;
      continue;
    }
    eol = f.find('\r', pos);
    int64_t v = 0;
    if (eol == std::string_view::npos ||
        !protocol::StringToInt64(f.substr(pos + 1, eol - pos - 1), &v)) {
      return nullptr;
    }
    values->push_back(v);
    pos = eol + 2;
  }
  ints_[k] = std::move(values);
  return ints_[k].get();
}

}  // namespace bloomproxy::filters

#include "filters/topk/topk_args.h"

#include "filters/common/module_args.h"

namespace bloomproxy::filters {
namespace {

struct CommandName {
  std::string_view upper;  // as matched, case-insensitively
  std::string_view lower;  // as Redis names it in arity errors
  TopkCommand command;
};
constexpr CommandName kCommands[] = {
    {"TOPK.RESERVE", "topk.reserve", TopkCommand::kReserve},
    {"TOPK.ADD", "topk.add", TopkCommand::kAdd},
    {"TOPK.INCRBY", "topk.incrby", TopkCommand::kIncrBy},
    {"TOPK.QUERY", "topk.query", TopkCommand::kQuery},
    {"TOPK.COUNT", "topk.count", TopkCommand::kCount},
    {"TOPK.LIST", "topk.list", TopkCommand::kList},
    {"TOPK.INFO", "topk.info", TopkCommand::kInfo},
};

constexpr int64_t kMaxDimension = 4294967295;  // k, width and depth are uint32 in the sketch

std::string Reply(std::string_view error) { return std::string(error); }

std::string WrongArity(TopkCommand command) {
  for (const CommandName& c : kCommands) {
    if (c.command == command) {
      return WrongArityError(c.lower);
    }
  }
  return "-ERR wrong number of arguments\r\n";
}

bool ArityOk(TopkCommand command, size_t argc) {
  switch (command) {
    case TopkCommand::kReserve:
      return argc == 3 || argc == 6;
    case TopkCommand::kAdd:
    case TopkCommand::kQuery:
    case TopkCommand::kCount:
      return argc >= 3;
    case TopkCommand::kIncrBy:
      return argc >= 4 && argc % 2 == 0;
    case TopkCommand::kList:
      return argc == 2 || argc == 3;
    case TopkCommand::kInfo:
      return argc == 2;
  }
  return false;
}

// A strict long long in 1 .. 2^32-1.
bool ParseDimension(std::string_view s, uint32_t* out) {
  int64_t v = 0;
  if (!ParseLongLong(s, &v) || v < 1 || v > kMaxDimension) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// TOPK.RESERVE key k [width depth decay], checked in that order, then the size of the buckets.
std::string ParseReserve(const std::vector<std::string_view>& args, TopkRequest* out) {
  TopkParams& p = out->params;
  if (!ParseDimension(args[2], &p.k)) return Reply(kTopkErrInvalidK);
  if (args.size() == 3) return {};
  if (!ParseDimension(args[3], &p.width)) return Reply(kTopkErrInvalidWidth);
  if (!ParseDimension(args[4], &p.depth)) return Reply(kTopkErrInvalidDepth);
  // NaN never parses; inf, 0, -0 and negatives fail the range test.
  if (!ParseDouble(args[5], &p.decay) || !(p.decay > 0 && p.decay <= 1)) {
    return Reply(kTopkErrInvalidDecay);
  }
  if (!TopkBucketsFit(p.width, p.depth)) return Reply(kTopkErrInsufficientMemory);
  return {};
}

// TOPK.INCRBY key item n [item n ...]: pairs are taken until the first bad increment, which
// RedisBloom only parses when it reaches that pair (after applying the ones before).
std::string ParseIncrBy(const std::vector<std::string_view>& args, TopkRequest* out) {
  out->pairs = (args.size() - 2) / 2;
  out->increments.reserve(out->pairs);
  for (size_t i = 2; i + 1 < args.size(); i += 2) {
    int64_t n = 0;
    if (!ParseLongLong(args[i + 1], &n) || n < 0 || n > kTopkMaxIncrement) {
      out->error_order = TopkErrorOrder::kInPairs;
      return Reply(kTopkErrIncrement);
    }
    out->increments.push_back({args[i], static_cast<uint32_t>(n)});
  }
  return {};
}

}  // namespace

bool LookupTopkCommand(std::string_view name, TopkCommand* out) {
  // Most commands the proxy sees are not TOPK.*: reject them on the first five bytes.
  if (name.size() < 8 || (name[0] | 0x20) != 't' || (name[1] | 0x20) != 'o' ||
      (name[2] | 0x20) != 'p' || (name[3] | 0x20) != 'k' || name[4] != '.') {
    return false;
  }
  for (const CommandName& c : kCommands) {
    if (EqualsIgnoreCase(name, c.upper)) {
      *out = c.command;
      return true;
    }
  }
  return false;
}

bool IsWithCountToken(std::string_view arg) {
  constexpr std::string_view kWord = "WITHCOUNT";
  for (size_t i = 0; i < arg.size(); ++i) {
    // Past the word's end strncasecmp compares with its terminating NUL.
    const char want = i < kWord.size() ? kWord[i] : '\0';
    const char got = (arg[i] >= 'a' && arg[i] <= 'z') ? static_cast<char>(arg[i] - 32) : arg[i];
    if (got != want) return false;
    if (got == '\0') return true;  // both strings end here
  }
  return true;
}

bool TopkBucketsFit(uint64_t width, uint64_t depth) {
  // Both are below 2^32, so the product fits in 64 bits.
  return width * depth <= kTopkMaxBuckets;
}

std::string ParseTopkRequest(const std::vector<std::string_view>& args, TopkRequest* out) {
  *out = TopkRequest{};
  if (args.empty() || !LookupTopkCommand(args[0], &out->command)) {
    return "-ERR unknown command\r\n";
  }
  const TopkCommand command = out->command;
  if (!ArityOk(command, args.size())) return WrongArity(command);
  out->key = args[1];

  switch (command) {
    case TopkCommand::kReserve:
      out->error_order = TopkErrorOrder::kAfterKey;
      return ParseReserve(args, out);
    case TopkCommand::kIncrBy:
      return ParseIncrBy(args, out);
    case TopkCommand::kAdd:
    case TopkCommand::kQuery:
    case TopkCommand::kCount:
      out->items.assign(args.begin() + 2, args.end());
      return {};
    case TopkCommand::kList:
      // The keyword is checked before the key is looked at.
      if (args.size() == 3 && !IsWithCountToken(args[2])) return Reply(kTopkErrWithCount);
      out->with_count = args.size() == 3;
      return {};
    case TopkCommand::kInfo:
      return {};
  }
  return "-ERR unknown command\r\n";
}

}  // namespace bloomproxy::filters

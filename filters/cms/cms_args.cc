#include "filters/cms/cms_args.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "filters/common/module_args.h"

namespace bloomproxy::filters {
namespace {

struct CommandName {
  std::string_view upper;  // as matched, case-insensitively
  std::string_view lower;  // as Redis names it in arity errors
  CmsCommand command;
};
constexpr CommandName kCommands[] = {
    {"CMS.INITBYDIM", "cms.initbydim", CmsCommand::kInitByDim},
    {"CMS.INITBYPROB", "cms.initbyprob", CmsCommand::kInitByProb},
    {"CMS.INCRBY", "cms.incrby", CmsCommand::kIncrBy},
    {"CMS.QUERY", "cms.query", CmsCommand::kQuery},
    {"CMS.MERGE", "cms.merge", CmsCommand::kMerge},
    {"CMS.INFO", "cms.info", CmsCommand::kInfo},
};

std::string Reply(std::string_view error) { return std::string(error); }

std::string WrongArity(CmsCommand command) {
  for (const CommandName& c : kCommands) {
    if (c.command == command) {
      return WrongArityError(c.lower);
    }
  }
  return "-ERR wrong number of arguments\r\n";
}

// The common end of both INITBY commands: RedisBloom's dimension checks on the values read as
// long long, then its allocation.
std::string FinishInit(int64_t width, int64_t depth, uint64_t max_bytes, CmsRequest* out) {
  const CmsDimsCheck check = CheckCmsDims(width, depth, max_bytes);
  if (check != CmsDimsCheck::kOk) return Reply(CmsDimsError(check));
  out->width = static_cast<uint64_t>(width);
  out->depth = static_cast<uint64_t>(depth);
  return {};
}

// CMS.INITBYDIM key width depth: strict integers, each >= 1, width first.
std::string ParseInitByDim(const std::vector<std::string_view>& args, uint64_t max_bytes,
                           CmsRequest* out) {
  int64_t width = 0;
  int64_t depth = 0;
  if (!ParseLongLong(args[2], &width) || width < 1) return Reply(kCmsErrInvalidWidth);
  if (!ParseLongLong(args[3], &depth) || depth < 1) return Reply(kCmsErrInvalidDepth);
  return FinishInit(width, depth, max_bytes, out);
}

// Reads a CmsDimsFromProb result back as RedisBloom's long long: values from 2^63 up become
// negative (two's complement), which the dimension check then rejects.
int64_t AsLongLong(uint64_t v) {
  return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
             ? -static_cast<int64_t>(~v) - 1
             : static_cast<int64_t>(v);
}

// CMS.INITBYPROB key error probability: doubles, each in the open interval (0, 1) (which also
// rejects inf), error first.
std::string ParseInitByProb(const std::vector<std::string_view>& args, uint64_t max_bytes,
                            CmsRequest* out) {
  double error = 0;
  double prob = 0;
  if (!ParseDouble(args[2], &error) || !(error > 0 && error < 1)) {
    return Reply(kCmsErrInvalidOverestimation);
  }
  if (!ParseDouble(args[3], &prob) || !(prob > 0 && prob < 1)) {
    return Reply(kCmsErrInvalidProb);
  }
  out->error = error;
  out->prob = prob;
  uint64_t width = 0;
  uint64_t depth = 0;
  CmsDimsFromProb(error, prob, &width, &depth);
  return FinishInit(AsLongLong(width), AsLongLong(depth), max_bytes, out);
}

// CMS.INCRBY key item n [item n ...]: every pair is parsed, and the first bad one reported,
// before anything is applied.
std::string ParseIncrBy(const std::vector<std::string_view>& args, CmsRequest* out) {
  out->increments.reserve((args.size() - 2) / 2);
  for (size_t i = 2; i + 1 < args.size(); i += 2) {
    int64_t value = 0;
    if (!ParseLongLong(args[i + 1], &value)) return Reply(kCmsErrCannotParseNumber);
    if (value < 0) return Reply(kCmsErrNegativeNumber);
    out->increments.push_back({args[i], static_cast<uint64_t>(value)});
  }
  return {};
}

// CMS.MERGE dest numkeys src [src ...] [WEIGHTS w ...], RedisBloom's steps after the
// destination's check:
//
//   args:  MERGE dest numkeys | src_0 .. src_n-1 | WEIGHTS | w_0 .. w_n-1
//          0     1    2       | 3 ..               3+n     | 4+n .. 3+2n
//
// WEIGHTS is the first argument after numkeys spelled so (any case, exact length), a source
// included. Without it the rest must be exactly n sources; with it, it must sit at 3+n and be
// followed by exactly n weights. The layout is checked against the argument count before
// anything is reserved, so a huge numkeys allocates nothing.
std::string ParseMerge(const std::vector<std::string_view>& args, CmsRequest* out) {
  int64_t numkeys = 0;
  if (!ParseLongLong(args[2], &numkeys)) return Reply(kCmsErrInvalidNumKeys);
  if (numkeys <= 0) return Reply(kCmsErrNumKeysNotPositive);

  const size_t rest = args.size() - 3;
  size_t weights_at = rest;  // relative to args[3]; rest = not found
  for (size_t i = 0; i < rest; ++i) {
    if (EqualsIgnoreCase(args[3 + i], "WEIGHTS")) {
      weights_at = i;
      break;
    }
  }
  // numkeys can exceed any argument count; compare without forming 2*numkeys first.
  const uint64_t n = static_cast<uint64_t>(numkeys);
  if (weights_at == rest) {
    if (n != rest) return Reply(kCmsErrWrongNumKeys);
  } else if (n != weights_at || rest != 1 + 2 * n) {
    // weights_at < rest, so when n == weights_at, 1 + 2n cannot wrap.
    return Reply(kCmsErrWrongNumKeysWeights);
  }

  out->sources.assign(args.begin() + 3, args.begin() + 3 + static_cast<std::ptrdiff_t>(n));
  out->weights.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (weights_at == rest) {
      out->weights.push_back(1);
      continue;
    }
    int64_t weight = 0;
    if (!ParseLongLong(args[4 + n + i], &weight)) {
      // RedisBloom checks weight i, then source i, then weight i+1: the plan must check the
      // sources before this one first.
      out->bad_weight = i;
      out->error_order = CmsErrorOrder::kAfterSources;
      return Reply(kCmsErrInvalidWeight);
    }
    out->weights.push_back(weight);
  }
  return {};
}

}  // namespace

bool LookupCmsCommand(std::string_view name, CmsCommand* out) {
  // Most commands the proxy sees are not CMS.*: reject them on the first four bytes.
  if (name.size() < 8 || (name[0] | 0x20) != 'c' || (name[1] | 0x20) != 'm' ||
      (name[2] | 0x20) != 's' || name[3] != '.') {
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

std::string_view CmsDimsError(CmsDimsCheck check) {
  switch (check) {
    case CmsDimsCheck::kOk:
      return {};
    case CmsDimsCheck::kInvalidInitArguments:
      return kCmsErrInvalidInitArguments;
    case CmsDimsCheck::kInsufficientMemory:
      return kCmsErrInsufficientMemory;
  }
  return kCmsErrInvalidInitArguments;
}

std::string ParseCmsRequest(const std::vector<std::string_view>& args, CmsRequest* out,
                            uint64_t max_bytes) {
  *out = CmsRequest{};
  if (args.empty() || !LookupCmsCommand(args[0], &out->command)) {
    return "-ERR unknown command\r\n";
  }
  const CmsCommand command = out->command;
  const size_t argc = args.size();

  bool arity_ok = false;
  switch (command) {
    case CmsCommand::kInitByDim:
    case CmsCommand::kInitByProb:
      arity_ok = argc == 4;
      break;
    case CmsCommand::kIncrBy:
      arity_ok = argc >= 4 && argc % 2 == 0;
      break;
    case CmsCommand::kQuery:
      arity_ok = argc >= 3;
      break;
    case CmsCommand::kMerge:
      arity_ok = argc >= 4;
      break;
    case CmsCommand::kInfo:
      arity_ok = argc == 2;
      break;
  }
  if (!arity_ok) return WrongArity(command);
  out->key = args[1];

  // Past the arity every error waits for the key check (MERGE's weights wait even longer; they
  // set their own order).
  out->error_order = CmsErrorOrder::kAfterKey;
  switch (command) {
    case CmsCommand::kInitByDim:
      return ParseInitByDim(args, max_bytes, out);
    case CmsCommand::kInitByProb:
      return ParseInitByProb(args, max_bytes, out);
    case CmsCommand::kIncrBy:
      return ParseIncrBy(args, out);
    case CmsCommand::kQuery:
      out->items.assign(args.begin() + 2, args.end());
      return {};
    case CmsCommand::kMerge:
      return ParseMerge(args, out);
    case CmsCommand::kInfo:
      return {};
  }
  return "-ERR unknown command\r\n";
}

}  // namespace bloomproxy::filters

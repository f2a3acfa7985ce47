#include "filters/cuckoo/cf_args.h"

#include <cctype>

#include "filters/common/module_args.h"

namespace bloomproxy::filters {
namespace {

struct CommandName {
  std::string_view name;
  CfCommand command;
};

constexpr CommandName kCommands[] = {
    {"cf.reserve", CfCommand::kReserve},   {"cf.add", CfCommand::kAdd},
    {"cf.addnx", CfCommand::kAddNx},       {"cf.insert", CfCommand::kInsert},
    {"cf.insertnx", CfCommand::kInsertNx}, {"cf.exists", CfCommand::kExists},
    {"cf.mexists", CfCommand::kMExists},   {"cf.count", CfCommand::kCount},
    {"cf.del", CfCommand::kDel},           {"cf.compact", CfCommand::kCompact},
    {"cf.scandump", CfCommand::kScanDump}, {"cf.loadchunk", CfCommand::kLoadChunk},
    {"cf.info", CfCommand::kInfo},         {"cf.debug", CfCommand::kDebug},
};

// Redis's arity error, with the command's name in lower case (RedisModule_WrongArity).
std::string Arity(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "-ERR wrong number of arguments for '" + lower + "' command\r\n";
}

// Whether `args` has the number of arguments `command` takes (the module's own checks).
bool ArityOk(CfCommand command, size_t argc) {
  switch (command) {
    case CfCommand::kReserve:
      return argc >= 3 && argc % 2 == 1;
    case CfCommand::kInsert:
    case CfCommand::kInsertNx:
      return argc >= 4;
    case CfCommand::kMExists:
      return argc >= 3;
    case CfCommand::kLoadChunk:
      return argc == 4;
    case CfCommand::kCompact:
    case CfCommand::kInfo:
    case CfCommand::kDebug:
      return argc == 2;
    default:
      return argc == 3;
  }
}

// CF.RESERVE's option: RMUtil_ArgIndex finds the first argument spelled `word` (any case),
// anywhere in the command (its name and key too); the value is the next argument. A word that is
// the last argument has no value (RedisBloom reads past the array): "Couldn't parse <WORD>".
std::string ReserveOption(const std::vector<std::string_view>& args, std::string_view word,
                          std::string_view parse_error, std::string_view range_error, int64_t lo,
                          int64_t hi, uint64_t* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!EqualsIgnoreCase(args[i], word)) continue;
    int64_t v = 0;
    if (i + 1 >= args.size() || !ParseLongLong(args[i + 1], &v)) return std::string(parse_error);
    if (v < lo || v > hi) return std::string(range_error);
    *out = static_cast<uint64_t>(v);
    return {};
  }
  return {};
}

std::string ParseReserve(const std::vector<std::string_view>& args, CfRequest* out) {
  int64_t capacity = 0;
  if (!ParseLongLong(args[2], &capacity)) return std::string(kCfErrBadCapacity);
  std::string error = ReserveOption(args, "MAXITERATIONS", kCfErrParseMaxIterations,
                                    kCfErrMaxIterationsRange, 1, 65535, &out->max_iterations);
  if (error.empty()) {
    error = ReserveOption(args, "BUCKETSIZE", kCfErrParseBucketSize, kCfErrBucketSizeRange, 1, 255,
                          &out->bucket_size);
  }
  uint64_t expansion = kCfDefaultExpansion;
  if (error.empty()) {
    error = ReserveOption(args, "EXPANSION", kCfErrParseExpansion, kCfErrExpansionRange, 0, 32768,
                          &expansion);
  }
  if (!error.empty()) return error;
  out->expansion = CfRoundExpansion(expansion);
  if (2 * static_cast<int64_t>(out->bucket_size) > capacity ||
      capacity > static_cast<int64_t>(kCfMaxCapacity)) {
    return std::string(kCfErrReserveCapacity);
  }
  out->capacity = static_cast<uint64_t>(capacity);
  return {};
}

// CF.INSERT / CF.INSERTNX: options told apart by their first letter alone, as RedisBloom does.
std::string ParseInsert(const std::vector<std::string_view>& args, CfRequest* out) {
  size_t at = 2;
  while (at < args.size()) {
    const std::string_view a = args[at];
    const char first = a.empty() ? '\0' : static_cast<char>(std::tolower(a[0]));
    if (first == 'i') {
      out->items.assign(args.begin() + static_cast<std::ptrdiff_t>(at) + 1, args.end());
      if (out->items.empty()) return Arity(args[0]);
      return {};
    }
    if (first == 'n') {
      out->nocreate = true;
      ++at;
      continue;
    }
    if (first != 'c') return std::string(kCfErrUnknownArgument);
    if (++at == args.size()) return Arity(args[0]);
    int64_t capacity = 0;
    if (!ParseLongLong(args[at], &capacity)) return std::string(kCfErrBadCapacity);
    if (capacity < static_cast<int64_t>(2 * kCfDefaultBucketSize) ||
        capacity > static_cast<int64_t>(kCfMaxCapacity)) {
      return std::string(kCfErrInsertCapacity);
    }
    out->capacity = static_cast<uint64_t>(capacity);
    ++at;
  }
  return Arity(args[0]);  // no ITEMS
}

}  // namespace

bool LookupCfCommand(std::string_view name, CfCommand* out) {
  for (const CommandName& c : kCommands) {
    if (name.size() == c.name.size() && EqualsIgnoreCase(name, c.name)) {
      *out = c.command;
      return true;
    }
  }
  return false;
}

bool CfRequest::Writes() const {
  switch (command) {
    case CfCommand::kExists:
    case CfCommand::kMExists:
    case CfCommand::kCount:
    case CfCommand::kScanDump:
    case CfCommand::kInfo:
    case CfCommand::kDebug:
      return false;
    default:
      return true;
  }
}

std::string ParseCfRequest(const std::vector<std::string_view>& args, CfRequest* out) {
  *out = CfRequest{};  // nothing of an earlier parse survives (items, NOCREATE, iterator, data)
  if (args.empty() || !LookupCfCommand(args[0], &out->command)) return Arity("cf");
  if (!ArityOk(out->command, args.size())) return Arity(args[0]);
  out->key = args[1];
  switch (out->command) {
    case CfCommand::kReserve:
      return ParseReserve(args, out);
    case CfCommand::kInsert:
    case CfCommand::kInsertNx:
      return ParseInsert(args, out);
    case CfCommand::kAdd:
    case CfCommand::kAddNx:
    case CfCommand::kExists:
    case CfCommand::kMExists:
    case CfCommand::kCount:
    case CfCommand::kDel:
      out->items.assign(args.begin() + 2, args.end());
      return {};
    case CfCommand::kScanDump:
      if (!ParseLongLong(args[2], &out->iterator) || out->iterator < 0) {
        return std::string(kCfErrInvalidPosition);
      }
      return {};
    case CfCommand::kLoadChunk:
      if (!ParseLongLong(args[2], &out->iterator) || out->iterator == 0) {
        return std::string(kCfErrInvalidPosition);
      }
      out->data = args[3];
      return {};
    default:
      return {};
  }
}

CfLoadVerdict CheckCfLoad(const CfRequest& request, uint64_t max_bytes) {
  CfLoadVerdict v;
  if (request.iterator == 1) {
    switch (DecodeCfHeader(request.data, max_bytes, &v.header)) {
      case CfHeaderVerdict::kOk:
        break;
      case CfHeaderVerdict::kInvalidHeader:
        v.error = std::string(kCfErrInvalidHeader);
        break;
      case CfHeaderVerdict::kCannotCreate:
        v.error = std::string(kCfErrCannotCreate);
        break;
    }
    return v;
  }
  // it - len - 1 must be an offset: no empty chunk, no negative iterator, it - 1 >= len.
  const auto len = static_cast<int64_t>(request.data.size());
  if (len == 0 || request.iterator < 0 || request.iterator - 1 < len) {
    v.error = std::string(kCfErrCannotLoadChunk);
    return v;
  }
  v.offset = static_cast<uint64_t>(request.iterator - 1 - len);
  // Past any filter (they stay below kCfMaxBytes): refused whatever the filter, and the script
  // keeps to offsets that are exact in Lua's doubles.
  if (v.offset >= 2 * kCfMaxBytes) v.error = std::string(kCfErrCannotLoadChunk);
  return v;
}

}  // namespace bloomproxy::filters

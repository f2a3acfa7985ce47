#include "filters/key_plan.h"

#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/key_layout.h"
#include "filters/plan_requests.h"
#include "protocol/command_table.h"

namespace bloomproxy::filters {
namespace {

// ---------------------------------------------------------------------------------------------
// Key-level plans run as Lua scripts, for three reasons:
//   - no MULTI/EXEC: the client's own connection may hold its WATCH (EXEC would end it) or be
//     one the client itself runs a transaction on;
//   - the probes answer without errors and without touching keys: a hash is read only once TYPE
//     (which touches nothing) says it is one, so WRONGTYPE never counts in INFO errorstats and
//     no other key's LRU/LFU clock moves;
//   - the proxy learns atomically which keys were filters when the command ran.
// EVAL (not EVALSHA) so that a server without the script cached never answers NOSCRIPT, which
// would count as an error; Redis caches the compiled script by its digest either way.

// TYPE name: "MBbloom--" for a filter, as RedisBloom's module type is named. KEYS[1] is the
// name, KEYS[2] its marker (key_layout.h): a plain hash without a marker is never read.
constexpr std::string_view kTypeScript =
    "local t = redis.call('TYPE', KEYS[1]).ok\n"
    "if t == 'hash' and redis.call('EXISTS', KEYS[2]) == 1 and\n"
    "    redis.call('HGET', KEYS[1], 'bloomproxy') == '1' then\n"
    "  return {ok = 'MBbloom--'}\n"
    "end\n"
    "return {ok = t}\n";

// A key command on keys that may be filters. KEYS: the command's keys. ARGV[1]: 'd' (DEL or
// UNLINK, ARGV[2], run key by key: a Lua call takes at most 8000 arguments), 'c' (run
// ARGV[2..] as it is), 'e' (the same, then PEXPIRETIME of KEYS[1]). Returns per key its filter
// fields (HMGET) or 0, then the command's reply (an error reply stays one), then the expiry.
std::string MakeKeyScript() {
  // The fields of MetaFieldList(): the four named ones, then l0 .. l<n-1>.
  const std::vector<std::string> fields = MetaFieldList();
  std::string named;
  size_t links = 0;
  for (const std::string& f : fields) {
    if (f.size() > 1 && f[0] == 'l' && std::isdigit(static_cast<unsigned char>(f[1]))) {
      ++links;
    } else {
      named += "'" + f + "', ";
    }
  }
  return "local fields = {" + named + "}\n" +
         "for i = 0, " + std::to_string(links - 1) + " do fields[#fields + 1] = 'l' .. i end\n" +
         "local out = {}\n"
         "local n = #KEYS\n"
         "for i = 1, n do\n"
         "  out[i] = 0\n"
         "  if redis.call('TYPE', KEYS[i]).ok == 'hash' and\n"
         "      redis.call('HGET', KEYS[i], 'bloomproxy') == '1' then\n"
         "    out[i] = redis.call('HMGET', KEYS[i], unpack(fields))\n"
         "  end\n"
         "end\n"
         "if ARGV[1] == 'd' then\n"
         "  local removed = 0\n"
         "  for i = 1, n do\n"
         "    local r = redis.pcall(ARGV[2], KEYS[i])\n"
         "    if type(r) == 'table' then out[n + 1] = r return out end\n"
         "    removed = removed + r\n"
         "  end\n"
         "  out[n + 1] = removed\n"
         "  return out\n"
         "end\n"
         "out[n + 1] = redis.pcall(unpack(ARGV, 2))\n"
         "if ARGV[1] == 'e' then out[n + 2] = redis.call('PEXPIRETIME', KEYS[1]) end\n"
         "return out\n";
}

// Renames pairs of data keys (KEYS[1] to KEYS[2], ...) that exist: a filter made before markers
// existed has none, and a missing key must not make RENAME count an error.
constexpr std::string_view kRenameScript =
    "for i = 1, #KEYS, 2 do\n"
    "  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('RENAME', KEYS[i], KEYS[i + 1]) end\n"
    "end\n"
    "return 0\n";

class TypePlan : public Plan {
 public:
  explicit TypePlan(std::string key) : key_(std::move(key)) {}
  void Start(PlanStep* step) override {
    Requests req;
    req.Add({"EVAL_RO", kTypeScript, "2", key_, MarkerKey(DataKeyPrefix(key_))});
    req.MoveTo(step);
  }
  void OnReplies(StepReplies& r, PlanStep* step) override {
    step->done = true;
    if (r.empty()) {
      step->reply = Unexpected(Named("TYPE"), "the reply is missing");
    } else {
      step->reply = Reencode(r.Get(0), "TYPE");  // +<type>, or the upstream's error (-BUSY ...)
    }
  }

 private:
  std::string key_;
};

// DEL/UNLINK, EXPIRE family, PERSIST, RENAME/RENAMENX: the command runs as the client sent it,
// inside the key script, which also says which keys were filters when it ran; then the filters'
// data keys follow (deleted, given the same expiry, or renamed), before the client's next
// command.
class KeyPlan : public Plan {
 public:
  enum class Kind { kDelete, kExpire, kPersist, kRename };

  KeyPlan(Kind kind, const std::vector<std::string_view>& args, FilterCache* cache)
      : kind_(kind), cache_(cache) {
    for (std::string_view a : args) args_.emplace_back(a);
    if (kind_ == Kind::kDelete) {
      keys_.assign(args_.begin() + 1, args_.end());
    } else if (kind_ == Kind::kRename) {
      keys_ = {args_[1], args_[2]};
    } else {
      keys_ = {args_[1]};
    }
  }

  void Start(PlanStep* step) override {
    std::vector<std::string_view> eval = {"EVAL", KeyScript()};
    const std::string count = std::to_string(keys_.size());
    eval.push_back(count);
    for (const std::string& k : keys_) eval.push_back(k);
    if (kind_ == Kind::kDelete) {
      eval.push_back("d");
      eval.push_back(args_[0]);
    } else {
      eval.push_back(kind_ == Kind::kRename ? "c" : "e");
      for (const std::string& a : args_) eval.push_back(a);
    }
    Requests req;
    req.Add(eval);
    req.MoveTo(step);
  }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    step->done = true;
    if (r.IsErrorReply(0)) {
      // The script did not run (BUSY, LOADING, NOPERM, ...): the upstream's own error, which
      // is what the command would have had.
      step->reply.assign(r.Frame(0));
      return;
    }
    const redisReply* out = r.Get(0);
    if (out == nullptr || out->type != REDIS_REPLY_ARRAY) {
      step->reply = Unexpected(Named("EVAL"),
                               r.empty() ? "the reply is missing"
                                         : "expected an array, got " + DescribeFrame(r.Frame(0)));
      return;
    }
    const size_t n = keys_.size();
    if (out->elements < n + 1) {
      step->reply =
          Unexpected(Named("EVAL"), "expected an array of at least " + std::to_string(n + 1) +
                                        ", got an array of " + std::to_string(out->elements));
      return;
    }
    const redisReply* result = out->element[n];
    step->reply = Reencode(result, args_[0]);
    std::vector<std::shared_ptr<FilterMeta>> metas(n);
    for (size_t i = 0; i < n; ++i) {
      metas[i] = MetaFromHmget(keys_[i], out->element[i]);
      cache_->Erase(keys_[i]);
    }
    const redisReply* expiry = out->elements > n + 1 ? out->element[n + 1] : nullptr;
    Requests follow;
    switch (kind_) {
      case Kind::kDelete:
        Delete(metas, &follow);
        break;
      case Kind::kExpire:
      case Kind::kPersist:
        if (metas[0] && Int(result, 0) == 1 && expiry != nullptr &&
            expiry->type == REDIS_REPLY_INTEGER) {
          Expire(*metas[0], expiry->integer, &follow);
        }
        break;
      case Kind::kRename:
        if (result != nullptr && (result->type == REDIS_REPLY_STATUS || Int(result, 0) == 1) &&
            keys_[0] != keys_[1]) {
          Rename(metas[0], metas[1], &follow);
        }
        break;
    }
    follow.MoveTo(step);
  }

 private:
  static void Delete(const std::vector<std::shared_ptr<FilterMeta>>& metas, Requests* follow) {
    std::vector<std::string> keys = {"UNLINK"};
    for (const auto& m : metas) {
      if (!m) continue;
      for (std::string& k : m->DataKeys()) keys.push_back(std::move(k));
      keys.push_back(m->MarkerKey());
    }
    if (keys.size() > 1) follow->Add(keys);
  }

  // The name's expiry (PEXPIRETIME after the command) given to every data key.
  static void Expire(const FilterMeta& meta, int64_t at, Requests* follow) {
    std::vector<std::string> keys = meta.DataKeys();
    keys.push_back(meta.MarkerKey());
    for (const std::string& k : keys) {
      if (at == -2) {
        follow->Add({"UNLINK", k});  // expired at once: the name is gone
      } else if (at < 0) {
        follow->Add({"PERSIST", k});
      } else {
        follow->Add({"PEXPIREAT", k, std::to_string(at)});
      }
    }
  }

  void Rename(const std::shared_ptr<FilterMeta>& from_meta,
              const std::shared_ptr<FilterMeta>& to_meta, Requests* follow) {
    if (to_meta) Delete({to_meta}, follow);  // the filter the destination held is gone
    if (!from_meta) return;
    FilterMeta moved = *from_meta;
    moved.prefix = DataKeyPrefix(keys_[1]);
    std::vector<std::string> from = from_meta->DataKeys();
    std::vector<std::string> to = moved.DataKeys();
    from.push_back(from_meta->MarkerKey());
    to.push_back(moved.MarkerKey());
    std::vector<std::string> eval = {"EVAL", std::string(kRenameScript),
                                     std::to_string(from.size() * 2)};
    for (size_t i = 0; i < from.size(); ++i) {
      eval.push_back(from[i]);
      eval.push_back(to[i]);
    }
    follow->Add(eval);
  }

  Kind kind_;
  FilterCache* cache_;
  std::vector<std::string> args_;
  std::vector<std::string> keys_;
};

}  // namespace

std::unique_ptr<Plan> MakeKeyPlan(const std::vector<std::string_view>& args, FilterCache* cache) {
  if (args.empty()) return nullptr;
  const protocol::CommandInfo* info = protocol::LookupCommand(args[0]);
  // Wrong arity is the upstream's to report, as for any command.
  if (info == nullptr || !protocol::ArityOk(*info, args.size())) return nullptr;
  const std::string_view name = info->name;
  if (name == "type") return std::make_unique<TypePlan>(std::string(args[1]));
  if (name == "del" || name == "unlink") {
    return std::make_unique<KeyPlan>(KeyPlan::Kind::kDelete, args, cache);
  }
  if (name == "expire" || name == "pexpire" || name == "expireat" || name == "pexpireat") {
    return std::make_unique<KeyPlan>(KeyPlan::Kind::kExpire, args, cache);
  }
  if (name == "persist") return std::make_unique<KeyPlan>(KeyPlan::Kind::kPersist, args, cache);
  if (name == "rename" || name == "renamenx") {
    return std::make_unique<KeyPlan>(KeyPlan::Kind::kRename, args, cache);
  }
  return nullptr;
}

std::string_view TypeScript() { return kTypeScript; }

const std::string& KeyScript() {
  static const std::string text = MakeKeyScript();
  return text;
}

std::string_view RenameScript() { return kRenameScript; }

}  // namespace bloomproxy::filters

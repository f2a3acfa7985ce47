#include "filters/key_plan.h"

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
// Key-level plans.

// TYPE name: "MBbloom--" for a filter, as RedisBloom's module type is named.
class TypePlan : public Plan {
 public:
  explicit TypePlan(std::string key) : key_(std::move(key)) {}
  void Start(PlanStep* step) override {
    Requests req;
    req.Add({"TYPE", key_});
    req.Add({"HGET", key_, kMarkerField});
    req.MoveTo(step);
  }
  void OnReplies(StepReplies& r, PlanStep* step) override {
    step->done = true;
    if (r.size() < 2) {
      step->reply = Unexpected(Named("TYPE"), "the reply is missing");
    } else if (Str(r.Get(0)) == "hash" && Str(r.Get(1)) == kMarkerValue) {
      step->reply = "+MBbloom--\r\n";
    } else {
      step->reply = Reencode(r.Get(0), "TYPE");  // Redis's own answer about a key
    }
  }

 private:
  std::string key_;
};

// DEL/UNLINK, EXPIRE family, PERSIST, RENAME/RENAMENX: the command runs as the client sent it,
// inside MULTI with an HMGET of each named key's filter fields, so the proxy learns atomically
// which keys were filters; then the filters' data keys follow (deleted, given the same expiry,
// or renamed), before the client's next command.
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
    Requests req;
    req.Add({"MULTI"});
    for (const std::string& k : keys_) AddMetaHmget(&req, k);
    req.Add(args_);
    if (kind_ == Kind::kExpire || kind_ == Kind::kPersist) req.Add({"PEXPIRETIME", keys_[0]});
    req.Add({"EXEC"});
    req.MoveTo(step);
  }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    step->done = true;
    const redisReply* exec = r.empty() ? nullptr : r.Get(r.size() - 1);
    if (exec == nullptr || exec->type != REDIS_REPLY_ARRAY) {
      // MULTI or EXEC failed (the upstream's error for the command comes first).
      for (size_t i = 0; i < r.size(); ++i) {
        if (r.IsErrorReply(i)) {
          step->reply.assign(r.Frame(i));
          return;
        }
      }
      step->reply = Reencode(exec, "EXEC");
      return;
    }
    const size_t n = keys_.size();
    if (exec->elements < n + 1) {
      step->reply =
          Unexpected(Named("EXEC"), "expected an array of at least " + std::to_string(n + 1) +
                                        ", got an array of " + std::to_string(exec->elements));
      return;
    }
    const redisReply* result = exec->element[n];
    step->reply = Reencode(result, args_[0]);
    std::vector<std::shared_ptr<FilterMeta>> metas(n);
    for (size_t i = 0; i < n; ++i) {
      metas[i] = MetaFromHmget(keys_[i], exec->element[i]);
      cache_->Erase(keys_[i]);
    }
    Requests follow;
    switch (kind_) {
      case Kind::kDelete: {
        std::vector<std::string> keys = {"UNLINK"};
        for (const auto& m : metas) {
          if (!m) continue;
          for (std::string& k : m->DataKeys()) keys.push_back(std::move(k));
        }
        if (keys.size() > 1) follow.Add(keys);
        break;
      }
      case Kind::kExpire:
      case Kind::kPersist: {
        if (!metas[0] || Int(result, 0) != 1) break;
        // PEXPIRETIME's answer: an integer, or the data keys are left as they are.
        const redisReply* expiry = exec->elements > n + 1 ? exec->element[n + 1] : nullptr;
        if (expiry == nullptr || expiry->type != REDIS_REPLY_INTEGER) break;
        const int64_t at = expiry->integer;
        for (const std::string& k : metas[0]->DataKeys()) {
          if (at == -2) {
            follow.Add({"UNLINK", k});  // expired at once: the name is gone
          } else if (at < 0) {
            follow.Add({"PERSIST", k});
          } else {
            follow.Add({"PEXPIREAT", k, std::to_string(at)});
          }
        }
        break;
      }
      case Kind::kRename: {
        const bool renamed =
            result != nullptr && (result->type == REDIS_REPLY_STATUS || Int(result, 0) == 1);
        if (!renamed || keys_[0] == keys_[1]) break;
        if (metas[1]) {
          std::vector<std::string> keys = {"UNLINK"};
          for (std::string& k : metas[1]->DataKeys()) keys.push_back(std::move(k));
          follow.Add(keys);
        }
        if (metas[0]) {
          FilterMeta moved = *metas[0];
          moved.prefix = DataKeyPrefix(keys_[1]);
          std::vector<std::string> from = metas[0]->DataKeys();
          std::vector<std::string> to = moved.DataKeys();
          for (size_t i = 0; i < from.size(); ++i) follow.Add({"RENAME", from[i], to[i]});
        }
        break;
      }
    }
    follow.MoveTo(step);
  }

 private:
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

}  // namespace bloomproxy::filters

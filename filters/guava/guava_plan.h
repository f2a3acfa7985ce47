// Plans for BF.* on a key that a bf-layout rule names (filters/guava/bf_layout.h): the filter is
// the key's bits as a Java application keeps them (or, for an expanding rule, the data keys NAME-0
// .. NAME-c and a cursor key), with no metadata. Bits are only ever set with BITFIELD SET u1 (an
// OR), so adds from several proxies and from the Java application never lose a bit.
//
//   ADD / MADD / INSERT   BITFIELD key SET u1 <index> 1 ...: an item is new if an old bit was 0
//   EXISTS / MEXISTS      BITFIELD_RO key GET u1 <index> ...
//   CARD                  BITCOUNT key: Guava's approximateElementCount
//   INFO                  STRLEN key (WRONGTYPE as RedisBloom's), EXISTS key, BITCOUNT key
//   RESERVE               STRLEN key, EXISTS key, then SETBIT key <bits - 1> 0
//
// Expanding rules first read the cursor (GET), then every data key (docs/java-layouts.md).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/common/plan.h"
#include "filters/guava/bf_layout.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// A plan for `request` on a key that `rule` names (the rule is copied). `deferred_error` is
// BF.INFO's bad field, answered once the key is known to exist (as RedisBloom orders it).
std::unique_ptr<Plan> MakeGuavaPlan(const BfRequest& request, const LayoutRule& rule,
                                    protocol::UpstreamKind upstream,
                                    std::string deferred_error = {});

// A plan for key command `args` (DEL, UNLINK, EXISTS, TYPE, EXPIRE, PEXPIRE, EXPIREAT,
// PEXPIREAT, PERSIST, TTL, PTTL, EXPIRETIME, PEXPIRETIME) on the name of an expanding filter
// (*rule: the rule of `rules` it follows): it acts on the filter's keys. Null for any other
// command, arity or key (the command then goes upstream as it is); every command asks, so
// the command is looked at before the key is matched. *writes: whether the plan writes.
std::unique_ptr<Plan> MakeExpandingKeyPlan(const std::vector<std::string_view>& args,
                                           const LayoutRules& rules, const LayoutRule** rule,
                                           bool* writes);

}  // namespace bloomproxy::filters

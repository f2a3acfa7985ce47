// The set step of an add (BF.ADD, BF.MADD, BF.INSERT) as one script that runs atomically on the
// server holding the filter (all its keys share the name's hash tag, so they are on one server
// behind a Redis Cluster or a sharding proxy too): filters/bloom/bf_add.lua, embedded at build
// time. Pure; no sockets.
//
//   EVAL <script> <1 + shards> name shard ...
//        <marker field> <marker value> <id> l<links> <items> <groups>
//        <k of group 1> <key index> <offset> ...  (item-major: k pairs per item)
//        ...
//        <k of the last group> <key index> <offset> ...
//
// The script first checks that the name is still this filter (marker, id) and that no link
// exists after the ones the proxy knows: otherwise it writes nothing and answers -1. Then, for
// every item in order, it reads the item's bits in every other link (every group but the
// last), and sets them in the link where the item's place is reserved (the last group) unless
// another link holds the item. It answers an array with one integer per item: 1 = new (a bit
// changed), 0 = every bit was already set, 2 = another link holds it (nothing set).
//
// Why a script: an item added through two proxies at once while the filter scales could go to
// two links, each writer seeing it in neither. Inside one script, reading every link there is
// and writing one are a single step: once an add answers 1 the item is in a link every later
// script reads, so of all the adds of one item exactly one answers 1 (docs/bloom-filters.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/plan_requests.h"

namespace bloomproxy::filters {

// The script's answers per item.
inline constexpr int64_t kAddNew = 1, kAddExisted = 0, kAddInOlderLink = 2;
// The script's answer when the filter changed (deleted, replaced, or a link was added).
inline constexpr int64_t kAddStale = -1;

// Builds the request. Groups come in order, older links first and the link to set last; each
// group lists k bits per item, for every item, in item order.
class AddScriptRequest {
 public:
  AddScriptRequest(std::string_view name, std::string_view id, size_t links, size_t items);

  // The index of a shard key among the script's keys (added on first use).
  uint32_t Key(std::string key);
  // Starts the next group: `k` bits per item.
  void BeginGroup(uint32_t k);
  // The next bit of the current group: shard key `key` (from Key()), bit `offset`.
  void Bit(uint32_t key, uint64_t offset);
  // Appends the EVAL to `req`; its reply must be kAddStale or an array of one result per item.
  void AddTo(Requests* req, uint32_t link);

 private:
  std::string name_;
  std::vector<std::string> keys_;
  std::string argv_;  // the first 5 arguments after the keys, encoded
  std::string body_;  // the groups, encoded
  int64_t argc_ = 0;  // the arguments in body_
  uint32_t groups_ = 0;
  size_t items_;
};

// The script, for tests.
std::string_view AddScript();

}  // namespace bloomproxy::filters

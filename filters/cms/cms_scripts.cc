#include "filters/cms/cms_scripts.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "filters/cms/cms_cleanup.lua.h"
#include "filters/cms/cms_create.lua.h"
#include "filters/cms/cms_fetch.lua.h"
#include "filters/cms/cms_merge_commit.lua.h"
#include "filters/cms/cms_merge_read.lua.h"
#include "filters/cms/cms_multi_bitfield.lua.h"
#include "filters/common/key_layout.h"

namespace bloomproxy::filters {
namespace {

// Lua's unpack takes at most about 8000 values: BITFIELD calls are split below that.
constexpr size_t kMaxArgsPerCall = 6000;

void AddEval(Requests* req, std::string_view command, std::string_view script,
             const std::vector<std::string>& keys, const std::vector<std::string>& argv) {
  std::vector<std::string_view> args = {command, script};
  const std::string count = U64(keys.size());
  args.push_back(count);
  for (const std::string& k : keys) args.push_back(k);
  for (const std::string& a : argv) args.push_back(a);
  req->Add(args);
}

}  // namespace

std::string_view CmsFetchScript() { return lua::kCmsFetch.body; }
std::string_view CmsCreateScript() { return lua::kCmsCreate.body; }
std::string_view CmsMultiBitfieldScript() { return lua::kCmsMultiBitfield.body; }
std::string_view CmsCleanupScript() { return lua::kCmsCleanup.body; }
std::string_view CmsMergeCommitScript() { return lua::kCmsMergeCommit.body; }
std::string_view CmsMergeReadScript() { return lua::kCmsMergeRead.body; }

void AddCmsMergeRead(Requests* req, const std::vector<std::string>& keys,
                     const std::vector<bool>& header, protocol::UpstreamKind upstream) {
  std::vector<std::string> argv;
  for (bool h : header) argv.emplace_back(h ? "h" : "g");
  AddEval(req, upstream == protocol::UpstreamKind::kShardingProxy ? "EVAL" : "EVAL_RO",
          lua::kCmsMergeRead.body, keys, argv);
}

void AddCmsFetch(Requests* req, std::string_view name, protocol::UpstreamKind upstream) {
  const bool ro = upstream != protocol::UpstreamKind::kShardingProxy;
  req->Add({ro ? "EVAL_RO" : "EVAL", lua::kCmsFetch.body, "2", name,
            CmsMarkerKey(DataKeyPrefix(name), name)});
}

void AddCmsCreate(Requests* req, std::string_view name, const CmsMeta& meta) {
  std::vector<std::string> keys = {std::string(name), CmsMarkerKey(meta.prefix, name)};
  std::vector<std::string> argv = {meta.id, U64(meta.width), U64(meta.depth), U64(meta.part_cells)};
  for (uint64_t p = 0; p < meta.Parts(); ++p) {
    keys.push_back(meta.PartKey(p));
    argv.push_back(U64(meta.PartBytes(p)));
  }
  AddEval(req, "EVAL", lua::kCmsCreate.body, keys, argv);
}

void AddCmsMultiBitfield(Requests* req, const std::vector<CmsPartOps>& parts) {
  std::vector<std::string> keys;
  std::vector<std::string> argv;
  for (const CmsPartOps& part : parts) {
    keys.push_back(part.key);
    // Split at operation boundaries (OVERFLOW, GET and INCRBY start one); a call after the first
    // starts with the overflow mode in force where the previous one stopped.
    std::string_view mode;
    size_t start = 0;
    while (start < part.args.size()) {
      size_t end = std::min(part.args.size(), start + kMaxArgsPerCall);
      while (end < part.args.size() && part.args[end] != "OVERFLOW" && part.args[end] != "GET" &&
             part.args[end] != "INCRBY") {
        ++end;
      }
      const bool restate = !mode.empty() && part.args[start] != "OVERFLOW";
      argv.push_back(U64(keys.size()));
      argv.push_back(U64(end - start + (restate ? 2 : 0)));
      if (restate) {
        argv.emplace_back("OVERFLOW");
        argv.emplace_back(mode);
      }
      for (size_t a = start; a < end; ++a) {
        argv.push_back(part.args[a]);
        if (part.args[a] == "OVERFLOW" && a + 1 < end) mode = part.args[a + 1];
      }
      start = end;
    }
  }
  AddEval(req, "EVAL", lua::kCmsMultiBitfield.body, keys, argv);
}

void AddCmsCleanup(Requests* req, std::string_view name, std::string_view id,
                   const std::vector<std::string>& parts) {
  std::vector<std::string> keys = {std::string(name)};
  keys.insert(keys.end(), parts.begin(), parts.end());
  AddEval(req, "EVAL", lua::kCmsCleanup.body, keys, {std::string(id)});
}

void AddCmsMergeCommit(Requests* req, const std::vector<CmsChecked>& checked,
                       const std::vector<std::pair<std::string, std::string>>& writes) {
  std::vector<std::string> keys;
  std::vector<std::string> argv = {U64(checked.size())};
  for (const CmsChecked& c : checked) keys.push_back(c.name);
  for (const CmsChecked& c : checked) keys.push_back(c.part0);
  for (const CmsChecked& c : checked) argv.push_back(c.id);
  for (const CmsChecked& c : checked) argv.push_back(c.version);
  for (const auto& [key, content] : writes) {
    keys.push_back(key);
    argv.push_back(content);
  }
  AddEval(req, "EVAL", lua::kCmsMergeCommit.body, keys, argv);
}

}  // namespace bloomproxy::filters

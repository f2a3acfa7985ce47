-- CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX: one or several commands on one filter, in order, as
-- one atomic step (commands of many clients coalesced by the proxy come as several members).
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--   ARGV[3]    "1": NOCREATE (a missing filter is "not found"), else "0"
--   ARGV[4..9] the filter to create if the name is free: id nb bs mi ex sh
--   ARGV[10]   the most bytes of slots the filter may grow to (sketch-max-bytes)
--   ARGV[11]   the number of members; then per member: "1" for NX (ADDNX, INSERTNX) else "0",
--              the number of items c, and c pairs of hash halves (hi lo)
--
-- Answers the status MISSING (NOCREATE and nothing there), WRONGTYPE or DAMAGED <why>, or an
-- array with one element per member: the status MAXEXP (the filter already had 32 sub-filters:
-- RedisBloom's "Maximum expansions reached", checked once per command before anything is
-- inserted), or one integer per item: 1 inserted, 0 already there (NX), -1 no space, -2 no new
-- sub-filter possible; and after the members, the filter's fields (cf_fields), which the proxy
-- caches for cf_insert_fast.lua.
--@include cuckoo/cf_layout.lua
--@include cuckoo/cf_buckets.lua
--@include cuckoo/cf_insertion.lua

local MAX_EXPANSIONS = 32  -- RedisBloom's cf-max-expansions

local state = cf_load(true)
if state == 'MISSING' then
  if ARGV[3] == '1' then return {ok = 'MISSING'} end
  cf_create(ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], '1', ARGV[9], u64_format(0, 0),
            u64_format(0, 0))
elseif state ~= 'OK' then
  return {ok = state}
end

GROW_LIMIT = math.min(tonumber(ARGV[10]), MAX_BYTES)
-- Every bucket the items look at first, read in one go.
local wanted, a = {}, 12
for _ = 1, tonumber(ARGV[11]) do
  local count = tonumber(ARGV[a + 1])
  want_items(wanted, a + 2, count)
  a = a + 2 + 2 * count
end
prefetch(wanted)
local out = {}
a = 12
for m = 1, tonumber(ARGV[11]) do
  local nx, count = ARGV[a] == '1', tonumber(ARGV[a + 1])
  a = a + 2
  if F.nf >= MAX_EXPANSIONS then
    out[m] = {ok = 'MAXEXP'}
    a = a + 2 * count
  else
    local results = {}
    for k = 1, count do
      local hi, lo = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
      if nx and item_exists(hi, lo) then
        results[k] = 0
      else
        results[k] = insert_item(hi, lo)
      end
      a = a + 2
    end
    out[m] = results
  end
end
cf_flush()
cf_save()
out[#out + 1] = cf_fields()
return out

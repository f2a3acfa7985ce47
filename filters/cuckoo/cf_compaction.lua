-- Compaction, as RedisBloom's CuckooFilter_Compact (src/cuckoo.c): for f = the last sub-filter
-- down to 1, every fingerprint of f, bucket by bucket and slot by slot, moves to the first of
-- sub-filters 0 .. f-1 with an empty slot in bucket b % n_j, else in (b XOR fp * M) % n_j (b its
-- bucket in f). A sub-filter all of whose fingerprints moved is dropped when it is the last one.
-- One that keeps a fingerprint stops a compaction after a delete (cont false: the lower ones
-- could not be dropped anyway); CF.COMPACT goes on (cont true). The deletes count restarts at 0.
--
-- Sub-filter f is read whole, one data key at a time, and its fingerprints are found with Lua's
-- string search (C speed) rather than slot by slot. Relocations go through the bucket cache
-- (cf_buckets.lua); the slots they empty in f are cleared directly.

-- Clears the slots at `offsets` (0-based) of data key k.
local function clear_slots(k, offsets)
  if #offsets == 0 then return end
  if #offsets <= 64 then
    for _, o in ipairs(offsets) do redis.call('SETRANGE', k, o, '\0') end
    return
  end
  -- Many: the key rewritten once, from 0 (SETRANGE keeps its expiry, SET would not).
  local data = redis.call('GET', k)
  local parts, from = {}, 1
  for _, o in ipairs(offsets) do
    parts[#parts + 1] = data:sub(from, o)
    parts[#parts + 1] = '\0'
    from = o + 2
  end
  parts[#parts + 1] = data:sub(from)
  redis.call('SETRANGE', k, 0, table.concat(parts))
end

-- relocateSlot: whether fingerprint fp of bucket b found a place in a sub-filter below f.
local function relocate(fp, b, f)
  for j = 0, f - 1 do
    local n = F.n[j]
    local target = b % n
    local s = find_slot(bucket(j, target), 0)
    if not s then
      target = alt_bucket(b, fp, n)
      s = find_slot(bucket(j, target), 0)
    end
    if s then
      put_slot(j, target, s, fp)
      return true
    end
  end
  return false
end

-- CuckooFilter_CompactSingle: true when every fingerprint of sub-filter f moved.
local function compact_subfilter(f)
  -- f may have taken relocations from f + 1: they must be in Redis before f is read whole.
  cf_flush()
  forget_subfilter(f)
  local all_moved = true
  local count = shards(f)
  local cleared = {}
  for s = 0, count - 1 do
    local k = data_key(f, s)
    local data = redis.call('GET', k)
    local offsets = {}
    local pos = data:find('[^%z]')
    while pos do
      local b = math.floor((s * F.sh + pos - 1) / F.bs)
      if relocate(data:byte(pos), b, f) then
        offsets[#offsets + 1] = pos - 1
      else
        all_moved = false
      end
      pos = data:find('[^%z]', pos + 1)
    end
    cleared[s] = offsets
  end
  if all_moved and f == F.nf - 1 then
    for s = 0, count - 1 do redis.call('UNLINK', data_key(f, s)) end
    F.bytes = F.bytes - F.n[f] * F.bs
    F.n[f] = nil
    F.nf = F.nf - 1
    F.g = F.g + 1
  else
    for s = 0, count - 1 do clear_slots(data_key(f, s), cleared[s]) end
  end
  return all_moved
end

local function cf_compact(cont)
  for f = F.nf - 1, 1, -1 do
    if not compact_subfilter(f) and not cont then break end
  end
  cf_flush()
  F.nd_hi, F.nd_lo = 0, 0
end

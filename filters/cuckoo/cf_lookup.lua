-- Many items looked up at once (CF.EXISTS, CF.MEXISTS, CF.COUNT and their batches): for every
-- sub-filter, both buckets of every item still to look at are read with one BITFIELD_RO per data
-- key, and the copies of each item's fingerprint counted in them. Buckets wider than SEG bytes
-- are read one by one through the bucket cache (cf_buckets.lua).

-- Adds the read of the bucket at byte `off` of a sub-filter (its data keys of F.sh bytes) for
-- item k: args[s] and owners[s] are data key s's BITFIELD_RO arguments and the item of each value.
local function want(args, owners, off, k)
  local s = 0
  if off >= F.sh then
    s = math.floor(off / F.sh)
    off = off - s * F.sh
  end
  local a = args[s]
  if not a then
    a = {}
    args[s], owners[s] = a, {n = 0}
  end
  local o = owners[s]
  local m = o.n + 1
  o.n, o[m] = m, k
  local at = 3 * m
  a[at - 2], a[at - 1], a[at] = 'GET', WIDTH, off * 8
end

-- Per item (hash halves at ARGV[first], ARGV[first + 1], ..., `count` items): the copies of its
-- fingerprint in both buckets of every sub-filter (`counting`, CF.COUNT: a bucket that is both is
-- counted twice), or 1 / 0 for whether any sub-filter holds it (the rest is not read once found).
local function lookup_items(first, count, counting)
  local fps, his, los, h2his, h2los, found = {}, {}, {}, {}, {}, {}
  for k = 1, count do
    local hi, lo = tonumber(ARGV[first + 2 * k - 2]), tonumber(ARGV[first + 2 * k - 1])
    local fp, _, _, h2hi, h2lo = item_hashes(hi, lo)
    fps[k], his[k], los[k], h2his[k], h2los[k], found[k] = fp, hi, lo, h2hi, h2lo, 0
  end
  local bs = F.bs
  cache_of(0)  -- (sets WIDTH)
  for i = 0, F.nf - 1 do
    local n = F.n[i]
    local low_bits = n <= TWO32 and TWO32 % n == 0
    local args, owners = {}, {}  -- per data key: BITFIELD_RO's arguments, the item of each value
    for k = 1, count do
      if counting or found[k] == 0 then
        local b1, b2
        if low_bits then
          b1, b2 = los[k] % n, h2los[k] % n
        else
          b1, b2 = mod64(his[k], los[k], n), mod64(h2his[k], h2los[k], n)
        end
        if bs > SEG then
          local c = copies_in(bucket(i, b1), fps[k]) + copies_in(bucket(i, b2), fps[k])
          found[k] = counting and found[k] + c or (c > 0 and 1 or 0)
        else
          want(args, owners, b1 * bs, k)
          want(args, owners, b2 * bs, k)
        end
      end
    end
    for s, a in pairs(args) do
      local owner = owners[s]
      for at = 1, #a, CALL_ARGS do
        local values = redis.call('BITFIELD_RO', data_key(i, s),
                                  unpack(a, at, math.min(at + CALL_ARGS - 1, #a)))
        local base = (at - 1) / 3
        for q = 1, #values do
          local k = owner[base + q]
          local c = copies_in(values[q], fps[k])
          if counting then
            found[k] = found[k] + c
          elseif c > 0 then
            found[k] = 1
          end
        end
      end
    end
  end
  return found
end

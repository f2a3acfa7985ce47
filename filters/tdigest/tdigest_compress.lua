-- The t-digest library's compression and add (RedisBloom's t-digest-c at 5b89d70), over a digest
-- D of tdigest_layout.lua, to the last bit: the same quicksort, merge test and order of every
-- floating-point operation as filters/tdigest/tdigest.cc, the model the recorded replies judge.
-- (Each Lua arithmetic operator is one IEEE double operation: nothing is fused.)
--@include tdigest/tdigest_layout.lua
local PI = 3.14159265358979323846

-- Lomuto partition around the middle node, not stable; a NaN mean compares false. The means
-- are sorted in place with `ord`, each slot's original node, riding along (fewer table writes
-- than moving three arrays); td_compress then moves the weights by `ord`.
local function sort_means(mean, ord, lo, hi)
  while lo < hi do
    if hi - lo == 1 then
      if mean[lo] > mean[hi] then
        mean[lo], mean[hi] = mean[hi], mean[lo]
        ord[lo], ord[hi] = ord[hi], ord[lo]
      end
      return
    end
    local p = math.floor((lo + hi) / 2)
    local pv = mean[p]
    mean[p], mean[hi] = mean[hi], pv
    ord[p], ord[hi] = ord[hi], ord[p]
    local i = lo - 1
    for j = lo, hi - 1 do
      local mj = mean[j]
      if mj < pv then
        i = i + 1
        mean[i], mean[j] = mj, mean[i]
        ord[i], ord[j] = ord[j], ord[i]
      end
    end
    i = i + 1
    mean[i], mean[hi] = mean[hi], mean[i]
    ord[i], ord[hi] = ord[hi], ord[i]
    -- The two parts are sorted independently, so their order does not change the result: the
    -- smaller one by a call, the larger one by the loop, so calls nest at most log2(n) deep
    -- (Redis's Lua fails past about 16,000 nested calls).
    if i - lo < hi - i then
      if i > lo then sort_means(mean, ord, lo, i - 1) end
      lo = i + 1
    else
      sort_means(mean, ord, i + 1, hi)
      hi = i - 1
    end
  end
end

-- Sorts D's n nodes by mean: t-digest-c's quicksort, weights moving with their means. When the
-- means are all different (and none is NaN) every correct sort gives the same order, so Lua's
-- table.sort (in C, several times faster) gives it; equal means, whose weights the quicksort's
-- exact moves order, take the quicksort itself. (0 and -0 are one table key: equal.)
local function td_sort(D, n)
  local mean, ord, at, sorted = D.mean, {}, {}, {}
  local distinct = true
  for i = 1, n do
    local m = mean[i]
    if m ~= m or at[m] then
      distinct = false
      break
    end
    at[m], sorted[i] = i, m
  end
  if distinct then
    table.sort(sorted)
    for i = 1, n do ord[i] = at[sorted[i]] end
    D.mean = sorted
  else
    for i = 1, n do ord[i] = i end
    sort_means(mean, ord, 1, n)
  end
  local wh, wl, h, l = D.wh, D.wl, {}, {}
  for i = 1, n do h[i], l[i] = wh[ord[i]], wl[ord[i]] end
  D.wh, D.wl = h, l
end

-- td_compress: nothing when no node is buffered; a digest of weight <= 1 is never merged.
local function td_compress(D)
  if D.U == 0 then return end
  local n = D.M + D.U
  td_sort(D, n)
  local total = i64_double(D.MWh, D.MWl) + i64_double(D.UWh, D.UWl)
  if total <= 1 then
    -- Sorted, not merged: the order stays (it can change only with a merged weight that wrapped
    -- to INT64_MIN; one observation alone is one node).
    if n > 1 then D.changed = true end
    return
  end
  local norm = D.C / ((2 * PI) * total * math.log(total))
  local mean, wh, wl = D.mean, D.wh, D.wl
  local cur, wsf = 1, 0.0
  for i = 2, n do
    local wc = wh[cur] * TWO32 + wl[cur]
    local wi = wh[i] * TWO32 + wl[i]
    local proposed = wc + wi
    local z = proposed * norm
    local q0 = wsf / total
    local q2 = (wsf + proposed) / total
    if z <= q0 * (1 - q0) and z <= q2 * (1 - q2) then
      local h, l = i64_add(wh[cur], wl[cur], wh[i], wl[i])
      wh[cur], wl[cur] = h, l
      local delta = mean[i] - mean[cur]
      mean[cur] = mean[cur] + (delta * wi) / (h * TWO32 + l)
    else
      wsf = wsf + wc
      cur = cur + 1
      mean[cur], wh[cur], wl[cur] = mean[i], wh[i], wl[i]
    end
  end
  for i = cur + 1, n do mean[i], wh[i], wl[i] = nil, nil, nil end
  D.M, D.U = cur, 0
  D.MWh, D.MWl = i64_from_double(total)
  D.UWh, D.UWl = 0, 0
  D.TCh, D.TCl = i64_add(D.TCh, D.TCl, 0, 1)
  D.changed = true
end

-- td_add of one node (x, weight hi:lo): compresses first when the buffer is full; false (nothing
-- added: "overflow detected") when the slots are still full after that, or when the weights
-- would pass INT64_MAX.
local function td_add_node(D, x, h, l)
  if D.M + D.U >= D.cap - 1 then td_compress(D) end
  if D.M + D.U >= D.cap then return false end
  local uh, ul, o1 = i64_add(D.UWh, D.UWl, h, l)
  if o1 then return false end
  local _, _, o2 = i64_add(uh, ul, D.MWh, D.MWl)
  if o2 then return false end
  if x < D.min then D.min = x end
  if x > D.max then D.max = x end
  local at = D.M + D.U + 1
  D.mean[at], D.wh[at], D.wl[at] = x, h, l
  D.U = D.U + 1
  D.UWh, D.UWl = uh, ul
  D.changed = true
  return true
end

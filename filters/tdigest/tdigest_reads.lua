-- The t-digest's reads (RedisBloom's rm_tdigest.c over t-digest-c at 5b89d70), over a digest D
-- of tdigest_layout.lua, to the last bit, operation for operation as filters/tdigest/tdigest.cc.
-- Each compresses first where RedisBloom's does (td_compress marks D changed).
--@include tdigest/tdigest_compress.lua
-- The library's NAN constant: its sign bit clear ("nan"; NaNs that arithmetic makes print "-nan").
local NAN = math.abs(0 / 0)
local INF = 1 / 0

local function td_w(D, i) return D.wh[i] * TWO32 + D.wl[i] end

local function wavg_sorted(x1, w1, x2, w2)
  local x = (x1 * w1 + x2 * w2) / (w1 + w2)
  local m = x < x2 and x or x2
  return x1 > m and x1 or m
end

local function wavg(x1, w1, x2, w2)
  if x1 <= x2 then return wavg_sorted(x1, w1, x2, w2) end
  return wavg_sorted(x2, w2, x1, w1)
end

-- td_quantile's walk over the centroids for an index in [0, MW] (M >= 2).
local function quantile_at(D, index)
  local n, mean = D.M, D.mean
  local mwd = i64_double(D.MWh, D.MWl)
  local w0, wl, ml = td_w(D, 1), td_w(D, n), mean[n]
  if w0 > 1 and index < w0 / 2 then
    return D.min + ((index - 1) / (w0 / 2 - 1)) * (mean[1] - D.min)
  end
  -- (double)(MW - 1): wraps to INT64_MAX when MW is INT64_MIN (a double sum that rounded to 2^63).
  local mh, mlo = i64_add_wrap(D.MWh, D.MWl, -1, TWO32 - 1)
  if index > i64_double(mh, mlo) then return D.max end
  if wl > 1 and mwd - index <= wl / 2 then
    return D.max - ((mwd - index - 1) / (wl / 2 - 1)) * (D.max - ml)
  end
  local wsf = w0 / 2
  for i = 1, n - 1 do
    local a, b = td_w(D, i), td_w(D, i + 1)
    local dw = (a + b) / 2
    if wsf + dw > index then
      local lu, ru = 0, 0
      if a == 1 then
        if index - wsf < 0.5 then return mean[i] end
        lu = 0.5
      end
      if b == 1 then
        if wsf + dw - index <= 0.5 then return mean[i + 1] end
        ru = 0.5
      end
      local z1 = index - wsf - lu
      local z2 = wsf + dw - index - ru
      return wavg(mean[i], z2, mean[i + 1], z1)
    end
    wsf = wsf + dw
  end
  local z1 = index - mwd - wl / 2
  local z2 = wl / 2 - z1
  return wavg(ml, z1, D.max, z2)
end

-- TDIGEST.QUANTILE's value of q.
local function td_quantile_of(D, q)
  if D.M == 0 then return NAN end
  if D.M == 1 then return D.mean[1] end
  return quantile_at(D, q * i64_double(D.MWh, D.MWl))
end

-- td_quantile(p): the BYRANK path.
local function td_quantile(D, p)
  td_compress(D)
  if p < 0 or p > 1 or D.M == 0 then return NAN end
  if D.M == 1 then return D.mean[1] end
  local index = p * i64_double(D.MWh, D.MWl)
  if index < 1 then return D.min end
  return quantile_at(D, index)
end

local function td_cdf(D, x)
  td_compress(D)
  local n, mean = D.M, D.mean
  if n == 0 then return NAN end
  if x < D.min then return 0 end
  if x > D.max then return 1 end
  if n == 1 then
    local width = D.max - D.min
    if x - D.min <= width then return 0.5 end
    return (x - D.min) / width
  end
  local mwd = i64_double(D.MWh, D.MWl)
  local m0 = mean[1]
  if x < m0 then
    local width = m0 - D.min
    if width > 0 then
      if x == D.min then return 0.5 / mwd end
      return (1 + ((x - D.min) / width) * (td_w(D, 1) / 2 - 1)) / mwd
    end
    return 0
  end
  local ml = mean[n]
  if x > ml then
    local width = D.max - ml
    if width > 0 then
      if x == D.max then return 1 - 0.5 / mwd end
      return 1 - (1 + ((D.max - x) / width) * (td_w(D, n) / 2 - 1)) / mwd
    end
    return 1
  end
  local wsf = 0
  for it = 1, n - 1 do
    local ma, mb = mean[it], mean[it + 1]
    if ma == x then
      local dw = 0
      local j = it
      while j <= n and mean[j] == x do
        dw = dw + td_w(D, j)
        j = j + 1
      end
      return (wsf + dw / 2) / mwd
    end
    local a, b = td_w(D, it), td_w(D, it + 1)
    if ma <= x and x < mb then
      if mb - ma > 0 then
        local le, re = 0, 0
        if a == 1 then
          if b == 1 then return (wsf + 1) / mwd end
          le = 0.5
        elseif b == 1 then
          re = 0.5
        end
        local dw = (a + b) / 2
        local dw_no_singleton = dw - le - re
        local base = wsf + a / 2 + le
        return (base + (dw_no_singleton * (x - ma)) / (mb - ma)) / mwd
      end
      return (wsf + (a + b) / 2) / mwd
    end
    wsf = wsf + a
  end
  return 1 - 0.5 / mwd
end

local function td_trimmed_mean(D, lo, hi)
  td_compress(D)
  if D.M == 0 then return NAN end
  if D.M == 1 then return D.mean[1] end
  local mwd = i64_double(D.MWh, D.MWl)
  local lw, hw = math.floor(mwd * lo), math.ceil(mwd * hi)
  local done, sum, count = 0, 0, 0
  for i = 1, D.M do
    local a = td_w(D, i)
    local add = a
    -- min(a, b) = a < b ? a : b and max(a, b) = a > b ? a : b, as the library's macros.
    local cut = 0 > lw - done and 0 or lw - done
    add = add - (cut < add and cut or add)
    local keep = 0 > hw - done and 0 or hw - done
    add = keep < add and keep or add
    done = done + a
    sum = sum + D.mean[i] * add
    count = count + add
    if done >= hw then break end
  end
  return sum / count
end

-- C's round(): halves away from zero.
local function c_round(x)
  if x ~= x or x == INF or x == -INF then return x end
  if x < 0 then return -c_round(-x) end
  local t = math.floor(x)
  if x - t >= 0.5 then return t + 1 end
  return t
end

-- rm_tdigest.c's halfRoundDown (modf, then away from zero past one half).
local function half_round_down(f)
  local int_part, frac_part = math.modf(f)
  if math.abs(frac_part) <= 0.5 then return int_part end
  if int_part >= 0 then return int_part + 1 end
  return int_part - 1
end

local function td_size(D)
  local h, l = i64_add(D.MWh, D.MWl, D.UWh, D.UWl)
  return i64_double(h, l)
end

-- RANK / REVRANK of v, as a double (the proxy casts it to int64 as C does).
local function td_rank(D, v, reverse, size, min, max)
  if size == 0 then return -2 end
  if v < min then return reverse and size or -1 end
  if v > max then return reverse and -1 or size end
  local p = td_cdf(D, v) * size
  if reverse then return c_round(size - c_round(p)) end
  return half_round_down(p)
end

-- BYRANK / BYREVRANK of rank r (a double).
local function td_byrank(D, r, reverse, size, min, max)
  if size == 0 then return NAN end
  if r == 0 then return reverse and max or min end
  if r >= size then return reverse and -INF or INF end
  return td_quantile(D, reverse and ((size - r) - 1) / size or r / size)
end

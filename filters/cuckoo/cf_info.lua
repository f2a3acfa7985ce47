-- CF.INFO, CF.DEBUG, and the header of CF.SCANDUMP 0: the filter's fields, read only.
--
--   KEYS[1]    the name
--   ARGV[1..2] marker, data-key prefix (cf_layout.lua)
--
-- Answers {nb, bs, mi, ex, nf, ni, nd} (ni and nd as 16 hex digits), or the status MISSING,
-- WRONGTYPE or DAMAGED <why>.
--@include cuckoo/cf_layout.lua

local state = cf_load(false)
if state ~= 'OK' then return {ok = state} end
return {num(F.nb), num(F.bs), num(F.mi), num(F.ex), num(F.nf),
        u64_format(F.ni_hi, F.ni_lo), u64_format(F.nd_hi, F.nd_lo)}

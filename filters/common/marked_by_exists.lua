-- marked(k) for a script that only reads: it goes with EVAL_RO, where SETRANGE is refused, so it
-- looks at markers with EXISTS (its command reads the name anyway).
local function marked(k) return redis.call('EXISTS', k) == 1 end

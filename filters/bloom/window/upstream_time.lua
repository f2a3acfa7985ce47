-- The upstream's TIME, read on a windowed filter's own server (filters/bloom/window/window_plan.cc):
-- sent with the filter's name as KEYS[1], so every kind of upstream (a cluster node, a server
-- behind a sharding proxy) answers from the server that holds the filter and its slots.
-- Returns TIME's reply: {seconds, microseconds}.
return redis.call('TIME')

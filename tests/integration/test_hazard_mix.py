"""Many clients at once sending, at random, the commands that change what a connection is
(replication streams, MONITOR, pub/sub, tracking, reply modes, SELECT, transactions, blocking
commands, scripts, pauses, RESET/QUIT mid-pipeline, disconnects mid-command) while other clients
run checked pipelined load: the loaded clients see no error, no wrong reply and no stall, every
hazard client gets the replies Redis gives, and the proxy stays up. bench/hazard_soak.sh runs the
same mix for minutes."""

import hazard_mix

# DEBUG SLEEP is one of the hazards; diskless replication starts at once.
UPSTREAM_ARGS = ("--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0")


def test_hazard_mix_leaves_other_clients_alone(proxy, redis_factory):
    upstream = redis_factory(extra_args=UPSTREAM_ARGS)
    p = proxy(upstream=upstream.address)
    report = hazard_mix.run_mix(p.port, seconds=20, hazard_clients=6, load_clients=4)
    print(report)
    assert p.alive()
    assert "protocol error from upstream" not in p.log()
    # Every action ran.
    assert all(n > 0 for n in report["actions"].values()), report["actions"]
    assert report["batches"] > 50, report


def test_hazard_mix_with_threads(proxy, redis_factory):
    """The same with two event loops: a pause, a script or a tunnel on one loop must not break
    the clients of the other."""
    upstream = redis_factory(extra_args=UPSTREAM_ARGS)
    p = proxy("--threads", "2", upstream=upstream.address)
    report = hazard_mix.run_mix(p.port, seconds=10, hazard_clients=6, load_clients=4)
    print(report)
    assert p.alive()
    assert "protocol error from upstream" not in p.log()

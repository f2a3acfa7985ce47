"""Configuring a Redis Cluster upstream: --upstream-cluster excludes --upstream, the
`upstream-cluster` config-file directive, seeds that are down, and upstream-password used on
every node."""

import re
import subprocess

import pytest

from bp_cluster import keys_in_distinct_slots
from bp_helpers import (BLOOMPROXY_BIN, HOST, RawConn, free_port, proxy_env, replies_of,
                        start_proxy)
from bp_helpers import encode_command as cmd


def run_bin(*args, timeout=10):
    return subprocess.run([BLOOMPROXY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=proxy_env(), stdin=subprocess.DEVNULL)


def names_both_options(text):
    return re.search(r"upstream-cluster", text) and \
        re.search(r"(?<![\w-])upstream(?![\w-])", text)


def check_keys_across_slots(p, cluster, prefix, count=60):
    """SET through the proxy lands on each key's node; GET and MGET read it back."""
    keys = keys_in_distinct_slots(prefix, count)
    payload = b"".join(cmd("SET", k, "v:" + k) for k in keys) + cmd("MGET", *keys)
    got = replies_of(p.port, payload, count + 1)
    assert got[:count] == [b"+OK\r\n"] * count
    assert got[count] == b"*%d\r\n" % count + b"".join(
        b"$%d\r\n%s\r\n" % (len("v:" + k), ("v:" + k).encode()) for k in keys)
    for k in keys:
        assert cluster.node_for_key(k).command("GET", k) == ("v:" + k).encode(), k


def test_upstream_and_upstream_cluster_exclude_each_other(tmp_path):
    base = ["--port", free_port(), "--bind", HOST]
    for extra in (["--upstream", "127.0.0.1:1", "--upstream-cluster", "127.0.0.1:2"],
                  ["--upstream-cluster", "127.0.0.1:2,127.0.0.1:3", "--upstream",
                   "127.0.0.1:1"],
                  ["--upstream", "127.0.0.1:1", "--upstream-cluster", "127.0.0.1:2",
                   "--test-conf"]):
        try:
            res = run_bin(*base, *extra, timeout=5)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{extra}: bloomproxy started with both upstreams")
        out = res.stdout + res.stderr
        assert res.returncode != 0, f"{extra}: exit 0\n{out}"
        assert names_both_options(res.stderr), f"{extra}: stderr does not name both:\n{out}"
    conf = tmp_path / "both.conf"
    conf.write_text(f"port {free_port()}\nbind 127.0.0.1\nupstream 127.0.0.1:1\n"
                    "upstream-cluster 127.0.0.1:2\n")
    for extra in ([], ["--test-conf"]):
        try:
            res = run_bin("--config", conf, *extra, timeout=5)
        except subprocess.TimeoutExpired:
            raise AssertionError("bloomproxy started with both upstreams in its config file")
        assert res.returncode != 0, res.stdout + res.stderr
        assert names_both_options(res.stderr), res.stdout + res.stderr


def test_bad_seed_lists_are_refused():
    for seeds in ("", "127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:1,,127.0.0.1:2",
                  "unix:/tmp/redis.sock"):
        try:
            res = run_bin("--port", free_port(), "--bind", HOST, "--upstream-cluster", seeds,
                          timeout=5)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"bloomproxy started with seeds {seeds!r}")
        assert res.returncode != 0, f"{seeds!r}: exit 0\n{res.stdout}{res.stderr}"
        assert "upstream-cluster" in res.stderr, f"{seeds!r}: {res.stderr}"


def test_config_file_directive(tmp_path, redis_cluster):
    conf = tmp_path / "cluster.conf"
    conf.write_text(f"# a cluster upstream\nupstream-cluster {redis_cluster.seeds()}\n")
    res = run_bin("--config", conf, "--test-conf")
    assert res.returncode == 0, res.stdout + res.stderr
    p = start_proxy(tmp_path / "proxy", None, extra_args=("--config", conf))
    try:
        check_keys_across_slots(p, redis_cluster, "conf")
        with p.raw() as c:
            assert c.command("CLUSTER", "INFO").startswith(b"cluster_state:ok\r\n")
    finally:
        assert p.terminate_and_wait() == 0, p.log()


def test_seeds_that_are_down_are_skipped(redis_cluster, cluster_proxy):
    dead = f"{HOST}:{free_port()}"
    p = cluster_proxy(cluster=_Seeds(redis_cluster, f"{dead},{redis_cluster.seeds()}"))
    check_keys_across_slots(p, redis_cluster, "seed")
    # One live seed, and a replica at that: the proxy learns every master from it.
    replica = redis_cluster.replicas_of(redis_cluster.masters()[0])[0]
    p = cluster_proxy(cluster=_Seeds(redis_cluster, f"{dead},{HOST}:{replica.port}"))
    check_keys_across_slots(p, redis_cluster, "replica-seed")


class _Seeds:
    """A cluster whose seeds() is the given list (for cluster_proxy)."""

    def __init__(self, cluster, seeds):
        self.cluster, self._seeds = cluster, seeds

    def seeds(self):
        return self._seeds


@pytest.mark.parametrize("how", ["flag", "env"])
def test_upstream_password_applies_to_every_node(cluster_factory, cluster_proxy, how):
    cluster = cluster_factory(masters=3, replicas=0, password="cluster-secret")
    for node in cluster.nodes:  # the nodes do require it
        with RawConn(node.port) as c:
            c.send(cmd("GET", "x"))
            assert c.read_reply_raw() == b"-NOAUTH Authentication required.\r\n"
    if how == "flag":
        p = cluster_proxy("--upstream-password", "cluster-secret", cluster=cluster)
    else:
        p = cluster_proxy(cluster=cluster, env={"BLOOMPROXY_UPSTREAM_PASSWORD": "cluster-secret"})
    check_keys_across_slots(p, cluster, "auth")
    with p.raw() as c:
        assert c.command("DBSIZE") == 60  # a fan-out reaches every master too
        assert c.command("FLUSHALL") == b"OK"
        assert c.command("DBSIZE") == 0


def test_upstream_user_applies_to_every_node(cluster_factory, cluster_proxy):
    """An ACL user on every node; the default user's password is another one."""
    cluster = cluster_factory(masters=3, replicas=0, password="default-secret",
                              extra_args=("--user", "bp", "on", ">bp-secret", "~*", "&*",
                                          "+@all"))
    p = cluster_proxy("--upstream-user", "bp", "--upstream-password", "bp-secret",
                      cluster=cluster)
    check_keys_across_slots(p, cluster, "user")
    for m in cluster.masters():
        clients = m.command("CLIENT", "LIST").decode()
        users = {f.split("=", 1)[1] for line in clients.splitlines()
                 for f in line.split(" ") if f.startswith("user=")}
        assert "bp" in users, clients

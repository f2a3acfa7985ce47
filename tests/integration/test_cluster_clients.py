"""Clients against the proxy as a one-node cluster: redis-py's cluster client
(redis.cluster.RedisCluster) and `redis-cli -c`, both with a Redis Cluster upstream and with a
standalone upstream (--cluster-view yes); and redis-py's plain client with a cluster upstream.
Without --cluster-view the proxy in front of a standalone Redis is a standalone Redis."""

import subprocess

import pytest
import redis
from redis.cluster import RedisCluster as ClusterClient

from bp_cluster import key_slot, keys_in_distinct_slots
from bp_helpers import HOST, compare_with_redis, encode_command


@pytest.fixture(autouse=True)
def empty_cluster(redis_cluster):
    redis_cluster.flushall()


@pytest.fixture(params=["cluster", "standalone"])
def target(request, redis_cluster):
    """(proxy, stored) where stored(key) reads `key` straight from the upstream node."""
    if request.param == "cluster":
        p = request.getfixturevalue("cluster_proxy")()
        return p, lambda k: redis_cluster.node_for_key(k).command("GET", k)
    server = request.getfixturevalue("redis_instance")
    # In front of a standalone Redis the one-node cluster is shown only when asked for.
    p = request.getfixturevalue("proxy")("--cluster-view", "yes")
    return p, lambda k: server.client().get(k)


def cluster_client(p):
    return ClusterClient(host=HOST, port=p.port, socket_timeout=10)


def test_info_says_cluster_enabled(target):
    """redis-py's cluster client refuses a node whose INFO lacks cluster_enabled:1."""
    p, _ = target
    with p.raw() as c:
        info = c.command("INFO", "cluster")
        assert b"\r\ncluster_enabled:1\r\n" in info, info
        assert b"\r\ncluster_enabled:1\r\n" in c.command("INFO")


def test_redis_py_cluster_client_sees_one_node(target):
    p, _ = target
    rc = cluster_client(p)
    try:
        nodes = rc.get_nodes()
        assert [(n.host, n.port, n.server_type) for n in nodes] == [(HOST, p.port, "primary")]
        for k in ("a", "{user1}x", "key:42"):
            assert rc.cluster_keyslot(k) == key_slot(k)
    finally:
        rc.close()


def test_redis_py_cluster_client_set_get_mget(target):
    p, stored = target
    rc = cluster_client(p)
    try:
        keys = keys_in_distinct_slots("rpc", 100)
        for k in keys:
            assert rc.set(k, "v-" + k) is True
        for k in keys:
            assert rc.get(k) == ("v-" + k).encode()
            assert stored(k) == ("v-" + k).encode(), k
        assert rc.mget_nonatomic(keys + ["rpc:missing"]) == \
            [("v-" + k).encode() for k in keys] + [None]
        assert rc.mset_nonatomic({k: "m-" + k for k in keys[:50]}) == [True] * len(
            {key_slot(k) for k in keys[:50]})
        assert [stored(k) for k in keys[:50]] == [("m-" + k).encode() for k in keys[:50]]
        assert rc.exists(*keys) == 100
        assert rc.incr("rpc:counter") == 1
        assert rc.hset("rpc:h", mapping={"f": "1", "g": "2"}) == 2
        assert rc.hgetall("rpc:h") == {b"f": b"1", b"g": b"2"}
        assert rc.eval("return redis.call('GET', KEYS[1])", 1, keys[70]) == \
            ("v-" + keys[70]).encode()
        assert rc.delete(*keys) == 100
        assert rc.get(keys[0]) is None
        assert stored(keys[0]) is None
    finally:
        rc.close()


def test_redis_py_cluster_pipeline(target):
    p, stored = target
    rc = cluster_client(p)
    try:
        keys = keys_in_distinct_slots("rpp", 60)
        with rc.pipeline() as pipe:
            for i, k in enumerate(keys):
                pipe.set(k, i)
                pipe.incr(k)
                pipe.get(k)
            results = pipe.execute()
        expected = []
        for i in range(len(keys)):
            expected += [True, i + 1, str(i + 1).encode()]
        assert results == expected
        assert [stored(k) for k in keys] == [str(i + 1).encode() for i in range(len(keys))]
    finally:
        rc.close()


def test_redis_py_cluster_client_bf(target):
    p, _ = target
    rc = cluster_client(p)
    try:
        bf = rc.bf()
        keys = keys_in_distinct_slots("rpbf", 6)
        for k in keys:
            assert bf.create(k, 0.01, 1000) is True
            assert bf.add(k, "alpha") == 1
            assert bf.add(k, "alpha") == 0
            assert bf.madd(k, "beta", "gamma") == [1, 1]
            assert bf.exists(k, "beta") == 1
            assert bf.mexists(k, "alpha", "gamma", "never-added") == [1, 1, 0]
            info = bf.info(k)
            assert (info.capacity, info.insertedNum) == (1000, 3)
        with pytest.raises(redis.ResponseError, match=r"^item exists$"):
            bf.create(keys[0], 0.01, 1000)
        assert bf.add("{rpbf}auto", "x") == 1  # BF.ADD creates a filter
        assert bf.exists("{rpbf}auto", "x") == 1
    finally:
        rc.close()


def cli(port, *args, input=None):
    return subprocess.run(["redis-cli", "-c", "-h", HOST, "-p", str(port), *args], input=input,
                          capture_output=True, timeout=30)


def test_redis_cli_cluster_mode(target):
    p, stored = target
    keys = keys_in_distinct_slots("cli", 12)
    for k in keys:
        res = cli(p.port, "SET", k, "v " + k)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"OK\n", b""), k
    for k in keys:
        res = cli(p.port, "GET", k)
        assert (res.returncode, res.stdout) == (0, ("v " + k + "\n").encode()), k
        assert stored(k) == ("v " + k).encode()
    # One session, commands from stdin, keys in many slots: no redirection shows.
    script = "".join(f"INCR {k}:n\n" for k in keys) + "".join(f"GET {k}:n\n" for k in keys)
    res = cli(p.port, input=script.encode())
    assert res.returncode == 0, res.stderr
    assert res.stdout == b"1\n" * len(keys) * 2
    assert b"MOVED" not in res.stdout + res.stderr and b"Redirected" not in res.stdout


def test_plain_redis_py_against_cluster_proxy(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    r = p.client()
    keys = keys_in_distinct_slots("plain", 80)
    assert r.mset({k: "p-" + k for k in keys}) is True
    assert r.mget(keys + ["plain:none"]) == [("p-" + k).encode() for k in keys] + [None]
    for k in keys:
        assert redis_cluster.node_for_key(k).command("GET", k) == ("p-" + k).encode()
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.append(k, "+")
        pipe.get(k)
    assert pipe.execute() == [x for k in keys
                              for x in (len("p-" + k) + 1, ("p-" + k + "+").encode())]
    # A transaction within one slot.
    pipe = r.pipeline(transaction=True)
    pipe.set("{tx}a", 1).incr("{tx}b").mget("{tx}a", "{tx}b")
    assert pipe.execute() == [True, 1, [b"1", b"1"]]
    assert r.dbsize() == len(keys) + 2
    assert sorted(r.scan_iter(match="plain:*", count=100)) == sorted(k.encode() for k in keys)
    assert r.delete(*keys) == len(keys)
    assert r.dbsize() == 2


def test_standalone_upstream_looks_standalone(redis_instance, proxy):
    """Without --cluster-view, INFO and CLUSTER commands are the standalone upstream's own, byte
    for byte: a client does not wait for a cluster that is not there."""
    p = proxy()
    payload = b"".join(encode_command(*a) for a in (
        ("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"), ("CLUSTER", "NODES"), ("CLUSTER", "INFO"),
        ("CLUSTER", "MYID"), ("CLUSTER", "KEYSLOT", "a"), ("CLUSTER", "COUNTKEYSINSLOT", "1"),
        ("READONLY",), ("CLUSTER", "NOSUCH")))
    replies = compare_with_redis(p.port, redis_instance, payload, 9)
    assert replies[0] == b"-ERR This instance has cluster support disabled\r\n"
    with p.raw() as c:
        assert b"\r\ncluster_enabled:0\r\n" in c.command("INFO", "cluster")
        assert b"\r\ncluster_enabled:0\r\n" in c.command("INFO")
    assert p.client().info("cluster")["cluster_enabled"] == 0

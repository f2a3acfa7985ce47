"""TDIGEST.* through the client libraries applications use, unchanged, against bloomproxy:

- redis-py 4.3 (Debian's python3-redis): its own r.tdigest() was written for RedisBloom 2.2's
  t-digest protocol (CREATE key compression, ADD value weight pairs, MERGE to from, one
  quantile or cdf value); what each of its calls gives against RedisBloom 2.4's protocol, which
  the proxy speaks, is checked by hand. RedisBloom 2.4's API is driven as redis-py 4.4+'s
  r.tdigest() sends it (tdigest_clients.TDigest: its signatures, its arguments, its response
  callbacks, on redis-py 4.3's client): the sequences of redis-py's own t-digest tests
  (tests/test_bloom.py, test_tdigest_*) with the values they assert against RedisBloom; every
  recorded vector case, command by command; a pipeline and a MULTI/EXEC transaction of whole
  cases; redis-py's RedisCluster through a proxy in front of a Redis Cluster;
- node-redis 4.7 with @redis/bloom 1.2.0's client.tDigest (tests/integration/node/
  tdigest_client.js, run with Node.js; its packages are installed by scripts/deps.sh with
  `npm ci`): recorded vector cases call by call, and in one MULTI.

Expected values come from RedisBloom, never from the proxy: a client run of a vector case is run
twice, against the proxy and against a loopback server answering the bytes RedisBloom answered
to the same commands (cms_vectors.RecordedServer, which also checks that the client sent exactly
the recorded commands), and what the client makes of the two must be the same; redis-py's own
tests carry RedisBloom's values; the rest is small digests whose every reply follows by hand from
RedisBloom's rules (shared in the docstrings where used).
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster as ClusterClient

from bf_vectors import format_command
from bp_helpers import HOST
from cms_vectors import RecordedServer
from resp3_replay import expected_in_multi
from tdigest_clients import TDigest, drive, drive_pipeline, node_step, outcome, redis_py_call
from tdigest_vectors import TABLE_ARITY, load_cases, tagged

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = shutil.which("node")
CASES = load_cases()
IDS = [c["name"] for c in CASES]
BY_NAME = dict(zip(IDS, CASES))
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def arity(command):
    return f"wrong number of arguments for '{command}' command"


def against_recording(cmds, replies, run):
    """run(port) against a server answering `replies` to `cmds`; asserts the client sent exactly
    `cmds`. Returns what run returned."""
    server = RecordedServer(cmds, replies)
    try:
        result = run(server.port)
    finally:
        server.close()
    assert not server.problems, server.problems[:3]
    assert len(server.got) == len(cmds), f"{len(server.got)} of {len(cmds)} commands sent"
    return result


def differences(cmds, want, got, limit=3):
    """A report of the commands whose outcome differs ('' when none does)."""
    if not isinstance(got, list) or len(got) != len(want):
        return f"{len(want)} results expected, got {got!r:.1500}"
    bad = [i for i in range(len(want)) if want[i] != got[i]]
    lines = [f"  #{i} {format_command(cmds[i])}\n    RedisBloom: {want[i]!r:.400}\n"
             f"    proxy:      {got[i]!r:.400}" for i in bad[:limit]]
    return "" if not bad else f"{len(bad)} of {len(want)} differ:\n" + "\n".join(lines)


def queued_only(case):
    """The case's commands that MULTI queues (no table-arity refusal), with their replies."""
    keep = [i for i, (a, r) in enumerate(zip(case["cmds"], case["replies"]))
            if expected_in_multi(a, r, TABLE_ARITY)[0] == b"+QUEUED\r\n"]
    return [case["cmds"][i] for i in keep], [case["replies"][i] for i in keep]


# ---------------------------------------------------------------------------------------------
# redis-py 4.3's own r.tdigest()


def test_redis_py_43_tdigest_object(bp):
    """redis-py 4.3's r.tdigest() against RedisBloom 2.4's protocol: create(key, 100) sends 3
    arguments (an arity error: CREATE takes 2 or 4); add(key, values, weights) sends the weights
    as values (all added); merge(to, from) sends 3 arguments (arity); quantile/cdf get an array
    that redis-py's float() callback cannot take (TypeError); min, max, info and reset work.
    By hand, for 1.5 1 2.5 1 at compression 100: four centroids of weight 1 (no two can merge:
    each pair's weight times C/(2*pi*W*ln W) is far above q(1-q) <= 1/4), so quantile 0.5 is
    the third centroid (1.5), cdf(1.5) = (2 + 1/2)/4, rank(1.5) = 2.5 rounded half down."""
    r = bp.client()
    td = r.tdigest()
    plain = bp.client()
    with pytest.raises(redis.ResponseError) as exc:
        td.create("rp43:a", 100)
    assert str(exc.value) == arity("tdigest.create")
    assert r.exists("rp43:a") == 0
    assert r.execute_command("TDIGEST.CREATE", "rp43:a", "COMPRESSION", 100) is True
    assert td.add("rp43:a", [1.5, 2.5], [1.0, 1.0]) == b"OK"
    assert td.min("rp43:a") == 1.0 and td.max("rp43:a") == 2.5
    info = td.info("rp43:a")
    assert (info.compression, info.capacity, info.mergedNodes, info.unmergedNodes,
            info.mergedWeight, info.unmergedWeight, info.totalCompressions) == \
        (100, 610, 0, 4, 0, 4, 0)
    with pytest.raises(redis.ResponseError) as exc:
        td.merge("rp43:b", "rp43:a")
    assert str(exc.value) == arity("tdigest.merge")
    with pytest.raises(TypeError):
        td.quantile("rp43:a", 0.5)
    with pytest.raises(TypeError):
        td.cdf("rp43:a", 1.5)
    info = td.info("rp43:a")  # QUANTILE compressed the buffer: 4 centroids
    assert (info.mergedNodes, info.unmergedNodes, info.mergedWeight, info.unmergedWeight,
            info.totalCompressions) == (4, 0, 4, 0, 1)
    assert plain.execute_command("TDIGEST.QUANTILE", "rp43:a", 0.5) == [b"1.5"]
    assert plain.execute_command("TDIGEST.CDF", "rp43:a", 1.5) == [b"0.625"]
    assert plain.execute_command("TDIGEST.RANK", "rp43:a", 1.5, 0, 3) == [2, -1, 4]
    assert plain.execute_command("TDIGEST.REVRANK", "rp43:a", 1.5, 0, 3) == [1, 4, -1]
    assert td.reset("rp43:a") == b"OK"
    info = td.info("rp43:a")
    assert (info.compression, info.unmergedNodes, info.mergedNodes, info.totalCompressions) == \
        (100, 0, 0, 0)
    assert math.isnan(td.min("rp43:a")) and math.isnan(td.max("rp43:a"))
    with pytest.raises(redis.ResponseError, match=r"^T-Digest: key does not exist$"):
        td.min("rp43:none")
    assert r.set("rp43:s", "v") is True
    with pytest.raises(redis.ResponseError, match=r"^WRONGTYPE"):
        td.info("rp43:s")
    assert r.type("rp43:a") == b"TDIS-TYPE"


# ---------------------------------------------------------------------------------------------
# RedisBloom 2.4's API as redis-py 4.4+ sends it


def test_redis_py_own_tdigest_tests(bp):
    """The sequences of redis-py's tests/test_bloom.py (test_tdigest_reset, _merge,
    _min_and_max, _quantile, _cdf, _trimmed_mean, _rank, _revrank, _byrank, _byrevrank), each on
    keys of its own, with the values they assert against RedisBloom."""
    td = TDigest(bp.client(decode_responses=True))
    # reset
    assert td.create("rs:tDigest", 10)
    assert td.reset("rs:tDigest")
    assert td.add("rs:tDigest", list(range(10)))
    assert td.reset("rs:tDigest")
    assert td.info("rs:tDigest").unmergedNodes == 0
    # merge
    assert td.create("mg:to-tDigest", 10)
    assert td.create("mg:from-tDigest", 10)
    assert td.add("mg:from-tDigest", [1.0] * 10)
    assert td.add("mg:to-tDigest", [2.0] * 10)
    assert td.merge("mg:to-tDigest", 1, "mg:from-tDigest")
    info = td.info("mg:to-tDigest")
    assert 20 == float(info.mergedWeight) + float(info.unmergedWeight)
    assert td.create("mg:from-override", 10)
    assert td.create("mg:from-override-2", 10)
    assert td.add("mg:from-override", [3.0] * 10)
    assert td.add("mg:from-override-2", [4.0] * 10)
    assert td.merge("mg:to-tDigest", 2, "mg:from-override", "mg:from-override-2",
                    override=True)
    assert 3.0 == td.min("mg:to-tDigest")
    assert 4.0 == td.max("mg:to-tDigest")
    # min and max
    assert td.create("mm:tDigest", 100)
    assert td.add("mm:tDigest", [1, 2, 3])
    assert 3 == td.max("mm:tDigest")
    assert 1 == td.min("mm:tDigest")
    # quantile
    assert td.create("q:tDigest", 500)
    assert td.add("q:tDigest", list([x * 0.01 for x in range(1, 10000)]))
    assert td.max("q:tDigest") == td.quantile("q:tDigest", 1.0)[0]
    assert td.min("q:tDigest") == td.quantile("q:tDigest", 0.0)[0]
    assert 1.0 == round(td.quantile("q:tDigest", 0.01)[0], 2)
    assert 99.0 == round(td.quantile("q:tDigest", 0.99)[0], 2)
    assert td.create("q:t-digest", 100)
    assert td.add("q:t-digest", [1, 2, 3, 4, 5])
    assert [3.0, 5.0] == td.quantile("q:t-digest", 0.5, 0.8)
    # cdf
    assert td.create("c:tDigest", 100)
    assert td.add("c:tDigest", list(range(1, 10)))
    assert 0.1 == round(td.cdf("c:tDigest", 1.0)[0], 1)
    assert 0.9 == round(td.cdf("c:tDigest", 9.0)[0], 1)
    assert [0.1, 0.9] == [round(x, 1) for x in td.cdf("c:tDigest", 1.0, 9.0)]
    # trimmed mean
    assert td.create("tm:tDigest", 100)
    assert td.add("tm:tDigest", list(range(1, 10)))
    assert 5 == td.trimmed_mean("tm:tDigest", 0.1, 0.9)
    assert 4.5 == td.trimmed_mean("tm:tDigest", 0.4, 0.5)
    # rank, revrank
    for key in ("rk:t-digest", "rv:t-digest"):
        assert td.create(key, 500)
        assert td.add(key, list(range(0, 20)))
    assert -1 == td.rank("rk:t-digest", -1)[0]
    assert 0 == td.rank("rk:t-digest", 0)[0]
    assert 10 == td.rank("rk:t-digest", 10)[0]
    assert [-1, 20, 9] == td.rank("rk:t-digest", -20, 20, 9)
    assert -1 == td.revrank("rv:t-digest", 20)[0]
    assert 19 == td.revrank("rv:t-digest", 0)[0]
    assert [-1, 19, 9] == td.revrank("rv:t-digest", 21, 0, 10)
    # byrank, byrevrank
    for key in ("br:t-digest", "bv:t-digest"):
        assert td.create(key, 500)
        assert td.add(key, list(range(1, 11)))
    assert 1 == td.byrank("br:t-digest", 0)[0]
    assert 10 == td.byrank("br:t-digest", 9)[0]
    assert td.byrank("br:t-digest", 100)[0] == math.inf
    with pytest.raises(redis.ResponseError):
        td.byrank("br:t-digest", -1)
    assert 10 == td.byrevrank("bv:t-digest", 0)[0]
    assert 1 == td.byrevrank("bv:t-digest", 9)[0]
    assert td.byrevrank("bv:t-digest", 100)[0] == -math.inf
    with pytest.raises(redis.ResponseError):
        td.byrevrank("bv:t-digest", -1)


def test_vector_commands_map_to_client_calls():
    """Most vector commands are sent through a client method (the rest as they are); the
    mapping sends exactly the recorded bytes (redis_py_call checks it by sending to a capture)."""
    cmds = [a for c in CASES for a in c["cmds"] if a[0].startswith(b"TDIGEST.")]
    via_redis_py = [a for a in cmds if redis_py_call(a)]
    via_node = [a for a in cmds if "m" in node_step(a)]
    assert len(via_redis_py) > 0.8 * len(cmds) and len(via_node) > 0.8 * len(cmds), \
        (len(via_redis_py), len(via_node), len(cmds))
    methods = {redis_py_call(a)[0] for a in via_redis_py}
    assert methods == {"create", "reset", "add", "merge", "min", "max", "info", "quantile",
                       "cdf", "trimmed_mean", "rank", "revrank", "byrank", "byrevrank"}
    assert {node_step(a)["m"] for a in via_node} == {
        "create", "reset", "add", "merge", "min", "max", "info", "quantile", "cdf",
        "trimmedMean", "rank", "revRank", "byRank", "byRevRank"}
    assert redis_py_call([b"TDIGEST.MERGE", b"d", b"2", b"a", b"b", b"COMPRESSION", b"5",
                          b"OVERRIDE"]) == ("merge", ["d", 2, "a", "b"],
                                            {"compression": 5, "override": True})
    assert redis_py_call([b"TDIGEST.MERGE", b"d", b"1", b"a", b"OVERRIDE", b"COMPRESSION",
                          b"5"]) is None
    assert redis_py_call([b"TDIGEST.QUANTILE", b"k", b"0.50"]) == ("quantile", ["k", "0.50"], {})
    assert node_step([b"TDIGEST.MERGE", b"d", b"2", b"a", b"b", b"OVERRIDE"]) == \
        {"m": "merge", "a": ["d", ["a", "b"]], "opts": {"OVERRIDE": True}}
    assert node_step([b"tdigest.min", b"k"]) == {"raw": [b"tdigest.min".hex(), b"k".hex()]}


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_vector_case_through_redis_py(index, bp):
    """The case command by command through redis-py (TDigest's method where one sends the
    command, else execute_command): each result (or error) as against RedisBloom."""
    case = CASES[index]
    want = against_recording(case["cmds"], case["replies"],
                             lambda port: drive(redis.Redis(host=HOST, port=port,
                                                            socket_timeout=10), case["cmds"]))
    got = drive(bp.client(), case["cmds"])
    problem = differences(case["cmds"], want, got)
    assert not problem, f"case {case['name']}: {problem}"


PIPELINE_CASES = ["small_exact_1", "one_observation", "merge_basic", "merge_errors",
                  "add_errors", "read_side_effects"]


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
@pytest.mark.parametrize("name", PIPELINE_CASES)
def test_vector_case_in_one_pipeline(name, transaction, bp):
    """The case's commands (those MULTI queues) in one redis-py pipeline, and in one MULTI/EXEC
    transaction: every result, errors in place, as against RedisBloom (for the transaction, the
    recorded replies as EXEC's elements)."""
    cmds, replies = queued_only(BY_NAME[name])
    if transaction:
        cmds = [[b"MULTI"]] + cmds + [[b"EXEC"]]
        replies = [b"+OK\r\n"] + [b"+QUEUED\r\n"] * (len(cmds) - 2) + \
            [b"*%d\r\n" % (len(cmds) - 2) + b"".join(replies)]
    inner = cmds[1:-1] if transaction else cmds
    want = against_recording(cmds, replies, lambda port: drive_pipeline(
        redis.Redis(host=HOST, port=port, socket_timeout=10), inner, transaction))
    got = drive_pipeline(bp.client(), inner, transaction)
    assert isinstance(want, list), want
    problem = differences(inner, want, got)
    assert not problem, f"case {name} in one {'MULTI' if transaction else 'pipeline'}: {problem}"


CLUSTER_CASES = ["small_exact_2", "duplicates", "merge_basic", "merge_unmerged_empty_single",
                 "weight_overflow", "huge_weights", "buffer_boundary"]


def test_redis_py_cluster_client(redis_cluster, cluster_proxy):
    """redis-py's RedisCluster through a proxy in front of a Redis Cluster: vector cases with
    their keys under one hash tag each (MERGE's keys in one slot), spread over the masters,
    every result as a plain client gets against RedisBloom; COMMAND GETKEYS of a MERGE names
    the destination and the sources, as RedisBloom's key spec does."""
    redis_cluster.flushall()
    p = cluster_proxy()
    rc = ClusterClient(host=HOST, port=p.port, socket_timeout=10)
    try:
        served = set()
        for i, name in enumerate(CLUSTER_CASES):
            case = tagged(BY_NAME[name], b"{rc%d}" % i)
            assert all(a[0].upper().startswith(b"TDIGEST.") or a[0] == b"EXISTS"
                       for a in case["cmds"]), name
            served.add(redis_cluster.node_for_key(case["keys"][0]).port)
            want = against_recording(case["cmds"], case["replies"], lambda port: drive(
                redis.Redis(host=HOST, port=port, socket_timeout=10), case["cmds"]))
            got = drive(rc, case["cmds"])
            problem = differences(case["cmds"], want, got)
            assert not problem, f"case {name} through RedisCluster: {problem}"
        assert len(served) == 3, served
        assert rc.execute_command("COMMAND GETKEYS", "TDIGEST.MERGE", "{a}d", 3, "{a}x", "{a}y",
                                  "{a}z", "OVERRIDE", target_nodes=ClusterClient.RANDOM) == \
            ["{a}d", "{a}x", "{a}y", "{a}z"]  # RedisCluster's callback gives text
        assert rc.type("{rc0}td1:s2") == b"TDIS-TYPE"
        assert rc.delete("{rc0}td1:s2") == 1 and rc.exists("{rc0}td1:s2") == 0
    finally:
        rc.close()


# ---------------------------------------------------------------------------------------------
# node-redis

NODE_CASES = ["create_info", "one_observation", "small_exact_3", "quantile_args",
              "cdf_rank_args", "byrank_args", "trimmed_mean", "merge_basic", "merge_errors",
              "reset", "arity_and_case", "extreme_values", "read_side_effects"]
NODE_MULTI_CASES = ["small_exact_0", "merge_basic", "add_errors"]


def run_node(port, mode, cmds):
    """tdigest_client.js against `port`: the steps of `cmds` one by one ("plain") or all in one
    MULTI ("multi"). Returns its JSON output."""
    steps = [node_step(a) for a in cmds]
    res = subprocess.run([NODE, "tdigest_client.js", str(port), mode], cwd=NODE_DIR,
                         input=json.dumps(steps).encode(), capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-3000:]
    return json.loads(res.stdout)


def check_node_installed():
    assert (NODE_DIR / "node_modules" / "@redis" / "bloom").is_dir(), \
        "node-redis is not installed: run `npm ci --prefix tests/integration/node` " \
        "(scripts/deps.sh does)"


@pytest.mark.skipif(NODE is None, reason="Node.js (node) is not installed; scripts/deps.sh "
                                         "installs it with the node-redis packages")
@pytest.mark.parametrize("name", NODE_CASES)
def test_node_redis_tdigest_case(name, bp, redis_instance):
    """node-redis 4.7's client.tDigest (create, add, merge with COMPRESSION/OVERRIDE, min, max,
    quantile, cdf, trimmedMean, rank, revRank, byRank, byRevRank, info, reset; sendCommand for
    the commands no method sends as recorded): every step's result as against RedisBloom."""
    check_node_installed()
    case = BY_NAME[name]
    want = against_recording(case["cmds"], case["replies"],
                             lambda port: run_node(port, "plain", case["cmds"]))
    got = run_node(bp.port, "plain", case["cmds"])
    problem = differences(case["cmds"], want, got)
    assert not problem, f"case {name} through node-redis: {problem}"


@pytest.mark.skipif(NODE is None, reason="Node.js (node) is not installed; scripts/deps.sh "
                                         "installs it with the node-redis packages")
@pytest.mark.parametrize("name", NODE_MULTI_CASES)
def test_node_redis_tdigest_multi(name, bp):
    """The case's commands (those MULTI queues) in one node-redis MULTI: exec()'s result (or
    its error with the replies in place) as against RedisBloom."""
    check_node_installed()
    cmds, replies = queued_only(BY_NAME[name])
    recorded_cmds = [[b"MULTI"]] + cmds + [[b"EXEC"]]
    recorded = [b"+OK\r\n"] + [b"+QUEUED\r\n"] * len(cmds) + \
        [b"*%d\r\n" % len(cmds) + b"".join(replies)]
    want = against_recording(recorded_cmds, recorded, lambda port: run_node(port, "multi", cmds))
    got = run_node(bp.port, "multi", cmds)
    assert got == want, f"case {name} in one node-redis MULTI:\n  RedisBloom: {want!r:.1500}\n" \
                        f"  proxy:      {got!r:.1500}"


def test_outcomes_compare_exactly():
    """Outcomes tell nan from a number, -0.0 from 0.0, an error from its text."""
    assert outcome(float("nan")) == outcome(float("-nan"))
    assert outcome(-0.0) != outcome(0.0)
    assert outcome(redis.ResponseError("x")) != "x"
    assert outcome([1.0, 2]) == [("float", "1.0"), 2]

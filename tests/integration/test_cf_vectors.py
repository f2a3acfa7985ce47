"""CF.* byte-exactness: every case of tests/fixtures/cf/cf-cases.json (recorded against Redis with
RedisBloom: 24 cases, 3210 commands) replayed through bloomproxy must give the recorded raw
replies, byte for byte:

- in front of a plain redis-server, with the default data-key size and with
  --bf-max-shard-bytes 64 (every sub-filter split over many keys), in RESP2 and after HELLO 3
  (cf-resp3-expected.json, recorded after HELLO 3), and each command alone inside MULTI/EXEC;
- in front of a 3-master Redis Cluster, with the case keys as recorded (a RENAME across slots
  answers CROSSSLOT and ends the case) and with all keys of a case under one hash tag, in RESP2
  and RESP3;
- behind nutcracker (upstream-kind sharding-proxy), keys as recorded and tagged; RENAME is
  refused there (bloomproxy's refusal ends the case).

After each replay the upstream holds only the case's names and their internal keys, each on the
server (and in the slot) of its name, laid out as documented (cf_vectors.read_filter).
"""

import pytest

from bf_vectors import key_hash_slot, replay_case
from cf_vectors import (FIXTURES, as_cluster_answers, check_layout, load_cases, names_a_key,
                        tagged)
from cms_vectors import cut_case
from resp3_replay import Resp3Conn, replay_in_multi, with_resp3_replies
from test_cluster_bf import keys_on_masters
from test_sharding_bf import assert_no_upstream_errors, refusal, server_index
from vector_replay import (KEY_MODES, assert_cluster_cases_spread, assert_sharding_cases_spread,
                           case_for_cluster)

CASES = load_cases()
RESP3_CASES = with_resp3_replies(CASES, FIXTURES / "cf-resp3-expected.json")
IDS = [c["name"] for c in CASES]
SHARD_MODES = {"default": (), "shards64": ("--bf-max-shard-bytes", "64")}
# What bloomproxy refuses behind a sharding proxy (nutcracker forwards none of them).
REFUSED = {b"RENAME", b"RENAMENX", b"OBJECT"}
TRANSACTIONS = {b"MULTI", b"EXEC", b"DISCARD"}


def cluster_case(mode, index, cases=CASES):
    """Case `index` for a cluster: keys as recorded (cut where slots differ) or all under the
    tag {t<index>} (one slot per case, the cases spread over the masters)."""
    return case_for_cluster(cases, index, mode, tagged, as_cluster_answers)


def sharding_case(mode, index):
    """Case `index` behind nutcracker, keys as recorded or under the tag {<index>:t}; RENAME,
    RENAMENX and OBJECT get bloomproxy's refusal and end the case, COMMAND (which nutcracker does
    not forward) ends it before, and so does MULTI (neither does it)."""
    case = CASES[index]
    if mode == "tagged":
        case = tagged(case, b"{%d:t}" % index)
    for i, args in enumerate(case["cmds"]):
        if args[0].upper() in REFUSED:
            return cut_case(case, i, refusal(args[0]))
        if names_a_key(args) or args[0].upper() in TRANSACTIONS:
            return cut_case(case, i)
    return case


def standalone_layout(redis_instance, case, label, shard_bytes=None):
    direct = redis_instance.client()
    where = {k: 0 for k in direct.keys("*")}
    check_layout(where, case["keys"], lambda name: 0, lambda _: direct, label, shard_bytes)


# ---------------------------------------------------------------------------------------------
# The vectors themselves


def test_vectors_are_complete():
    assert len(CASES) == 24, IDS
    assert sum(len(c["cmds"]) for c in CASES) == 3210


def test_key_mapping_is_sound():
    """No item of the vectors spells a case key (so tagging every argument that does is sound),
    and the tagged cluster cases keep every reply up to their first COMMAND."""
    for case in CASES:
        for args in case["cmds"]:
            if args[0].upper().startswith(b"CF.") and len(args) > 2:
                assert not set(args[2:]) & set(case["keys"]), f"{case['name']}: {args[:4]}"
    for i, case in enumerate(CASES):
        mapped = cluster_case("tagged", i)
        assert mapped["replies"] == case["replies"][:len(mapped["replies"])]
        assert len({key_hash_slot(k) for k in mapped["keys"]}) == 1
    assert len(cluster_case("tagged", IDS.index("key_level"))["cmds"]) >= 30


# ---------------------------------------------------------------------------------------------
# Standalone


@pytest.mark.parametrize("shards", sorted(SHARD_MODES))
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_standalone_case(index, shards, proxy, redis_instance):
    """The case in RESP2, then again (its keys deleted first) after HELLO 3: RedisBloom's RESP3
    replies, byte for byte."""
    p = proxy(*SHARD_MODES[shards])
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, CASES[index])
    assert not problem, f"[{shards}] {problem}"
    shard_bytes = 64 if shards == "shards64" else None
    standalone_layout(redis_instance, CASES[index], f"[{shards}]", shard_bytes)
    with Resp3Conn(p.port, timeout=30) as conn:
        conn.hello(3)
        problem = replay_case(conn, RESP3_CASES[index])
    assert not problem, f"[{shards}, RESP3] {problem}"
    standalone_layout(redis_instance, CASES[index], f"[{shards}, RESP3]", shard_bytes)


def in_multi_alone(case):
    """`case` without its own transactions (and what follows the first) and its COMMAND GETKEYS."""
    keep = [i for i, a in enumerate(case["cmds"])
            if a[0].upper() not in TRANSACTIONS and not names_a_key(a)]
    in_multi = {i for i, a in enumerate(case["cmds"]) if a[0].upper() == b"MULTI"}
    if in_multi:
        keep = [i for i in keep if i < min(in_multi)]
    return dict(case, cmds=[case["cmds"][i] for i in keep],
                replies=[case["replies"][i] for i in keep])


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_case_command_by_command_in_multi(index, proxy):
    """Each CF command of the case alone in MULTI/EXEC, in RESP2 and after HELLO 3: the same reply
    as EXEC's one element (or Redis's arity refusal when queued, then EXECABORT)."""
    p = proxy()
    for protocol, cases in ((2, CASES), (3, RESP3_CASES)):
        with Resp3Conn(p.port, timeout=30) as conn:
            if protocol == 3:
                conn.hello(3)
            problem = replay_in_multi(conn, in_multi_alone(cases[index]))
        assert not problem, f"[RESP{protocol}] {problem}"


# ---------------------------------------------------------------------------------------------
# Redis Cluster


@pytest.mark.parametrize("keys", KEY_MODES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_cluster_case(index, keys, redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    case = cluster_case(keys, index)
    p = cluster_proxy()
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, f"[cluster, {keys}] {problem}"
    check_layout(keys_on_masters(redis_cluster), case["keys"],
                 lambda name: redis_cluster.node_for_key(name).port,
                 lambda port: redis_cluster.by_port(port).client(), f"[cluster, {keys}]")


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_cluster_case_resp3(index, redis_cluster, cluster_proxy):
    """The case, all its keys under one hash tag, after HELLO 3: RedisBloom's RESP3 replies."""
    redis_cluster.flushall()
    case = cluster_case("tagged", index, RESP3_CASES)
    p = cluster_proxy()
    with Resp3Conn(p.port, timeout=30) as conn:
        conn.hello(3)
        problem = replay_case(conn, case)
    assert not problem, f"[cluster, tagged, RESP3] {problem}"


def test_cluster_cases_spread_over_masters(redis_cluster):
    assert_cluster_cases_spread(redis_cluster, len(CASES), cluster_case)


# ---------------------------------------------------------------------------------------------
# Behind nutcracker


@pytest.mark.parametrize("keys", KEY_MODES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_sharding_case(index, keys, twemproxy, sharding_proxy):
    twemproxy.flushall()
    case = sharding_case(keys, index)
    p = sharding_proxy()
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, f"[nutcracker, {keys}] {problem}"
    check_layout(twemproxy.keys_by_server(), case["keys"],
                 lambda name: server_index(twemproxy, name),
                 lambda i: twemproxy.servers[i].client(), f"[nutcracker, {keys}]")
    assert_no_upstream_errors(p)


def test_sharding_tagged_cases_spread_over_servers(twemproxy):
    assert_sharding_cases_spread(twemproxy, len(CASES), sharding_case, server_index)

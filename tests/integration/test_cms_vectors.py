"""CMS.* byte-exactness: every case of tests/fixtures/cms/cms-cases.json (recorded against Redis
with RedisBloom) replayed through bloomproxy must give the recorded raw RESP2 replies, byte for
byte:

- in front of a plain redis-server, with the default part size and with --bf-max-shard-bytes 64;
- in front of a 3-master Redis Cluster, with the case keys as recorded (a RENAME across slots
  answers CROSSSLOT and ends the case; a CMS.MERGE across slots ends it before: test_cms.py
  checks that answer) and with all keys of a case under one hash tag (every case whole);
- behind nutcracker (upstream-kind sharding-proxy), keys as recorded and tagged; RENAME is
  refused there (bloomproxy's refusal ends the case) and a CMS.MERGE of names without a shared
  tag ends the case before it;
- read by redis-cli (--no-raw shows reply types): its output through the proxy equals its
  output from a server that answers the recorded bytes.

After each replay the upstream holds only the case's names and their internal keys, each on the
server (and in the slot) of its name, laid out as documented (cms_vectors.read_sketch).

The same cases replayed after HELLO 3 on standalone Redis (both part sizes) and on the cluster
(keys under one tag) must give RedisBloom's RESP3 replies (cms-resp3-expected.json, recorded
after HELLO 3), byte for byte.
"""

import pytest

from bf_vectors import format_command, key_hash_slot, replay_case, shorten
from cms_vectors import (CROSSSLOT, FIXTURES, FOREIGN, RecordedServer, as_cluster_answers,
                         check_layout, cut_case, key_positions, load_cases, merge_names,
                         model_reply, run_cli, tagged)
from resp3_replay import Resp3Conn, with_resp3_replies
from test_cluster_bf import keys_on_masters
from test_sharding_bf import assert_no_upstream_errors, refusal, server_index
from vector_replay import (KEY_MODES, assert_cluster_cases_spread, assert_sharding_cases_spread,
                           case_for_cluster)

CASES = load_cases()
RESP3_CASES = with_resp3_replies(CASES, FIXTURES / "cms-resp3-expected.json")
IDS = [c["name"] for c in CASES]
PART_MODES = {"default": (), "parts64": ("--bf-max-shard-bytes", "64")}
RENAMES = {b"RENAME", b"RENAMENX"}
ARITY = b"-ERR wrong number of arguments for "
# Commands of the vectors that create no key (or fail on a missing one): the model ignores them.
READ_ONLY = {b"EXISTS", b"TYPE", b"GET", b"TTL", b"BF.EXISTS", b"CMS.QUERY", b"CMS.INFO"}


def cluster_case(mode, index):
    """Case `index` for a cluster: keys as recorded ("plain", cut where slots differ) or all
    under the tag {t<index>} ("tagged": one slot per case, the cases spread over the masters)."""
    return case_for_cluster(CASES, index, mode, tagged, as_cluster_answers)


def sharding_case(mode, index):
    """Case `index` behind nutcracker: keys as recorded or under the tag {<index>:t} (tags that
    differ only at their end tend to share a server under fnv1a_64: see test_sharding_bf.py).
    RENAME/RENAMENX get bloomproxy's refusal and end the case; in "plain" mode a CMS.MERGE of
    several names (no shared tag) ends the case before it."""
    case = CASES[index]
    if mode == "tagged":
        case = tagged(case, b"{%d:t}" % index)
    for i, args in enumerate(case["cmds"]):
        if args[0].upper() in RENAMES:
            return cut_case(case, i, refusal(args[0]))
        if mode == "plain" and len(merge_names(args)) > 1:
            return cut_case(case, i)
    return case


# ---------------------------------------------------------------------------------------------
# The vectors themselves


def test_vectors_are_complete():
    assert len(CASES) == 19, IDS
    assert sum(len(c["cmds"]) for c in CASES) == 497


def test_reference_model_agrees_with_vectors():
    """The Python model of a RedisBloom sketch (cms_vectors.ModelSketch), which test_cms.py uses
    for exact expectations, predicts every recorded reply it covers. No proxy involved."""
    compared = 0
    for case in CASES:
        sketches = {}
        for args, expected in zip(case["cmds"], case["replies"]):
            if args[0].upper() in (b"DEL", b"UNLINK", b"RENAME", b"RENAMENX"):
                break  # key-level changes are outside the model: stop this case here
            got = model_reply(sketches, args)
            if got is None:
                # A key the model does not hold (a string, a filter, an INITBYPROB sketch)
                # exists from a successful write on: the model answers nothing on it but
                # "key already exists".
                if args[0].upper() not in READ_ONLY and not expected.startswith(b"-") and \
                        len(args) > 1 and args[1] not in sketches:
                    sketches[args[1]] = FOREIGN
                continue
            compared += 1
            assert got == expected, (f"model vs vector in {case['name']}: "
                                     f"{format_command(args)}\n  vector: {shorten(expected)}\n"
                                     f"  model:  {shorten(got)}")
    assert compared >= 200, compared


def test_key_mapping_is_sound():
    """Renaming keys is sound (a case key appears only at key positions, no reply names a key);
    the tagged cases keep all their replies; the plain cases cut on a cluster and behind
    nutcracker are the ones with multi-key commands."""
    for case in CASES:
        for args, reply in zip(case["cmds"], case["replies"]):
            positions = set(key_positions(args))
            others = [a for i, a in enumerate(args[1:], 1) if i not in positions]
            # An extra argument that is a case key only ever comes with an arity error, which
            # does not depend on it (CMS.INFO cms1:n1 cms1:n2).
            assert not set(others) & set(case["keys"]) or reply.startswith(ARITY), \
                f"{case['name']}: {args[:6]}"
            assert not any(k in reply for k in case["keys"]), f"{case['name']}: {reply[:80]!r}"
    for i, case in enumerate(CASES):
        assert cluster_case("tagged", i)["replies"] == case["replies"]
        assert len({key_hash_slot(k) for k in cluster_case("tagged", i)["keys"]}) == 1
    cut = [CASES[i]["name"] for i in range(len(CASES))
           if len(cluster_case("plain", i)["cmds"]) < len(CASES[i]["cmds"])]
    assert {"merge_basic", "key_level"} <= set(cut), cut
    assert len(cut) < len(CASES) / 2, cut
    renamed = cluster_case("plain", IDS.index("key_level"))
    assert renamed["cmds"][-1][0] == b"RENAME" and renamed["replies"][-1] == CROSSSLOT
    with_rename = [i for i, c in enumerate(CASES)
                   if any(a[0].upper() in RENAMES for a in c["cmds"])]
    assert with_rename, "no case has a RENAME"
    for i in with_rename:
        case = sharding_case("tagged", i)
        assert case["replies"][-1] == refusal(case["cmds"][-1][0]), CASES[i]["name"]


# ---------------------------------------------------------------------------------------------
# Standalone


@pytest.mark.parametrize("parts", sorted(PART_MODES))
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_standalone_case(index, parts, proxy, redis_instance):
    case = CASES[index]
    p = proxy(*PART_MODES[parts])
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, f"[{parts}] {problem}"
    direct = redis_instance.client()
    where = {k: 0 for k in direct.keys("*")}
    check_layout(where, case["keys"], lambda name: 0, lambda _: direct, f"[{parts}]")


@pytest.mark.parametrize("parts", sorted(PART_MODES))
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_standalone_case_resp3(index, parts, proxy, redis_instance):
    """The case after HELLO 3 on the connection: RedisBloom's RESP3 replies, byte for byte."""
    case = RESP3_CASES[index]
    p = proxy(*PART_MODES[parts])
    with Resp3Conn(p.port, timeout=30) as conn:
        conn.hello(3)
        problem = replay_case(conn, case)
    assert not problem, f"[{parts}, RESP3] {problem}"
    direct = redis_instance.client()
    where = {k: 0 for k in direct.keys("*")}
    check_layout(where, case["keys"], lambda name: 0, lambda _: direct, f"[{parts}, RESP3]")


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_case_read_by_redis_cli(index, proxy):
    """redis-cli --no-raw prints the same through the proxy as from the recorded replies."""
    case = CASES[index]
    server = RecordedServer(case["cmds"], case["replies"])
    try:
        recorded = run_cli(server.port, case["cmds"])
    finally:
        server.close()
    assert not server.problems and len(server.got) == len(case["cmds"]), server.problems[:3]
    p = proxy()
    through_proxy = run_cli(p.port, case["cmds"])
    if through_proxy != recorded:
        rec, got = recorded.split(b"\n"), through_proxy.split(b"\n")
        first = next((i for i in range(min(len(rec), len(got))) if rec[i] != got[i]),
                     min(len(rec), len(got)))
        raise AssertionError(f"case {case['name']}: redis-cli output differs at line {first}:\n"
                             f"  recorded: {rec[first:first + 3]}\n"
                             f"  proxy:    {got[first:first + 3]}")


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
    case = tagged(RESP3_CASES[index], b"{t%d}" % index)
    p = cluster_proxy()
    with Resp3Conn(p.port, timeout=30) as conn:
        conn.hello(3)
        problem = replay_case(conn, case)
    assert not problem, f"[cluster, tagged, RESP3] {problem}"
    check_layout(keys_on_masters(redis_cluster), case["keys"],
                 lambda name: redis_cluster.node_for_key(name).port,
                 lambda port: redis_cluster.by_port(port).client(), "[cluster, tagged, RESP3]")


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

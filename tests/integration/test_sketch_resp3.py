"""BF.* and CMS.* replies to a RESP3 client (HELLO 3; filters/common/sketch_resp3.h): byte for byte
RedisBloom's, which differ from its RESP2 replies in three ways only (0/1 meaning false/true
become #f/#t, key/value INFO replies become maps, the null becomes `_`).

- `as_resp3` below states those rules on its own (Python, from the spec) and is checked against
  every recorded RedisBloom reply (tests/fixtures/{bf,cms}/*-resp3-expected.json) first; the
  random sequences then use it as their oracle;
- every kind of reply, explicitly, with HELLO 3 and HELLO 2 switching in the middle of a
  pipeline and inside a transaction (each command answers in the protocol in force when it
  runs, as Redis writes EXEC's elements);
- every recorded command alone inside MULTI/EXEC, in both protocols: the recorded reply as
  EXEC's element (or, refused when queued, the recorded error and EXECABORT);
- random sequences of BF and CMS commands (test_multi_bf.py's and test_multi_cms.py's
  generators): RESP3 replies outside MULTI are the RESP2 replies of the same commands under
  the rules, and inside MULTI the same bytes as outside;
- a RESP2 and a RESP3 client pipelining into batches on the same filter at once: each gets
  its own protocol.

Standalone Redis, and (where marked `upstream`) a Redis Cluster too.
"""

import random
import threading

import pytest

from bf_vectors import FIXTURES as BF_FIXTURES
from bf_vectors import chain_links, info_size
from bf_vectors import load_cases as load_bf_cases
from bp_helpers import Err, RawConn, Simple, encode_command as cmd, exec_block, exec_elements, parse_resp
from cms_vectors import FIXTURES as CMS_FIXTURES
from cms_vectors import load_cases as load_cms_cases
from resp3_replay import Resp3Conn, replay_in_multi, with_resp3_replies
from test_multi_bf import FLAGS as BF_FLAGS
from test_multi_bf import Generator, names_of, run_plain
from test_multi_cms import PARTS64, named, random_command, setup_commands

BF2 = load_bf_cases()
BF3 = with_resp3_replies(BF2, BF_FIXTURES / "bf-resp3-expected.json")
CMS2 = load_cms_cases()
CMS3 = with_resp3_replies(CMS2, CMS_FIXTURES / "cms-resp3-expected.json")
RECORDED = {(2, "bf"): BF2, (3, "bf"): BF3, (2, "cms"): CMS2, (3, "cms"): CMS3}

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
INFO_LABELS = {b"CAPACITY": b"Capacity", b"SIZE": b"Size", b"FILTERS": b"Number of filters",
               b"ITEMS": b"Number of items inserted", b"EXPANSION": b"Expansion rate"}
BOOLEANS = {b"BF.ADD", b"BF.EXISTS"}
BOOLEAN_ARRAYS = {b"BF.MADD", b"BF.INSERT", b"BF.MEXISTS"}


# ---------------------------------------------------------------------------------------------
# The rules, stated on their own


def encode2(value):
    """RESP2 bytes of a value parsed by bp_helpers.parse_resp."""
    if isinstance(value, Simple):
        return b"+" + value + b"\r\n"
    if isinstance(value, Err):
        return b"-" + value + b"\r\n"
    if isinstance(value, int):
        return b":%d\r\n" % value
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, bytes):
        return b"$%d\r\n%s\r\n" % (len(value), value)
    return b"*%d\r\n" % len(value) + b"".join(encode2(v) for v in value)


def as_resp3(args, raw):
    """RedisBloom's RESP3 reply to command `args` whose RESP2 reply is `raw`."""
    args = [a.encode() if isinstance(a, str) else a for a in args]
    name = args[0].upper()
    if raw.startswith(b"-"):
        return raw
    value, end = parse_resp(raw)
    assert end == len(raw), raw

    def boolean(v):
        if isinstance(v, int) and v in (0, 1):
            return b"#t\r\n" if v else b"#f\r\n"
        return encode2(v)

    def info_value(v):
        return b"_\r\n" if v is None else encode2(v)

    if name in BOOLEANS:
        return boolean(value)
    if name in BOOLEAN_ARRAYS:
        return b"*%d\r\n" % len(value) + b"".join(boolean(v) for v in value)
    if name in (b"BF.INFO", b"CMS.INFO") and len(args) == 2:
        return b"%%%d\r\n" % (len(value) // 2) + b"".join(
            encode2(v) if i % 2 == 0 else info_value(v) for i, v in enumerate(value))
    if name == b"BF.INFO" and len(args) == 3:
        assert len(value) == 1, raw
        return b"%1\r\n+" + INFO_LABELS[args[2].upper()] + b"\r\n" + info_value(value[0])
    return raw


def test_rules_agree_with_every_recording():
    """No proxy: the rules turn every recorded RESP2 reply into the recorded RESP3 one."""
    changed = set()
    for family in ("bf", "cms"):
        for case2, case3 in zip(RECORDED[(2, family)], RECORDED[(3, family)]):
            for args, raw2, raw3 in zip(case2["cmds"], case2["replies"], case3["replies"]):
                assert as_resp3(args, raw2) == raw3, (family, case2["name"], args[:3])
                if raw2 != raw3:
                    changed.add(args[0].upper())
    assert changed == {b"BF.ADD", b"BF.EXISTS", b"BF.MADD", b"BF.INSERT", b"BF.MEXISTS",
                       b"BF.INFO", b"CMS.INFO"}


UPSTREAMS = ["standalone", "cluster"]


def start_proxy_on(request, upstream, *flags):
    """bloomproxy in front of a fresh redis-server, or of the module's Redis Cluster (flushed)."""
    if upstream == "cluster":
        request.getfixturevalue("redis_cluster").flushall()
        return request.getfixturevalue("cluster_proxy")(*flags)
    return request.getfixturevalue("proxy")(*flags)


def tag(upstream, name):
    """`name` as it is, or (cluster) as a hash tag of its own, so that a transaction's keys share
    one slot."""
    return f"{{{name}}}" if upstream == "cluster" else name


def resp3_conn(p, timeout=30):
    conn = Resp3Conn(p.port, timeout=timeout)
    conn.hello(3)
    return conn


# ---------------------------------------------------------------------------------------------
# Every kind of reply


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_each_kind_of_reply_and_switching_protocols(request, upstream):
    bp = start_proxy_on(request, upstream)
    nonscaling_size = info_size(chain_links(0.01, 2, nonscaling=True))
    with Resp3Conn(bp.port) as c:
        # The protocol in force when each command runs, also within one pipeline.
        c.send(cmd("BF.ADD", "f", "a") + cmd("HELLO", "3") + cmd("BF.ADD", "f", "a")
               + cmd("BF.ADD", "f", "b") + cmd("CMS.INITBYDIM", "s", "10", "2"))
        assert c.read_reply_raw() == b":1\r\n"
        assert c.read_reply_raw().startswith(b"%")
        assert [c.read_reply_raw() for _ in range(3)] == [b"#f\r\n", b"#t\r\n", b"+OK\r\n"]
        expected = [
            (("BF.EXISTS", "f", "a"), b"#t\r\n"),
            (("BF.EXISTS", "f", "zz"), b"#f\r\n"),
            (("BF.EXISTS", "missing", "a"), b"#f\r\n"),
            (("BF.EXISTS", "s", "a"), b"#f\r\n"),
            (("BF.MEXISTS", "f", "a", "zz", "b"), b"*3\r\n#t\r\n#f\r\n#t\r\n"),
            (("BF.MADD", "f", "a", "c"), b"*2\r\n#f\r\n#t\r\n"),
            (("BF.INSERT", "g", "CAPACITY", "2", "NONSCALING", "ITEMS", "x", "y", "x", "z"),
             b"*4\r\n#t\r\n#t\r\n#f\r\n-ERR non scaling filter is full\r\n"),
            (("BF.ADD", "g", "w"), b"-ERR non scaling filter is full\r\n"),
            (("BF.INFO", "g"),
             b"%%5\r\n+Capacity\r\n:2\r\n+Size\r\n:%d\r\n+Number of filters\r\n:1\r\n"
             b"+Number of items inserted\r\n:2\r\n+Expansion rate\r\n_\r\n" % nonscaling_size),
            (("BF.INFO", "g", "expansion"), b"%1\r\n+Expansion rate\r\n_\r\n"),
            (("BF.INFO", "g", "Items"), b"%1\r\n+Number of items inserted\r\n:2\r\n"),
            (("BF.INFO", "f", "EXPANSION"), b"%1\r\n+Expansion rate\r\n:2\r\n"),
            (("BF.INFO", "f", "filters"), b"%1\r\n+Number of filters\r\n:1\r\n"),
            (("BF.INFO", "f", "CAPACITY"), b"%1\r\n+Capacity\r\n:100\r\n"),
            (("BF.INFO", "g", "SIZE"), b"%%1\r\n+Size\r\n:%d\r\n" % nonscaling_size),
            (("BF.INFO", "g", "bogus"), b"-Invalid information value\r\n"),
            (("BF.INFO", "missing"), b"-ERR not found\r\n"),
            (("BF.INFO", "s"), WRONGTYPE),
            (("BF.INFO", "f", "a", "b"),
             b"-ERR wrong number of arguments for 'bf.info' command\r\n"),
            (("BF.ADD", "s", "a"), WRONGTYPE),
            (("BF.CARD", "g"), b":2\r\n"),
            (("BF.RESERVE", "g", "0.01", "10"), b"-ERR item exists\r\n"),
            (("CMS.INCRBY", "s", "a", "3", "b", "1"), b"*2\r\n:3\r\n:1\r\n"),
            (("CMS.QUERY", "s", "a", "zz"), b"*2\r\n:3\r\n:0\r\n"),
            (("CMS.INFO", "s"), b"%3\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:4\r\n"),
            (("CMS.INFO", "f"), WRONGTYPE),
            (("CMS.INFO", "missing"), b"-CMS: key does not exist\r\n"),
        ]
        for args, want in expected:
            assert c.call(*args) == want, args
        # SCANDUMP is the same in both protocols: compare with a RESP2 client's.
        with RawConn(bp.port) as r2:
            for it in ("0", "1"):
                r2.send(cmd("BF.SCANDUMP", "g", it))
                assert c.call("BF.SCANDUMP", "g", it) == r2.read_reply_raw()
        c.hello(2)
        assert c.call("BF.ADD", "f", "a") == b":0\r\n"
        assert c.call("BF.MEXISTS", "f", "a", "zz") == b"*2\r\n:1\r\n:0\r\n"
        assert c.call("BF.INFO", "g", "EXPANSION") == b"*1\r\n$-1\r\n"
        assert c.call("CMS.INFO", "s") == b"*6\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:4\r\n"


def test_hello_inside_multi_switches_the_replies_after_it(bp):
    """Redis writes each reply of EXEC's array in the protocol of the moment it runs: a HELLO
    inside the transaction switches the sketches' replies after it."""
    commands = [("BF.ADD", "t", "a"), ("HELLO", "3"), ("BF.ADD", "t", "a"),
                ("BF.MADD", "t", "a", "b"), ("CMS.INITBYDIM", "u", "4", "2"), ("CMS.INFO", "u"),
                ("HELLO", "2"), ("BF.EXISTS", "t", "b"), ("CMS.INFO", "u")]
    with Resp3Conn(bp.port) as c:
        c.send(cmd("MULTI") + b"".join(cmd(*a) for a in commands) + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(len(commands) + 1)] == \
            [b"+OK\r\n"] + [b"+QUEUED\r\n"] * len(commands)
        got = exec_elements(c.read_reply_raw())
        assert got is not None and len(got) == len(commands)
        assert got[1].startswith(b"%7\r\n") and got[6].startswith(b"*14\r\n")
        assert got[:1] + got[2:6] + got[7:] == [
            b":1\r\n", b"#f\r\n", b"*2\r\n#f\r\n#t\r\n", b"+OK\r\n",
            b"%3\r\n+width\r\n:4\r\n+depth\r\n:2\r\n+count\r\n:0\r\n",
            b":1\r\n", b"*6\r\n+width\r\n:4\r\n+depth\r\n:2\r\n+count\r\n:0\r\n"]
        assert c.call("BF.ADD", "t", "a") == b":0\r\n"


# ---------------------------------------------------------------------------------------------
# Every recorded command inside MULTI


RECORDED_CASES = [("bf", i) for i in range(len(BF2))] + [("cms", i) for i in range(len(CMS2))]
RECORDED_IDS = [f"bf-{c['name']}" for c in BF2] + [f"cms-{c['name']}" for c in CMS2]


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("family,index", RECORDED_CASES, ids=RECORDED_IDS)
def test_recorded_commands_inside_multi(proxy, family, index, protocol):
    case = RECORDED[(protocol, family)][index]
    p = proxy()
    with Resp3Conn(p.port, timeout=30) as conn:
        if protocol == 3:
            conn.hello(3)
        problem = replay_in_multi(conn, case)
    assert not problem, f"[RESP{protocol}] {problem}"


# ---------------------------------------------------------------------------------------------
# Random sequences: outside MULTI by the rules, inside MULTI as outside


def multi_blocks(conn, commands, rng):
    """`commands` in MULTI/EXEC blocks of 1..12 on Resp3Conn `conn`: EXEC's elements."""
    out, at = [], 0
    while at < len(commands):
        block = commands[at:at + rng.randint(1, 12)]
        out += exec_block(conn, block)
        at += len(block)
    return out


def assert_same(commands, want, got, what):
    assert len(want) == len(got) == len(commands)
    for i, (args, w, g) in enumerate(zip(commands, want, got)):
        assert g == w, f"command #{i} {[str(a)[:40] for a in args[:4]]} {what}:\n" \
                       f"  want: {w[:300]!r}\n  got:  {g[:300]!r}"


def renamed(commands, names_from, names_to):
    rename = dict(zip(names_from, names_to))
    return [[rename.get(a, a) if i == 1 else a for i, a in enumerate(args)] for args in commands]


def bf_names(upstream, prefix):
    """The generator's names: test_multi_bf's (brace shapes of every kind), or (cluster) all in
    one slot, so that a transaction may hold any of them."""
    if upstream == "cluster":
        t = tag(upstream, prefix)
        return [f"{t}:fa", f"{t}:fb", f"{t}:fc"], [f"{t}:cp0", f"{t}:cp1"]
    return names_of(prefix)


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_bf_random_sequences(request, upstream, seed):
    p = start_proxy_on(request, upstream, *BF_FLAGS)
    names2, copies2 = bf_names(upstream, f"r2s{seed}")
    gen = Generator(seed, names2, copies2)
    with p.raw(timeout=30) as conn:
        plain2 = run_plain(conn, gen, 400)
    commands = [args for args, _ in plain2]
    want = [as_resp3(args, raw) for args, raw in plain2]
    assert sum(w != raw for w, (_, raw) in zip(want, plain2)) >= 100
    with resp3_conn(p) as conn:
        names3, copies3 = bf_names(upstream, f"r3s{seed}")
        outside = renamed(commands, names2 + copies2, names3 + copies3)
        got = [conn.call(*args) for args in outside]
        assert_same(outside, want, got, "outside MULTI (RESP3)")
        names_m, copies_m = bf_names(upstream, f"m3s{seed}")
        inside = renamed(commands, names2 + copies2, names_m + copies_m)
        assert_same(inside, want, multi_blocks(conn, inside, random.Random(seed)),
                    "inside MULTI (RESP3)")


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("mode", ["one part", "parts of 64 bytes"])
@pytest.mark.parametrize("seed", [3, 39])
def test_cms_random_sequences(request, upstream, seed, mode):
    p = start_proxy_on(request, upstream, *(PARTS64 if mode != "one part" else ()))
    rng = random.Random(seed)
    sequence = setup_commands() + [random_command(rng) for _ in range(200)]
    with p.raw(timeout=30) as conn:
        plain2 = []
        for args in sequence:
            conn.send(cmd(*named(args, tag(upstream, "o2") + ":")))
            plain2.append(conn.read_reply_raw())
    want = [as_resp3(args, raw) for args, raw in zip(sequence, plain2)]
    assert sum(w != raw for w, raw in zip(want, plain2)) >= 10
    with resp3_conn(p) as conn:
        outside = [named(args, tag(upstream, "o3") + ":") for args in sequence]
        assert_same(outside, want, [conn.call(*args) for args in outside], "outside MULTI (RESP3)")
        inside = [named(args, tag(upstream, "m3") + ":") for args in sequence]
        assert_same(inside, want, multi_blocks(conn, inside, random.Random(seed)),
                    "inside MULTI (RESP3)")


# ---------------------------------------------------------------------------------------------
# Both protocols at once


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_resp2_and_resp3_clients_pipelining_into_batches(request, upstream):
    """Each client pipelines BF.ADD/MADD/EXISTS/MEXISTS on one shared filter and CMS.INCRBY/QUERY
    on a sketch of its own (batches: one turn's commands together, each member answered in its
    client's protocol), both at once."""
    bp = start_proxy_on(request, upstream)
    with RawConn(bp.port) as c:
        assert c.command("BF.RESERVE", "shared", "0.0001", "10000") == b"OK"
        for p in ("p2", "p3"):
            assert c.command("CMS.INITBYDIM", f"s{p}", "2000", "6") == b"OK"
    rounds = 150
    results, errors = {}, []

    def client(protocol):
        p = f"p{protocol}"
        t, f = (b"#t\r\n", b"#f\r\n") if protocol == 3 else (b":1\r\n", b":0\r\n")
        commands, want = [], []
        for i in range(rounds):
            commands += [("BF.ADD", "shared", f"{p}:{i}"),
                         ("BF.MADD", "shared", f"{p}:{i}", f"{p}:x{i}"),
                         ("BF.EXISTS", "shared", f"{p}:{i}"),
                         ("BF.MEXISTS", "shared", f"{p}:x{i}", f"{p}:never{i}"),
                         ("CMS.INCRBY", f"s{p}", f"it{i % 7}", "1"),
                         ("CMS.QUERY", f"s{p}", f"it{i % 7}", "nothing")]
            want += [t, b"*2\r\n" + f + t, t, b"*2\r\n" + t + f,
                     b"*1\r\n:%d\r\n" % (i // 7 + 1), b"*2\r\n:%d\r\n:0\r\n" % (i // 7 + 1)]
        try:
            with Resp3Conn(bp.port, timeout=30) as conn:
                conn.hello(protocol)
                conn.send(b"".join(cmd(*a) for a in commands))
                results[protocol] = (commands, want, [conn.read_reply_raw() for _ in commands])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for protocol in (2, 3):
        commands, want, got = results[protocol]
        assert_same(commands, want, got, f"(RESP{protocol} client)")

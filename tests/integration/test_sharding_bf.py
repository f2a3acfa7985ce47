"""BF.* through bloomproxy in front of a sharding proxy (--upstream-kind sharding-proxy): a real
twemproxy (nutcracker) with two redis-servers behind it. Checked:

- the recorded RedisBloom vectors replayed byte for byte, with the case keys as recorded and
  with a hash tag, with whole and with 64-byte shards; RENAME (which a sharding proxy cannot
  forward) is answered with bloomproxy's refusal error and the case ends there, and a name that
  cannot keep all its keys on one server gets the name refusal error;
- a filter's internal keys (data keys and marker) all on the server holding its name, under the
  name's hash tag, and filters spread over both servers; names that cannot be kept whole are
  refused before anything is written;
- DEL, UNLINK, EXISTS (filters on both servers in one command), TYPE, the EXPIRE family, TTL,
  PTTL and PERSIST on a filter's name acting on every internal key;
- filters shared by three proxies written at once (created, filled and scaled concurrently);
- BF.SCANDUMP / BF.LOADCHUNK copies;
- redis-py's bf() API;
- after every test, no bloomproxy lost an upstream connection: nutcracker closes a client's
  connection on a command it does not know, so a refused command must never reach it.

One nutcracker (conftest `twemproxy`) serves the module; every test empties its servers first
(FLUSHALL straight to the redis-servers: nutcracker refuses FLUSHALL).
"""

import random
import time

import pytest

from bf_vectors import (ModelFilter, data_keys_of, has_hash_tag, load_cases, marker_keys_of,
                        parse_data_key, replay_case, run_commands, scandump_all)
from bp_helpers import encode_command as cmd
from test_bf_concurrency import check_filter_consistent, run_threads
from test_bf_keys import assert_filter_is, assert_keys_expire_with, make_filter
from test_cluster_bf import with_keys

CASES = load_cases()
SHARD = 64
SHARD_MODES = {"default": (), "sharded64": ("--bf-max-shard-bytes", str(SHARD))}
KEY_MODES = ("plain", "tagged")
# Relative expiries may reach the data keys a moment after the name (as in test_bf_keys.py).
RELATIVE_TOLERANCE_MS = 100
MAX_NAME = 7900

RENAMES = {b"RENAME", b"RENAMENX"}
NAME_REFUSED = (b"-ERR bloomproxy: behind a sharding proxy a filter's name needs a {hash tag}, "
                b"or no braces at all, and at most 7900 bytes, so that all its keys stay on one "
                b"server\r\n")
# Errors RedisBloom gives after looking at the key; its other errors are about the arguments,
# which bloomproxy checks before the name (BF.INFO's field and BF.SCANDUMP's iterator excepted:
# those are checked after the key, as RedisBloom does).
KEY_ERRORS = (b"-WRONGTYPE ", b"-ERR not found\r\n", b"-ERR item exists\r\n",
              b"-ERR non scaling filter is full\r\n")
CHECKED_AFTER_KEY = {b"BF.INFO", b"BF.SCANDUMP"}


def refusal(command):
    return (b"-ERR bloomproxy: '%s' is not supported behind a sharding proxy "
            b"(upstream-kind sharding-proxy)\r\n" % command.upper())


def kept_whole(name):
    """Whether bloomproxy keeps filter `name` whole behind a sharding proxy: a {hash tag}, or
    no braces at all (and not empty), and at most 7900 bytes."""
    if len(name) > MAX_NAME:
        return False
    return has_hash_tag(name) or (name != b"" and b"{" not in name and b"}" not in name)


def refused_name_answer(args, reply):
    """Whether BF.* command `args` (recorded reply `reply`) gets the name refusal error: its
    name cannot be kept whole and its arguments are well formed (bloomproxy checks them
    first)."""
    if not args[0].upper().startswith(b"BF.") or len(args) < 2 or kept_whole(args[1]):
        return False
    if not reply.startswith(b"-") or reply.startswith(KEY_ERRORS):
        return True
    return args[0].upper() in CHECKED_AFTER_KEY and args[1] != b""


def as_sharding_answers(case):
    """`case` as a client of bloomproxy behind a sharding proxy sees it: RENAME and RENAMENX
    get the refusal error, and BF.* on a name that cannot be kept whole the name refusal error;
    the case ends there (what follows depends on the refused command)."""
    for i, (args, reply) in enumerate(zip(case["cmds"], case["replies"])):
        if args[0].upper() in RENAMES:
            answer = refusal(args[0])
        elif refused_name_answer(args, reply):
            answer = NAME_REFUSED
        else:
            continue
        return dict(case, cmds=case["cmds"][:i + 1], replies=case["replies"][:i] + [answer])
    return case


def case_for(mode, index):
    """Case `index` with its keys as recorded ("plain"), as "{<index>:t}key" ("tagged": one
    server per case, the cases spread over both), or (for
    test_vectors_with_names_not_kept_whole) with names that cannot be kept whole.

    The recorded keys ("c1:...") all go to one server, and so would tags "{t<index>}":
    nutcracker's fnv1a_64 hashes in 32 bits with a small multiplier (0x1b3), so a key's last
    bytes hardly move its hash, and keys that differ only at their end tend to share a
    server."""
    case = CASES[index]
    if mode == "tagged":
        tag = b"{%d:t}" % index
        case = with_keys(case, lambda k: tag + k)
    elif mode == "unkept":
        shapes = {k: (b"{}%s", b"%s}", b"{%s")[j % 3] for j, k in enumerate(case["keys"])}
        case = with_keys(case, lambda k: shapes[k] % k)
    return as_sharding_answers(case)


def unkept_case_count():
    return sum(1 for c in CASES if any(not kept_whole(k) for k in c["keys"]))


# ---------------------------------------------------------------------------------------------
# The servers behind nutcracker


@pytest.fixture(autouse=True)
def empty_servers(twemproxy):
    twemproxy.flushall()
    return twemproxy


def as_bytes(name):
    return name.encode() if isinstance(name, str) else name


def server_index(tw, key):
    """Index in tw.servers of the server nutcracker sends `key` to."""
    return tw.servers.index(tw.server_for_key(key))


def prefix_of(name):
    """The prefix of a filter's internal keys behind a sharding proxy: the name itself when it
    has a hash tag, else the name as tag."""
    return name if has_hash_tag(name) else b"{" + name + b"}"


def check_layout(tw, names, label="", shard_bytes=None):
    """The servers hold only the keys `names` and their filters' internal keys; each filter's
    internal keys carry its name's tag (prefix_of) and lie on the server holding the name (the
    server nutcracker sends the name to), under one filter id with one marker; a name that
    does not exist has none left; shards are at most `shard_bytes` long. Returns
    {name: (server index, its internal keys)}."""
    names = [as_bytes(n) for n in names]
    where = tw.keys_by_server()
    keys = set(where)
    out = {}
    for name in names:
        data = data_keys_of(None, name, keys)
        markers = marker_keys_of(None, name, keys)
        internal = data + markers
        if not internal:
            continue
        assert name in keys, f"{label} {name!r} does not exist but its keys remain: {internal[:5]}"
        assert markers == [prefix_of(name) + b":bf:m:" + name] and data, \
            f"{label} {name!r}: markers {markers}, data {data[:5]}"
        assert {parse_data_key(k)[0] for k in data} == {prefix_of(name)}, \
            f"{label} {name!r}: data keys of other prefixes: {data[:5]}"
        ids = {parse_data_key(k)[1] for k in data}
        assert len(ids) == 1, f"{label} {name!r}: data keys of {len(ids)} filter ids: {data[:6]}"
        owner = where[name]
        assert server_index(tw, name) == owner, \
            f"{label} {name!r} is on server {owner}, not where nutcracker sends it"
        for k in internal:
            assert where[k] == owner, \
                f"{label} {k!r} of {name!r} is on server {where[k]}, the name on {owner}"
        if shard_bytes:
            client = tw.servers[owner].client()
            for k in data:
                if parse_data_key(k)[3] is not None:
                    assert client.strlen(k) <= shard_bytes, f"{label} {k!r} > {shard_bytes} B"
        out[name] = (owner, internal)
    stray = keys - set(names) - {k for _, ks in out.values() for k in ks}
    assert not stray, f"{label} keys that belong to no name of {names}: {sorted(stray)[:8]}"
    return out


def names_per_server(tw, pattern, per_server=1):
    """{server index: [names]}: names pattern.format(N), `per_server` of them on each server
    (e.g. "kd:{}" untagged, "{{{}:t}}kd" tagged)."""
    out = {i: [] for i in range(len(tw.servers))}
    i = 0
    while any(len(v) < per_server for v in out.values()):
        assert i < 2000, f"names {pattern} do not reach every server: {out}"
        name = pattern.format(i)
        i += 1
        names = out[server_index(tw, name)]
        if len(names) < per_server:
            names.append(name)
    return out


def flat(per_server):
    return [n for names in per_server.values() for n in names]


def internal_keys(tw, name):
    keys = set(tw.keys_by_server())
    return data_keys_of(None, name, keys) + marker_keys_of(None, name, keys)


def assert_gone(conn, tw, name):
    """No filter `name` through the proxy, and none of its keys on any server."""
    assert [conn.command("EXISTS", name), conn.command("BF.EXISTS", name, "x"),
            conn.command("BF.CARD", name), conn.command("TYPE", name)] == [0, 0, 0, b"none"], \
        f"{name!r} still answers as a filter"
    left = internal_keys(tw, name)
    assert not left, f"{name!r} is gone but {len(left)} of its keys remain, e.g. {left[:3]}"


def check_expiry(tw, name, tolerance_ms=0):
    """Every internal key of `name` expires when the name does (PEXPIRETIME on the server
    holding them). Returns (the name's PEXPIRETIME, its internal keys)."""
    client = tw.server_for_key(name).client()
    internal = internal_keys(tw, name)
    when = assert_keys_expire_with(client, name, internal, tolerance_ms)
    return when, internal


def proxy_info(p):
    with p.raw() as c:
        text = c.command("INFO", "proxy").decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def assert_no_upstream_errors(*proxies):
    """Each proxy talks to a sharding proxy and never lost an upstream connection (nutcracker
    closes the connection of a command it refuses)."""
    for p in proxies:
        info = proxy_info(p)
        assert info["upstream_kind"] == "sharding-proxy", info
        assert info["upstream_connection_errors"] == "0", \
            f"proxy {p.port}: upstream_connection_errors:{info['upstream_connection_errors']}"


# ---------------------------------------------------------------------------------------------
# Vectors


def test_vector_keys_and_refusals(twemproxy):
    """The case keys are kept whole (the recorded ones and the tagged ones), the tagged ones
    served by both servers; the cases with a RENAME end at it with the refusal error, the
    others are replayed whole."""
    assert unkept_case_count() == 0, "vectors with names a sharding proxy cannot keep whole"
    for mode in KEY_MODES:
        names = [k for i in range(len(CASES)) for k in case_for(mode, i)["keys"]]
        assert all(kept_whole(k) for k in names), mode
        if mode == "tagged":
            assert {server_index(twemproxy, k) for k in names} == {0, 1}
        cut = [i for i in range(len(CASES))
               if len(case_for(mode, i)["cmds"]) < len(CASES[i]["cmds"])]
        renames = [i for i, c in enumerate(CASES)
                   if any(args[0].upper() in RENAMES for args in c["cmds"])]
        assert cut == renames and 0 < len(renames) < len(CASES) / 2, (mode, cut, renames)
        for i in range(len(CASES)):
            case = case_for(mode, i)
            if i in cut:
                assert case["cmds"][-1][0].upper() in RENAMES
                assert case["replies"][-1] == refusal(case["cmds"][-1][0])
                assert case["replies"][:-1] == CASES[i]["replies"][:len(case["cmds"]) - 1]
            else:
                assert case["replies"] == CASES[i]["replies"]
    for i in range(len(CASES)):  # the model of the name refusal on a known answer
        if CASES[i]["name"] == "reserve_errors":
            # Every command has malformed arguments (checked before the name): replayed whole.
            assert case_for("unkept", i)["replies"] == CASES[i]["replies"]
        if CASES[i]["name"] == "types_missing_arity":
            assert case_for("unkept", i)["replies"][-1] == NAME_REFUSED


# Every case in every mode: the 56 replays (each with its own proxy) take about 5 s in all.
@pytest.mark.parametrize("shards", sorted(SHARD_MODES))
@pytest.mark.parametrize("keys", KEY_MODES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c["name"] for c in CASES])
def test_vector_case(index, keys, shards, twemproxy, sharding_proxy):
    """One case replayed byte for byte; afterwards each filter of the case lies whole on the
    server holding its name, with nothing else on the servers."""
    case = case_for(keys, index)
    p = sharding_proxy(*SHARD_MODES[shards])
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, f"[{keys}, {shards}] {problem}"
    layout = check_layout(twemproxy, case["keys"], f"[{keys}, {shards}]",
                          SHARD if shards == "sharded64" else None)
    with p.raw() as conn:
        types = {k: conn.command("TYPE", k) for k in case["keys"]}
    filters = {k for k, t in types.items() if t == b"MBbloom--"}
    assert filters <= set(layout), f"[{keys}, {shards}] filters {filters}, laid out {set(layout)}"
    # A plain value written over a filter's name leaves its internal keys behind
    # (docs/bloom-filters.md, "Limits"); they are still checked as the filter's above.
    assert all(types[k] == b"string" for k in set(layout) - filters), (keys, shards, types)
    assert_no_upstream_errors(p)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c["name"] for c in CASES])
def test_vectors_with_names_not_kept_whole(index, twemproxy, sharding_proxy):
    """Every case with its keys renamed to names that cannot be kept whole ("{}k", "k}",
    "{k"): its BF.* commands get the name refusal error (after the argument errors RedisBloom
    gives first), the case ending there, and no filter key is written."""
    case = case_for("unkept", index)
    p = sharding_proxy()
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, problem
    where = twemproxy.keys_by_server()
    assert set(where) <= set(case["keys"]), f"keys written: {sorted(where)[:8]}"
    assert_no_upstream_errors(p)


# ---------------------------------------------------------------------------------------------
# Layout


KEPT_ODD = ["app{grp}x", "app{grp}y", "{grp}z", b"bin\xff\x00name", "sp ace"]
NOT_KEPT = ["lone}brace", "{}empty-tag", "", "lone{brace", "}{", "n" * (MAX_NAME + 1)]


def test_filters_whole_on_one_server_and_spread_over_both(twemproxy, sharding_proxy):
    """21 filters (untagged, tagged, odd names): each whole on the server nutcracker sends its
    name to, with 64-byte shards; filters on both servers; read back through another proxy."""
    names = (flat(names_per_server(twemproxy, "lay:{}", 5))
             + flat(names_per_server(twemproxy, "{{{}:t}}lay", 3)) + KEPT_ODD)
    p = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    with p.raw() as c:
        made = {n: make_filter(c, n) for n in names}
    layout = check_layout(twemproxy, names, shard_bytes=SHARD)
    assert sorted(layout) == sorted(as_bytes(n) for n in names)
    for name, (_, internal) in layout.items():
        # 400 items at capacity 100: 3 links of 64-byte shards.
        assert len(internal) > 20, name
    assert {server for server, _ in layout.values()} == {0, 1}
    grp = {layout[as_bytes(n)][0] for n in ("app{grp}x", "app{grp}y", "{grp}z")}
    assert len(grp) == 1, "filters of one hash tag on different servers"
    other = sharding_proxy()
    with other.raw() as c:
        for name, (model, items) in made.items():
            assert_filter_is(c, name, model, items)
    assert_no_upstream_errors(p, other)


def test_longest_name_kept_whole(twemproxy, sharding_proxy):
    """A name of 7900 bytes (the longest kept whole: its marker holds it twice, below
    nutcracker's 16000-byte key limit) works as any other; one byte more is refused."""
    name = b"L" * MAX_NAME
    p = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    model = ModelFilter(0.01, 100)
    items = [b"long:%d" % i for i in range(300)]
    with p.raw() as c:
        assert c.command("BF.RESERVE", name, "0.01", "100") == b"OK"
        assert c.command("BF.MADD", name, *items) == [model.add(x) for x in items]
        assert_filter_is(c, name, model, items, probes=[b"no:%d" % i for i in range(100)])
        check_layout(twemproxy, [name], shard_bytes=SHARD)
        c.send(cmd("BF.ADD", name + b"L", "a"))
        assert c.read_reply_raw() == NAME_REFUSED
        assert c.command("DEL", name) == 1
    assert twemproxy.keys_by_server() == {}
    assert_no_upstream_errors(p)


def test_names_not_kept_whole_are_refused(twemproxy, sharding_proxy):
    """Names with braces but no valid hash tag, the empty name and a name over 7900 bytes: every
    BF.* command gets the name refusal error and nothing is written on any server; the names
    still work as plain keys."""
    p = sharding_proxy()
    with p.raw() as c:
        make_filter(c, "src", n_items=10)
        header = c.command("BF.SCANDUMP", "src", "0")[1]
        before = twemproxy.keys_by_server()
        for name in NOT_KEPT:
            for args in (("BF.ADD", name, "a"), ("BF.RESERVE", name, "0.01", "100"),
                         ("BF.EXISTS", name, "a"), ("BF.MADD", name, "a", "b"),
                         ("BF.MEXISTS", name, "a", "b"), ("BF.INSERT", name, "ITEMS", "a"),
                         ("BF.INFO", name), ("BF.INFO", name, "CAPACITY"), ("BF.CARD", name),
                         ("BF.SCANDUMP", name, "0"), ("BF.LOADCHUNK", name, "1", header)):
                c.send(cmd(*args))
                assert c.read_reply_raw() == NAME_REFUSED, (args[0], name[:20])
        assert twemproxy.keys_by_server() == before
        for name in NOT_KEPT:
            assert c.command("EXISTS", name) == 0
            assert c.command("SET", name, "v") == b"OK"
            assert c.command("GET", name) == b"v"
            c.send(cmd("BF.ADD", name, "a"))
            assert c.read_reply_raw() == NAME_REFUSED
            assert c.command("TYPE", name) == b"string"
            assert c.command("DEL", name) == 1
    assert twemproxy.keys_by_server() == before
    assert_no_upstream_errors(p)


# ---------------------------------------------------------------------------------------------
# Key-level commands on a filter's name


def test_del_unlink_exists_type_on_filters_of_both_servers(twemproxy, sharding_proxy):
    """DEL and UNLINK of filters on both servers and plain keys in one command (split per hash
    tag) remove every internal key and count as Redis does; EXISTS and TYPE on filters."""
    p = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    untagged = names_per_server(twemproxy, "kd:{}", 2)
    tagged = names_per_server(twemproxy, "{{{}:t}}kd")
    plain = names_per_server(twemproxy, "kd:plain:{}")
    names = flat(untagged) + flat(tagged)
    with p.raw() as c:
        made = {n: make_filter(c, n) for n in names}
        for n in flat(plain):
            assert c.command("SET", n, "v") == b"OK"
        check_layout(twemproxy, names + flat(plain), shard_bytes=SHARD)

        p0, p1 = plain[0][0], plain[1][0]
        assert [c.command("TYPE", n) for n in (names[0], tagged[1][0], p0, "kd:missing")] == \
            [b"MBbloom--", b"MBbloom--", b"string", b"none"]
        # Names on both servers, a duplicate (counted twice, as Redis does) and a missing key.
        assert c.command("EXISTS", *names, p0, p1, names[0], "kd:missing") == len(names) + 3
        assert c.command("EXISTS", untagged[0][0], untagged[1][0]) == 2

        # One DEL over both servers: filters, a plain key, a duplicate and a missing key.
        gone = [untagged[0][0], untagged[1][0], tagged[0][0]]
        kept = [n for n in names if n not in gone]
        assert c.command("DEL", *gone, p0, gone[0], "kd:missing") == len(gone) + 1
        for n in gone:
            assert_gone(c, twemproxy, n)
        for n in kept:
            assert_filter_is(c, n, *made[n])
        check_layout(twemproxy, names + flat(plain), shard_bytes=SHARD)
        assert c.command("EXISTS", *names, p0, p1) == len(kept) + 1

        assert c.command("UNLINK", *kept, p1, "kd:missing") == len(kept) + 1
        for n in kept:
            assert_gone(c, twemproxy, n)
        assert twemproxy.keys_by_server() == {}
        # A name deleted is free for a new, empty filter.
        assert c.command("BF.ADD", gone[0], "fresh") == 1
        assert c.command("BF.CARD", gone[0]) == 1
    check_layout(twemproxy, [gone[0]])
    assert_no_upstream_errors(p)


def test_expire_family_and_persist_reach_every_internal_key(twemproxy, sharding_proxy):
    """EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT and PERSIST give every internal key the name's
    expiry (read on the server holding them); TTL and PTTL answer the name's; a short expiry
    removes the name and every internal key."""
    p = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    names = flat(names_per_server(twemproxy, "ke:{}")) + flat(names_per_server(twemproxy,
                                                                               "{{{}:t}}ke"))
    with p.raw() as c:
        assert [c.command("TTL", "ke:missing"), c.command("PTTL", "ke:missing")] == [-2, -2]
        for n in names:
            make_filter(c, n)
            assert check_expiry(twemproxy, n)[0] == -1
            assert [c.command("TTL", n), c.command("PTTL", n)] == [-1, -1]
            assert c.command("PERSIST", n) == 0

            assert c.command("EXPIRE", n, "100") == 1
            assert c.command("TTL", n) == 100
            assert 99000 < c.command("PTTL", n) <= 100000
            check_expiry(twemproxy, n, RELATIVE_TOLERANCE_MS)

            assert c.command("PEXPIRE", n, "200000") == 1
            assert 199000 < c.command("PTTL", n) <= 200000
            assert 199 <= c.command("TTL", n) <= 200
            check_expiry(twemproxy, n, RELATIVE_TOLERANCE_MS)

            at = int(time.time()) + 1000
            assert c.command("EXPIREAT", n, str(at)) == 1
            assert check_expiry(twemproxy, n)[0] == at * 1000
            assert 998 <= c.command("TTL", n) <= 1000

            assert c.command("PEXPIREAT", n, "99999999999000") == 1
            assert check_expiry(twemproxy, n)[0] == 99999999999000

            assert c.command("PERSIST", n) == 1
            assert [c.command("TTL", n), c.command("PTTL", n)] == [-1, -1]
            assert check_expiry(twemproxy, n)[0] == -1
        check_layout(twemproxy, names, shard_bytes=SHARD)

        # A short expiry (one filter on each server): the names and every internal key are gone
        # when it passes.
        doomed = names[:2]
        internal = {n: check_expiry(twemproxy, n)[1] for n in doomed}
        for n in doomed:
            assert c.command("PEXPIRE", n, "300") == 1
            check_expiry(twemproxy, n, RELATIVE_TOLERANCE_MS)
        time.sleep(0.5)
        for n in doomed:
            assert c.command("EXISTS", n) == 0
            assert c.command("BF.CARD", n) == 0
            server = twemproxy.server_for_key(n).client()
            # EXISTS on the server expires what is due (even before the active expiry cycle).
            assert [k for k in internal[n] if server.exists(k)] == []
        assert not any(internal_keys(twemproxy, n) for n in doomed)
    check_layout(twemproxy, names, shard_bytes=SHARD)
    assert_no_upstream_errors(p)


def test_links_added_after_expire_get_the_name_expiry(twemproxy, sharding_proxy):
    """A filter that scales after EXPIRE / EXPIREAT: its new links' keys expire with the name."""
    p = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    names = flat(names_per_server(twemproxy, "kg:{}")) + ["{3:t}kg"]
    with p.raw() as c:
        for i, n in enumerate(names):
            model = ModelFilter(0.01, 100)
            first = [b"g:%d" % j for j in range(50)]
            assert c.command("BF.RESERVE", n, "0.01", "100") == b"OK"
            assert c.command("BF.MADD", n, *first) == [model.add(x) for x in first]
            before = check_expiry(twemproxy, n)[1]
            if i % 2:
                assert c.command("EXPIREAT", n, str(int(time.time()) + 5000)) == 1
            else:
                assert c.command("EXPIRE", n, "5000") == 1
            more = [b"g:%d" % j for j in range(50, 500)]
            assert c.command("BF.MADD", n, *more) == [model.add(x) for x in more]
            assert len(model.links) >= 3
            after = check_expiry(twemproxy, n, RELATIVE_TOLERANCE_MS)[1]
            links = {parse_data_key(k)[2] for k in after if parse_data_key(k)}
            assert links == set(range(len(model.links))), links
            assert len(after) > len(before)
            assert_filter_is(c, n, model, first + more)
    check_layout(twemproxy, names, shard_bytes=SHARD)
    assert_no_upstream_errors(p)


def test_refused_commands_leave_filters_and_connections_alone(twemproxy, sharding_proxy):
    """Commands nutcracker would close the connection on, sent on a filter's name, get
    bloomproxy's refusal error; the filter and the upstream connections are untouched."""
    p = sharding_proxy()
    suffix = b" is not supported behind a sharding proxy (upstream-kind sharding-proxy)\r\n"
    refused = [
        (("RENAME", "rf:a", "rf:b"), b"-ERR bloomproxy: 'RENAME'" + suffix),
        (("renamenx", "rf:a", "rf:b"), b"-ERR bloomproxy: 'RENAMENX'" + suffix),
        (("EXPIRE", "rf:a", "100", "NX"), b"-ERR bloomproxy: 'EXPIRE' with 3 arguments" + suffix),
        (("EVAL", "return 1", "0"), b"-ERR bloomproxy: 'EVAL' without keys" + suffix),
        (("SET", "k" * 16000, "v"),
         b"-ERR bloomproxy: 'SET' with a key of 16000 bytes or more" + suffix),
    ]
    with p.raw() as c:
        model, items = make_filter(c, "rf:a")
        for args, expected in refused:
            c.send(cmd(*args))
            assert c.read_reply_raw() == expected, args[0]
        assert_filter_is(c, "rf:a", model, items)
        assert [c.command("EXISTS", "rf:b"), c.command("TTL", "rf:a")] == [0, -1]
    assert proxy_info(p)["sharding_proxy_refused_commands"] == str(len(refused))
    check_layout(twemproxy, ["rf:a", "rf:b"])
    assert_no_upstream_errors(p)


# ---------------------------------------------------------------------------------------------
# Filters shared by several proxies


def test_three_proxies_share_filters(twemproxy, sharding_proxy):
    """Three writers, each through its own proxy, add overlapping items at once to filters on
    both servers: reserved ones, and new ones all three create with their first BF.ADD at the
    same moment (default capacity 100, so all scale while the three write). Afterwards every
    item is found through every proxy, BF.CARD is the number of adds that replied 1, and each
    filter is consistent (test_bf_concurrency.check_filter_consistent). (An item added through
    two proxies at once while the filter scales may be counted new by both, as
    docs/bloom-filters.md says: BF.CARD is exact for the replies, not for distinct items.)"""
    proxies = [sharding_proxy() for _ in range(3)]
    reserved = flat(names_per_server(twemproxy, "share:{}"))
    born = flat(names_per_server(twemproxy, "{{{}:t}}born"))
    names = reserved + born
    capacity, error, expansion = 300, 0.01, 2
    with proxies[0].raw() as c:
        for n in reserved:
            assert c.command("BF.RESERVE", n, str(error), str(capacity)) == b"OK"
        assert c.command("EXISTS", *born) == 0
    universe = {n: [f"{n}-item-{j}".encode() for j in range(3000)] for n in names}
    # Each writer 1500 items per filter; each shares 500 with the next writer.
    mine = [{n: [universe[n][(1000 * t + j) % 3000] for j in range(1500)] for n in names}
            for t in range(3)]
    replies = [{n: {} for n in names} for _ in range(3)]  # writer -> name -> {item: [replies]}

    def note(tid, n, batch, got):
        assert len(got) == len(batch) and all(v in (0, 1) for v in got), got[:5]
        for it, v in zip(batch, got):
            replies[tid][n].setdefault(it, []).append(v)

    def writer(tid):
        rnd = random.Random(tid)
        for n in names:
            rnd.shuffle(mine[tid][n])
        with proxies[tid].raw(timeout=60) as c:
            # Creation race: the three first adds to each new filter at once.
            first = [b"first-common", b"first-%d" % tid]
            c.send(b"".join(cmd("BF.ADD", n, it) for n in born for it in first))
            for n in born:
                note(tid, n, first, [c.read_reply() for _ in first])
            for i in range(0, 1500, 100):
                for n in names:  # interleaved: both servers busy at once
                    batch = mine[tid][n][i:i + 100]
                    got = c.command("BF.MADD", n, *batch[:60])
                    c.send(b"".join(cmd("BF.ADD", n, it) for it in batch[60:]))
                    got += [c.read_reply() for _ in batch[60:]]
                    note(tid, n, batch, got)

    run_threads(writer, 3, timeout=120)
    for n in names:
        per_item = {}
        for r in replies:
            for it, vs in r[n].items():
                per_item[it] = per_item.get(it, 0) + sum(vs)
        ones = sum(per_item.values())
        items = list(per_item)
        assert len(items) == 3000 + 4 * (n in born), n
        if n in born:
            # The first adds to a new filter: each new to it, the shared one at least once.
            assert per_item[b"first-common"] >= 1, n
            assert all(per_item[b"first-%d" % t] == 1 for t in range(3)), n
            # Created by the first adds with the default parameters.
            check_filter_consistent(proxies, n, items, ones, 100, 2, 0.01)
        else:
            check_filter_consistent(proxies, n, items, ones, capacity, expansion, error)
    layout = check_layout(twemproxy, names)
    assert {layout[as_bytes(n)][0] for n in born} == {0, 1}
    assert_no_upstream_errors(*proxies)


# ---------------------------------------------------------------------------------------------
# Dump and load


def test_scandump_loadchunk_copies(twemproxy, sharding_proxy):
    """A filter dumped with BF.SCANDUMP and loaded with BF.LOADCHUNK under another name (plain
    to tagged, tagged to plain, across the servers) answers as its source."""
    sharded = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    whole = sharding_proxy()
    untagged = names_per_server(twemproxy, "sd:{}", 2)
    tagged = names_per_server(twemproxy, "{{{}:t}}sd", 2)
    pairs = [(untagged[0][0], tagged[1][0]), (tagged[0][0], untagged[1][0]),
             (untagged[1][1], tagged[0][1]), (tagged[1][1], untagged[0][1])]
    probes = [b"probe:%d" % i for i in range(300)]
    with sharded.raw() as cs, whole.raw() as cw:
        for i, (src, dst) in enumerate(pairs):
            # Made through one proxy, copied through the other (whole <-> 64-byte shards).
            maker, loader = (cs, cw) if i % 2 == 0 else (cw, cs)
            model, items = make_filter(maker, src, n_items=700, capacity=150)
            dump = scandump_all(maker, src)
            for it, _, (nxt, data) in dump[:-1]:
                assert loader.command("BF.LOADCHUNK", dst, str(nxt), data) == b"OK", (src, it)
            for conn in (cs, cw):
                assert_filter_is(conn, dst, model, items, probes)
                queries = [("BF.INFO", "{}"), ("BF.CARD", "{}"), ("BF.INFO", "{}", "SIZE"),
                           ("BF.MEXISTS", "{}", *probes[:50])]
                got = [run_commands(conn, [tuple(a.format(n) if a == "{}" else a for a in q)
                                           for q in queries]) for n in (src, dst)]
                assert got[0] == got[1], (src, dst)
    names = [n for pair in pairs for n in pair]
    check_layout(twemproxy, names)
    assert_no_upstream_errors(sharded, whole)


# ---------------------------------------------------------------------------------------------
# redis-py


def test_redis_py_bf_api(twemproxy, sharding_proxy):
    """redis-py's bf() commands through bloomproxy, on filters on both servers."""
    p = sharding_proxy("--bf-max-shard-bytes", str(SHARD))
    r = p.client()
    bf = r.bf()
    names = flat(names_per_server(twemproxy, "rp:{}")) + ["{1:t}rp"]
    for n in names:
        model = ModelFilter(0.001, 200)
        assert bf.create(n, 0.001, 200) is True
        assert bf.add(n, "alpha") == model.add(b"alpha") == 1
        assert bf.add(n, "alpha") == 0
        items = [f"{n}:{i}".encode() for i in range(500)]
        assert bf.madd(n, *items) == [model.add(x) for x in items]
        assert bf.exists(n, "alpha") == 1
        assert bf.exists(n, "beta") == model.exists(b"beta")
        assert bf.mexists(n, *items[:100]) == [1] * 100
        info = bf.info(n)
        assert (info.capacity, info.size, info.filterNum, info.insertedNum,
                info.expansionRate) == tuple(model.info().values())
        # redis-py 4.3 has no bf().card(); BF.CARD is then sent as a plain command.
        card = bf.card(n) if hasattr(bf, "card") else r.execute_command("BF.CARD", n)
        assert card == model.total
        assert r.type(n) == b"MBbloom--"
    layout = check_layout(twemproxy, names, shard_bytes=SHARD)
    assert {server for server, _ in layout.values()} == {0, 1}
    assert r.delete(*names) == len(names)
    assert twemproxy.keys_by_server() == {}
    assert_no_upstream_errors(p)

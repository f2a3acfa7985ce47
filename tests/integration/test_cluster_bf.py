"""BF.* through bloomproxy in front of a Redis Cluster (3 masters with a replica each): the
recorded RedisBloom vectors replayed byte for byte with the case keys as they are and with keys
given a hash tag; a filter's internal keys all in the name's slot on the master serving it, and
hidden from KEYS / SCAN / DBSIZE through the proxy; filters shared by several proxies; DEL,
UNLINK, the EXPIRE family and RENAME on a filter's name acting on the whole filter.

The cluster is started once for the module (conftest `redis_cluster`); every test empties it
first (FLUSHALL on each master, straight to the nodes).
"""

import random
import time

import pytest

from bf_vectors import (data_keys_of, key_hash_slot, load_cases, marker_keys_of,
                        parse_data_key, replay_case)
from bp_helpers import encode_command as cmd
from test_bf_concurrency import check_filter_consistent, run_threads
from test_bf_keys import assert_filter_is, assert_keys_expire_with, make_filter

CASES = load_cases()
SHARD = 64
SHARD_MODES = {"default": (), "sharded64": ("--bf-max-shard-bytes", str(SHARD))}
KEY_MODES = ("plain", "tagged")
CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
# Relative expiries may reach the data keys a moment after the name (as in test_bf_keys.py).
RELATIVE_TOLERANCE_MS = 100

# Where the vectors' commands have their keys.
ALL_KEYS = {b"DEL", b"EXISTS", b"UNLINK", b"TOUCH"}  # every argument
TWO_KEYS = {b"RENAME", b"RENAMENX"}  # a cluster cannot split these: one slot or CROSSSLOT


def key_positions(args):
    name = args[0].upper()
    if name in ALL_KEYS:
        return range(1, len(args))
    if name in TWO_KEYS:
        return range(1, min(3, len(args)))
    return range(1, min(2, len(args)))


def with_keys(case, rename):
    """`case` with every key k (at a key position) replaced by rename(k); items and other
    arguments stay as they are. The recorded replies never name a key, so they still hold
    (test_vector_keys_rename_and_spread checks both)."""
    mapping = {k: rename(k) for k in case["keys"]}
    cmds = []
    for args in case["cmds"]:
        out = list(args)
        for i in key_positions(args):
            out[i] = mapping.get(args[i], args[i])
        cmds.append(out)
    return dict(case, keys=[mapping[k] for k in case["keys"]], cmds=cmds)


def as_cluster_answers(case):
    """`case` as a cluster client sees it: a RENAME whose two keys hash to different slots gets
    CROSSSLOT, and the case ends there (what follows depends on the rename)."""
    for i, args in enumerate(case["cmds"]):
        if args[0].upper() in TWO_KEYS and key_hash_slot(args[1]) != key_hash_slot(args[2]):
            return dict(case, cmds=case["cmds"][:i + 1], replies=case["replies"][:i] + [CROSSSLOT])
    return case


def case_for(mode, index):
    """Case `index` with its keys as recorded ("plain") or as "{t<index>}key" ("tagged": one
    slot per case, the cases spread over the masters)."""
    case = CASES[index]
    if mode == "tagged":
        tag = b"{t%d}" % index
        return with_keys(case, lambda k: tag + k)
    return as_cluster_answers(case)


# ---------------------------------------------------------------------------------------------
# The cluster seen from its nodes


def keys_on_masters(cluster):
    """{key: master port} of every key on every master (KEYS * on each node)."""
    out = {}
    for m in cluster.masters():
        for k in m.client().keys("*"):
            assert k not in out, f"{k!r} is on two masters"
            out[k] = m.port
    return out


def check_layout(cluster, names, label="", shard_bytes=None):
    """The cluster holds only the keys `names` and their filters' internal keys (data keys and
    markers); each filter's internal keys lie in its name's slot on the master serving that
    slot, under one filter id with one marker; a name that does not exist has none left.
    Returns {name: its internal keys}."""
    names = [n.encode() if isinstance(n, str) else n for n in names]
    where = keys_on_masters(cluster)
    keys = set(where)
    internal = {}
    for name in names:
        data = data_keys_of(None, name, keys)
        markers = marker_keys_of(None, name, keys)
        internal[name] = data + markers
        if not internal[name]:
            continue
        assert name in keys, \
            f"{label} {name!r} does not exist but its keys remain: {internal[name][:5]}"
        assert len(markers) == 1 and data, f"{label} {name!r}: markers {markers}, data {data[:5]}"
        ids = {parse_data_key(k)[1] for k in data}
        assert len(ids) == 1, f"{label} {name!r}: data keys of {len(ids)} filter ids: {data[:6]}"
        owner = cluster.node_for_key(name).port
        for k in internal[name]:
            assert key_hash_slot(k) == key_hash_slot(name), \
                f"{label} {k!r} of {name!r} is not in the name's slot {key_hash_slot(name)}"
            assert where[k] == owner, \
                f"{label} {k!r} of {name!r} is on node {where[k]}, the name's slot on {owner}"
        if shard_bytes:
            client = cluster.by_port(owner).client()
            for k in data:
                if parse_data_key(k)[3] is not None:
                    assert client.strlen(k) <= shard_bytes, f"{label} {k!r} > {shard_bytes} B"
    stray = keys - set(names) - {k for ks in internal.values() for k in ks}
    assert not stray, f"{label} keys that belong to no name of {names}: {sorted(stray)[:8]}"
    return internal


def names_per_master(cluster, prefix, per_master=1):
    """Untagged names `prefix:N`, `per_master` of them served by each master."""
    want = {m.port: per_master for m in cluster.masters()}
    owners = cluster.slot_owners()
    port_of = {m.node_id: m.port for m in cluster.masters()}
    out, i = [], 0
    while any(want.values()):
        name = f"{prefix}:{i}"
        i += 1
        port = port_of[owners[key_hash_slot(name)]]
        if want[port]:
            want[port] -= 1
            out.append(name)
    return out


def same_slot_name(name, prefix):
    """An untagged name `prefix:N` in the slot of `name`."""
    i = 0
    while key_hash_slot(f"{prefix}:{i}") != key_hash_slot(name):
        i += 1
    return f"{prefix}:{i}"


def assert_gone(conn, cluster, name):
    """No filter `name` through the proxy, and none of its keys on any master."""
    assert [conn.command("EXISTS", name), conn.command("BF.EXISTS", name, "x"),
            conn.command("BF.CARD", name), conn.command("TYPE", name)] == [0, 0, 0, b"none"], \
        f"{name!r} still answers as a filter"
    keys = set(keys_on_masters(cluster))
    left = data_keys_of(None, name, keys) + marker_keys_of(None, name, keys)
    assert not left, f"{name!r} is gone but {len(left)} of its keys remain, e.g. {left[:3]}"


def check_expiry(cluster, name, tolerance_ms=0):
    """Every internal key of `name` expires when the name does (on the master serving it)."""
    client = cluster.node_for_key(name).client()
    keys = set(client.keys("*"))
    internal = data_keys_of(None, name, keys) + marker_keys_of(None, name, keys)
    assert_keys_expire_with(client, name, internal, tolerance_ms)
    return internal


# ---------------------------------------------------------------------------------------------
# Vectors


def test_vector_keys_rename_and_spread(redis_cluster):
    """Renaming keys is sound (a key never appears anywhere but at a key position, no reply
    names a key), and the case keys, plain or tagged, are served by every master."""
    for case in CASES:
        for args, reply in zip(case["cmds"], case["replies"]):
            positions = set(key_positions(args))
            others = [a for i, a in enumerate(args[1:], 1) if i not in positions]
            assert not set(others) & set(case["keys"]), f"{case['name']}: {args[:4]}"
            assert not any(k in reply for k in case["keys"]), f"{case['name']}: {reply[:80]!r}"
    masters = {m.port for m in redis_cluster.masters()}
    for mode in KEY_MODES:
        served_by = {redis_cluster.node_for_key(k).port
                     for i in range(len(CASES)) for k in case_for(mode, i)["keys"]}
        assert served_by == masters, mode
    assert any(len(case_for("plain", i)["cmds"]) < len(CASES[i]["cmds"])
               for i in range(len(CASES))), "no plain case has a RENAME across slots"
    assert all(case_for("tagged", i)["replies"] == CASES[i]["replies"] for i in range(len(CASES)))


@pytest.mark.parametrize("shards", sorted(SHARD_MODES))
@pytest.mark.parametrize("keys", KEY_MODES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c["name"] for c in CASES])
def test_vector_case(index, keys, shards, redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    case = case_for(keys, index)
    p = cluster_proxy(*SHARD_MODES[shards])
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, f"[{keys}, {shards}] {problem}"
    check_layout(redis_cluster, case["keys"], f"[{keys}, {shards}]",
                 SHARD if shards == "sharded64" else None)


# ---------------------------------------------------------------------------------------------
# Layout


ODD_NAMES = ["app{grp}x", "lone}brace", "{}empty-tag", b"bin\xff\x00name", "sp ace"]


def test_internal_keys_in_the_name_slot_on_one_master(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    names = names_per_master(redis_cluster, "lay", 2) + ["{t0}lay", "{t1}lay"] + ODD_NAMES
    p = cluster_proxy("--bf-max-shard-bytes", str(SHARD))
    with p.raw() as c:
        made = {n: make_filter(c, n) for n in names}
    internal = check_layout(redis_cluster, names, shard_bytes=SHARD)
    for name in names:
        # 400 items at capacity 100: 3 links of 64-byte shards.
        assert len(internal[name.encode() if isinstance(name, str) else name]) > 20, name
    # Read back through a proxy with other settings: the filters are all in the cluster.
    with cluster_proxy().raw() as c:
        for name, (model, items) in made.items():
            assert_filter_is(c, name, model, items)


def test_three_proxies_share_filters(redis_cluster, cluster_proxy):
    """Three writers, each through its own proxy, add overlapping items to three filters (one
    per master) at once: every item is then found through every proxy, and each filter is
    consistent (counts, metadata and bits the same through each proxy, links never overfilled);
    see test_bf_concurrency.check_filter_consistent."""
    redis_cluster.flushall()
    proxies = [cluster_proxy() for _ in range(3)]
    names = names_per_master(redis_cluster, "share")
    capacity, error, expansion = 500, 0.01, 2
    with proxies[0].raw() as c:
        for n in names:
            assert c.command("BF.RESERVE", n, str(error), str(capacity)) == b"OK"
    universe = {n: [f"{n}-item-{j}".encode() for j in range(3000)] for n in names}
    # Each writer 1500 items per filter; each shares 500 with the next writer.
    mine = [{n: [universe[n][(1000 * t + j) % 3000] for j in range(1500)] for n in names}
            for t in range(3)]
    ones = [{n: 0 for n in names} for _ in range(3)]

    def writer(tid):
        rnd = random.Random(tid)
        for n in names:
            rnd.shuffle(mine[tid][n])
        with proxies[tid].raw(timeout=60) as c:
            for i in range(0, 1500, 100):
                for n in names:  # interleaved: all three masters busy at once
                    batch = mine[tid][n][i:i + 100]
                    got = c.command("BF.MADD", n, *batch[:60])
                    c.send(b"".join(cmd("BF.ADD", n, it) for it in batch[60:]))
                    got += [c.read_reply() for _ in batch[60:]]
                    assert len(got) == 100 and all(v in (0, 1) for v in got), got[:5]
                    ones[tid][n] += sum(got)

    run_threads(writer, 3, timeout=120)
    for n in names:
        check_filter_consistent(proxies, n, universe[n], sum(o[n] for o in ones), capacity,
                                expansion, error)
    check_layout(redis_cluster, names)


# ---------------------------------------------------------------------------------------------
# Key-level commands on a filter's name


def test_del_and_unlink_filters_on_several_masters(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy("--bf-max-shard-bytes", str(SHARD))
    names = names_per_master(redis_cluster, "kd", 2)
    with p.raw() as c:
        made = {n: make_filter(c, n) for n in names}
        assert c.command("SET", "kd:plain", "v") == b"OK"
        gone, kept = names[0::2], names[1::2]  # one of each master
        # One DEL over three masters, a plain key, a duplicate and a missing key.
        assert c.command("DEL", *gone, "kd:plain", gone[0], "kd:missing") == len(gone) + 1
        for n in gone:
            assert_gone(c, redis_cluster, n)
        for n in kept:
            assert_filter_is(c, n, *made[n])
        check_layout(redis_cluster, names + ["kd:plain"])

        assert c.command("UNLINK", *kept, "kd:missing") == len(kept)
        for n in kept:
            assert_gone(c, redis_cluster, n)
        assert keys_on_masters(redis_cluster) == {}
        # A name deleted is free for a new, empty filter.
        assert c.command("BF.ADD", gone[0], "fresh") == 1
        assert c.command("BF.CARD", gone[0]) == 1
    check_layout(redis_cluster, [gone[0]])


def test_expire_family_and_persist_reach_every_internal_key(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy("--bf-max-shard-bytes", str(SHARD))
    names = names_per_master(redis_cluster, "ke") + ["{t1}ke"]
    with p.raw() as c:
        for n in names:
            make_filter(c, n)
            check_expiry(redis_cluster, n)
            assert c.command("EXPIRE", n, "100") == 1
            assert c.command("TTL", n) == 100
            check_expiry(redis_cluster, n, RELATIVE_TOLERANCE_MS)
            assert c.command("PEXPIREAT", n, "99999999999000") == 1
            assert check_expiry(redis_cluster, n)
            assert c.command("PERSIST", n) == 1
            assert c.command("TTL", n) == -1
            check_expiry(redis_cluster, n)

        # A short expiry: the name and every internal key are gone when it passes.
        doomed = names[0]
        node = redis_cluster.node_for_key(doomed).client()
        internal = check_expiry(redis_cluster, doomed)
        assert c.command("PEXPIRE", doomed, "300") == 1
        check_expiry(redis_cluster, doomed, RELATIVE_TOLERANCE_MS)
        time.sleep(0.5)
        assert c.command("EXISTS", doomed) == 0
        assert c.command("BF.CARD", doomed) == 0
        # EXISTS on the node expires what is due (even before the active expiry cycle).
        assert [k for k in internal if node.exists(k)] == []
    check_layout(redis_cluster, names)


def test_rename_moves_the_whole_filter_within_a_slot(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy("--bf-max-shard-bytes", str(SHARD))
    src_untagged = "rn:src"
    dst_untagged = same_slot_name(src_untagged, "rn:dst")
    with p.raw() as c:
        for src, dst in (("{rn}src", "{rn}dst"), (src_untagged, dst_untagged)):
            model, items = make_filter(c, src)
            assert c.command("RENAME", src, dst) == b"OK"
            assert_filter_is(c, dst, model, items)
            assert_gone(c, redis_cluster, src)
            internal = check_layout(redis_cluster, [src, dst], shard_bytes=SHARD)
            assert internal[dst.encode()], f"{dst!r} has no internal keys"
            redis_cluster.flushall()

        # RENAMENX onto a free name in the slot, then onto a taken one.
        model, items = make_filter(c, "{rn}a")
        make_filter(c, "{rn}b", n_items=10)
        assert c.command("RENAMENX", "{rn}a", "{rn}b") == 0
        assert c.command("RENAMENX", "{rn}a", "{rn}c") == 1
        assert_filter_is(c, "{rn}c", model, items)
        check_layout(redis_cluster, ["{rn}a", "{rn}b", "{rn}c"])


def test_rename_across_slots_is_crossslot(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy()
    src = "rx:src"
    other = next(f"rx:dst:{i}" for i in range(1000)
                 if redis_cluster.node_for_key(f"rx:dst:{i}").port
                 != redis_cluster.node_for_key(src).port)
    same_node = next(f"rx:near:{i}" for i in range(10000)
                     if key_hash_slot(f"rx:near:{i}") != key_hash_slot(src)
                     and redis_cluster.node_for_key(f"rx:near:{i}").port
                     == redis_cluster.node_for_key(src).port)
    with p.raw() as c:
        model, items = make_filter(c, src)
        for dst in (other, same_node):  # another master, and another slot of the same master
            for command in ("RENAME", "RENAMENX"):
                c.send(cmd(command, src, dst))
                assert c.read_reply_raw() == CROSSSLOT, (command, dst)
        assert_filter_is(c, src, model, items)
        assert c.command("EXISTS", other, same_node) == 0
    check_layout(redis_cluster, [src, other, same_node])

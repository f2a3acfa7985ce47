"""--bf-max-shard-bytes: a sub-filter bigger than the limit is split over several upstream keys.
Clients must see no difference (byte-identical replies to an unsharded proxy and to RedisBloom's
model), and upstream every shard stays within the limit and in the filter name's cluster slot."""

import pytest

from bf_vectors import (ModelFilter, data_keys_of, key_hash_slot, link_bytes_from_shards,
                        marker_keys_of, parse_data_key, run_commands, upstream_keys)
from bp_helpers import parse_resp

SHARD = 64
RESERVE = ("0.01", "500")


def sequence(key):
    """The command sequence both proxies run, and the model's replies for the ones it covers."""
    model = ModelFilter(0.01, 500)
    members = [f"sh:{i}".encode() for i in range(3000)]
    others = [f"no:{i}".encode() for i in range(2000)]
    cmds = [("BF.RESERVE", key) + RESERVE]
    expected = [b"+OK\r\n"]
    for i in range(0, len(members), 500):
        batch = members[i:i + 500]
        cmds.append(("BF.MADD", key, *batch))
        expected.append(model.madd_reply(batch))
    for i in range(0, len(members), 1000):
        batch = members[i:i + 1000]
        cmds.append(("BF.MEXISTS", key, *batch))
        expected.append(b"*%d\r\n" % len(batch) + b":1\r\n" * len(batch))
    cmds.append(("BF.MEXISTS", key, *others))
    expected.append(b"*%d\r\n" % len(others) + b"".join(b":%d\r\n" % model.exists(o)
                                                       for o in others))
    for item in (b"single-1", b"", b"sh:5"):
        cmds.append(("BF.ADD", key, item))
        expected.append(b":%d\r\n" % model.add(item))
        cmds.append(("BF.EXISTS", key, item))
        expected.append(b":1\r\n")
    cmds.append(("BF.INFO", key))
    expected.append(model.info_reply())
    for field in ("CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"):
        cmds.append(("BF.INFO", key, field))
        expected.append(None)
    cmds.append(("BF.CARD", key))
    expected.append(b":%d\r\n" % model.total)
    return cmds, expected, model


def dump_and_reload(conn, key, copy):
    """SCANDUMP every chunk of `key`, LOADCHUNK them into `copy`, SCANDUMP the copy."""
    replies = []
    loaded = []
    it = 0
    while True:
        raw = run_commands(conn, [("BF.SCANDUMP", key, str(it))])[0]
        replies.append(raw)
        nxt, data = parse_resp(raw)[0]
        if nxt == 0:
            break
        loaded.append(run_commands(conn, [("BF.LOADCHUNK", copy, str(nxt), data)])[0])
        it = nxt
    copy_replies = []
    it = 0
    while True:
        raw = run_commands(conn, [("BF.SCANDUMP", copy, str(it))])[0]
        copy_replies.append(raw)
        nxt = parse_resp(raw)[0][0]
        if nxt == 0:
            break
        it = nxt
    return replies, loaded, copy_replies


@pytest.fixture
def two_setups(proxy, redis_instance, redis_factory):
    """(proxy, redis) with 64-byte shards, and (proxy, redis) with the default, each alone on
    its own redis-server so the same key names can be used."""
    other = redis_factory()
    sharded = proxy("--bf-max-shard-bytes", str(SHARD))
    plain = proxy(upstream=other.address)
    return (sharded, redis_instance), (plain, other)


def test_sharded_and_unsharded_replies_identical(two_setups):
    (sharded, sharded_redis), (plain, plain_redis) = two_setups
    key = "shard:f"
    cmds, expected, model = sequence(key)
    results = {}
    for label, p in (("sharded", sharded), ("default", plain)):
        with p.raw(timeout=30) as c:
            replies = run_commands(c, cmds)
            dumps, loaded, copy_dumps = dump_and_reload(c, key, "shard:copy")
            copy_checks = run_commands(c, [("BF.MEXISTS", "shard:copy",
                                            *[f"sh:{i}" for i in range(0, 3000, 7)]),
                                           ("BF.INFO", "shard:copy"), ("BF.CARD", "shard:copy")])
        results[label] = (replies, dumps, loaded, copy_dumps, copy_checks)
        for i, (args, exp, got) in enumerate(zip(cmds, expected, replies)):
            if exp is not None:
                assert got == exp, (f"[{label}] command #{i} {args[0]} {args[1]!r}: expected "
                                    f"{exp[:200]!r}, got {got[:200]!r}")
        assert dumps == model.scandump_replies(), f"[{label}] SCANDUMP differs from RedisBloom's"
        assert loaded == [b"+OK\r\n"] * (len(dumps) - 1), f"[{label}] LOADCHUNK replies {loaded}"
        assert copy_dumps == dumps, f"[{label}] the copy's SCANDUMP differs from the original's"
        assert copy_checks[0] == b"*429\r\n" + b":1\r\n" * 429
        assert copy_checks[1] == model.info_reply()
        assert copy_checks[2] == b":%d\r\n" % model.total
    assert results["sharded"] == results["default"]
    assert model.info()["Number of filters"] == 3  # 500 + 1000 + 2000

    # Upstream of the sharded proxy: several shard keys per sub-filter, none above the limit,
    # all in the name's slot, and their bytes are exactly RedisBloom's sub-filter bytes.
    direct = sharded_redis.client()
    for name in (key, "shard:copy"):
        keys = data_keys_of(direct, name)
        shards = [k for k in keys if parse_data_key(k)[3] is not None]
        links = {parse_data_key(k)[2] for k in shards}
        assert links == {0, 1, 2}, f"{name}: shard keys {shards[:10]} ({len(shards)} in all)"
        for link_no, link in enumerate(model.links):
            n = sum(1 for k in shards if parse_data_key(k)[2] == link_no)
            assert n >= 2, f"{name}: sub-filter {link_no} ({link.nbytes} bytes) in {n} key(s)"
        for k in keys:
            assert direct.strlen(k) <= SHARD, f"{k!r}: {direct.strlen(k)} bytes > {SHARD}"
            assert key_hash_slot(k) == key_hash_slot(name), f"{k!r} not in the slot of {name!r}"
        ids = {parse_data_key(k)[1] for k in keys}
        assert len(ids) == 1, f"{name}: data keys of several filter ids {ids}"
        fid = ids.pop()
        rebuilt = link_bytes_from_shards(direct, name, SHARD)
        for link_no, link in enumerate(model.links):
            got = rebuilt.get((fid, link_no), b"")
            want = bytes(link.array)
            assert got + b"\0" * (len(want) - len(got)) == want, \
                f"{name}: sub-filter {link_no}'s shards do not hold RedisBloom's bytes"

    # Unsharded: one bits key per sub-filter.
    direct = plain_redis.client()
    keys = data_keys_of(direct, key)
    shards = [k for k in keys if parse_data_key(k)[3] is not None]
    assert sorted(parse_data_key(k)[2] for k in shards) == [0, 1, 2], shards
    for k in shards:
        link = model.links[parse_data_key(k)[2]]
        assert direct.strlen(k) <= link.nbytes


@pytest.mark.parametrize("name", [b"slot:plain", b"user{42}:bf", b"{tag}", b"a}b", b"x{}y",
                                  b"we{ird", b"", b"bin\x00\xff{", b"{}"],
                         ids=["plain", "tagged", "only-tag", "close-brace", "empty-tag",
                              "open-brace", "empty-name", "binary", "empty-braces"])
def test_data_keys_in_the_names_slot(proxy, redis_instance, name):
    """Whatever the name (hash tag or not, stray braces, empty, binary), every data key of the
    filter hashes to the name's cluster slot, and the filter works."""
    p = proxy("--bf-max-shard-bytes", str(SHARD))
    model = ModelFilter(0.01, 100)
    items = [b"k%d" % i for i in range(300)]
    with p.raw() as c:
        assert c.command("BF.RESERVE", name, "0.01", "100") == b"OK"
        assert c.command("BF.MADD", name, *items) == [model.add(i) for i in items]
        assert c.command("BF.MEXISTS", name, *items) == [1] * len(items)
        assert c.command("BF.CARD", name) == model.total
        assert c.command("TYPE", name) == b"MBbloom--"
    direct = redis_instance.client()
    keys = upstream_keys(direct)
    assert name in keys
    data = data_keys_of(direct, name, keys)
    assert len(data) >= 5, f"data keys of {name!r}: {sorted(keys)[:20]}"
    markers = marker_keys_of(direct, name, keys)
    assert len(markers) == 1, f"markers of {name!r}: {markers}"
    assert set(data) | {name} | set(markers) == keys, \
        f"unexpected upstream keys: {sorted(keys - set(data))[:10]}"
    slot = key_hash_slot(name)
    wrong = [k for k in data + markers if key_hash_slot(k) != slot]
    assert not wrong, f"name {name!r} (slot {slot}): data keys in other slots: {wrong[:5]}"
    for k in data:
        assert direct.strlen(k) <= SHARD


def test_proxies_with_different_shard_sizes_share_filters(proxy, redis_instance):
    """Proxies configured with different shard sizes read and extend the same filters correctly
    (a stateless fleet may be reconfigured one proxy at a time)."""
    small = proxy("--bf-max-shard-bytes", str(SHARD))
    big = proxy()
    direct = redis_instance.client()
    for name, creator, other in (("mix:small", small, big), ("mix:big", big, small)):
        model = ModelFilter(0.01, 200)
        items = [f"{name}:{i}".encode() for i in range(1500)]
        with creator.raw(timeout=30) as c, other.raw(timeout=30) as d:
            assert c.command("BF.RESERVE", name, "0.01", "200") == b"OK"
            for i in range(0, 1500, 300):
                conn = c if (i // 300) % 2 == 0 else d
                batch = items[i:i + 300]
                assert conn.command("BF.MADD", name, *batch) == [model.add(x) for x in batch]
            # 1500 items at capacity 200, expansion 2: 200 + 400 + 800 < 1500, so 4 links.
            assert model.info()["Number of filters"] == 4
            probes = [f"probe:{i}".encode() for i in range(1000)]
            for conn in (c, d):
                assert conn.command("BF.MEXISTS", name, *items) == [1] * len(items)
                assert conn.command("BF.MEXISTS", name, *probes) == \
                    [model.exists(x) for x in probes]
                assert run_commands(conn, [("BF.INFO", name)]) == [model.info_reply()]
                dump = []
                it = 0
                while True:
                    raw = run_commands(conn, [("BF.SCANDUMP", name, str(it))])[0]
                    dump.append(raw)
                    it = parse_resp(raw)[0][0]
                    if it == 0:
                        break
                assert dump == model.scandump_replies()
        keys = data_keys_of(direct, name)
        assert keys and all(key_hash_slot(k) == key_hash_slot(name) for k in keys)

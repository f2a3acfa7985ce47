"""Key-level commands on a filter's name act on the whole filter (name + every data key upstream)
with the replies Redis gives for one key: TYPE, EXISTS, DEL, UNLINK, the EXPIRE family, TTL,
PTTL, PERSIST, RENAME, RENAMENX. Also plain values written over a filter and BF.* on keys of
other types."""

import time

import pytest

from bf_vectors import (WRONGTYPE, ModelFilter, data_keys_of, key_hash_slot, marker_keys_of,
                        parse_data_key, run_commands, upstream_keys)
from bp_helpers import encode_command as cmd, parse_resp, replies_of, wait_until

SHARD = 64
MODES = {"default": (), "sharded64": ("--bf-max-shard-bytes", str(SHARD))}
# Relative expiries (EXPIRE/PEXPIRE, a sub-filter created later) may be applied to the data keys
# a moment after the name; absolute ones (EXPIREAT/PEXPIREAT) must match to the millisecond.
RELATIVE_TOLERANCE_MS = 100


def make_filter(conn, name, n_items=400, capacity=100, error=0.01, tag="i"):
    """Reserves `name` and adds n_items (capacity 100 -> several sub-filters). Returns
    (model, items)."""
    model = ModelFilter(error, capacity)
    items = [f"{tag}:{name}:{i}".encode() for i in range(n_items)]
    assert conn.command("BF.RESERVE", name, str(error), str(capacity)) == b"OK"
    for i in range(0, n_items, 200):
        batch = items[i:i + 200]
        assert conn.command("BF.MADD", name, *batch) == [model.add(x) for x in batch]
    return model, items


def assert_filter_is(conn, name, model, items, probes=()):
    """`name` answers exactly like `model` (members, non-members, INFO, CARD, SCANDUMP)."""
    assert conn.command("BF.MEXISTS", name, *items) == [1] * len(items), f"members of {name}"
    if probes:
        assert conn.command("BF.MEXISTS", name, *probes) == [model.exists(p) for p in probes]
    replies = run_commands(conn, [("BF.INFO", name), ("BF.CARD", name)])
    assert replies == [model.info_reply(), b":%d\r\n" % model.total], f"INFO/CARD of {name}"
    dump = []
    it = 0
    while True:
        raw = run_commands(conn, [("BF.SCANDUMP", name, str(it))])[0]
        dump.append(raw)
        it = parse_resp(raw)[0][0]
        if it == 0:
            break
    assert dump == model.scandump_replies(), f"SCANDUMP of {name}"


def assert_gone(conn, direct, name, item=b"x"):
    """No filter `name`: EXISTS 0, BF.EXISTS 0, BF.CARD 0, and no data keys upstream."""
    assert run_commands(conn, [("EXISTS", name), ("BF.EXISTS", name, item), ("BF.CARD", name),
                               ("TYPE", name)]) == [b":0\r\n", b":0\r\n", b":0\r\n", b"+none\r\n"]
    left = data_keys_of(direct, name)
    assert not left, f"{name!r} is gone but {len(left)} data keys remain, e.g. {left[:3]}"


def assert_only_keys(direct, filters=(), plain=()):
    """Upstream holds exactly these filters (name + data keys of one id each) and plain keys."""
    keys = upstream_keys(direct)
    expected = {n.encode() if isinstance(n, str) else n for n in list(filters) + list(plain)}
    for name in filters:
        data = data_keys_of(direct, name, keys)
        assert data, f"filter {name!r} has no data keys upstream"
        ids = {parse_data_key(k)[1] for k in data}
        assert len(ids) == 1, f"filter {name!r}: data keys of {len(ids)} filter ids: {data[:6]}"
        slot = key_hash_slot(name)
        assert all(key_hash_slot(k) == slot for k in data), f"{name!r}: data keys in other slots"
        markers = marker_keys_of(direct, name, keys)
        assert len(markers) == 1, f"filter {name!r}: markers {markers}"
        assert key_hash_slot(markers[0]) == slot, f"{name!r}: marker in another slot"
        expected |= set(data) | set(markers)
    assert keys == expected, (f"unexpected upstream keys: {sorted(keys - expected)[:8]}; "
                              f"missing: {sorted(expected - keys)[:8]}")


def pexpiretime(direct, key):
    return direct.execute_command("PEXPIRETIME", key)


def assert_keys_expire_with(direct, name, keys, tolerance_ms=0):
    """Each of `keys` expires when `name` does on the server `direct` (both persistent, or the
    same absolute time within tolerance_ms). Returns the name's PEXPIRETIME."""
    when = pexpiretime(direct, name)
    assert when != -2, f"{name!r} does not exist upstream"
    assert keys, f"{name!r} has no internal keys on {direct}"
    for k in keys:
        t = pexpiretime(direct, k)
        if when == -1:
            assert t == -1, f"{name!r} is persistent but {k!r} expires at {t}"
        else:
            assert t != -1 and abs(t - when) <= tolerance_ms, \
                f"{name!r} expires at {when} but {k!r} at {t}"
    return when


def assert_data_expiry(direct, name, tolerance_ms=0):
    """Every data key of `name` expires when the name does."""
    return assert_keys_expire_with(direct, name, data_keys_of(direct, name), tolerance_ms)


@pytest.fixture(params=sorted(MODES))
def bfp(request, proxy):
    return proxy(*MODES[request.param])


def test_type_and_exists(bfp, redis_instance):
    with bfp.raw() as c:
        make_filter(c, "k:f1")
        make_filter(c, "k:f2", n_items=10)
        assert c.command("SET", "k:plain", "v") == b"OK"
        assert run_commands(c, [("TYPE", "k:f1"), ("TYPE", "k:f2"), ("TYPE", "k:plain"),
                                ("TYPE", "k:missing")]) == \
            [b"+MBbloom--\r\n", b"+MBbloom--\r\n", b"+string\r\n", b"+none\r\n"]
        assert run_commands(c, [("EXISTS", "k:f1"), ("EXISTS", "k:missing"),
                                ("EXISTS", "k:f1", "k:plain", "k:missing", "k:f2", "k:f1"),
                                ("EXISTS", "k:missing", "k:missing2")]) == \
            [b":1\r\n", b":0\r\n", b":4\r\n", b":0\r\n"]
    assert_only_keys(redis_instance.client(), filters=["k:f1", "k:f2"], plain=["k:plain"])


def test_del_and_unlink_several_filters(bfp, redis_instance):
    direct = redis_instance.client()
    with bfp.raw() as c:
        for n in ("d:f1", "d:f2", "d:f3", "d:f4"):
            make_filter(c, n)
        assert c.command("SET", "d:p1", "1") == b"OK"
        assert c.command("SET", "d:p2", "2") == b"OK"
        assert_only_keys(direct, ["d:f1", "d:f2", "d:f3", "d:f4"], ["d:p1", "d:p2"])

        # One per filter, duplicates and missing keys count as in Redis.
        assert c.command("DEL", "d:f1", "d:p1", "d:missing", "d:f2", "d:f1") == 3
        assert_gone(c, direct, "d:f1")
        assert_gone(c, direct, "d:f2")
        assert_only_keys(direct, ["d:f3", "d:f4"], ["d:p2"])
        assert c.command("DEL", "d:f1") == 0

        assert c.command("UNLINK", "d:f3", "d:p2", "d:f4", "d:f3", "d:missing") == 3
        assert_gone(c, direct, "d:f3")
        assert_gone(c, direct, "d:f4")
        assert upstream_keys(direct) == set()
        assert c.command("UNLINK", "d:f3") == 0

        # A filter created again under a deleted name starts empty.
        assert c.command("BF.ADD", "d:f1", "fresh") == 1
        assert c.command("BF.EXISTS", "d:f1", "i:d:f1:0") == 0
        assert c.command("BF.CARD", "d:f1") == 1
        assert_only_keys(direct, ["d:f1"])


def test_del_through_another_proxy(proxy, redis_instance):
    a, b = proxy(), proxy("--bf-max-shard-bytes", str(SHARD))
    direct = redis_instance.client()
    with a.raw() as ca, b.raw() as cb:
        make_filter(ca, "x:f")
        assert cb.command("TYPE", "x:f") == b"MBbloom--"
        assert cb.command("DEL", "x:f") == 1
        assert_gone(ca, direct, "x:f")
        assert upstream_keys(direct) == set()


def test_expire_family_ttl_pttl_persist(proxy, redis_instance):
    p = proxy("--bf-max-shard-bytes", str(SHARD))
    direct = redis_instance.client()
    with p.raw() as c:
        model, items = make_filter(c, "e:f")
        assert model.info()["Number of filters"] >= 3
        assert run_commands(c, [("TTL", "e:f"), ("PTTL", "e:f")]) == [b":-1\r\n", b":-1\r\n"]
        assert_data_expiry(direct, "e:f")

        assert c.command("EXPIRE", "e:f", "100") == 1
        assert c.command("TTL", "e:f") == 100
        pttl = c.command("PTTL", "e:f")
        assert 99000 < pttl <= 100000, pttl
        assert_data_expiry(direct, "e:f", RELATIVE_TOLERANCE_MS)

        assert c.command("PEXPIRE", "e:f", "200000") == 1
        pttl = c.command("PTTL", "e:f")
        assert 199000 < pttl <= 200000, pttl
        assert c.command("TTL", "e:f") == 200
        assert_data_expiry(direct, "e:f", RELATIVE_TOLERANCE_MS)

        at = int(time.time()) + 300
        assert c.command("EXPIREAT", "e:f", str(at)) == 1
        assert c.command("TTL", "e:f") in (299, 300)
        assert assert_data_expiry(direct, "e:f") == at * 1000

        at_ms = int(time.time() * 1000) + 400123
        assert c.command("PEXPIREAT", "e:f", str(at_ms)) == 1
        assert assert_data_expiry(direct, "e:f") == at_ms
        assert c.command("TTL", "e:f") in (399, 400)

        assert c.command("PERSIST", "e:f") == 1
        assert run_commands(c, [("TTL", "e:f"), ("PTTL", "e:f"), ("PERSIST", "e:f")]) == \
            [b":-1\r\n", b":-1\r\n", b":0\r\n"]
        assert_data_expiry(direct, "e:f")

        # Missing keys.
        assert run_commands(c, [("EXPIRE", "e:none", "10"), ("PEXPIRE", "e:none", "10"),
                                ("EXPIREAT", "e:none", "9999999999"), ("TTL", "e:none"),
                                ("PTTL", "e:none"), ("PERSIST", "e:none")]) == \
            [b":0\r\n", b":0\r\n", b":0\r\n", b":-2\r\n", b":-2\r\n", b":0\r\n"]
        assert_filter_is(c, "e:f", model, items)
    assert_only_keys(direct, ["e:f"])


def test_expire_options_and_errors_like_redis(proxy, redis_instance):
    """The same EXPIRE sequence on a filter (through the proxy) and on a plain string (directly
    on redis-server) gives the same bytes."""
    p = proxy("--bf-max-shard-bytes", str(SHARD))
    seq = [
        ("EXPIRE", "{k}", "100", "XX"),
        ("EXPIRE", "{k}", "100", "NX"),
        ("EXPIRE", "{k}", "200", "NX"),
        ("EXPIRE", "{k}", "50", "GT"),
        ("EXPIRE", "{k}", "150", "GT"),
        ("EXPIRE", "{k}", "500", "LT"),
        ("EXPIRE", "{k}", "120", "lt"),
        ("TTL", "{k}"),
        ("PEXPIRE", "{k}", "130000", "XX"),
        ("TTL", "{k}"),
        ("PEXPIRE", "{k}", "1000", "GT"),
        ("EXPIREAT", "{k}", "99999999999", "NX"),
        ("PEXPIREAT", "{k}", "99999999999", "XX", "GT"),
        ("EXPIRE", "{k}", "abc"),
        ("EXPIRE", "{k}", "10", "FOO"),
        ("EXPIRE", "{k}", "10", "NX", "XX"),
        ("EXPIRE", "{k}", "10", "GT", "LT"),
        ("EXPIRE", "{k}"),
        ("PEXPIRE", "{k}", "1", "2"),
        ("TTL", "{k}", "x"),
        ("PERSIST", "{k}", "x"),
        ("TTL", "{k}"),
    ]
    name = "o:f"
    with p.raw() as c:
        make_filter(c, name, n_items=150)
        via_proxy = run_commands(c, [tuple(name if a == "{k}" else a for a in args)
                                     for args in seq])
    direct_payload = cmd("SET", "o:plain", "v") + b"".join(
        cmd(*[("o:plain" if a == "{k}" else a) for a in args]) for args in seq)
    direct = replies_of(redis_instance.port, direct_payload, len(seq) + 1)[1:]
    for args, got, want in zip(seq, via_proxy, direct):
        assert got == want, f"{args}: proxy {got!r}, redis {want!r}"
    assert_data_expiry(redis_instance.client(), name, RELATIVE_TOLERANCE_MS)


def test_subfilter_created_after_expire_shares_the_ttl_then_all_expires(proxy, redis_instance):
    p = proxy("--bf-max-shard-bytes", str(SHARD))
    direct = redis_instance.client()
    with p.raw() as c:
        model, items = make_filter(c, "t:f", n_items=50)
        assert model.info()["Number of filters"] == 1
        before = set(data_keys_of(direct, "t:f"))
        assert c.command("EXPIRE", "t:f", "1000") == 1
        more = [f"more:{i}".encode() for i in range(600)]
        for i in range(0, 600, 100):
            assert c.command("BF.MADD", "t:f", *more[i:i + 100]) == \
                [model.add(x) for x in more[i:i + 100]]
        assert model.info()["Number of filters"] == 3
        after = set(data_keys_of(direct, "t:f"))
        assert len(after - before) >= 2, "no new data keys for the new sub-filters"
        assert_data_expiry(direct, "t:f", RELATIVE_TOLERANCE_MS)

        # An absolute expiry, then one more sub-filter: its keys get exactly that time.
        at_ms = int(time.time() * 1000) + 500000
        assert c.command("PEXPIREAT", "t:f", str(at_ms)) == 1
        extra = [f"extra:{i}".encode() for i in range(800)]
        for i in range(0, 800, 100):
            assert c.command("BF.MADD", "t:f", *extra[i:i + 100]) == \
                [model.add(x) for x in extra[i:i + 100]]
        assert model.info()["Number of filters"] == 4
        assert assert_data_expiry(direct, "t:f", RELATIVE_TOLERANCE_MS) == at_ms
        assert_filter_is(c, "t:f", model, items + more + extra)

        # Let it expire: the whole filter goes.
        assert c.command("PEXPIRE", "t:f", "700") == 1
        assert_data_expiry(direct, "t:f", RELATIVE_TOLERANCE_MS)
        time.sleep(0.8)
        wait_until(lambda: c.command("EXISTS", "t:f") == 0, 5, what="filter expiry")
        wait_until(lambda: not data_keys_of(direct, "t:f"), 5, what="data keys expiry")
        assert_gone(c, direct, "t:f", item=items[0])
        assert c.command("BF.EXISTS", "t:f", more[0]) == 0
        assert upstream_keys(direct) == set()
        # A new filter under the name is fresh and persistent.
        assert c.command("BF.ADD", "t:f", "new") == 1
        assert run_commands(c, [("BF.CARD", "t:f"), ("TTL", "t:f")]) == [b":1\r\n", b":-1\r\n"]
        assert_data_expiry(direct, "t:f")


def test_expire_in_the_past_deletes_the_filter(bfp, redis_instance):
    direct = redis_instance.client()
    with bfp.raw() as c:
        for name, args in (("z:1", ("EXPIRE", "0")), ("z:2", ("PEXPIRE", "-5")),
                           ("z:3", ("EXPIREAT", "1")), ("z:4", ("PEXPIREAT", "1000"))):
            make_filter(c, name, n_items=250)
            assert c.command(args[0], name, args[1]) == 1, args
            assert_gone(c, direct, name)
        assert upstream_keys(direct) == set()


def test_rename_to_a_new_name_keeps_data_and_ttl(bfp, redis_instance):
    direct = redis_instance.client()
    with bfp.raw() as c:
        model, items = make_filter(c, "r:src")
        assert c.command("EXPIRE", "r:src", "1000") == 1
        assert c.command("RENAME", "r:src", "r:dst") == b"OK"
        assert_gone(c, direct, "r:src", item=items[0])
        assert c.command("TYPE", "r:dst") == b"MBbloom--"
        assert c.command("TTL", "r:dst") in (999, 1000)
        assert_data_expiry(direct, "r:dst", RELATIVE_TOLERANCE_MS)
        probes = [f"probe:{i}".encode() for i in range(1000)]
        assert_filter_is(c, "r:dst", model, items, probes)
        assert_only_keys(direct, ["r:dst"])
        # Fully usable under the new name, including scaling further.
        more = [f"more:{i}".encode() for i in range(500)]
        assert c.command("BF.MADD", "r:dst", *more) == [model.add(x) for x in more]
        assert_filter_is(c, "r:dst", model, items + more, probes)
        assert_data_expiry(direct, "r:dst", RELATIVE_TOLERANCE_MS)
        assert_only_keys(direct, ["r:dst"])
        # And back (a name in another slot again).
        assert c.command("RENAME", "r:dst", "r:src") == b"OK"
        assert_gone(c, direct, "r:dst")
        assert_filter_is(c, "r:src", model, items + more, probes)
        assert_only_keys(direct, ["r:src"])


def test_rename_over_a_plain_key_and_over_a_filter(bfp, redis_instance):
    direct = redis_instance.client()
    with bfp.raw() as c:
        model_a, items_a = make_filter(c, "r:a", tag="a")
        model_b, items_b = make_filter(c, "r:b", n_items=700, tag="b")
        assert c.command("SET", "r:plain", "v") == b"OK"
        assert c.command("EXPIRE", "r:plain", "50") == 1

        assert c.command("RENAME", "r:a", "r:plain") == b"OK"
        assert c.command("TYPE", "r:plain") == b"MBbloom--"
        assert c.command("TTL", "r:plain") == -1  # RENAME carries the source's (none)
        assert_filter_is(c, "r:plain", model_a, items_a)
        assert_gone(c, direct, "r:a")
        assert_only_keys(direct, ["r:plain", "r:b"])

        # Over an existing filter: the target's old data disappears entirely.
        assert c.command("RENAME", "r:plain", "r:b") == b"OK"
        assert_gone(c, direct, "r:plain")
        assert_filter_is(c, "r:b", model_a, items_a)
        assert c.command("BF.MEXISTS", "r:b", *items_b) == [model_a.exists(x) for x in items_b]
        assert_only_keys(direct, ["r:b"])

        # A filter renamed over itself stays as it is.
        assert c.command("RENAME", "r:b", "r:b") == b"OK"
        assert_filter_is(c, "r:b", model_a, items_a)
        assert_only_keys(direct, ["r:b"])


def test_renamenx(bfp, redis_instance):
    direct = redis_instance.client()
    with bfp.raw() as c:
        model_a, items_a = make_filter(c, "n:a", tag="a")
        model_b, items_b = make_filter(c, "n:b", n_items=50, tag="b")
        assert c.command("SET", "n:plain", "v") == b"OK"
        assert c.command("RENAMENX", "n:a", "n:plain") == 0
        assert c.command("RENAMENX", "n:a", "n:b") == 0
        assert c.command("RENAMENX", "n:a", "n:a") == 0
        assert c.command("GET", "n:plain") == b"v"
        assert_filter_is(c, "n:a", model_a, items_a)
        assert_filter_is(c, "n:b", model_b, items_b)
        assert_only_keys(direct, ["n:a", "n:b"], ["n:plain"])

        assert c.command("RENAMENX", "n:a", "n:new") == 1
        assert_gone(c, direct, "n:a")
        assert_filter_is(c, "n:new", model_a, items_a)
        assert_only_keys(direct, ["n:new", "n:b"], ["n:plain"])
        # A plain key renamed (NX) onto a free name still behaves as in Redis.
        assert c.command("RENAMENX", "n:plain", "n:a") == 1
        assert c.command("GET", "n:a") == b"v"


def test_rename_errors_like_redis(bfp, redis_instance):
    seq = [("RENAME", "m:missing", "m:x"), ("RENAMENX", "m:missing", "m:x"),
           ("RENAME", "m:k"), ("RENAMENX", "m:k", "m:x", "m:y"),
           ("RENAME", "m:missing", "m:missing")]
    with bfp.raw() as c:
        model, items = make_filter(c, "m:k", n_items=20)
        via_proxy = run_commands(c, seq)
        assert_filter_is(c, "m:k", model, items)
    direct = replies_of(redis_instance.port, b"".join(cmd(*a) for a in seq), len(seq))
    assert via_proxy == direct


def test_plain_value_written_over_a_filter(bfp, redis_instance):
    header = b"\x01" + b"\x00" * 19  # not a valid dump header
    with bfp.raw() as c:
        make_filter(c, "w:f", n_items=300)
        assert c.command("SET", "w:f", "plain") == b"OK"
        replies = run_commands(c, [
            ("TYPE", "w:f"), ("GET", "w:f"),
            ("BF.EXISTS", "w:f", "i:w:f:1"), ("BF.MEXISTS", "w:f", "i:w:f:1", "i:w:f:2"),
            ("BF.ADD", "w:f", "x"), ("BF.MADD", "w:f", "x", "y"), ("BF.INSERT", "w:f", "ITEMS", "x"),
            ("BF.INFO", "w:f"), ("BF.INFO", "w:f", "CAPACITY"), ("BF.CARD", "w:f"),
            ("BF.RESERVE", "w:f", "0.01", "10"), ("BF.SCANDUMP", "w:f", "0"),
            ("BF.LOADCHUNK", "w:f", "100", b"chunk"),
            # RedisBloom checks the key's type before it looks at the data.
            ("BF.LOADCHUNK", "w:f", "1", header),
        ])
        assert replies == [b"+string\r\n", b"$5\r\nplain\r\n", b":0\r\n", b"*2\r\n:0\r\n:0\r\n",
                           WRONGTYPE, WRONGTYPE, WRONGTYPE, WRONGTYPE, WRONGTYPE, WRONGTYPE,
                           WRONGTYPE, WRONGTYPE, WRONGTYPE, WRONGTYPE]
    with bfp.raw() as c:
        assert run_commands(c, [("GET", "w:f"), ("DEL", "w:f")]) == [b"$5\r\nplain\r\n", b":1\r\n"]
        # The name is free again for a new, empty filter.
        assert c.command("BF.ADD", "w:f", "i:w:f:1") == 1
        assert c.command("BF.CARD", "w:f") == 1


@pytest.mark.parametrize("kind", ["list", "hash", "set", "zset", "stream"])
def test_bf_commands_on_other_types(bp, redis_instance, kind):
    create = {"list": ("RPUSH", "o:k", "a", "b"), "hash": ("HSET", "o:k", "f", "v"),
              "set": ("SADD", "o:k", "a"), "zset": ("ZADD", "o:k", "1", "a"),
              "stream": ("XADD", "o:k", "1-1", "f", "v")}[kind]
    direct = redis_instance.client()
    with bp.raw() as c:
        c.command("BF.RESERVE", "o:src", "0.01", "100")
        header = c.command("BF.SCANDUMP", "o:src", "0")[1]
        assert c.command("DEL", "o:src") == 1
        c.command(*create)
        before = direct.dump("o:k")
        replies = run_commands(c, [
            ("TYPE", "o:k"),
            ("BF.EXISTS", "o:k", "a"), ("BF.MEXISTS", "o:k", "a", "f", "1"),
            ("BF.ADD", "o:k", "a"), ("BF.MADD", "o:k", "a"), ("BF.INSERT", "o:k", "ITEMS", "a"),
            ("BF.INSERT", "o:k", "NOCREATE", "ITEMS", "a"),
            ("BF.INFO", "o:k"), ("BF.CARD", "o:k"), ("BF.RESERVE", "o:k", "0.01", "10"),
            ("BF.SCANDUMP", "o:k", "0"), ("BF.SCANDUMP", "o:k", "1"),
            ("BF.LOADCHUNK", "o:k", "1", header), ("BF.LOADCHUNK", "o:k", "9", b"chunk"),
        ])
        assert replies == [b"+%s\r\n" % kind.encode(), b":0\r\n", b"*3\r\n:0\r\n:0\r\n:0\r\n"] + \
            [WRONGTYPE] * 11, replies
        assert direct.dump("o:k") == before, "the value changed"
        assert upstream_keys(direct) == {b"o:k"}
        # Key-level commands on it are plain Redis.
        assert c.command("DEL", "o:k") == 1

"""BF.* through redis-py's RedisBloom API (`r.bf()`), as an application would use it against
bloomproxy: reserve/create, add, madd, exists, mexists, insert, info, card, and the documented
SCANDUMP + LOADCHUNK migration loop."""

import pytest
import redis

from bf_vectors import ModelFilter, chain_links, info_size
from bp_helpers import encode_command


def bf_client(p):
    r = p.client()
    return r, r.bf()


def info_tuple(info):
    return (info.capacity, info.size, info.filterNum, info.insertedNum, info.expansionRate)


def card(r, key):
    # redis-py 4.3 has no bf().card(); BF.CARD is sent as a plain command.
    return r.execute_command("BF.CARD", key)


def test_create_variants_and_info(bp):
    r, bf = bf_client(bp)
    assert bf.create("rp:plain", 0.01, 1000) is True
    assert bf.create("rp:exp", 0.001, 500, expansion=4) is True
    assert bf.create("rp:ns", 0.02, 300, noScale=True) is True
    assert bf.create("rp:exp0", 0.01, 100, expansion=0) is True  # expansion 0 = non-scaling

    info = bf.info("rp:plain")
    assert info_tuple(info) == (1000, info_size(chain_links(0.01, 1000)), 1, 0, 2)
    info = bf.info("rp:exp")
    assert info_tuple(info) == (500, info_size(chain_links(0.001, 500, 4)), 1, 0, 4)
    info = bf.info("rp:ns")
    assert info_tuple(info) == (300, info_size(chain_links(0.02, 300, nonscaling=True)), 1, 0,
                                None)
    info = bf.info("rp:exp0")
    assert info_tuple(info) == (100, info_size(chain_links(0.01, 100, nonscaling=True)), 1, 0,
                                None)

    with pytest.raises(redis.ResponseError, match=r"^item exists$"):
        bf.create("rp:plain", 0.01, 1000)
    with pytest.raises(redis.ResponseError, match=r"^Nonscaling filters cannot expand$"):
        bf.create("rp:bad", 0.01, 1000, expansion=2, noScale=True)
    with pytest.raises(redis.ResponseError, match=r"^not found$"):
        bf.info("rp:missing")
    assert r.exists("rp:bad", "rp:missing") == 0
    assert r.type("rp:plain") == b"MBbloom--"


def test_add_madd_exists_mexists_card(bp):
    r, bf = bf_client(bp)
    model = ModelFilter(0.001, 1000)
    assert bf.create("rp:f", 0.001, 1000) is True
    assert bf.add("rp:f", "alpha") == model.add(b"alpha") == 1
    assert bf.add("rp:f", "alpha") == model.add(b"alpha") == 0
    assert bf.add("rp:f", b"\x00\xffbin") == model.add(b"\x00\xffbin") == 1
    items = [f"item-{i}" for i in range(300)]
    expected = [model.add(i.encode()) for i in items]
    assert expected.count(1) >= 295
    assert bf.madd("rp:f", *items) == expected
    expected = [model.add(i) for i in (b"alpha", b"new-1", b"new-1", b"item-7")]
    assert expected[0] == expected[2] == expected[3] == 0
    assert bf.madd("rp:f", "alpha", "new-1", "new-1", "item-7") == expected
    assert bf.exists("rp:f", "alpha") == 1
    assert bf.exists("rp:f", b"\x00\xffbin") == 1
    assert bf.exists("rp:f", "never-added") == model.exists(b"never-added")
    assert bf.mexists("rp:f", *items) == [1] * 300
    # Non-members: exactly RedisBloom's answers (false positives included), from the model.
    absent = [f"absent-{i}".encode() for i in range(2000)]
    assert bf.mexists("rp:f", *absent) == [model.exists(a) for a in absent]
    assert card(r, "rp:f") == model.total
    info = bf.info("rp:f")
    assert info_tuple(info) == (1000, info_size(chain_links(0.001, 1000)), 1, model.total, 2)

    # ADD/MADD on a missing key create a default filter (error 0.01, capacity 100, expansion 2).
    assert bf.add("rp:auto", "x") == 1
    assert info_tuple(bf.info("rp:auto")) == (100, info_size(chain_links(0.01, 100)), 1, 1, 2)
    assert bf.madd("rp:auto2", "a", "b", "a") == [1, 1, 0]
    assert card(r, "rp:auto2") == 2
    # Missing keys.
    assert bf.exists("rp:none", "x") == 0
    assert bf.mexists("rp:none", "x", "y") == [0, 0]
    assert card(r, "rp:none") == 0
    assert r.exists("rp:none") == 0


def test_scaling_through_redis_py(bp):
    r, bf = bf_client(bp)
    model = ModelFilter(0.01, 100)
    assert bf.create("rp:scale", 0.01, 100) is True
    items = [f"s{i}" for i in range(1000)]
    for i in range(0, 1000, 100):
        expected = [model.add(x.encode()) for x in items[i:i + 100]]
        assert bf.madd("rp:scale", *items[i:i + 100]) == expected, f"batch {i}"
    assert bf.mexists("rp:scale", *items) == [1] * 1000
    probes = [f"p{i}".encode() for i in range(3000)]
    assert bf.mexists("rp:scale", *probes) == [model.exists(x) for x in probes]
    info = model.info()
    assert info["Number of filters"] == 4  # 100 + 200 + 400 < ~990 <= 1500
    assert info_tuple(bf.info("rp:scale")) == (1500, info["Size"], 4, model.total, 2)
    assert card(r, "rp:scale") == model.total


def test_insert_options(bp):
    r, bf = bf_client(bp)
    assert bf.insert("rp:i1", ["a", "b", "a"], capacity=200, error=0.001) == [1, 1, 0]
    assert info_tuple(bf.info("rp:i1")) == (200, info_size(chain_links(0.001, 200)), 1, 2, 2)

    assert bf.insert("rp:i2", ["x"], expansion=3) == [1]
    assert info_tuple(bf.info("rp:i2")) == (100, info_size(chain_links(0.01, 100, 3)), 1, 1, 3)

    with pytest.raises(redis.ResponseError, match=r"^not found$"):
        bf.insert("rp:i3", ["x"], noCreate=True)
    assert r.exists("rp:i3") == 0
    # NOCREATE on an existing filter adds; creation options are then ignored.
    assert bf.insert("rp:i1", ["c", "a"], noCreate=True, capacity=5, error=0.3) == [1, 0]
    assert info_tuple(bf.info("rp:i1")) == (200, info_size(chain_links(0.001, 200)), 1, 3, 2)

    res = bf.insert("rp:i4", ["p", "q", "r", "s", "t"], capacity=3, noScale=True)
    assert res[:3] == [1, 1, 1] and len(res) == 4, res
    assert isinstance(res[3], redis.ResponseError)
    assert str(res[3]) == "non scaling filter is full"
    assert info_tuple(bf.info("rp:i4")) == (3, info_size(chain_links(0.01, 3, nonscaling=True)),
                                            1, 3, None)
    assert card(r, "rp:i4") == 3

    with pytest.raises(redis.ResponseError, match=r"^Bad error rate$"):
        bf.insert("rp:i5", ["x"], error=1.5)
    with pytest.raises(redis.ResponseError, match=r"^Bad capacity$"):
        bf.insert("rp:i5", ["x"], capacity=0)
    with pytest.raises(redis.ResponseError, match=r"^Bad expansion$"):
        bf.insert("rp:i5", ["x"], expansion="x")
    assert r.exists("rp:i5") == 0


def test_info_fields_one_by_one(bp):
    r, bf = bf_client(bp)
    model = ModelFilter(0.05, 40, 3)
    assert bf.create("rp:inf", 0.05, 40, expansion=3) is True
    items = [f"v{i}".encode() for i in range(200)]
    assert bf.madd("rp:inf", *items) == [model.add(i) for i in items]
    expected = model.info()
    assert expected["Number of filters"] == 3  # 40 + 120 < ~195 <= 520
    full = bf.info("rp:inf")
    assert info_tuple(full) == (520, expected["Size"], 3, model.total, 3)
    assert full.size == info_size(chain_links(0.05, 40, 3, n=3))
    # One field: a one-element array (through a client without r.bf()'s BF.INFO callback).
    plain = bp.client()
    assert plain.execute_command("BF.INFO", "rp:inf", "CAPACITY") == [520]
    assert plain.execute_command("BF.INFO", "rp:inf", "SIZE") == [expected["Size"]]
    assert plain.execute_command("BF.INFO", "rp:inf", "FILTERS") == [3]
    assert plain.execute_command("BF.INFO", "rp:inf", "ITEMS") == [model.total]
    assert plain.execute_command("BF.INFO", "rp:inf", "EXPANSION") == [3]
    assert card(r, "rp:inf") == model.total


def scandump_chunks(bf, key):
    chunks = []
    it = 0
    while True:
        it, data = bf.scandump(key, it)
        if it == 0:
            assert data in (b"", None), data[:50]
            return chunks
        chunks.append((it, data))


@pytest.mark.parametrize("shard_flags", [(), ("--bf-max-shard-bytes", "256")],
                         ids=["default", "sharded256"])
def test_scandump_loadchunk_migration(proxy, shard_flags):
    src_proxy = proxy()
    dst_proxy = proxy(*shard_flags)  # stateless: another proxy loads the copy
    r, bf = bf_client(src_proxy)
    r2, bf2 = bf_client(dst_proxy)
    assert bf.create("rp:src", 0.001, 300) is True
    items = [f"mig-{i}".encode() for i in range(2000)] + [b"", b"\x00", b"\r\n\xff"]
    model = ModelFilter(0.001, 300)
    for i in range(0, len(items), 250):
        expected = [model.add(x) for x in items[i:i + 250]]
        assert bf.madd("rp:src", *items[i:i + 250]) == expected
    src_info = info_tuple(bf.info("rp:src"))
    assert src_info[2] == 3, src_info  # 300 + 600 + 1200 sub-filters
    assert src_info[3] == model.total

    chunks = scandump_chunks(bf, "rp:src")
    assert len(chunks) == 1 + 3  # header + one chunk per sub-filter (all < 16 MiB)
    it = 0
    for nxt, data in chunks:  # RedisBloom's exact dump
        assert (nxt, data) == model.scandump(it)
        it = nxt
    for it, data in chunks:
        assert bf2.loadchunk("rp:dst", it, data) == b"OK"

    assert bf2.mexists("rp:dst", *items) == [1] * len(items)
    assert info_tuple(bf2.info("rp:dst")) == src_info
    assert card(r2, "rp:dst") == card(r, "rp:src") == src_info[3]
    assert scandump_chunks(bf2, "rp:dst") == chunks
    assert scandump_chunks(bf, "rp:dst") == chunks
    # The copy is an independent, working filter.
    assert bf2.add("rp:dst", "only-in-copy") == 1
    assert bf.exists("rp:src", "only-in-copy") == 0
    assert bf.exists("rp:dst", "only-in-copy") == 1



def test_loadchunk_refusals_leave_the_connection_usable(bp):
    """LOADCHUNK errors (bad header, header to an existing key, offset past the end) are
    replied and the same connection goes on answering."""
    r, bf = bf_client(bp)
    assert bf.create("rp:h", 0.01, 100) is True
    assert bf.add("rp:h", "x") == 1
    _, header = bf.scandump("rp:h", 0)
    with bp.raw(timeout=5) as c:
        for args, reply in [
            (("BF.LOADCHUNK", "rp:h", "1", header), b"-ERR received bad data\r\n"),
            (("PING",), b"+PONG\r\n"),
            (("BF.LOADCHUNK", "rp:new", "1", header[:-1]), b"-ERR received bad data\r\n"),
            (("EXISTS", "rp:new"), b":0\r\n"),
            (("BF.LOADCHUNK", "rp:h", "100000", b"zz"), b"-ERR invalid offset - no link found\r\n"),
            (("BF.EXISTS", "rp:h", "x"), b":1\r\n"),
            (("BF.LOADCHUNK", "rp:h", "x", b"zz"), b"-ERR Second argument must be numeric\r\n"),
            (("BF.CARD", "rp:h"), b":1\r\n"),
            # BF.INFO's field and SCANDUMP's iterator are read after the key, even an empty one.
            (("BF.INFO", "", "bogus"), b"-ERR not found\r\n"),
            (("BF.SCANDUMP", "", "x"), b"-ERR not found\r\n"),
            (("BF.INFO", "rp:h", "bogus"), b"-Invalid information value\r\n"),
        ]:
            c.send(encode_command(*args))
            try:
                got = c.read_reply_raw()
            except OSError as exc:
                raise AssertionError(f"no reply to {args[:3]} within 5 s ({exc!r}) after the "
                                     f"previous LOADCHUNK error") from None
            assert got == reply, f"{args[:3]}: expected {reply!r}, got {got[:200]!r}"

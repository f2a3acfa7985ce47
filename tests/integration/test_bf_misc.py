"""BF.* odds and ends: COMMAND lists the BF.* commands, --bf-mode forward, the creation defaults
from the config, a big filter, binary and empty items and names, BF.* pipelined with plain
commands."""

import os
import time

from bf_vectors import (BF_COMMANDS, MAX_DUMP_CHUNK, ModelFilter, chain_links, data_keys_of,
                        info_reply, info_size, link_geometry, parse_info, run_commands,
                        upstream_keys)
from cf_vectors import CF_COMMANDS
from bp_helpers import compare_with_redis, encode_command as cmd, parse_resp, replies_of


CMS_COMMANDS = ("cms.initbydim", "cms.initbyprob", "cms.incrby", "cms.query", "cms.merge",
                "cms.info")
TOPK_COMMANDS = ("topk.reserve", "topk.add", "topk.incrby", "topk.query", "topk.count",
                 "topk.list", "topk.info")
TDIGEST_COMMANDS = ("tdigest.create", "tdigest.add", "tdigest.reset", "tdigest.merge",
                    "tdigest.min", "tdigest.max", "tdigest.quantile", "tdigest.byrank",
                    "tdigest.byrevrank", "tdigest.rank", "tdigest.revrank", "tdigest.cdf",
                    "tdigest.trimmed_mean", "tdigest.info")


def command_entries(port):
    (raw,) = replies_of(port, cmd("COMMAND"), 1, timeout=20)
    return {bytes(e[0]).lower(): e for e in parse_resp(raw)[0]}


def test_command_lists_bf_commands(bp, redis_instance):
    via_proxy = command_entries(bp.port)
    direct = command_entries(redis_instance.port)
    bf_names = {n.encode() for n in
                BF_COMMANDS + CMS_COMMANDS + CF_COMMANDS + TOPK_COMMANDS + TDIGEST_COMMANDS}
    assert not bf_names & set(direct)
    assert set(via_proxy) == set(direct) | bf_names, sorted(set(via_proxy) ^ set(direct))
    for name, entry in direct.items():
        assert via_proxy[name] == entry, f"COMMAND entry of {name!r} changed"
    for name in bf_names:
        entry = via_proxy[name]
        assert isinstance(entry, list) and len(entry) >= 6, entry
        assert entry[3:6] == [1, 1, 1], f"{name!r}: first/last key, step {entry[3:6]}"
    with bp.raw() as c:
        count = c.command("COMMAND", "COUNT")
        assert count == len(via_proxy) == len(direct) + len(bf_names)
        c.send(cmd("COMMAND", "INFO", "bf.add"))
        raw = c.read_reply_raw()
        assert parse_resp(raw)[0] == [via_proxy[b"bf.add"]], \
            f"COMMAND INFO bf.add replied {raw[:200]!r}, not the entry COMMAND lists"
        c.send(cmd("COMMAND", "INFO", "BF.MADD", "get", "nosuchcommand", "Bf.ScanDump"))
        raw = c.read_reply_raw()
        assert parse_resp(raw)[0] == [via_proxy[b"bf.madd"], direct[b"get"], None,
                                      via_proxy[b"bf.scandump"]], \
            f"COMMAND INFO BF.MADD get nosuchcommand Bf.ScanDump replied {raw[:300]!r}"


def test_forward_mode_passes_bf_to_the_upstream(proxy, redis_instance):
    p = proxy("--bf-mode", "forward")
    commands = [
        ("BF.RESERVE", "fw", "0.01", "100"), ("BF.ADD", "fw", "a"), ("BF.MADD", "fw", "a", "b"),
        ("BF.INSERT", "fw", "ITEMS", "a"), ("BF.EXISTS", "fw", "a"), ("BF.MEXISTS", "fw", "a"),
        ("BF.INFO", "fw"), ("BF.CARD", "fw"), ("BF.SCANDUMP", "fw", "0"),
        ("BF.LOADCHUNK", "fw", "1", "x"), ("bf.add", "fw"), ("BF.RESERVE",),
        ("SET", "fw:plain", "v"), ("TYPE", "fw:plain"), ("DEL", "fw:plain"), ("DBSIZE",),
    ]
    payload = b"".join(cmd(*a) for a in commands)
    replies = compare_with_redis(p.port, redis_instance, payload, len(commands))
    assert replies[0] == (b"-ERR unknown command 'BF.RESERVE', with args beginning with: "
                          b"'fw' '0.01' '100' \r\n")
    assert replies[-1] == b":0\r\n"
    assert upstream_keys(redis_instance.client()) == set()


def test_creation_defaults_from_the_config(proxy, redis_instance):
    p = proxy("--bf-initial-capacity", "1000", "--bf-error-rate", "0.001", "--bf-expansion", "4")
    size1 = info_size(chain_links(0.001, 1000, 4))
    with p.raw() as c:
        assert c.command("BF.ADD", "cfg:add", "x") == 1
        assert run_commands(c, [("BF.INFO", "cfg:add")]) == [info_reply(1000, size1, 1, 1, 4)]
        assert c.command("BF.MADD", "cfg:madd", "x", "y") == [1, 1]
        assert run_commands(c, [("BF.INFO", "cfg:madd")]) == [info_reply(1000, size1, 1, 2, 4)]
        assert c.command("BF.INSERT", "cfg:ins", "ITEMS", "x") == [1]
        assert run_commands(c, [("BF.INFO", "cfg:ins")]) == [info_reply(1000, size1, 1, 1, 4)]
        # INSERT options override single defaults; the others stay the config's.
        assert c.command("BF.INSERT", "cfg:cap", "CAPACITY", "50", "ITEMS", "x") == [1]
        assert run_commands(c, [("BF.INFO", "cfg:cap")]) == [
            info_reply(50, info_size(chain_links(0.001, 50, 4)), 1, 1, 4)]
        assert c.command("BF.INSERT", "cfg:err", "ERROR", "0.1", "ITEMS", "x") == [1]
        assert run_commands(c, [("BF.INFO", "cfg:err")]) == [
            info_reply(1000, info_size(chain_links(0.1, 1000, 4)), 1, 1, 4)]
        assert c.command("BF.INSERT", "cfg:exp", "EXPANSION", "2", "ITEMS", "x") == [1]
        assert run_commands(c, [("BF.INFO", "cfg:exp")]) == [info_reply(1000, size1, 1, 1, 2)]
        assert c.command("BF.INSERT", "cfg:ns", "NONSCALING", "ITEMS", "x") == [1]
        assert run_commands(c, [("BF.INFO", "cfg:ns")]) == [
            info_reply(1000, info_size(chain_links(0.001, 1000, nonscaling=True)), 1, 1, None)]
        # RESERVE takes its error and capacity from its arguments.
        assert c.command("BF.RESERVE", "cfg:res", "0.01", "100") == b"OK"
        assert c.command("BF.INFO", "cfg:res", "CAPACITY") == [100]
        assert c.command("BF.INFO", "cfg:res", "SIZE") == [info_size(chain_links(0.01, 100))]

        # A default-created filter scales with the configured expansion, bit for bit.
        model = ModelFilter(0.001, 1000, 4)
        items = [f"cfg:{i}".encode() for i in range(3000)]
        for i in range(0, 3000, 500):
            batch = items[i:i + 500]
            assert c.command("BF.MADD", "cfg:scale", *batch) == [model.add(x) for x in batch]
        assert model.info()["Number of filters"] == 2  # 1000, then 4000
        assert run_commands(c, [("BF.INFO", "cfg:scale")]) == [model.info_reply()]
        dump = []
        it = 0
        while True:
            raw = run_commands(c, [("BF.SCANDUMP", "cfg:scale", str(it))])[0]
            dump.append(raw)
            it = parse_resp(raw)[0][0]
            if it == 0:
                break
        assert dump == model.scandump_replies()


def test_big_filter_creates_quickly(bp, redis_instance):
    capacity = 10_000_000
    nbytes = link_geometry(capacity, 0.005)[0]
    with bp.raw(timeout=30) as c:
        start = time.monotonic()
        assert c.command("BF.RESERVE", "big", "0.01", str(capacity)) == b"OK"
        elapsed = time.monotonic() - start
        assert elapsed < 3.0, f"BF.RESERVE of {nbytes} bytes took {elapsed:.2f} s"
        assert run_commands(c, [("BF.INFO", "big")]) == [
            info_reply(capacity, 32 + 64 + nbytes, 1, 0, 2)]
        assert c.command("BF.INFO", "big", "SIZE") == [info_size(chain_links(0.01, capacity))]
        model = ModelFilter(0.01, capacity)
        items = [f"big:{i}".encode() for i in range(200)]
        assert c.command("BF.MADD", "big", *items) == [model.add(x) for x in items]
        assert c.command("BF.MEXISTS", "big", *items) == [1] * 200
        probes = [f"other:{i}".encode() for i in range(200)]
        assert c.command("BF.MEXISTS", "big", *probes) == [model.exists(x) for x in probes]
        assert run_commands(c, [("BF.SCANDUMP", "big", "0")]) == [model.scandump_replies()[0]]
        it, data = c.command("BF.SCANDUMP", "big", "1")
        assert (it, len(data)) == (1 + nbytes, nbytes)
        assert data == bytes(model.links[0].array)
        assert c.command("BF.SCANDUMP", "big", str(it)) == [0, b""]


def test_scandump_chunks_stop_at_16_mib(proxy):
    """A 24 MB sub-filter dumps as a 16 MiB chunk and the rest; loading the chunks into another
    key (through a proxy that shards at 1 MiB) gives the same filter."""
    p = proxy()
    q = proxy("--bf-max-shard-bytes", "1mb")
    nbytes = link_geometry(10_000_000, 0.0001)[0]
    assert nbytes > MAX_DUMP_CHUNK
    with p.raw(timeout=60) as c, q.raw(timeout=60) as d:
        assert c.command("BF.RESERVE", "huge", "0.0001", "10000000", "NONSCALING") == b"OK"
        model = ModelFilter(0.0001, 10_000_000, nonscaling=True)
        items = [f"h:{i}".encode() for i in range(100)]
        assert c.command("BF.MADD", "huge", *items) == [model.add(x) for x in items]
        it, header = c.command("BF.SCANDUMP", "huge", "0")
        assert it == 1
        it1, chunk1 = c.command("BF.SCANDUMP", "huge", "1")
        assert (it1, len(chunk1)) == (1 + MAX_DUMP_CHUNK, MAX_DUMP_CHUNK)
        it2, chunk2 = c.command("BF.SCANDUMP", "huge", str(it1))
        assert (it2, len(chunk2)) == (1 + nbytes, nbytes - MAX_DUMP_CHUNK)
        assert c.command("BF.SCANDUMP", "huge", str(it2)) == [0, b""]
        assert chunk1 + chunk2 == bytes(model.links[0].array)

        assert d.command("BF.LOADCHUNK", "huge:copy", "1", header) == b"OK"
        assert d.command("BF.LOADCHUNK", "huge:copy", str(it1), chunk1) == b"OK"
        assert d.command("BF.LOADCHUNK", "huge:copy", str(it2), chunk2) == b"OK"
        assert d.command("BF.MEXISTS", "huge:copy", *items) == [1] * 100
        assert parse_info(d.command("BF.INFO", "huge:copy")) == \
            parse_info(c.command("BF.INFO", "huge"))
        assert c.command("BF.SCANDUMP", "huge:copy", "1") == [it1, chunk1]
        assert d.command("BF.SCANDUMP", "huge:copy", str(it1)) == [it2, chunk2]
        assert d.command("DEL", "huge", "huge:copy") == 2


def test_binary_and_empty_items(bp):
    rnd = os.urandom(200_000)
    items = [b"", b"\x00", b"\x00" * 10, b"\r\n", b"*1\r\n$4\r\nPING\r\n", bytes(range(256)),
             b"\xff" * 1000, rnd, "ünïcødé ✓".encode(), b" ", b"\t", b"$-1\r\n"]
    variants = [x + b"!" for x in items] + [b"\x00" * 9, b"\x00" * 11, rnd[:-1], b"\r"]
    model = ModelFilter(0.001, 100)
    with bp.raw(timeout=20) as c:
        assert c.command("BF.RESERVE", "bin", "0.001", "100") == b"OK"
        assert c.command("BF.MADD", "bin", *items) == [model.add(x) for x in items]
        assert c.command("BF.MEXISTS", "bin", *items) == [1] * len(items)
        assert c.command("BF.MEXISTS", "bin", *variants) == [model.exists(x) for x in variants]
        for x in items:
            assert c.command("BF.EXISTS", "bin", x) == 1
            assert c.command("BF.ADD", "bin", x) == 0
        assert c.command("BF.CARD", "bin") == model.total
        assert c.command("BF.INSERT", "bin", "ITEMS", b"", b"new\x00") == \
            [model.add(b""), model.add(b"new\x00")]
        # Items that look like option words are items after ITEMS.
        assert c.command("BF.INSERT", "bin", "ITEMS", "ITEMS", "NOCREATE", "CAPACITY") == \
            [model.add(b"ITEMS"), model.add(b"NOCREATE"), model.add(b"CAPACITY")]
        assert run_commands(c, [("BF.INFO", "bin")]) == [model.info_reply()]


def test_binary_and_empty_filter_names(bp, redis_instance):
    direct = redis_instance.client()
    names = [b"bin\x00name", b"\xff\xfe\xfd", b"", b"with space", b"{", b"}", b"\r\n"]
    with bp.raw() as c:
        for name in names:
            model = ModelFilter()
            assert c.command("BF.ADD", name, "a") == model.add(b"a") == 1, name
            items = [b"m%d" % i for i in range(300)]
            assert c.command("BF.MADD", name, *items) == [model.add(x) for x in items], name
            assert run_commands(c, [("BF.INFO", name)]) == [model.info_reply()], name
            assert run_commands(c, [("BF.EXISTS", name, "a"), ("TYPE", name),
                                    ("EXISTS", name)]) == \
                [b":1\r\n", b"+MBbloom--\r\n", b":1\r\n"], name
            assert data_keys_of(direct, name), name
        for name in names:
            assert c.command("DEL", name) == 1, name
            assert not data_keys_of(direct, name), name
            assert c.command("BF.EXISTS", name, "a") == 0
    assert upstream_keys(direct) == set()


def test_bf_pipelined_with_plain_commands(bp):
    """BF.* (answered through several upstream round trips) and plain commands in one write:
    replies come back complete and in order."""
    model = ModelFilter(0.01, 50)
    payload = [cmd("BF.RESERVE", "pl:f", "0.01", "50")]
    expected = [b"+OK\r\n"]
    for i in range(300):
        item = b"p%d" % i
        payload.append(cmd("SET", b"pl:k%d" % i, item))
        expected.append(b"+OK\r\n")
        payload.append(cmd("BF.ADD", "pl:f", item))
        expected.append(b":%d\r\n" % model.add(item))
        payload.append(cmd("GET", b"pl:k%d" % i))
        expected.append(b"$%d\r\n%s\r\n" % (len(item), item))
        if i % 10 == 9:
            batch = [b"q%d:%d" % (i, j) for j in range(5)]
            payload.append(cmd("BF.MADD", "pl:f", *batch))
            expected.append(model.madd_reply(batch))
            payload.append(cmd("BF.EXISTS", "pl:f", item))
            expected.append(b":1\r\n")
            payload.append(cmd("BF.CARD", "pl:f"))
            expected.append(b":%d\r\n" % model.total)
            payload.append(cmd("INCR", "pl:ctr"))
            expected.append(b":%d\r\n" % (i // 10 + 1))
    payload.append(cmd("BF.INFO", "pl:f"))
    expected.append(model.info_reply())
    got = replies_of(bp.port, b"".join(payload), len(expected), timeout=30)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"reply #{i}: expected {e[:100]!r}, got {g[:100]!r}"
    assert model.info()["Number of filters"] >= 3

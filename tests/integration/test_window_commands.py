"""Windowed Bloom filters, the commands (docs/windowed-filters.md, "Commands and errors"): the
replies of every BF command on a windowed filter in RESP2 and RESP3, the errors the spec names
(byte for byte), RedisBloom's own argument errors unchanged when WINDOW is given, key commands
on a windowed filter's name, the `bf-window` directive (with its SIGHUP reload), and a windowed
filter end to end through a Redis Cluster and through twemproxy (nutcracker): added, found
through another proxy, counted, forgotten after W + s with its keys gone, deleted whole.

The guarantees themselves (timing, memory, false positives, concurrency) are test_window.py's.
"""

import re
import time

import pytest

from bp_cluster import key_slot
from bp_helpers import RawConn, encode_command as cmd, parse_resp, scan_all
from resp3_replay import Resp3Conn
from test_reload_env import RELOADED, sighup_and_wait
from test_window import binomial_limit, filter_keys, info_map, now_ms

BAD_WINDOW = b"-ERR bad window\r\n"
BAD_SLOTS = b"-ERR bad slots\r\n"
BAD_TTL = b"-ERR bad TTL\r\n"
NO_DUMP = b"-ERR windowed filters have no dump format\r\n"
ITEM_EXISTS = b"-ERR item exists\r\n"
PLAIN_INFO = [b"Capacity", b"Size", b"Number of filters", b"Number of items inserted",
              b"Expansion rate"]
WINDOW_INFO = PLAIN_INFO + [b"Window", b"Slots"]
TEN_YEARS_MS = 10 * 365 * 86400 * 1000


def raw(conn, *args):
    conn.send(cmd(*args))
    return conn.read_reply_raw()


def is_slot_key(key):
    """A windowed filter's slot name P:bf:<id>:w<e>, or one of the slot's own keys."""
    return re.search(rb":bf:[0-9a-f]{16}:w\d+(?::|$)", key) is not None


def info_labels(conn, name):
    reply = conn.command("BF.INFO", name)
    return [bytes(x) for x in reply[0::2]]


# ---------------------------------------------------------------------------------------------
# Replies, RESP2 and RESP3


def test_replies_resp2(bp):
    """Every command on a windowed filter, RESP2: ADD/MADD/INSERT answer 1 for an item new to the
    slot that takes it, EXISTS/MEXISTS, CARD, INFO (RedisBloom's five fields summed over the live slots, with
    Capacity per window, then Window and Slots), TYPE and EXISTS on the name."""
    with bp.raw() as c:
        assert raw(c, "BF.RESERVE", "w2", "0.01", "1000", "WINDOW", "60000",
                      "SLOTS", "4") == b"+OK\r\n"
        assert info_labels(c, "w2") == WINDOW_INFO
        info = info_map(c, "w2")
        assert (info[b"Capacity"], info[b"Number of items inserted"], info[b"Expansion rate"],
                info[b"Window"], info[b"Slots"]) == (1000, 0, 2, 60000, 4), info
        assert raw(c, "BF.CARD", "w2") == b":0\r\n"
        assert raw(c, "BF.EXISTS", "w2", "a") == b":0\r\n"
        assert raw(c, "BF.ADD", "w2", "a") == b":1\r\n"
        assert raw(c, "BF.ADD", "w2", "a") == b":0\r\n"
        assert raw(c, "BF.MADD", "w2", "a", "b") == b"*2\r\n:0\r\n:1\r\n"
        assert raw(c, "BF.INSERT", "w2", "ITEMS", "d", "a") == b"*2\r\n:1\r\n:0\r\n"
        # Items with a lifetime of 1 s (in an earlier slot), looked up well within it.
        assert raw(c, "BF.INSERT", "w2", "TTL", "1000", "ITEMS", "c", "e") == b"*2\r\n:1\r\n:1\r\n"
        # An add answers for the slot that takes the item, as BF.CARD counts: "a", in the slot
        # of a 60 s lifetime, is new to the slot of a 1 s one.
        assert raw(c, "BF.INSERT", "w2", "TTL", "1000", "ITEMS", "a", "c") == b"*2\r\n:1\r\n:0\r\n"
        assert raw(c, "BF.EXISTS", "w2", "b") == b":1\r\n"
        assert raw(c, "BF.MEXISTS", "w2", "a", "zz", "c", "d") == b"*4\r\n:1\r\n:0\r\n:1\r\n:1\r\n"
        assert raw(c, "BF.CARD", "w2") == b":6\r\n"
        info = info_map(c, "w2")
        assert info[b"Number of items inserted"] == 6 and info[b"Capacity"] == 1000, info
        assert info[b"Number of filters"] >= 1 and info[b"Size"] > 0, info
        assert raw(c, "TYPE", "w2") == b"+MBbloom--\r\n"
        assert raw(c, "EXISTS", "w2") == b":1\r\n"
        # A plain filter's replies keep RedisBloom's five fields.
        assert raw(c, "BF.ADD", "plain", "a") == b":1\r\n"
        assert info_labels(c, "plain") == PLAIN_INFO


def test_replies_resp3(bp):
    """The same after HELLO 3: booleans for ADD/EXISTS, arrays of booleans for MADD/INSERT/
    MEXISTS, a map of seven fields for INFO, RedisBloom's RESP3 rules (test_sketch_resp3.py)."""
    with Resp3Conn(bp.port, timeout=10) as c:
        c.hello(3)
        assert c.call("BF.RESERVE", "w3", "0.01", "1000", "WINDOW", "60000",
                      "SLOTS", "4") == b"+OK\r\n"
        assert c.call("BF.ADD", "w3", "a") == b"#t\r\n"
        assert c.call("BF.ADD", "w3", "a") == b"#f\r\n"
        assert c.call("BF.MADD", "w3", "a", "b") == b"*2\r\n#f\r\n#t\r\n"
        assert c.call("BF.INSERT", "w3", "ITEMS", "a") == b"*1\r\n#f\r\n"
        assert c.call("BF.INSERT", "w3", "TTL", "1000", "ITEMS", "c") == b"*1\r\n#t\r\n"
        assert c.call("BF.EXISTS", "w3", "a") == b"#t\r\n"
        assert c.call("BF.EXISTS", "w3", "zz") == b"#f\r\n"
        assert c.call("BF.MEXISTS", "w3", "a", "zz") == b"*2\r\n#t\r\n#f\r\n"
        assert c.call("BF.CARD", "w3") == b":3\r\n"
        info = c.call("BF.INFO", "w3")
        assert info.startswith(b"%7\r\n"), info
        parsed, end = parse_resp(info)
        assert end == len(info) and isinstance(parsed, dict), info
        assert [bytes(k) for k in parsed] == WINDOW_INFO, info
        got = {bytes(k): v for k, v in parsed.items()}
        assert (got[b"Capacity"], got[b"Number of items inserted"], got[b"Expansion rate"],
                got[b"Window"], got[b"Slots"]) == (1000, 3, 2, 60000, 4), info
        assert c.call("BF.SCANDUMP", "w3", "0") == NO_DUMP
        assert c.call("BF.RESERVE", "w3x", "0.01", "100", "WINDOW", "0") == BAD_WINDOW


# ---------------------------------------------------------------------------------------------
# Errors


def test_spec_errors(bp):
    """The errors the spec names, byte for byte, and nothing created by a refused command."""
    reserve = ("BF.RESERVE", "e", "0.01", "100")
    with bp.raw() as c:
        for w in ("0", "-1", "abc", "1.5", "", str(TEN_YEARS_MS * 2),
                  "99999999999999999999999"):
            assert raw(c, *reserve, "WINDOW", w) == BAD_WINDOW, f"WINDOW {w!r}"
            assert raw(c, "BF.INSERT", "e", "WINDOW", w, "ITEMS", "a") == BAD_WINDOW, w
        for g in ("0", "1", "65", "-3", "x", "2.5", ""):
            assert raw(c, *reserve, "WINDOW", "1000", "SLOTS", g) == BAD_SLOTS, f"SLOTS {g!r}"
            assert raw(c, "BF.INSERT", "e", "WINDOW", "1000", "SLOTS", g, "ITEMS", "a") \
                == BAD_SLOTS, g
        assert raw(c, "EXISTS", "e") == b":0\r\n"
        assert c.command("KEYS", "*") == []
        # The edges that are allowed: 2 and 64 slots, a window of exactly ten 365-day years.
        for name, args in (("s2", ("SLOTS", "2")), ("s64", ("SLOTS", "64")), ("wmax", ())):
            w = str(TEN_YEARS_MS) if name == "wmax" else "1000"
            assert raw(c, "BF.RESERVE", name, "0.01", "100", "WINDOW", w, *args) == b"+OK\r\n"
            assert raw(c, "BF.ADD", name, "x") == b":1\r\n", name
        assert info_map(c, "s64")[b"Slots"] == 64 and info_map(c, "wmax")[b"Window"] == TEN_YEARS_MS

        # TTL: 1..W, on a windowed filter only.
        assert raw(c, "BF.RESERVE", "t", "0.01", "100", "WINDOW", "5000") == b"+OK\r\n"
        for ttl in ("0", "-1", "5001", "x", "1.5", ""):
            assert raw(c, "BF.INSERT", "t", "TTL", ttl, "ITEMS", "a") == BAD_TTL, f"TTL {ttl!r}"
        assert raw(c, "BF.INSERT", "t", "TTL", "5000", "ITEMS", "b") == b"*1\r\n:1\r\n"
        assert raw(c, "BF.RESERVE", "t1", "0.01", "100", "WINDOW", "5000") == b"+OK\r\n"
        assert raw(c, "BF.INSERT", "t1", "TTL", "1", "ITEMS", "a") == b"*1\r\n:1\r\n"
        assert raw(c, "BF.ADD", "p", "a") == b":1\r\n"
        assert raw(c, "BF.INSERT", "p", "TTL", "10", "ITEMS", "b") == BAD_TTL
        assert raw(c, "BF.INSERT", "new", "TTL", "10", "ITEMS", "b") == BAD_TTL
        assert raw(c, "BF.INSERT", "new", "WINDOW", "5000", "TTL", "5001", "ITEMS", "b") == BAD_TTL
        assert raw(c, "EXISTS", "new") == b":0\r\n"
        assert raw(c, "BF.INSERT", "new", "WINDOW", "5000", "TTL", "4000", "ITEMS", "b") \
            == b"*1\r\n:1\r\n"
        assert info_map(c, "new")[b"Window"] == 5000

        # WINDOW on an existing filter: RESERVE's "item exists"; INSERT ignores it.
        assert raw(c, "BF.RESERVE", "t", "0.01", "100", "WINDOW", "9000") == ITEM_EXISTS
        assert raw(c, "BF.RESERVE", "t", "0.01", "100") == ITEM_EXISTS
        assert raw(c, "BF.RESERVE", "p", "0.01", "100", "WINDOW", "9000") == ITEM_EXISTS
        assert raw(c, "BF.INSERT", "p", "WINDOW", "9000", "ITEMS", "c") == b"*1\r\n:1\r\n"
        assert info_labels(c, "p") == PLAIN_INFO
        assert raw(c, "BF.INSERT", "t", "WINDOW", "9000", "SLOTS", "7", "ITEMS", "c") \
            == b"*1\r\n:1\r\n"
        info = info_map(c, "t")
        assert (info[b"Window"], info[b"Slots"]) == (5000, 3), info

        # No dump format.
        assert raw(c, "BF.SCANDUMP", "t", "0") == NO_DUMP
        assert raw(c, "BF.LOADCHUNK", "t", "1", "x" * 64) == NO_DUMP
        assert raw(c, "BF.CARD", "t") == b":2\r\n"


# RedisBloom's own argument errors: the windowed command answers what the same command without
# WINDOW answers (the proxy's plain replies are RedisBloom's, byte for byte: test_bf_vectors).
SAME_ERRORS = [
    (("BF.RESERVE", "K", "2", "100"), ("WINDOW", "5000")),
    (("BF.RESERVE", "K", "0", "100"), ("WINDOW", "5000")),
    (("BF.RESERVE", "K", "0.01", "0"), ("WINDOW", "5000")),
    (("BF.RESERVE", "K", "0.01", "x"), ("WINDOW", "5000")),
    (("BF.RESERVE", "K", "0.01", "1.5"), ("WINDOW", "5000")),
    (("BF.RESERVE", "K", "0.01", "100"), ("WINDOW", "5000", "EXPANSION", "x")),
    (("BF.RESERVE", "K", "0.01", "100"), ("WINDOW", "5000", "EXPANSION", "-1")),
    (("BF.RESERVE", "K", "0.01", "100"), ("WINDOW", "5000", "EXPANSION")),
    (("BF.RESERVE", "K", "0.01", "100"), ("WINDOW", "5000", "NONSCALING", "EXPANSION", "2")),
    (("BF.INSERT", "K", "CAPACITY", "0"), ("WINDOW", "5000", "ITEMS", "a")),
    (("BF.INSERT", "K", "CAPACITY", "x"), ("WINDOW", "5000", "ITEMS", "a")),
    (("BF.INSERT", "K", "ERROR", "2"), ("WINDOW", "5000", "ITEMS", "a")),
    (("BF.INSERT", "K", "ERROR", "x"), ("WINDOW", "5000", "ITEMS", "a")),
    (("BF.INSERT", "K", "EXPANSION", "x"), ("WINDOW", "5000", "ITEMS", "a")),
    (("BF.INSERT", "K", "NOCREATE"), ("WINDOW", "5000", "ITEMS", "a")),
]


@pytest.mark.parametrize("head,window_args", SAME_ERRORS,
                         ids=[" ".join(h[:1] + h[2:] + w) for h, w in SAME_ERRORS])
def test_redisbloom_argument_errors_unchanged(bp, head, window_args):
    plain_args = tuple(a for a in window_args if a not in ("WINDOW", "5000"))
    with bp.raw() as c:
        plain = raw(c, *head, *plain_args)
        assert plain.startswith(b"-"), f"{head + plain_args} answered {plain!r}"
        assert raw(c, *head, *window_args) == plain
        assert c.command("KEYS", "*") == []


# ---------------------------------------------------------------------------------------------
# Key commands on the name, and the slots hidden


def test_key_commands_act_on_the_whole_filter(redis_instance, bp):
    """TTL is the user's expiry on the name (the slots' are internal); EXPIRE and PERSIST set and
    clear it; KEYS and SCAN through the proxy show the name only; DEL removes every slot."""
    with bp.raw() as c:
        assert raw(c, "BF.RESERVE", "kc", "0.01", "1000", "WINDOW", "60000",
                      "SLOTS", "3") == b"+OK\r\n"
        assert c.command("BF.MADD", "kc", *[f"i{i}" for i in range(100)]).count(1) >= 99
        keys = filter_keys(redis_instance, "kc")
        assert keys["marker"] and len(keys["slots"]) == 1 and not keys["other"], keys
        assert raw(c, "TTL", "kc") == b":-1\r\n"
        assert raw(c, "EXPIRE", "kc", "100") == b":1\r\n"
        assert c.command("TTL", "kc") in (99, 100)
        assert raw(c, "PERSIST", "kc") == b":1\r\n"
        assert raw(c, "TTL", "kc") == b":-1\r\n"
        assert c.command("KEYS", "*") == [b"kc"]
        assert scan_all(c) == [b"kc"]
        assert raw(c, "DEL", "kc") == b":1\r\n"
        assert raw(c, "BF.EXISTS", "kc", "i1") == b":0\r\n"
        assert raw(c, "BF.CARD", "kc") == b":0\r\n"
    assert redis_instance.client().keys("*") == []


# ---------------------------------------------------------------------------------------------
# The bf-window directive


def test_bf_window_directive_and_reload(proxy, tmp_path):
    """Adds that create a filter whose name matches a bf-window rule create it windowed (first
    match wins; unset ERROR and CAPACITY are the proxy's defaults); BF.RESERVE and names that
    match no rule stay plain; after SIGHUP the new rules apply to filters created afterwards."""
    conf = tmp_path / "w.conf"
    conf.write_text("bf-window dw:* 5000 SLOTS 4\nbf-window d*:x 7000\n")
    p = proxy("--config", conf)
    with p.raw() as c:
        assert raw(c, "BF.ADD", "dw:a", "x") == b":1\r\n"
        assert raw(c, "BF.MADD", "dq:x", "x") == b"*1\r\n:1\r\n"
        assert raw(c, "BF.INSERT", "dw:x", "ITEMS", "x") == b"*1\r\n:1\r\n"
        assert raw(c, "BF.ADD", "other", "x") == b":1\r\n"
        assert raw(c, "BF.RESERVE", "dw:r", "0.01", "100") == b"+OK\r\n"
        shapes = {}
        for n in ("dw:a", "dq:x", "dw:x"):
            i = info_map(c, n)
            shapes[n] = (i[b"Window"], i[b"Slots"], i[b"Capacity"])
        assert shapes == {"dw:a": (5000, 4, 100), "dq:x": (7000, 3, 100),
                          "dw:x": (5000, 4, 100)}, shapes
        assert info_labels(c, "other") == PLAIN_INFO
        assert info_labels(c, "dw:r") == PLAIN_INFO

        conf.write_text("bf-window dw:* 6000 ERROR 0.05 CAPACITY 500\n")
        sighup_and_wait(p, RELOADED)
        assert raw(c, "BF.ADD", "dw:b", "x") == b":1\r\n"
        i = info_map(c, "dw:b")
        assert (i[b"Window"], i[b"Slots"], i[b"Capacity"]) == (6000, 3, 500), i
        assert info_map(c, "dw:a")[b"Window"] == 5000
        assert raw(c, "BF.ADD", "dq:y", "x") == b":1\r\n"
        assert info_labels(c, "dq:y") == PLAIN_INFO


# ---------------------------------------------------------------------------------------------
# Through a Redis Cluster and through twemproxy


WINDOW, SLOTS = 800, 2     # forgotten at most W + s = 1.6 s after the last add
ITEMS = 300


def end_to_end(p1, p2, names, keys_of, no_keys_left, keys_command=True):
    """Each windowed filter in `names`: reserved and filled through p1, found and counted
    through p2, its keys where keys_of(name) says they must be; forgotten after W + s, with only
    its name and marker left; then filled again and deleted whole through p2."""
    s = WINDOW / (SLOTS - 1)
    with p1.raw(timeout=10) as a, p2.raw(timeout=10) as b:
        for n in names:
            assert raw(a, "BF.RESERVE", n, "0.01", str(ITEMS), "WINDOW", str(WINDOW), "SLOTS",
                       str(SLOTS)) == b"+OK\r\n", n
        last = {}
        for n in names:
            items = [f"{n}:{i}" for i in range(ITEMS)]
            got = a.command("BF.MADD", n, *items)
            last[n] = now_ms()
            assert isinstance(got, list) and sum(got) >= ITEMS - 3, f"{n}: {got!r:.200}"
            assert b.command("BF.MEXISTS", n, *items) == [1] * ITEMS, n
            assert b.command("BF.EXISTS", n, items[0]) == 1
            assert b.command("BF.CARD", n) == sum(got)
            i = info_map(b, n)
            assert (i[b"Window"], i[b"Slots"], i[b"Number of items inserted"]) \
                == (WINDOW, SLOTS, sum(got)), i
            keys_of(n, expect_slots=True)
        if keys_command:  # (a sharding proxy refuses KEYS)
            assert sorted(b.command("KEYS", "*")) == sorted(n.encode() for n in names)
        time.sleep(max(0.0, (max(last.values()) + WINDOW + s + 20 - now_ms()) / 1000))
        for n in names:
            items = [f"{n}:{i}" for i in range(ITEMS)]
            assert sum(b.command("BF.MEXISTS", n, *items)) <= binomial_limit(ITEMS, 0.01), n
            assert b.command("BF.CARD", n) == 0
            keys_of(n, expect_slots=False)
            assert a.command("BF.MADD", n, "again", "more") == [1, 1]
            assert raw(b, "DEL", n) == b":1\r\n"
            assert raw(a, "BF.EXISTS", n, "again") == b":0\r\n"
            assert raw(a, "EXISTS", n) == b":0\r\n"
        no_keys_left()


def test_end_to_end_through_a_cluster(redis_cluster, cluster_proxy):
    """Two proxies in front of a Redis Cluster, filters on different masters: every key of a
    filter (name, marker, slots and their keys) in the name's slot on its master."""
    redis_cluster.flushall()
    p1, p2 = cluster_proxy(), cluster_proxy()
    names = ["cw", "{t1}cw", "{t2}cw", "c:w"]

    def keys_of(name, expect_slots):
        slot = key_slot(name.encode())
        owner = redis_cluster.node_for_key(name.encode())
        prefix = name if "{" in name else "{%s}" % name
        found = []
        for m in redis_cluster.masters():
            with RawConn(m.port) as c:
                ks = [k for k in scan_all(c, "COUNT", 1000)
                      if k == name.encode() or k.startswith(prefix.encode() + b":")]
            assert not ks or m.port == owner.port, f"{name}: keys on {m.port}: {ks}"
            found += ks
        assert all(key_slot(k) == slot for k in found), f"{name}: keys outside slot {slot}"
        slot_keys = [k for k in found if is_slot_key(k)]
        assert bool(slot_keys) == expect_slots, (name, found)
        assert name.encode() in found

    def no_keys_left():
        assert redis_cluster.dbsize() == 0

    end_to_end(p1, p2, names, keys_of, no_keys_left)


def test_end_to_end_through_twemproxy(twemproxy, sharding_proxy):
    """Two proxies (--upstream-kind sharding-proxy) in front of nutcracker and two
    redis-servers: every key of a filter on the server nutcracker sends its name to."""
    twemproxy.flushall()
    p1, p2 = sharding_proxy(), sharding_proxy()
    names = ["tw", "{a}tw", "{b}tw", "{c}tw"]

    def keys_of(name, expect_slots):
        where = twemproxy.keys_by_server()
        home = twemproxy.servers.index(twemproxy.server_for_key(name))
        prefix = (name if "{" in name else "{%s}" % name).encode()
        mine = {k: i for k, i in where.items() if k == name.encode() or k.startswith(prefix + b":")}
        assert set(mine.values()) == {home}, f"{name}: {mine}"
        assert any(is_slot_key(k) for k in mine) == expect_slots, (name, mine)

    def no_keys_left():
        assert twemproxy.keys_by_server() == {}

    end_to_end(p1, p2, names, keys_of, no_keys_left, keys_command=False)

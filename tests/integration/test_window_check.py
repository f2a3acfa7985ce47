"""The check at the head of a windowed filter's lookup round (filters/bloom/window/window_check.h):
the script on its own against a real Redis with keys built by hand (every way a name or slot can
differ from what the proxy knows, and shards of the wrong size), then through the proxy: a lookup
on slots the proxy knows is the script and the slots' bit reads, nothing else, and a lookup whose
check fails (a slot another proxy created or scaled, the script flushed, a shard overwritten, the
name replaced) answers what the slots' own plans answer.
"""

import re

import pytest

from bp_helpers import RawConn, encode_command as cmd
from lua_scripts import load_script

SCRIPT = load_script("bloom/window/window_check.lua")
NAME, FID, WINDOW = "w", "f00d", 60000
SHARD = 16


# ---------------------------------------------------------------------------------------------
# The script on its own


@pytest.fixture
def r(redis_instance):
    c = redis_instance.client()
    c.hset(NAME, mapping={"bloomproxy": "1", "id": FID, "window": str(WINDOW), "slots": "3"})
    for s in ("s2", "s3"):
        c.hset(s, mapping={"bloomproxy": "1", "id": "a" + s, "l0": "x"})
        c.setrange(f"{s}.0", SHARD - 1, b"\0")
    return c


def check(r, slots):
    """slots: (name, id or "", links, [(shard, length)])."""
    keys, argv = [NAME], ["bloomproxy", "1", FID, str(WINDOW), str(len(slots))]
    for name, sid, links, shards in slots:
        keys.append(name)
        argv += [str(len(keys)), sid, f"l{links}", str(len(shards))]
        for shard, length in shards:
            keys.append(shard)
            argv += [str(len(keys)), str(length)]
    return r.eval(SCRIPT, len(keys), *keys, *argv)


KNOWN = [("s1", "", 0, []), ("s2", "as2", 1, [("s2.0", SHARD)]), ("s3", "as3", 1, [("s3.0", SHARD)])]


def test_as_known(r):
    assert check(r, KNOWN) == 1
    # A known slot Redis dropped at its end is as known: its reads find nothing.
    r.delete("s2", "s2.0")
    assert check(r, KNOWN) == 1


@pytest.mark.parametrize("change", [
    lambda r: r.hset(NAME, "id", "other"),
    lambda r: r.hset(NAME, "window", "1000"),
    lambda r: (r.delete(NAME), r.set(NAME, "x")),
    lambda r: r.delete(NAME),
    lambda r: r.hset("s1", mapping={"bloomproxy": "1", "id": "as1"}),  # expected missing
    lambda r: r.set("s1", "x"),
    lambda r: r.hset("s2", "id", "other"),
    lambda r: r.hset("s3", "l1", "x"),  # a new link
    lambda r: r.hdel("s2", "bloomproxy"),
    lambda r: (r.delete("s3"), r.set("s3", "x")),
], ids=["name id", "name window", "name type", "name gone", "slot appeared", "key appeared",
        "slot id", "slot new link", "slot not a filter", "slot type"])
def test_not_as_known(r, change):
    change(r)
    assert check(r, KNOWN) == -1


def test_shards_of_the_wrong_size(r):
    r.set("s3.0", "short")
    assert check(r, KNOWN) == -2
    r.delete("s3.0")
    assert check(r, KNOWN) == -2
    r.delete("s3")  # the slot dropped: its shards are not looked at
    assert check(r, KNOWN) == 1


# ---------------------------------------------------------------------------------------------
# Through the proxy


def upstream_commands(redis_instance, action):
    """The commands the proxy's connections sent Redis while `action` ran (MONITOR, without the
    lines of scripts)."""
    with RawConn(redis_instance.port, timeout=10) as mon:
        assert mon.command("MONITOR") == b"OK"
        action()
        with RawConn(redis_instance.port) as c:
            assert c.command("ECHO", "window-check-end") == b"window-check-end"
        names = []
        while True:
            line = mon.read_reply_raw()
            if b"window-check-end" in line:
                return names
            if b"[0 lua]" in line:
                continue
            m = re.search(rb'\] "([^"]+)"', line)
            names.append(m.group(1).decode().upper())


def slot_names(r, name):
    return sorted(k for k in r.keys(f"{{{name}}}:bf:*") if re.search(rb":w\d+$", k))


def test_a_known_lookup_is_the_check_and_the_bit_reads(bp, redis_instance):
    r = redis_instance.client()
    with bp.raw() as c:
        assert c.command("BF.RESERVE", "k", "0.01", "1000", "WINDOW", "3600000") == b"OK"
        assert c.command("BF.INSERT", "k", "TTL", "1", "ITEMS", "early") == [1]
        assert c.command("BF.ADD", "k", "late") == 1
        assert len(slot_names(r, "k")) == 2
        assert c.command("BF.MEXISTS", "k", "early", "late", "none") == [1, 1, 0]
        sent = upstream_commands(redis_instance,
                                 lambda: c.command("BF.MEXISTS", "k", "early", "late", "none"))
        assert sent == ["EVALSHA", "BITFIELD_RO", "BITFIELD_RO"], sent
        assert c.command("BF.MEXISTS", "k", "early", "late", "none") == [1, 1, 0]


def test_lookups_whose_check_fails_answer_as_the_slots_plans(proxy, redis_instance):
    r = redis_instance.client()
    a, b = proxy(), proxy()
    with a.raw() as ca, b.raw() as cb:
        assert ca.command("BF.RESERVE", "k", "0.01", "100", "WINDOW", "3600000") == b"OK"
        assert ca.command("BF.ADD", "k", "x") == 1
        assert ca.command("BF.EXISTS", "k", "x") == 1  # a now knows the live slots
        # b creates a slot a expects missing, and scales the one a knows.
        assert cb.command("BF.INSERT", "k", "TTL", "1", "ITEMS", "early") == [1]
        items = [f"i{j}" for j in range(200)]
        assert cb.command("BF.MADD", "k", *items) == [1] * 200
        assert ca.command("BF.MEXISTS", "k", "early", "x", *items) == [1] * 202
        assert ca.command("BF.EXISTS", "k", "nothing-like-it") == 0
        # The script flushed: sent again with its text.
        assert r.script_flush() is True
        assert ca.command("BF.MEXISTS", "k", "early", "x", "none") == [1, 1, 0]
        # A shard overwritten: the error the slot's plan gives, not a miss.
        shard = sorted(k for k in r.keys("{k}:bf:*") if re.search(rb":w\d+:bf:[0-9a-f]+:0\.0$", k))
        r.set(shard[0], "x")
        ca.send(cmd("BF.EXISTS", "k", "x"))
        got = ca.read_reply_raw()
        assert got.startswith(b"-ERR bloomproxy: unexpected reply from upstream to STRLEN"), got
        # The name replaced by another type: 0, as RedisBloom's BF.EXISTS answers on any key of
        # another type (and BF.CARD its WRONGTYPE).
        r.delete("k")
        r.set("k", "v")
        assert ca.command("BF.EXISTS", "k", "x") == 0
        ca.send(cmd("BF.CARD", "k"))
        assert ca.read_reply_raw().startswith(b"-WRONGTYPE")

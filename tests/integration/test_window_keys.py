"""Key commands on a windowed filter's name act on the whole filter: its name, its marker and its
live slots, each a filter under its own name whose keys carry the slot's end as PEXPIREAT
(docs/bloom-filters.md "Windowed filters' keys", filters/common/filter_at.lua).

The filter is built by hand on the upstream (bp_window.HandWindow) and the commands go through
the proxy; the upstream's keys and their expiries are checked directly after each step:

- KEYS and SCAN show the name only; TYPE is MBbloom--; EXISTS, TTL as for the name; OBJECT
  ENCODING raw; DUMP, COPY refused; hash commands WRONGTYPE;
- DEL and UNLINK leave nothing; RESTORE ... REPLACE leaves the restored value only;
- the EXPIRE family gives name and marker the user's expiry and each slot key the earlier of the
  user's and its own end, never later; PERSIST puts the slots back at their own end;
- RENAME and RENAMENX take the slots along under the new prefix, with their expiries; MOVE too;
- MEMORY USAGE is the sum over every key; OBJECT FREQ / IDLETIME look at the slots' data keys
  and the marker, not at the name's nor at a slot's hash (metadata);
- a slot missing from the live range (never written, or expired) is skipped;
- on slots the proxy's own plan created (BF.ADD on a windowed name), EXPIRE then PERSIST give
  back exactly the expiries the plan set, and the items are found after RENAME;
- WATCH of the name fires on a write to a live slot, and on a new slot's creation.

Standalone and on a Redis Cluster (3 masters) where the command exists there.
"""

import time

import pytest

from bp_helpers import RawConn, encode_command as cmd, wait_until
from bp_window import HandWindow, live_slots, upstream_ms

OK = b"+OK\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
DUMP_REFUSED = (b"-ERR bloomproxy: DUMP of a Bloom filter, cuckoo filter, count-min sketch, Top-K "
                b"sketch or t-digest is not supported (save a filter with BF.SCANDUMP or "
                b"CF.SCANDUMP, restore it with BF.LOADCHUNK or CF.LOADCHUNK)\r\n")
NAME = "{kw}win"
OTHER = "{kw}other"
PLAIN = "{kw}plain"


class Env:
    def __init__(self, proxy, masters, client_for_key, cluster):
        self.proxy, self.masters, self.client_for_key, self.cluster = (
            proxy, masters, client_for_key, cluster)

    def keys(self, db=0):
        out = set()
        for m in self.masters:
            out |= set(m.client(db=db).scan_iter(count=1000))
        return out

    def node(self, key=NAME, db=0):
        return self.client_for_key(key, db=db)

    def expiries(self, keys, db=0):
        r = self.node(db=db)
        return {k: r.pexpiretime(k) for k in keys}


@pytest.fixture(params=["standalone", "cluster"])
def env(request):
    if request.param == "standalone":
        server = request.getfixturevalue("redis_instance")
        p = request.getfixturevalue("proxy")()
        return Env(p, [server], lambda key, db=0: server.client(db=db), cluster=False)
    cluster = request.getfixturevalue("redis_cluster")
    cluster.flushall()
    p = request.getfixturevalue("cluster_proxy")()
    return Env(p, cluster.masters(),
               lambda key, db=0: cluster.client_for_key(key, db=db), cluster=True)


@pytest.fixture
def standalone(redis_instance, proxy):
    p = proxy()
    return Env(p, [redis_instance], lambda key, db=0: redis_instance.client(db=db),
               cluster=False)


def raw(conn, *args):
    conn.send(cmd(*args))
    return conn.read_reply_raw()


def test_one_key_to_the_client(env):
    w = HandWindow(env.node(), NAME)
    assert len(w.slots) == 3
    r = env.node()
    r.set(PLAIN, "v")
    with env.proxy.raw() as c:
        assert sorted(c.command("KEYS", "*")) == sorted([NAME.encode(), PLAIN.encode()])
        seen, cursor = [], b"0"
        while True:
            cursor, keys = c.command("SCAN", cursor, "COUNT", "1000")
            seen += keys
            if cursor == b"0":
                break
        assert sorted(seen) == sorted([NAME.encode(), PLAIN.encode()])
        assert raw(c, "TYPE", NAME) == b"+MBbloom--\r\n"
        assert raw(c, "EXISTS", NAME) == b":1\r\n"
        for ttl in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
            assert raw(c, ttl, NAME) == b":-1\r\n", ttl
        assert raw(c, "OBJECT", "ENCODING", NAME) == b"$3\r\nraw\r\n"
        assert raw(c, "DUMP", NAME) == DUMP_REFUSED
        assert raw(c, "COPY", NAME, OTHER) == b"-ERR not supported for this module key\r\n"
        assert raw(c, "HGET", NAME, "id") == WRONGTYPE
        assert raw(c, "HSET", NAME, "window", "1") == WRONGTYPE
    assert env.keys() == w.keys() | {PLAIN.encode()}
    assert env.expiries(w.slot_keys()) == w.ends()


@pytest.mark.parametrize("command", ["DEL", "UNLINK"])
def test_delete_leaves_nothing(env, command):
    w = HandWindow(env.node(), NAME)
    with env.proxy.raw() as c:
        assert raw(c, command, NAME, "{kw}missing") == b":1\r\n"
        assert raw(c, "TYPE", NAME) == b"+none\r\n"
    assert env.keys() == set()


def test_restore_replace_leaves_the_value_only(env):
    w = HandWindow(env.node(), NAME)
    r = env.node()
    r.set(PLAIN, "restored")
    payload = r.dump(PLAIN)
    with env.proxy.raw() as c:
        assert raw(c, "RESTORE", NAME, "0", payload) == \
            b"-BUSYKEY Target key name already exists.\r\n"
        assert env.keys() == w.keys() | {PLAIN.encode()}
        assert raw(c, "RESTORE", NAME, "0", payload, "REPLACE") == OK
        assert raw(c, "GET", NAME) == b"$8\r\nrestored\r\n"
    assert env.keys() == {NAME.encode(), PLAIN.encode()}


def test_expire_never_later_than_a_slots_end(env):
    w = HandWindow(env.node(), NAME)
    r = env.node()
    ends = w.ends()
    name_and_marker = {NAME.encode(), w.marker.encode()}
    first, middle, last = sorted(w.slots)
    with env.proxy.raw() as c:
        # Later than every slot's end: the name and marker get it, the slots keep their own.
        assert raw(c, "EXPIRE", NAME, "100000") == b":1\r\n"
        at = r.pexpiretime(NAME)
        assert env.expiries(name_and_marker) == dict.fromkeys(name_and_marker, at)
        assert env.expiries(w.slot_keys()) == ends
        assert 99_990_000 <= c.command("PTTL", NAME) <= 100_000_000
        # Between the slots' ends: the earlier ones keep theirs, the later ones get the user's.
        at = w.slots[middle][0]
        assert raw(c, "PEXPIREAT", NAME, str(at)) == b":1\r\n"
        assert env.expiries(name_and_marker) == dict.fromkeys(name_and_marker, at)
        assert env.expiries(w.slot_keys()) == w.ends(at)
        assert set(env.expiries(w.slots[first][1]).values()) == {w.slots[first][0]}
        assert set(env.expiries(w.slots[last][1]).values()) == {at}
        # Later again (GT): back to each slot's own end, never past it.
        assert raw(c, "PEXPIRE", NAME, "200000000", "GT") == b":1\r\n"
        assert env.expiries(w.slot_keys()) == ends
        assert raw(c, "PEXPIREAT", NAME, str(at), "XX") == b":1\r\n"
        # PERSIST: the name and marker lose their expiry, the slots go back to their end.
        assert raw(c, "PERSIST", NAME) == b":1\r\n"
        assert env.expiries(name_and_marker) == dict.fromkeys(name_and_marker, -1)
        assert env.expiries(w.slot_keys()) == ends
        assert raw(c, "PERSIST", NAME) == b":0\r\n"
        assert raw(c, "EXPIRE", NAME, "100", "XX") == b":0\r\n"
        assert raw(c, "EXPIRE", NAME, "x") == b"-ERR value is not an integer or out of range\r\n"
        assert env.keys() == w.keys()
        # In the past: everything is gone.
        assert raw(c, "PEXPIREAT", NAME, "1000") == b":1\r\n"
        assert raw(c, "TTL", NAME) == b":-2\r\n"
    assert env.keys() == set()


def test_rename_takes_the_slots_along(env):
    w = HandWindow(env.node(), NAME)
    r = env.node()
    renamed_ends = {OTHER.encode() + k[len(NAME):]: e for k, e in w.ends().items()}
    with env.proxy.raw() as c:
        assert raw(c, "EXPIRE", NAME, "100000") == b":1\r\n"
        assert raw(c, "RENAME", NAME, OTHER) == OK
        assert env.keys() == w.renamed(OTHER)
        assert env.expiries(renamed_ends) == renamed_ends
        assert raw(c, "TYPE", OTHER) == b"+MBbloom--\r\n"
        assert 99_990_000 <= c.command("PTTL", OTHER) <= 100_000_000
        # The moved slots are the filter's: a key command on the new name reaches them.
        assert raw(c, "PERSIST", OTHER) == b":1\r\n"
        assert env.expiries(renamed_ends) == renamed_ends
        assert raw(c, "RENAMENX", OTHER, NAME) == b":1\r\n"
        assert env.keys() == w.keys()
        assert env.expiries(w.slot_keys()) == w.ends()
        # RENAMENX onto a taken name: nothing moves.
        r.set(OTHER, "v")
        assert raw(c, "RENAMENX", NAME, OTHER) == b":0\r\n"
        assert env.keys() == w.keys() | {OTHER.encode()}
        # A plain key onto the windowed filter: nothing of the filter is left.
        assert raw(c, "RENAME", OTHER, NAME) == OK
        assert env.keys() == {NAME.encode()}
    # A windowed filter onto another: the one replaced is gone whole.
    r.delete(NAME)
    a = HandWindow(r, NAME)
    b = HandWindow(r, OTHER)
    assert env.keys() == a.keys() | b.keys()
    with env.proxy.raw() as c:
        assert raw(c, "RENAME", NAME, OTHER) == OK
    assert env.keys() == a.renamed(OTHER)


def test_rename_within_one_prefix(standalone):
    """users and {users} share the prefix {users}: the slots stay where they are, the marker
    follows the name."""
    r = standalone.node("users")
    w = HandWindow(r, "users")
    with standalone.proxy.raw() as c:
        assert raw(c, "RENAME", "users", "{users}") == OK
        assert raw(c, "TYPE", "{users}") == b"+MBbloom--\r\n"
        assert raw(c, "DEL", "{users}") == b":1\r\n"
    assert w.slot_keys() and standalone.keys() == set()


def test_move_takes_the_slots_along(standalone):
    env = standalone
    w = HandWindow(env.node(), NAME)
    with env.proxy.raw() as c:
        assert raw(c, "EXPIRE", NAME, "100000") == b":1\r\n"
        at = env.node().pexpiretime(NAME)
        assert raw(c, "MOVE", NAME, "1") == b":1\r\n"
        assert env.keys(0) == set()
        assert env.keys(1) == w.keys()
        assert env.expiries(w.slot_keys(), db=1) == w.ends()
        assert env.expiries({NAME.encode(), w.marker.encode()}, db=1) == \
            dict.fromkeys({NAME.encode(), w.marker.encode()}, at)
        assert raw(c, "SELECT", "1") == OK
        assert raw(c, "TYPE", NAME) == b"+MBbloom--\r\n"
        assert raw(c, "DEL", NAME) == b":1\r\n"
    assert env.keys(1) == set()


def test_move_on_a_cluster_is_refused(env):
    if not env.cluster:
        pytest.skip("standalone: test_move_takes_the_slots_along")
    w = HandWindow(env.node(), NAME)
    with env.proxy.raw() as c:
        assert raw(c, "MOVE", NAME, "1") == b"-ERR MOVE is not allowed in cluster mode\r\n"
    assert env.keys() == w.keys()


def test_memory_usage_sums_every_key(env):
    w = HandWindow(env.node(), NAME)
    r = env.node()
    with env.proxy.raw() as c:
        for options in [(), ("SAMPLES", "0")]:
            want = sum(r.memory_usage(k, samples=0 if options else None) for k in w.keys())
            assert c.command("MEMORY", "USAGE", NAME, *options) == want, options
            assert want > r.memory_usage(NAME) + 1000


@pytest.fixture
def lfu(env):
    """allkeys-lfu with exact counters on every master (as test_key_commands_whole's)."""
    settings = (("maxmemory", "1gb", "0"), ("maxmemory-policy", "allkeys-lfu", "noeviction"),
                ("lfu-log-factor", "0", "10"), ("lfu-decay-time", "0", "1"))
    for m in env.masters:
        with RawConn(m.port) as conn:
            for name, value, _ in settings:
                assert conn.command("CONFIG", "SET", name, value) == b"OK"
    yield
    for m in env.masters:
        with RawConn(m.port) as conn:
            for name, _, default in settings:
                assert conn.command("CONFIG", "SET", name, default) == b"OK"


def test_object_freq_of_the_slots_data_keys(env, lfu):
    w = HandWindow(env.node(), NAME)
    r = env.node()
    slot_names = [keys[0] for _, keys in w.slots.values()]
    data = [k for _, keys in w.slots.values() for k in keys[1:]] + [w.marker]

    def highest():
        return max(r.object("freq", k) for k in data)

    with env.proxy.raw() as c:
        first = c.command("OBJECT", "FREQ", NAME)
        assert first == highest()
        # A slot's hash is metadata (the proxy reads it): its use does not count ...
        for _ in range(first + 20):
            r.hget(slot_names[0], "id")
        assert c.command("OBJECT", "FREQ", NAME) == first
        # ... a slot's data key's does.
        for _ in range(first + 30):
            r.get(data[0])
        assert c.command("OBJECT", "FREQ", NAME) == highest() > first


def test_object_idletime_of_the_slots_data_keys(env):
    w = HandWindow(env.node(), NAME)
    r = env.node()
    slot_names = [keys[0] for _, keys in w.slots.values()]
    data = [k for _, keys in w.slots.values() for k in keys[1:]]
    wait_until(lambda: min(r.object("idletime", k) for k in w.keys()) >= 2, 15,
               what="keys idle for 2 s")
    with env.proxy.raw() as c:
        before = c.command("OBJECT", "IDLETIME", NAME)
        assert before >= 2
        for s in slot_names:
            r.hgetall(s)
        assert c.command("OBJECT", "IDLETIME", NAME) >= 2
        r.getrange(data[0], 0, 0)  # a shard (a count may hold a shared integer)
        assert c.command("OBJECT", "IDLETIME", NAME) <= 1


def test_missing_and_expired_slots_are_skipped(env):
    """A slot never written (the middle one here) is simply not there; a slot that ended is
    gone by itself and the key commands find what is left."""
    r = env.node()
    w = HandWindow(r, NAME, w=3000, g=3, skip=(1,))
    assert len(w.slots) == 2
    first = min(w.slots)
    with env.proxy.raw() as c:
        assert c.command("MEMORY", "USAGE", NAME) == sum(r.memory_usage(k) for k in w.keys())
        # Wait until the first slot ended: Redis drops it, the others stay.
        wait_until(lambda: upstream_ms(r) > w.slots[first][0] + 150, 10, what="a slot's end")
        left = w.keys() - {k.encode() for k in w.slots[first][1]}
        assert raw(c, "EXPIRE", NAME, "100") == b":1\r\n"
        assert {k for k in w.keys() if r.exists(k)} == left
        assert c.command("MEMORY", "USAGE", NAME) == sum(r.memory_usage(k) for k in left)
        assert raw(c, "RENAME", NAME, OTHER) == OK
        assert raw(c, "DEL", OTHER) == b":1\r\n"
    assert env.keys() == set()


def test_slots_beyond_the_live_range_are_not_the_filters(standalone):
    """The scripts look at the live slots and one more on each side; a slot further out (no
    plan writes one) is left to its own expiry, and to the sweep."""
    r = standalone.node()
    w = HandWindow(r, NAME)
    t = upstream_ms(r)
    live = live_slots(t, w.w, w.g)
    near = w.add_slot(live[-1] + 1)
    far = w.add_slot(live[-1] + 5)
    with standalone.proxy.raw() as c:
        assert raw(c, "DEL", NAME) == b":1\r\n"
    assert standalone.keys() == {k.encode() for k in far}
    assert not any(r.exists(k) for k in near)


def test_watch_sees_writes_to_the_slots(env):
    r = env.node()
    w = HandWindow(r, NAME, skip=(2,))
    first, middle = sorted(w.slots)
    missing = middle + 1
    data_key = w.slots[middle][1][1]

    def watched_exec(write):
        with env.proxy.raw() as c:
            assert raw(c, "WATCH", NAME) == OK
            write()
            assert raw(c, "MULTI") == OK
            assert raw(c, "PING") == b"+QUEUED\r\n"
            return raw(c, "EXEC")

    assert watched_exec(lambda: None) == b"*1\r\n+PONG\r\n"
    assert watched_exec(lambda: r.set("{kw}unrelated", "1")) == b"*1\r\n+PONG\r\n"
    # A write to a live slot's data key (an add) ...
    assert watched_exec(lambda: r.setrange(data_key, 0, b"\x02")) == b"*-1\r\n"
    # ... a new link in a slot (a write of the slot's hash) ...
    assert watched_exec(lambda: r.hset(w.slot_name(first), "l2", "x")) == b"*-1\r\n"
    # ... and a slot created (an add in a slot of the window not written before).
    assert watched_exec(lambda: w.add_slot(missing)) == b"*-1\r\n"


def test_slots_the_plan_made(env):
    """Slots created by BF.ADD through the proxy, on a windowed filter's name and marker as
    BF.RESERVE ... WINDOW writes them: the key commands find them, EXPIRE then PERSIST give back
    exactly the expiries the plan set (a slot's hash at its end, its data keys a little later),
    and the filter answers as before after RENAME."""
    r = env.node()
    w = HandWindow(r, NAME, w=64000, g=64, skip=range(100))  # slots of about 1 s, none yet
    items = ["x0", "x1", "x2"]
    with env.proxy.raw() as c:
        for i, item in enumerate(items):
            if i:
                time.sleep(1.1)  # the next add goes to the next slot
            assert c.command("BF.ADD", NAME, item) == 1
        slot_keys = env.keys() - {NAME.encode(), w.marker.encode()}
        names = {k for k in slot_keys if r.type(k) == b"hash"}
        assert len(names) == 3, sorted(slot_keys)
        own = env.expiries(slot_keys)
        for k in slot_keys - names:
            slot = next(n for n in names if k.startswith(n + b":bf:"))
            assert own[k] == own[slot], k
        assert c.command("KEYS", "*") == [NAME.encode()]
        assert raw(c, "TYPE", NAME) == b"+MBbloom--\r\n"
        assert c.command("MEMORY", "USAGE", NAME) == \
            sum(r.memory_usage(k) for k in slot_keys | {NAME.encode(), w.marker.encode()})
        assert raw(c, "EXPIRE", NAME, "10") == b":1\r\n"
        at = r.pexpiretime(NAME)
        assert env.expiries(slot_keys) == dict.fromkeys(slot_keys, at)
        assert raw(c, "PERSIST", NAME) == b":1\r\n"
        assert env.expiries(slot_keys) == own
        assert c.command("BF.MEXISTS", NAME, *items, "absent") == [1, 1, 1, 0]
        assert raw(c, "RENAME", NAME, OTHER) == OK
        moved = {OTHER.encode() + k[len(NAME):]: e for k, e in own.items()}
        assert env.keys() == set(moved) | {OTHER.encode(), f"{{kw}}other:bf:m:{OTHER}".encode()}
        assert env.expiries(moved) == moved
        assert c.command("BF.MEXISTS", OTHER, *items, "absent") == [1, 1, 1, 0]
        # An add answers for the slot of now (docs/windowed-filters.md, Replies): x0, in an
        # earlier slot, is new to it, and then in it.
        assert c.command("BF.MADD", OTHER, "x0", "x0") == [1, 0]
        assert c.command("BF.ADD", OTHER, "x3") == 1
        assert raw(c, "DEL", OTHER) == b":1\r\n"
    assert env.keys() == set()


def test_watch_sees_the_plans_adds(env):
    """As on RedisBloom, where every BF.ADD writes the key: a WATCH of the name fires on an add
    (the first one, which creates a slot, and later ones), not on a lookup."""
    r = env.node()
    HandWindow(r, NAME, w=3_600_000, g=3, skip=range(10))
    with env.proxy.raw() as c, env.proxy.raw() as other:
        for command, item, fires in [("BF.ADD", "a", True), ("BF.EXISTS", "a", False),
                                     ("BF.ADD", "b", True), ("BF.MEXISTS", "b", False)]:
            assert raw(c, "WATCH", NAME) == OK
            other.command(command, NAME, item)
            assert raw(c, "MULTI") == OK
            assert raw(c, "PING") == b"+QUEUED\r\n"
            assert raw(c, "EXEC") == (b"*-1\r\n" if fires else b"*1\r\n+PONG\r\n"), command
        assert c.command("BF.MEXISTS", NAME, "a", "b", "c") == [1, 1, 0]

"""Key commands on a Bloom filter or a count-min sketch see it as ONE key, as RedisBloom's module
type is (filters/common/key_scripts.h, docs/bloom-filters.md "Key commands on a filter"):

- every hash command on a structure's name answers WRONGTYPE after Redis's own argument checks,
  and changes nothing; on a real hash every hash command answers byte for byte as Redis does
  (errors, HINCRBY's limits, commands with more arguments than a Lua call takes);
- MOVE moves every key of the structure (standalone), or answers Redis's cluster error;
- DUMP is refused with one line; RESTORE without REPLACE answers BUSYKEY; RESTORE ... REPLACE
  leaves nothing of the structure behind, and a payload Redis refuses changes nothing;
- MEMORY USAGE is the sum over the structure's keys (SAMPLES passed on); OBJECT IDLETIME and
  FREQ are those of its data keys and marker, with Redis's errors when the policy does not track
  them; OBJECT REFCOUNT is 1;
- TTL, PTTL, EXPIRETIME, PEXPIRETIME, the EXPIRE family, PERSIST, RENAME and RENAMENX onto and
  from structures, SORT.

Each test runs on a standalone Redis and on a Redis Cluster (3 masters), with a filter scaled to
three links sharded in 64-byte keys and a sketch in 25 parts, and checks the upstream's keys
directly (SCAN of every master) after each step.
"""

import pytest

from bp_helpers import RawConn, encode_command as cmd, wait_until

SHARD = ("--bf-max-shard-bytes", "64")
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
OK = b"+OK\r\n"
DUMP_REFUSED = (b"-ERR bloomproxy: DUMP of a Bloom filter, cuckoo filter, count-min sketch, Top-K "
                b"sketch or t-digest is not supported (save a filter with BF.SCANDUMP or "
                b"CF.SCANDUMP, restore it with BF.LOADCHUNK or CF.LOADCHUNK)\r\n")
# Every name of a test is in slot "kw": a cluster takes the two-key commands on them.
NAME = "{kw}s"
OTHER = "{kw}t"
PLAIN = "{kw}plain"
REF = "{kw}ref"  # a string key, straight on Redis: what Redis answers for a key of another type


def prefix_of(name):
    """filters/common/key_layout.h DataKeyPrefix, for names with a hash tag or without braces."""
    start = name.find("{")
    if start != -1:
        end = name.find("}", start + 1)
        assert end > start + 1, name
        return name
    assert "}" not in name and name
    return "{" + name + "}"


def marker_of(name, kind):
    return f"{prefix_of(name)}:{'bf' if kind == 'bf' else 'cms'}:m:{name}".encode()


class Env:
    """The proxy and the upstream it is in front of: every master (one when standalone)."""

    def __init__(self, proxy, masters, node_for_key, cluster):
        self.proxy = proxy
        self.masters = masters
        self.node_for_key = node_for_key
        self.cluster = cluster

    def keys(self, db=0):
        out = set()
        for m in self.masters:
            out |= set(m.client(db=db).scan_iter(count=1000))
        return out

    def direct(self, key=NAME):
        """A raw connection to the node that holds `key`."""
        return RawConn(self.node_for_key(key).port)


@pytest.fixture(params=["standalone", "cluster"])
def env(request):
    if request.param == "standalone":
        server = request.getfixturevalue("redis_instance")
        p = request.getfixturevalue("proxy")(*SHARD)
        return Env(p, [server], lambda key: server, cluster=False)
    cluster = request.getfixturevalue("redis_cluster")
    cluster.flushall()
    p = request.getfixturevalue("cluster_proxy")(*SHARD)
    return Env(p, cluster.masters(), cluster.node_for_key, cluster=True)


def raw(conn, *args):
    conn.send(cmd(*args))
    return conn.read_reply_raw()


class Structure:
    """A filter (kind "bf": capacity 100, 400 items, so three links) or a sketch (kind "cms":
    100 x 3 counters, so 25 parts of 12 counters) made through the proxy, with what it must
    answer."""

    def __init__(self, env, conn, kind, name=NAME):
        self.kind, self.name = kind, name
        before = env.keys()
        if kind == "bf":
            self.items = [f"i:{name}:{i}".encode() for i in range(400)]
            assert raw(conn, "BF.RESERVE", name, "0.01", "100") == OK
            self.card = 0
            for i in range(0, 400, 200):
                self.card += sum(conn.command("BF.MADD", name, *self.items[i:i + 200]))
        else:
            assert raw(conn, "CMS.INITBYDIM", name, "100", "3") == OK
            assert conn.command("CMS.INCRBY", name, "a", "5", "b", "7") == [5, 7]
        self.keys = env.keys() - before
        assert name.encode() in self.keys and marker_of(name, kind) in self.keys
        # Several data keys: the test is about keys beyond the name and the marker.
        assert len(self.keys) >= 10, sorted(self.keys)

    def check(self, conn, name=None):
        """It answers as made, under `name` (default: its own)."""
        name = name or self.name
        if self.kind == "bf":
            assert conn.command("BF.MEXISTS", name, *self.items) == [1] * len(self.items)
            assert conn.command("BF.CARD", name) == self.card
            assert raw(conn, "TYPE", name) == b"+MBbloom--\r\n"
        else:
            assert conn.command("CMS.QUERY", name, "a", "b", "zz") == [5, 7, 0]
            assert raw(conn, "TYPE", name) == b"+CMSk-TYPE\r\n"

    def renamed_keys(self, to):
        """Its keys once RENAMEd to `to`: data keys under the new prefix, marker and name."""
        old, new = prefix_of(self.name).encode(), prefix_of(to).encode()
        out = set()
        for k in self.keys:
            if k == self.name.encode():
                out.add(to.encode())
            elif k == marker_of(self.name, self.kind):
                out.add(marker_of(to, self.kind))
            else:
                assert k.startswith(old + b":"), k
                out.add(new + k[len(old):])
        return out


KINDS = ["bf", "cms"]


# ---------------------------------------------------------------------------------------------
# Hash commands

def hash_commands(key):
    """One of every hash command, valid arguments, then each with the arguments Redis refuses
    before it looks at the key's type."""
    return [
        ("HGET", key, "x"), ("HSET", key, "x", "1"), ("HMSET", key, "x", "1", "y", "2"),
        ("HSETNX", key, "x", "1"), ("HDEL", key, "x", "y"), ("HLEN", key), ("HSTRLEN", key, "x"),
        ("HINCRBY", key, "x", "1"), ("HINCRBYFLOAT", key, "x", "1.5"), ("HKEYS", key),
        ("HVALS", key), ("HGETALL", key), ("HEXISTS", key, "id"), ("HMGET", key, "id", "x"),
        ("HRANDFIELD", key), ("HRANDFIELD", key, "3", "WITHVALUES"), ("HSCAN", key, "0"),
        ("HSCAN", key, "0", "MATCH", "*", "COUNT", "100"),
        # Argument errors come first, as for any key.
        ("HINCRBY", key, "x", "notanumber"), ("HINCRBYFLOAT", key, "x", "abc"),
        ("HSCAN", key, "badcursor"), ("HSCAN", key, "0", "BADOPTION"),
        ("HRANDFIELD", key, "notanumber"), ("HRANDFIELD", key, "3", "WITHSCORES"),
        ("HSET", key, "a", "1", "b"), ("HMSET", key, "a", "1", "b"),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_hash_commands_on_a_structure(env, kind):
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        metadata = d.command("HGETALL", NAME)
        assert d.command("SET", REF, "v") == b"OK"
        problems = []
        for args in hash_commands(NAME):
            got = raw(c, *args)
            want = raw(d, args[0], REF, *args[2:])
            if got != want:
                problems.append(f"{args}: proxy {got!r}, redis on a string {want!r}")
        assert not problems, "\n".join(problems)
        assert raw(c, "HGET", NAME, "id") == WRONGTYPE
        assert raw(c, "HSCAN", NAME, "x") == b"-ERR invalid cursor\r\n"
        assert raw(c, "HINCRBY", NAME, "id", "z") == \
            b"-ERR value is not an integer or out of range\r\n"
        # More arguments than one Lua call takes: still WRONGTYPE, still nothing written.
        many = [str(i) for i in range(9000)]
        assert raw(c, "HSET", NAME, *many) == WRONGTYPE
        assert raw(c, "HMGET", NAME, *many) == WRONGTYPE
        assert raw(c, "HDEL", NAME, *many) == WRONGTYPE
        # Inside MULTI: queued, and WRONGTYPE in EXEC's reply, as for a module key.
        assert raw(c, "MULTI") == OK
        for args in [("HSET", NAME, "x", "1"), ("HGET", NAME, "id"), ("HINCRBY", NAME, "x", "z")]:
            assert raw(c, *args) == b"+QUEUED\r\n"
        assert raw(c, "EXEC") == \
            b"*3\r\n" + WRONGTYPE * 2 + b"-ERR value is not an integer or out of range\r\n"
        assert d.command("HGETALL", NAME) == metadata
        s.check(c)
    assert env.keys() == s.keys | {REF.encode()}


def run_both(c, d, sequence, via, direct_key):
    """Runs each command through the proxy on `via` and straight on Redis on `direct_key`;
    returns the differences."""
    problems = []
    for args in sequence:
        got = raw(c, *args)
        want = raw(d, *args[:1], *([direct_key] if len(args) > 1 else []), *args[2:])
        if got != want:
            problems.append(f"{args[:6]}: proxy {got[:200]!r}, redis {want[:200]!r}")
    return problems


def test_hash_commands_on_a_plain_hash_as_redis(env):
    """Two hashes with the same history, one through the proxy, one straight on Redis: the same
    replies byte for byte."""
    via, direct_key = "{kw}h1", "{kw}h2"
    big = [str(i) for i in range(10001)]  # 10001 fields and values: over Lua's 8000
    sequence = [
        ("HGET", via, "x"), ("HLEN", via), ("HGETALL", via), ("HRANDFIELD", via),
        ("HSET", via, "a", "1", "b", "2", "c", "3"), ("HSETNX", via, "a", "9"),
        ("HSETNX", via, "d", "4"), ("HMSET", via, "e", "5", "f", "x"), ("HGET", via, "a"),
        ("HMGET", via, "a", "zz", "b"), ("HLEN", via), ("HSTRLEN", via, "a"),
        ("HKEYS", via), ("HVALS", via), ("HGETALL", via), ("HEXISTS", via, "a"),
        ("HEXISTS", via, "zz"), ("HINCRBY", via, "a", "41"), ("HINCRBY", via, "f", "1"),
        ("HINCRBY", via, "a", "notanumber"), ("HINCRBYFLOAT", via, "a", "0.25"),
        ("HINCRBYFLOAT", via, "f", "1"), ("HINCRBYFLOAT", via, "a", "inf"),
        ("HINCRBY", via, "n", "9007199254740000"), ("HINCRBY", via, "n", "991"),
        ("HINCRBY", via, "n", "-18014398509481982"), ("HSET", via, "m", "9223372036854775807"),
        ("HINCRBY", via, "m", "1"), ("HRANDFIELD", via, "100", "WITHVALUES"),
        ("HRANDFIELD", via, "0"), ("HRANDFIELD", via, "x"), ("HRANDFIELD", via, "1", "x"),
        ("HSCAN", via, "0"), ("HSCAN", via, "0", "MATCH", "a*", "COUNT", "5"),
        ("HSCAN", via, "nope"), ("HSET", via, "a", "1", "b"), ("HMSET", via, "a"),
        ("HDEL", via, "a", "zz", "b"), ("HSET", via, *big[:-1]), ("HLEN", via),
        ("HMGET", via, *big[:8500]), ("HMSET", via, *big[1:]), ("HSET", via, *big),
        ("HMSET", via, *big), ("HDEL", via, *big[::2]), ("HDEL", via, *big[:9000]),
        ("HLEN", via), ("HGETALL", via), ("HDEL", via, "c", "d", "e", "f", "n", "m"),
        ("HLEN", via), ("HGETALL", via), ("EXISTS", via),
    ]
    with env.proxy.raw() as c, env.direct(direct_key) as d:
        problems = run_both(c, d, sequence, via, direct_key)
        # Inside MULTI, the same replies in EXEC's.
        for conn in (c, d):
            assert raw(conn, "MULTI") == OK
        problems += run_both(c, d, [("HSET", via, "q", "1"), ("HINCRBY", via, "q", "x"),
                                    ("HGETALL", via), ("HGET", via), ("EXEC",)], via, direct_key)
        # A string: WRONGTYPE for every hash command, as Redis answers.
        assert raw(c, "SET", via, "v") == OK and raw(d, "SET", direct_key, "v") == OK
        problems += run_both(c, d, hash_commands(via), via, direct_key)
    assert not problems, "\n".join(problems)


def test_hincrby_beyond_what_a_lua_number_holds(env):
    """A Lua number is a double: HINCRBY's result beyond 2^53 comes back exact, as the field's
    value (a bulk string: the script cannot make an integer reply of it); the field holds what
    Redis's HINCRBY makes."""
    with env.proxy.raw() as c, env.direct() as d:
        assert raw(c, "HINCRBY", NAME, "n", "9007199254740993") == b"$16\r\n9007199254740993\r\n"
        assert raw(c, "HINCRBY", NAME, "n", "-18014398509481986") == \
            b"$17\r\n-9007199254740993\r\n"
        assert raw(c, "HINCRBY", NAME, "n", "9007199254740993") == b":0\r\n"
        assert d.command("HGET", NAME, "n") == b"0"


def test_hash_commands_behind_a_sharding_proxy(sharding_proxy, twemproxy):
    twemproxy.flushall()
    p = sharding_proxy(*SHARD)
    with p.raw() as c:
        assert raw(c, "BF.RESERVE", "users", "0.01", "100") == OK
        assert c.command("BF.MADD", "users", "a", "b") == [1, 1]
        keys = set(twemproxy.keys_by_server())
        for args in [("HGET", "users", "id"), ("HSET", "users", "id", "x"), ("HLEN", "users"),
                     ("HGETALL", "users"), ("HDEL", "users", "id")]:
            assert raw(c, *args) == WRONGTYPE, args
        assert raw(c, "HINCRBY", "users", "x", "y") == \
            b"-ERR value is not an integer or out of range\r\n"
        assert raw(c, "DUMP", "users") == DUMP_REFUSED
        assert c.command("BF.MEXISTS", "users", "a", "b", "zz") == [1, 1, 0]
        assert set(twemproxy.keys_by_server()) == keys
        # Plain hashes, tagged or not, and a name no filter can have there.
        for name in ("plainhash", "app{grp}x", "a}b"):
            assert raw(c, "HSET", name, "f", "1", "g", "2") == b":2\r\n"
            assert raw(c, "HINCRBY", name, "f", "41") == b":42\r\n"
            assert raw(c, "HGETALL", name) == b"*4\r\n$1\r\nf\r\n$2\r\n42\r\n$1\r\ng\r\n$1\r\n2\r\n"
            assert raw(c, "HDEL", name, "f", "g", "h") == b":2\r\n"
            assert raw(c, "EXISTS", name) == b":0\r\n"


# ---------------------------------------------------------------------------------------------
# MOVE, DUMP, RESTORE

@pytest.mark.parametrize("kind", KINDS)
def test_move_takes_the_whole_structure(env, kind):
    other = "cms" if kind == "bf" else "bf"
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        assert d.command("SET", REF, "v") == b"OK"
        # Redis's errors, as for any key (on a cluster: MOVE itself is refused).
        for db in ["0", "x", "99"] + (["1"] if env.cluster else []):
            want = raw(d, "MOVE", REF, db)
            assert want.startswith(b"-ERR "), (db, want)
            assert raw(c, "MOVE", NAME, db) == want, db
        assert raw(c, "MOVE", "{kw}missing", "1") == raw(d, "MOVE", "{kw}missing", "1")
        if env.cluster:
            assert raw(c, "MOVE", NAME, "1") == b"-ERR MOVE is not allowed in cluster mode\r\n"
            s.check(c)
            assert env.keys() == s.keys | {REF.encode()}
            return
        assert raw(d, "MOVE", REF, "1") == b":1\r\n"
        assert raw(c, "EXPIRE", NAME, "1000") == b":1\r\n"
        at = d.command("PEXPIRETIME", NAME)
        # Leftovers in the other database: a data key of the same name, the other kind's marker.
        data_key = sorted(k for k in s.keys if k not in (NAME.encode(), marker_of(NAME, kind)))[0]
        value = d.command("GET", data_key)
        assert d.command("SELECT", "1") == b"OK"
        assert d.command("SET", data_key, "stale") == b"OK"
        assert d.command("SET", marker_of(NAME, other), "1") == b"OK"
        assert d.command("SELECT", "0") == b"OK"
        assert raw(c, "MOVE", NAME, "1") == b":1\r\n"
        assert env.keys(0) == set()
        assert env.keys(1) == s.keys | {REF.encode()}
        db1 = env.masters[0].client(db=1)
        assert db1.get(data_key) == value
        assert {k: db1.execute_command("PEXPIRETIME", k) for k in s.keys} == \
            {k: at for k in s.keys}
        assert raw(c, "TYPE", NAME) == b"+none\r\n"
        assert raw(c, "SELECT", "1") == OK
        s.check(c)
        # Back to a database where the name is taken: 0, nothing moves.
        assert d.command("SET", NAME, "taken") == b"OK"
        assert raw(c, "MOVE", NAME, "0") == b":0\r\n"
        assert env.keys(1) == s.keys | {REF.encode()}
        assert env.keys(0) == {NAME.encode()}
        s.check(c)


@pytest.mark.parametrize("kind", KINDS)
def test_dump_refused_and_restore_replaces_the_whole_structure(env, kind):
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        assert d.command("SET", REF, "restored") == b"OK"
        payload = d.command("DUMP", REF)
        assert raw(c, "DUMP", NAME) == DUMP_REFUSED
        assert raw(c, "DUMP", REF) == raw(d, "DUMP", REF)
        assert raw(c, "DUMP", "{kw}missing") == b"$-1\r\n"
        assert raw(c, "RESTORE", NAME, "0", payload) == \
            b"-BUSYKEY Target key name already exists.\r\n"
        assert raw(c, "RESTORE", NAME, "0", b"junk", "REPLACE") == \
            b"-ERR DUMP payload version or checksum are wrong\r\n"
        assert raw(c, "RESTORE", NAME, "0", payload, "REPLACE", "BADOPTION") == \
            raw(d, "RESTORE", REF, "0", payload, "REPLACE", "BADOPTION")
        s.check(c)
        assert env.keys() == s.keys | {REF.encode()}
        assert raw(c, "RESTORE", NAME, "100000", payload, "REPLACE") == OK
        assert env.keys() == {NAME.encode(), REF.encode()}
        assert raw(c, "GET", NAME) == b"$8\r\nrestored\r\n"
        assert raw(c, "TYPE", NAME) == b"+string\r\n"
        assert 0 < d.command("PTTL", NAME) <= 100000
        # A new structure under the name after DEL: nothing of the old one mixes in.
        assert raw(c, "DEL", NAME) == b":1\r\n"
        t = Structure(env, c, kind)
        t.check(c)
        assert env.keys() == t.keys | {REF.encode()}


# ---------------------------------------------------------------------------------------------
# MEMORY USAGE, OBJECT

def node_sum(d, keys, *args):
    total = 0
    for k in keys:
        total += d.command("MEMORY", "USAGE", k, *args)
    return total


@pytest.mark.parametrize("kind", KINDS)
def test_memory_usage_sums_every_key(env, kind):
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        for options in [(), ("SAMPLES", "0"), ("SAMPLES", "3")]:
            got = c.command("MEMORY", "USAGE", NAME, *options)
            want = node_sum(d, s.keys, *options)
            assert got == want, options
            assert got > d.command("MEMORY", "USAGE", NAME, *options) + 500
        assert d.command("HSET", PLAIN, "f", "v") == 1
        for args in [("SAMPLES", "x"), ("SAMPLES",), ("BAD", "1")]:
            want = raw(d, "MEMORY", "USAGE", PLAIN, *args)
            assert want.startswith(b"-"), want
            assert raw(c, "MEMORY", "USAGE", NAME, *args) == want, args
        assert raw(c, "MEMORY", "USAGE", PLAIN) == raw(d, "MEMORY", "USAGE", PLAIN)
        assert raw(c, "MEMORY", "USAGE", "{kw}missing") == b"$-1\r\n"
    assert env.keys() == s.keys | {PLAIN.encode()}


def idle_times(d, keys):
    return [d.command("OBJECT", "IDLETIME", k) for k in keys]


def own_keys(d, s):
    """The structure's keys but its name, less those holding one of Redis's shared small
    integers (their clock is every such key's): what OBJECT IDLETIME / FREQ look at."""
    keys = {k for k in s.keys - {s.name.encode()} if d.command("OBJECT", "REFCOUNT", k) == 1}
    assert keys
    return keys


def touch(c, s):
    if s.kind == "bf":
        c.command("BF.ADD", s.name, "touch")
    else:
        c.command("CMS.INCRBY", s.name, "a", "1")


@pytest.mark.parametrize("kind", KINDS)
def test_object_idletime_refcount_encoding(env, kind):
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        inner = own_keys(d, s)
        assert raw(c, "OBJECT", "REFCOUNT", NAME) == b":1\r\n"
        assert raw(c, "OBJECT", "ENCODING", NAME) == b"$3\r\nraw\r\n"
        assert raw(c, "OBJECT", "IDLETIME", "{kw}missing") == b"$-1\r\n"
        # Documented bound: idle times count in seconds; wait until all are at least 3.
        wait_until(lambda: min(idle_times(d, s.keys)) >= 3, 15, what="keys idle for 3 s")
        answers = []
        for _ in range(2):  # the script's own reading of the metadata does not reset it
            low = min(idle_times(d, inner))
            answers.append(c.command("OBJECT", "IDLETIME", NAME))
            assert low <= answers[-1] <= min(idle_times(d, inner))
        assert min(answers) >= 3
        touch(c, s)
        low = min(idle_times(d, inner))
        after = c.command("OBJECT", "IDLETIME", NAME)
        assert low <= after <= min(idle_times(d, inner))
        assert after < answers[-1]
        # The policy does not track frequencies: Redis's own error.
        assert d.command("SET", REF, "v") == b"OK"
        want = raw(d, "OBJECT", "FREQ", REF)
        assert want.startswith(b"-ERR An LFU maxmemory policy is not selected"), want
        assert raw(c, "OBJECT", "FREQ", NAME) == want
    assert env.keys() == s.keys | {REF.encode()}


@pytest.fixture
def lfu(env):
    """allkeys-lfu with exact counters (every access +1, no decay) on every master, for one
    test; the masters' settings are put back after. With a maxmemory, Redis shares no small
    integers, so every key of a structure has its own counter (the marker "1" too)."""
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


@pytest.mark.parametrize("kind", KINDS)
def test_object_freq_is_the_highest_of_the_structure(env, lfu, kind):
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        inner = own_keys(d, s)
        assert inner == s.keys - {NAME.encode()}

        def highest():
            return max(d.command("OBJECT", "FREQ", k) for k in inner)

        first = c.command("OBJECT", "FREQ", NAME)
        assert first == highest()
        for _ in range(20):
            touch(c, s)
        got = c.command("OBJECT", "FREQ", NAME)
        assert got == highest() and got > first
        # Reading the frequency touches nothing it counts.
        assert c.command("OBJECT", "FREQ", NAME) == got
        # A hash command on the structure touches its marker, as it would a module key.
        marker = marker_of(NAME, kind)
        before = d.command("OBJECT", "FREQ", marker)
        for _ in range(got + 5 - before):
            assert raw(c, "HGET", NAME, "f") == WRONGTYPE
        assert d.command("OBJECT", "FREQ", marker) == got + 5
        assert c.command("OBJECT", "FREQ", NAME) == got + 5
        assert d.command("SET", REF, "v") == b"OK"
        want = raw(d, "OBJECT", "IDLETIME", REF)
        assert want.startswith(b"-ERR An LFU maxmemory policy is selected"), want
        assert raw(c, "OBJECT", "IDLETIME", NAME) == want
        assert raw(c, "OBJECT", "FREQ", "{kw}missing") == b"$-1\r\n"
    assert env.keys() == s.keys | {REF.encode()}


# ---------------------------------------------------------------------------------------------
# TTL and the EXPIRE family, SORT, RENAME

@pytest.mark.parametrize("kind", KINDS)
def test_ttl_expire_and_persist(env, kind):
    with env.proxy.raw() as c, env.direct() as d:
        s = Structure(env, c, kind)
        for args in [("TTL", NAME), ("PTTL", NAME), ("EXPIRETIME", NAME), ("PEXPIRETIME", NAME)]:
            assert raw(c, *args) == b":-1\r\n", args
        assert raw(c, "PERSIST", NAME) == b":0\r\n"
        assert raw(c, "EXPIRE", NAME, "1000", "XX") == b":0\r\n"
        assert raw(c, "EXPIRE", NAME, "1000") == b":1\r\n"
        at = d.command("PEXPIRETIME", NAME)
        assert {k: d.command("PEXPIRETIME", k) for k in s.keys} == {k: at for k in s.keys}
        assert c.command("PEXPIRETIME", NAME) == at
        assert c.command("EXPIRETIME", NAME) == d.command("EXPIRETIME", NAME)
        assert 990 <= c.command("TTL", NAME) <= 1000
        assert 990000 <= c.command("PTTL", NAME) <= 1000000
        assert raw(c, "PEXPIREAT", NAME, str(at + 5000), "GT") == b":1\r\n"
        assert {d.command("PEXPIRETIME", k) for k in s.keys} == {at + 5000}
        assert raw(c, "EXPIRE", NAME, "x") == b"-ERR value is not an integer or out of range\r\n"
        assert raw(c, "PERSIST", NAME) == b":1\r\n"
        assert {d.command("PEXPIRETIME", k) for k in s.keys} == {-1}
        s.check(c)
        assert env.keys() == s.keys
        assert raw(c, "PEXPIREAT", NAME, "1000") == b":1\r\n"
        assert env.keys() == set()
        assert raw(c, "TTL", NAME) == b":-2\r\n"


@pytest.mark.parametrize("kind", KINDS)
def test_sort_answers_wrongtype(env, kind):
    with env.proxy.raw() as c:
        s = Structure(env, c, kind)
        for args in [("SORT", NAME), ("SORT_RO", NAME), ("SORT", NAME, "ALPHA"),
                     ("SORT", NAME, "BY", "nosort"), ("SORT", NAME, "STORE", OTHER)]:
            assert raw(c, *args) == WRONGTYPE, args
        assert raw(c, "SORT", NAME, "LIMIT", "x", "1") == \
            b"-ERR value is not an integer or out of range\r\n"
        s.check(c)
    assert env.keys() == s.keys


@pytest.mark.parametrize("kind", KINDS)
def test_rename_onto_and_from_structures(env, kind):
    other_kind = "cms" if kind == "bf" else "bf"
    with env.proxy.raw() as c:
        s = Structure(env, c, kind)
        # From a structure to a free name, and back with RENAMENX.
        assert raw(c, "RENAME", NAME, OTHER) == OK
        assert env.keys() == s.renamed_keys(OTHER)
        s.check(c, OTHER)
        assert raw(c, "EXISTS", NAME) == b":0\r\n"
        assert raw(c, "RENAMENX", OTHER, NAME) == b":1\r\n"
        assert env.keys() == s.keys
        # RENAMENX onto a taken name: 0, nothing moves.
        assert raw(c, "SET", OTHER, "v") == OK
        assert raw(c, "RENAMENX", NAME, OTHER) == b":0\r\n"
        assert env.keys() == s.keys | {OTHER.encode()}
        s.check(c)
        # A structure onto a structure of the other kind: the destination is gone whole.
        assert raw(c, "DEL", OTHER) == b":1\r\n"
        Structure(env, c, other_kind, OTHER).check(c)
        assert raw(c, "RENAME", NAME, OTHER) == OK
        assert env.keys() == s.renamed_keys(OTHER)
        s.check(c, OTHER)
        # A plain key onto a structure: nothing of the structure is left.
        assert raw(c, "SET", PLAIN, "v") == OK
        assert raw(c, "RENAME", PLAIN, OTHER) == OK
        assert env.keys() == {OTHER.encode()}
        assert raw(c, "GET", OTHER) == b"$1\r\nv\r\n"
        assert raw(c, "RENAME", NAME, OTHER) == b"-ERR no such key\r\n"

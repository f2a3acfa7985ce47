"""Key commands, hidden keys and the leftover sweep on a t-digest (filters/common/key_scripts.h,
protocol/internal_keys.h, filters/common/sweep.h), with digests built by hand on the upstream in
the t-digest layout (a digest named N, data-key prefix P = DataKeyPrefix(N)):

    N              hash    td "1", id <16 hex digits>, v <writes so far>
    P:td:<id>:d    string  the digest: C, min, max, M, U, MW, UW, TC, then M + U nodes
    P:td:m:N       string  marker "1"

so that these tests need nothing of TDIGEST.* itself. Through a real proxy on a standalone Redis:
TYPE is TDIS-TYPE and OBJECT ENCODING raw; hash commands answer WRONGTYPE; DEL/UNLINK, RENAME,
RENAMENX, the EXPIRE family, PERSIST, MOVE, RESTORE REPLACE take every key of the digest along,
TTL and EXISTS answer for the name; MEMORY USAGE is the sum over its keys; COPY and DUMP are
refused; KEYS and SCAN show the name only; the sweep removes the keys of digests gone behind the
proxy's back and leaves a live one whole.
"""

import secrets
import struct

import pytest

from bp_helpers import encode_command as cmd, wait_until

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_SUPPORTED = b"-ERR not supported for this module key\r\n"
DUMP_REFUSED = (b"-ERR bloomproxy: DUMP of a Bloom filter, cuckoo filter, count-min sketch, Top-K "
                b"sketch or t-digest is not supported (save a filter with BF.SCANDUMP or "
                b"CF.SCANDUMP, restore it with BF.LOADCHUNK or CF.LOADCHUNK)\r\n")
SWEEP = ("--sweep-interval", "1", "--sweep-grace", "1", "--loglevel", "verbose")
DEADLINE = 60
# Names with a prefix of each kind: "{name}" for a name without braces, the name itself when it
# has a tag.
NAMES = ["td", "app{g}x"]
DBL_MAX = 1.7976931348623157e308


def prefix_of(name):
    """filters/common/key_layout.h DataKeyPrefix, for names with a hash tag or without braces."""
    start = name.find("{")
    if start != -1:
        end = name.find("}", start + 1)
        assert end > start + 1, name
        return name
    assert "}" not in name and name
    return "{" + name + "}"


def digest_bytes(nodes=(), compression=100.0):
    """A digest's data string (little-endian): the header, then `nodes` (mean, weight) as its
    merged nodes, sorted by mean; no unmerged node. No node: the empty default digest, 56 bytes."""
    nodes = sorted(nodes)
    lo = min((m for m, _ in nodes), default=DBL_MAX)
    hi = max((m for m, _ in nodes), default=-DBL_MAX)
    weight = sum(w for _, w in nodes)
    out = struct.pack("<dddIIqqq", compression, lo, hi, len(nodes), 0, weight, 0, 0)
    for mean, w in nodes:
        out += struct.pack("<dq", mean, w)
    return out


def raw(conn, *args):
    conn.send(cmd(*args))
    return conn.read_reply_raw()


class Digest:
    """A t-digest written straight on the upstream `r` (redis-py), in the layout above."""

    def __init__(self, r, name, nodes=((1.5, 1), (2.5, 2), (40.0, 7))):
        self.r, self.name = r, name
        self.id = secrets.token_hex(8)
        self.data = digest_bytes(nodes)
        r.hset(name, mapping={"td": "1", "id": self.id, "v": "0"})
        r.set(self.data_key(), self.data)
        r.set(self.marker(), "1")

    def data_key(self, name=None):
        return f"{prefix_of(name or self.name)}:td:{self.id}:d".encode()

    def marker(self, name=None):
        name = name or self.name
        return f"{prefix_of(name)}:td:m:{name}".encode()

    def keys(self, name=None):
        """Every key of the digest under `name` (default: its own): name, data, marker."""
        name = name or self.name
        return [name.encode(), self.data_key(name), self.marker(name)]

    def internal(self, name=None):
        return set(self.keys(name)[1:])


@pytest.fixture
def env(proxy, redis_instance):
    p = proxy()
    return p, p.raw(), redis_instance.client()


def test_the_layout_built_here():
    assert len(digest_bytes()) == 56
    assert digest_bytes() == struct.pack("<dddIIqqq", 100.0, DBL_MAX, -DBL_MAX, 0, 0, 0, 0, 0)
    assert len(digest_bytes([(1.0, 1), (2.0, 3)])) == 56 + 2 * 16
    assert prefix_of("td") == "{td}" and prefix_of("app{g}x") == "app{g}x"


@pytest.mark.parametrize("name", NAMES)
def test_type_encoding_and_hash_commands(env, name):
    p, c, r = env
    d = Digest(r, name)
    assert raw(c, "TYPE", name) == b"+TDIS-TYPE\r\n"
    assert raw(c, "OBJECT", "ENCODING", name) == b"$3\r\nraw\r\n"
    before = r.hgetall(name)
    for args in (("HGET", name, "id"), ("HGETALL", name), ("HLEN", name), ("HKEYS", name),
                 ("HEXISTS", name, "td"), ("HMGET", name, "td", "v"), ("HSET", name, "f", "v"),
                 ("HSETNX", name, "f", "v"), ("HDEL", name, "td"), ("HINCRBY", name, "v", "1"),
                 ("HINCRBYFLOAT", name, "v", "1.5"), ("HSCAN", name, "0")):
        assert raw(c, *args) == WRONGTYPE, args
    # Redis's own argument errors come first, as on a module key.
    assert raw(c, "HINCRBY", name, "v", "x").startswith(b"-ERR value is not an integer")
    assert raw(c, "HSET", name, "f").startswith(b"-ERR wrong number of arguments")
    assert r.hgetall(name) == before
    assert r.get(d.data_key()) == d.data
    # Without its marker the hash is a hash again.
    r.delete(d.marker())
    assert raw(c, "TYPE", name) == b"+hash\r\n"
    assert raw(c, "OBJECT", "ENCODING", name) == b"$8\r\nlistpack\r\n"
    assert raw(c, "HGET", name, "td") == b"$1\r\n1\r\n"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("command", ["DEL", "UNLINK"])
def test_delete_removes_every_key(env, name, command):
    p, c, r = env
    d = Digest(r, name)
    other = Digest(r, "{g}other", nodes=())
    assert all(r.exists(k) for k in d.keys() + other.keys())
    assert raw(c, "EXISTS", name, "missing", "{g}other", name) == b":3\r\n"
    assert raw(c, command, name, "missing", "{g}other") == b":2\r\n"
    assert not any(r.exists(k) for k in d.keys() + other.keys())
    assert r.dbsize() == 0
    assert raw(c, "EXISTS", name) == b":0\r\n"
    assert raw(c, "TYPE", name) == b"+none\r\n"


def test_names_sharing_a_prefix_stay_apart(env):
    # "sh" and "{sh}" both have the data-key prefix "{sh}": their ids keep them apart.
    p, c, r = env
    a = Digest(r, "sh")
    b = Digest(r, "{sh}", nodes=((7.0, 1),))
    assert a.data_key() != b.data_key()
    assert raw(c, "DEL", "sh") == b":1\r\n"
    assert set(r.keys("*")) == set(b.keys())
    assert raw(c, "TYPE", "{sh}") == b"+TDIS-TYPE\r\n"
    assert r.get(b.data_key()) == b.data


@pytest.mark.parametrize("name", NAMES)
def test_rename_moves_every_key_and_keeps_the_ttl(env, name):
    p, c, r = env
    d = Digest(r, name)
    assert raw(c, "PEXPIRE", name, "500000") == b":1\r\n"
    at = r.pexpiretime(name)
    assert all(r.pexpiretime(k) == at for k in d.keys())
    to = "renamed{g2}"
    assert raw(c, "RENAME", name, to) == b"+OK\r\n"
    assert set(r.keys("*")) == set(d.keys(to))
    assert all(r.pexpiretime(k) == at for k in d.keys(to))
    assert raw(c, "TYPE", to) == b"+TDIS-TYPE\r\n"
    assert r.get(d.data_key(to)) == d.data
    assert r.hgetall(to) == {b"td": b"1", b"id": d.id.encode(), b"v": b"0"}
    # RENAMENX onto an existing key: nothing moves.
    r.set("taken", "x")
    assert raw(c, "RENAMENX", to, "taken") == b":0\r\n"
    assert set(r.keys("*")) == set(d.keys(to)) | {b"taken"}
    # RENAME onto another digest: the one replaced loses every key.
    victim = Digest(r, "victim", nodes=((3.0, 3),))
    assert raw(c, "RENAME", to, "victim") == b"+OK\r\n"
    assert set(r.keys("*")) == set(d.keys("victim")) | {b"taken"}
    assert not r.exists(victim.data_key())
    assert r.get(d.data_key("victim")) == d.data
    assert all(r.pexpiretime(k) == at for k in d.keys("victim"))
    # RENAMENX to a free name moves it all too, TTL included.
    assert raw(c, "RENAMENX", "victim", name) == b":1\r\n"
    assert set(r.keys("*")) == set(d.keys(name)) | {b"taken"}
    assert all(r.pexpiretime(k) == at for k in d.keys(name))
    # RENAME onto itself changes nothing.
    assert raw(c, "RENAME", name, name) == b"+OK\r\n"
    assert set(r.keys("*")) == set(d.keys(name)) | {b"taken"}


def test_rename_of_a_plain_key_onto_a_digest(env):
    p, c, r = env
    d = Digest(r, "dst")
    r.set("src", "plain")
    assert raw(c, "RENAME", "src", "dst") == b"+OK\r\n"
    assert set(r.keys("*")) == {b"dst"}
    assert raw(c, "TYPE", "dst") == b"+string\r\n"
    assert not (d.internal() & set(r.keys("*")))


def test_expire_family_persist_and_ttl(env):
    p, c, r = env
    d = Digest(r, "exp")
    assert raw(c, "TTL", "exp") == b":-1\r\n"
    assert raw(c, "EXPIRE", "exp", "100") == b":1\r\n"
    assert all(0 < r.ttl(k) <= 100 for k in d.keys())
    assert raw(c, "TTL", "exp") in (b":100\r\n", b":99\r\n")
    at = r.pexpiretime("exp")
    assert all(r.pexpiretime(k) == at for k in d.keys())
    # NX: the name has a TTL, so nothing changes.
    assert raw(c, "EXPIRE", "exp", "5000", "NX") == b":0\r\n"
    assert all(r.pexpiretime(k) == at for k in d.keys())
    assert raw(c, "PEXPIREAT", "exp", str(at + 60000)) == b":1\r\n"
    assert all(r.pexpiretime(k) == at + 60000 for k in d.keys())
    assert raw(c, "EXPIREAT", "exp", str(at // 1000 + 200)) == b":1\r\n"
    assert all(r.pexpiretime(k) == (at // 1000 + 200) * 1000 for k in d.keys())
    assert raw(c, "PEXPIRE", "exp", "400000", "GT") == b":1\r\n"
    assert raw(c, "PEXPIRETIME", "exp") == b":%d\r\n" % r.pexpiretime("exp")
    assert len({r.pexpiretime(k) for k in d.keys()}) == 1
    assert raw(c, "PERSIST", "exp") == b":1\r\n"
    assert all(r.ttl(k) == -1 for k in d.keys())
    assert raw(c, "PERSIST", "exp") == b":0\r\n"
    assert raw(c, "TTL", "exp") == b":-1\r\n"
    # An expiry in the past deletes it, every key.
    assert raw(c, "PEXPIRE", "exp", "-1") == b":1\r\n"
    assert r.dbsize() == 0
    assert raw(c, "TTL", "exp") == b":-2\r\n"


def test_memory_usage_is_the_sum_over_its_keys(env):
    p, c, r = env
    d = Digest(r, "mem", nodes=[(float(i), 1) for i in range(200)])
    own = r.memory_usage("mem")
    total = sum(r.memory_usage(k) for k in d.keys())
    assert total > own + len(d.data)
    assert raw(c, "MEMORY", "USAGE", "mem") == b":%d\r\n" % total
    assert raw(c, "MEMORY", "USAGE", "mem", "SAMPLES", "0") == b":%d\r\n" % sum(
        r.memory_usage(k, samples=0) for k in d.keys())
    assert raw(c, "MEMORY", "USAGE", "missing") == b"$-1\r\n"
    # OBJECT IDLETIME answers for its keys: an integer.
    assert raw(c, "OBJECT", "IDLETIME", "mem").startswith(b":")


def test_copy_and_dump_are_refused(env):
    p, c, r = env
    d = Digest(r, "cp")
    before = set(r.keys("*"))
    assert raw(c, "COPY", "cp", "dst") == NOT_SUPPORTED
    assert raw(c, "COPY", "cp", "dst", "DB", "2") == NOT_SUPPORTED
    # Redis's own answers come first.
    assert raw(c, "COPY", "cp", "cp") == b"-ERR source and destination objects are the same\r\n"
    assert raw(c, "COPY", "cp", "dst", "NOSUCH") == b"-ERR syntax error\r\n"
    r.set("dst", "x")
    assert raw(c, "COPY", "cp", "dst") == b":0\r\n"
    assert raw(c, "COPY", "cp", "dst", "REPLACE") == NOT_SUPPORTED
    assert raw(c, "DUMP", "cp") == DUMP_REFUSED
    assert set(r.keys("*")) == before | {b"dst"}
    assert r.get("dst") == b"x"
    assert set(d.keys()) <= before
    assert r.get(d.data_key()) == d.data
    # A plain key is copied and dumped as Redis does.
    assert raw(c, "COPY", "dst", "dst2") == b":1\r\n"
    assert raw(c, "DUMP", "dst").startswith(b"$")


def test_move_and_restore_replace(env, redis_instance):
    p, c, r = env
    d = Digest(r, "mv")
    assert raw(c, "PEXPIRE", "mv", "900000") == b":1\r\n"
    at = r.pexpiretime("mv")
    # Leftover markers of the other kinds in the destination database go (one would make the
    # moved digest look like another structure); a leftover data key there is replaced.
    r1 = redis_instance.client(db=1)
    r1.set("{mv}:bf:m:mv", "1")
    r1.set("{mv}:tk:m:mv", "1")
    r1.set(d.data_key(), "stale")
    assert raw(c, "MOVE", "mv", "1") == b":1\r\n"
    assert r.dbsize() == 0
    assert set(r1.keys("*")) == set(d.keys())
    assert r1.get(d.data_key()) == d.data
    assert all(r1.pexpiretime(k) == at for k in d.keys())
    c1 = p.raw()
    assert raw(c1, "SELECT", "1") == b"+OK\r\n"
    assert raw(c1, "TYPE", "mv") == b"+TDIS-TYPE\r\n"
    # MOVE onto a database that holds the name: :0, nothing moves.
    r.set("mv", "other")
    assert raw(c1, "MOVE", "mv", "0") == b":0\r\n"
    assert set(r1.keys("*")) == set(d.keys())
    # RESTORE ... REPLACE over it leaves nothing of it.
    r1.set("plain", "v")
    payload = r1.dump("plain")
    assert raw(c1, "RESTORE", "mv", "0", payload) == b"-BUSYKEY Target key name already exists.\r\n"
    assert raw(c1, "RESTORE", "mv", "0", b"bad payload", "REPLACE").startswith(b"-ERR")
    assert set(r1.keys("*")) == set(d.keys()) | {b"plain"}
    assert raw(c1, "RESTORE", "mv", "0", payload, "REPLACE") == b"+OK\r\n"
    assert set(r1.keys("*")) == {b"mv", b"plain"}
    assert raw(c1, "TYPE", "mv") == b"+string\r\n"


def test_keys_and_scan_show_the_name_only(env):
    p, c, r = env
    d = Digest(r, "seen")
    e = Digest(r, "app{g}x")
    r.set("plain", "v")
    # Look-alikes of user keys stay visible.
    lookalikes = {b"seen:td:m:seen", b"{seen}:td:" + d.id.encode() + b":dd",
                  b"{seen}:td:0123456789ABCDEF:d", b"{a}:td:m:b"}
    for k in lookalikes:
        r.set(k, "u")
    assert len(r.keys("*")) == len(d.keys()) + len(e.keys()) + 1 + len(lookalikes)
    client = p.client()
    expected = {b"seen", b"app{g}x", b"plain"} | lookalikes
    assert set(client.keys("*")) == expected
    assert set(client.scan_iter(count=3)) == expected
    assert set(client.scan_iter(match="*:td:*", count=1000)) == lookalikes
    assert set(client.keys("*td*")) == lookalikes


def test_sweep_removes_orphans_and_keeps_a_live_digest(proxy, redis_instance):
    p = proxy(*SWEEP)
    r = redis_instance.client()
    live = Digest(r, "live", nodes=[(float(i), i + 1) for i in range(50)])
    live_keys = set(live.keys())
    # A digest deleted behind the proxy's back: its data key and marker are nobody's.
    gone = Digest(r, "gone")
    r.delete("gone")
    # A digest overwritten by a plain string.
    plain = Digest(r, "plain")
    r.set("plain", "x")
    # A digest created again under the same name with a new id: the old id's data key is an
    # orphan, the marker is the new digest's.
    old = Digest(r, "again")
    new = Digest(r, "again", nodes=())
    # A digest whose hash lost its layout mark (td): no t-digest owns its keys.
    unmarked = Digest(r, "{g}unmarked")
    r.hdel("{g}unmarked", "td")
    # A data key whose digest's hash has another id: an orphan too.
    stray = b"{live}:td:" + secrets.token_hex(8).encode() + b":d"
    r.set(stray, digest_bytes())
    orphans = gone.internal() | plain.internal() | {old.data_key(), stray} | unmarked.internal()
    assert all(r.exists(k) for k in orphans)
    kept = live_keys | set(new.keys()) | {b"plain", b"{g}unmarked"}
    wait_until(lambda: not any(r.exists(k) for k in orphans), DEADLINE, interval=0.2,
               what="t-digest orphans swept")
    assert set(r.keys("*")) - {b"bloomproxy:sweep-lock"} == kept
    assert r.get(live.data_key()) == live.data
    assert r.get(new.data_key()) == new.data
    with open(p.log_path, "rb") as f:
        assert b"orphans deleted" in f.read()
    c = p.raw()
    assert raw(c, "TYPE", "live") == b"+TDIS-TYPE\r\n"
    assert raw(c, "TYPE", "again") == b"+TDIS-TYPE\r\n"
    assert raw(c, "TYPE", "{g}unmarked") == b"+hash\r\n"

"""Key commands, hidden keys and the leftover sweep on a Top-K sketch (filters/common/key_scripts.h,
protocol/internal_keys.h, filters/common/sweep.h), with sketches built by hand on the upstream in
the Top-K layout (a sketch named N, data-key prefix P = DataKeyPrefix(N)):

    N                 hash    tk "1", id, k, width, depth, decay, sh
    P:tk:<id>:b.<s>   string  bucket shards (8 bytes a bucket, sh bytes a shard but the last)
    P:tk:<id>:h       string  heap slots, 8 * k bytes
    P:tk:<id>:i       hash    heap items (may be absent)
    P:tk:m:N          string  marker "1"

so that these tests need nothing of TOPK.* itself. Through a real proxy on a standalone Redis:
TYPE is TopK-TYPE and OBJECT ENCODING raw; hash commands answer WRONGTYPE; DEL/UNLINK, RENAME,
RENAMENX, the EXPIRE family, PERSIST, MOVE, RESTORE REPLACE take every key of the sketch along;
MEMORY USAGE is the sum over its keys; COPY and DUMP are refused; KEYS and SCAN show the name
only; the sweep removes the keys of sketches gone behind the proxy's back and leaves a live one
whole.
"""

import secrets

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
NAMES = ["tk", "app{g}x"]


def prefix_of(name):
    """filters/common/key_layout.h DataKeyPrefix, for names with a hash tag or without braces."""
    start = name.find("{")
    if start != -1:
        end = name.find("}", start + 1)
        assert end > start + 1, name
        return name
    assert "}" not in name and name
    return "{" + name + "}"


def raw(conn, *args):
    conn.send(cmd(*args))
    return conn.read_reply_raw()


class Sketch:
    """A Top-K sketch written straight on the upstream `r` (redis-py), in the layout above."""

    def __init__(self, r, name, k=3, width=4, depth=2, sh=64, items=True):
        self.r, self.name, self.k, self.has_items = r, name, k, items
        self.id = secrets.token_hex(8)
        self.width, self.depth, self.sh = width, depth, sh
        total = 8 * width * depth
        r.hset(name, mapping={"tk": "1", "id": self.id, "k": str(k), "width": str(width),
                              "depth": str(depth), "decay": "0.90000000000000002", "sh": str(sh)})
        self.shards = []
        for s in range(-(-total // sh)):
            key = self.data_key(f"b.{s}")
            r.set(key, b"\x00" * min(sh, total - s * sh))
            self.shards.append(key)
        r.set(self.data_key("h"), b"\x00" * (8 * k))
        if items:
            r.hset(self.data_key("i"), "0", "item")
        r.set(self.marker(), "1")

    def data_key(self, suffix, name=None):
        return f"{prefix_of(name or self.name)}:tk:{self.id}:{suffix}".encode()

    def marker(self, name=None):
        name = name or self.name
        return f"{prefix_of(name)}:tk:m:{name}".encode()

    def keys(self, name=None):
        """Every key of the sketch under `name` (default: its own), its name first."""
        name = name or self.name
        out = [name.encode()]
        total = 8 * self.width * self.depth
        out += [self.data_key(f"b.{s}", name) for s in range(-(-total // self.sh))]
        out.append(self.data_key("h", name))
        if self.has_items:
            out.append(self.data_key("i", name))
        out.append(self.marker(name))
        return out

    def internal(self, name=None):
        return set(self.keys(name)[1:])

    def data_keys(self, name=None):
        """Its keys under its id (not its name or marker)."""
        return {k for k in self.keys(name) if b":tk:" + self.id.encode() + b":" in k}


@pytest.fixture
def env(proxy, redis_instance):
    p = proxy()
    return p, p.raw(), redis_instance.client()


@pytest.mark.parametrize("name", NAMES)
def test_type_encoding_and_hash_commands(env, name):
    p, c, r = env
    s = Sketch(r, name)
    assert raw(c, "TYPE", name) == b"+TopK-TYPE\r\n"
    assert raw(c, "OBJECT", "ENCODING", name) == b"$3\r\nraw\r\n"
    before = r.hgetall(name)
    for args in (("HGET", name, "id"), ("HGETALL", name), ("HLEN", name), ("HSET", name, "f", "v"),
                 ("HDEL", name, "tk"), ("HINCRBY", name, "k", "1"), ("HSCAN", name, "0")):
        assert raw(c, *args) == WRONGTYPE, args
    # Redis's own argument errors come first, as on a module key.
    assert raw(c, "HINCRBY", name, "k", "x").startswith(b"-ERR value is not an integer")
    assert r.hgetall(name) == before
    # Without its marker the hash is a hash again.
    r.delete(s.marker())
    assert raw(c, "TYPE", name) == b"+hash\r\n"
    assert raw(c, "HGET", name, "tk") == b"$1\r\n1\r\n"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("command", ["DEL", "UNLINK"])
def test_delete_removes_every_key(env, name, command):
    p, c, r = env
    s = Sketch(r, name)
    other = Sketch(r, "{g}other", sh=16, items=False)
    assert len(other.shards) == 4
    assert all(r.exists(k) for k in s.keys())
    assert raw(c, command, name, "missing", "{g}other") == b":2\r\n"
    assert not any(r.exists(k) for k in s.keys() + other.keys())
    assert r.dbsize() == 0


def test_heap_items_may_be_absent(env):
    p, c, r = env
    s = Sketch(r, "noitems", items=False)
    assert not r.exists(s.data_key("i"))
    assert raw(c, "EXPIRE", "noitems", "100") == b":1\r\n"
    assert all(0 < r.ttl(k) <= 100 for k in s.keys())
    assert not r.exists(s.data_key("i"))
    assert raw(c, "RENAME", "noitems", "moved") == b"+OK\r\n"
    assert set(r.keys("*")) == set(s.keys("moved"))
    assert raw(c, "DEL", "moved") == b":1\r\n"
    assert r.dbsize() == 0


@pytest.mark.parametrize("name", NAMES)
def test_rename_moves_every_key_and_keeps_the_ttl(env, name):
    p, c, r = env
    s = Sketch(r, name, width=10, depth=3)  # 240 bytes of buckets: 4 shards (64, 64, 64, 48)
    assert [r.strlen(k) for k in s.shards] == [64, 64, 64, 48]
    assert raw(c, "PEXPIRE", name, "500000") == b":1\r\n"
    at = r.pexpiretime(name)
    assert all(r.pexpiretime(k) == at for k in s.keys())
    to = "renamed{g2}"
    assert raw(c, "RENAME", name, to) == b"+OK\r\n"
    assert set(r.keys("*")) == set(s.keys(to))
    assert all(r.pexpiretime(k) == at for k in s.keys(to))
    assert raw(c, "TYPE", to) == b"+TopK-TYPE\r\n"
    assert r.get(s.data_key("h", to)) == b"\x00" * 24
    assert r.hgetall(s.data_key("i", to)) == {b"0": b"item"}
    # RENAMENX onto an existing key: nothing moves.
    r.set("taken", "x")
    assert raw(c, "RENAMENX", to, "taken") == b":0\r\n"
    assert set(r.keys("*")) == set(s.keys(to)) | {b"taken"}
    # RENAME onto another sketch: the one replaced loses every key.
    victim = Sketch(r, "victim")
    assert raw(c, "RENAME", to, "victim") == b"+OK\r\n"
    assert set(r.keys("*")) == set(s.keys("victim")) | {b"taken"}
    assert not (victim.data_keys() & set(r.keys("*")))
    # RENAMENX to a free name moves it all too.
    assert raw(c, "RENAMENX", "victim", name) == b":1\r\n"
    assert set(r.keys("*")) == set(s.keys(name)) | {b"taken"}


def test_expire_family_and_persist(env):
    p, c, r = env
    s = Sketch(r, "exp")
    assert raw(c, "EXPIRE", "exp", "100") == b":1\r\n"
    assert all(0 < r.ttl(k) <= 100 for k in s.keys())
    at = r.pexpiretime("exp")
    assert all(r.pexpiretime(k) == at for k in s.keys())
    # NX: the name has a TTL, so nothing changes.
    assert raw(c, "EXPIRE", "exp", "5000", "NX") == b":0\r\n"
    assert all(r.pexpiretime(k) == at for k in s.keys())
    assert raw(c, "PEXPIREAT", "exp", str(at + 60000)) == b":1\r\n"
    assert all(r.pexpiretime(k) == at + 60000 for k in s.keys())
    assert raw(c, "EXPIREAT", "exp", str(at // 1000 + 200)) == b":1\r\n"
    assert all(r.pexpiretime(k) == (at // 1000 + 200) * 1000 for k in s.keys())
    assert raw(c, "PERSIST", "exp") == b":1\r\n"
    assert all(r.ttl(k) == -1 for k in s.keys())
    assert raw(c, "PERSIST", "exp") == b":0\r\n"
    # An expiry in the past deletes it, every key.
    assert raw(c, "PEXPIRE", "exp", "-1") == b":1\r\n"
    assert r.dbsize() == 0


def test_memory_usage_is_the_sum_over_its_keys(env):
    p, c, r = env
    s = Sketch(r, "mem", width=10, depth=3)
    own = r.memory_usage("mem")
    total = sum(r.memory_usage(k) for k in s.keys())
    assert total > own
    assert raw(c, "MEMORY", "USAGE", "mem") == b":%d\r\n" % total
    assert raw(c, "MEMORY", "USAGE", "mem", "SAMPLES", "0") == b":%d\r\n" % sum(
        r.memory_usage(k, samples=0) for k in s.keys())
    # OBJECT IDLETIME answers for its keys: an integer.
    assert raw(c, "OBJECT", "IDLETIME", "mem").startswith(b":")


def test_copy_and_dump_are_refused(env):
    p, c, r = env
    s = Sketch(r, "cp")
    before = set(r.keys("*"))
    assert raw(c, "COPY", "cp", "dst") == NOT_SUPPORTED
    assert raw(c, "COPY", "cp", "dst", "DB", "2") == NOT_SUPPORTED
    r.set("dst", "x")
    assert raw(c, "COPY", "cp", "dst") == b":0\r\n"
    assert raw(c, "COPY", "cp", "dst", "REPLACE") == NOT_SUPPORTED
    assert raw(c, "DUMP", "cp") == DUMP_REFUSED
    assert set(r.keys("*")) == before | {b"dst"}
    assert r.get("dst") == b"x"
    assert set(s.keys()) <= before


def test_move_and_restore_replace(env, redis_instance):
    p, c, r = env
    s = Sketch(r, "mv")
    # A leftover marker of another kind in the destination database goes (it would make the
    # moved sketch look like a Bloom filter).
    r1 = redis_instance.client(db=1)
    r1.set("{mv}:bf:m:mv", "1")
    assert raw(c, "MOVE", "mv", "1") == b":1\r\n"
    assert r.dbsize() == 0
    assert set(r1.keys("*")) == set(s.keys())
    c1 = p.raw()
    assert raw(c1, "SELECT", "1") == b"+OK\r\n"
    assert raw(c1, "TYPE", "mv") == b"+TopK-TYPE\r\n"
    # RESTORE ... REPLACE over it leaves nothing of it.
    r1.set("plain", "v")
    payload = r1.dump("plain")
    assert raw(c1, "RESTORE", "mv", "0", payload) == b"-BUSYKEY Target key name already exists.\r\n"
    assert raw(c1, "RESTORE", "mv", "0", payload, "REPLACE") == b"+OK\r\n"
    assert set(r1.keys("*")) == {b"mv", b"plain"}
    assert raw(c1, "TYPE", "mv") == b"+string\r\n"


def test_keys_and_scan_show_the_name_only(env):
    p, c, r = env
    s = Sketch(r, "seen", width=10, depth=3)
    t = Sketch(r, "app{g}x")
    r.set("plain", "v")
    # Look-alikes of user keys stay visible.
    lookalikes = {b"seen:tk:m:seen", b"{seen}:tk:" + s.id.encode() + b":b.01", b"{a}:tk:m:b"}
    for k in lookalikes:
        r.set(k, "u")
    assert len(r.keys("*")) == len(s.keys()) + len(t.keys()) + 1 + len(lookalikes)
    client = p.client()
    expected = {b"seen", b"app{g}x", b"plain"} | lookalikes
    assert set(client.keys("*")) == expected
    assert set(client.scan_iter(count=3)) == expected
    assert set(client.scan_iter(match="*:tk:*", count=1000)) == lookalikes


def test_sweep_removes_orphans_and_keeps_a_live_sketch(proxy, redis_instance):
    p = proxy(*SWEEP)
    r = redis_instance.client()
    live = Sketch(r, "live", width=10, depth=3)
    live_keys = set(live.keys())
    # A sketch deleted behind the proxy's back: its data keys and marker are nobody's.
    gone = Sketch(r, "gone")
    r.delete("gone")
    # A sketch overwritten by a plain string.
    plain = Sketch(r, "plain", items=False)
    r.set("plain", "x")
    # A sketch created again under the same name with a new id: the old id's keys are orphans,
    # the marker is the new sketch's.
    old = Sketch(r, "again")
    new = Sketch(r, "again")
    # A sketch whose hash lost its layout mark (tk): no Top-K owns its keys.
    unmarked = Sketch(r, "{g}unmarked")
    r.hdel("{g}unmarked", "tk")
    orphans = gone.internal() | plain.internal() | old.data_keys() | unmarked.internal()
    assert all(r.exists(k) for k in orphans)
    kept = live_keys | set(new.keys()) | {b"plain", b"{g}unmarked"}
    wait_until(lambda: not any(r.exists(k) for k in orphans), DEADLINE, interval=0.2,
               what="Top-K orphans swept")
    assert set(r.keys("*")) - {b"bloomproxy:sweep-lock"} == kept
    assert r.get(live.data_key("h")) == b"\x00" * 24
    assert r.hgetall(live.data_key("i")) == {b"0": b"item"}
    with open(p.log_path, "rb") as f:
        assert b"orphans deleted" in f.read()
    c = p.raw()
    assert raw(c, "TYPE", "live") == b"+TopK-TYPE\r\n"
    assert raw(c, "TYPE", "again") == b"+TopK-TYPE\r\n"

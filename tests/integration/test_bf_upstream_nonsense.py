"""Upstream answers that make no sense to a BF plan become clear error replies, never a wrong
answer, and the proxy goes on serving every other client.

(a) Against a real redis-server: a filter's own keys (bits, count, metadata; see
    docs/bloom-filters.md) are deleted, changed to another type or overwritten with garbage
    directly on redis, under the proxy. BF.ADD/MADD/EXISTS/MEXISTS/INFO/CARD through the proxy
    (one that has the filter's metadata cached and a fresh one) answer an error, never a made-up
    :1/:0 or count.
(b) Against a fake upstream (a RESP2 server thread in this file) that answers the proxy's
    handshake like Redis, then answers BF plan steps with nonsense: an error in the middle of a
    pipeline, an array of the wrong length, an integer where an array is expected, a truncated
    reply followed by closing the connection. The client gets an error reply; another client
    still gets PONG, and plain commands are still forwarded.
"""

import socket
import threading

import pytest

from bp_helpers import HOST, Err, Incomplete, RawConn, encode_command, parse_resp, ping_ok, wait_until

NONSENSE = b"ERR bloomproxy: unexpected reply from upstream to "
WRONGTYPE_TEXT = b"WRONGTYPE Operation against a key holding the wrong kind of value"
ITEMS = [b"a", b"b", b"c"]


def nonsense(what, detail):
    return Err(NONSENSE + what + b": " + detail)


def make_filter(conn, name=b"f"):
    """A filter holding ITEMS (1 % error, capacity 100: one link, one shard)."""
    assert conn.command("BF.RESERVE", name, "0.01", "100") == b"OK"
    assert conn.command("BF.MADD", name, *ITEMS) == [1, 1, 1]


def filter_layout(direct, name=b"f"):
    """(metadata dict, bits key, count key, bytes of link 0, k of link 0)."""
    meta = direct.hgetall(name)
    fid = meta[b"id"]
    prefix = b"{" + name + b"}"
    nbytes, _, _, k = (int(x) for x in meta[b"l0"].split()[:4])
    return meta, prefix + b":bf:" + fid + b":0.0", prefix + b":bf:" + fid + b":0:n", nbytes, k


def assert_is_error(reply, what=""):
    assert isinstance(reply, Err), f"{what}: expected an error reply, got {reply!r}"


def assert_still_serving(proxy, direct=None):
    """Another client connection gets PONG, and plain commands still go upstream."""
    assert ping_ok(proxy.port, accept_noauth=False)
    with proxy.raw() as other:
        assert other.command("PING") == b"PONG"
        if direct is not None:
            assert other.command("SET", "plain", "v") == b"OK"
            assert other.command("GET", "plain") == b"v"


# ---------------------------------------------------------------------------------------------
# (a) a real redis-server, the filter's keys changed under the proxy

def damage_bits_deleted(direct, bits, count, meta):
    direct.delete(bits)


def damage_bits_other_type(direct, bits, count, meta):
    direct.delete(bits)
    direct.hset(bits, "x", "y")


def damage_bits_garbage(direct, bits, count, meta):
    direct.set(bits, b"garbage")


def damage_count_deleted(direct, bits, count, meta):
    direct.delete(count)


def damage_count_garbage(direct, bits, count, meta):
    direct.set(count, b"garbage")


def damage_count_other_type(direct, bits, count, meta):
    direct.delete(count)
    direct.rpush(count, "1")


def damage_meta_link(direct, bits, count, meta):
    direct.hset(b"f", b"l0", b"garbage")


def damage_meta_id(direct, bits, count, meta):
    direct.hdel(b"f", b"id")


# damage -> {command: expected reply (an Err, or an exact value for commands whose answer does
# not depend on the damaged key)}, for a proxy that has the metadata cached ("warm") and a
# fresh one ("cold"). None: any error reply.
def bits_errors(detail):
    e = nonsense(b"STRLEN of link 0 shard 0", detail)
    return {
        ("BF.EXISTS", "f", "a"): e,
        ("BF.MEXISTS", "f", "a", "zz"): e,
        ("BF.ADD", "f", "a"): e,
        ("BF.ADD", "f", "new"): e,
        ("BF.MADD", "f", "a", "new"): e,
        ("BF.INSERT", "f", "ITEMS", "new"): e,
        # Counts and metadata are intact: these answers are right.
        ("BF.CARD", "f"): 3,
        ("BF.INFO", "f", "ITEMS"): [3],
    }


def count_errors(mget_detail, add_warm):
    e = nonsense(b"MGET of the counts", mget_detail)
    return {
        ("BF.CARD", "f"): e,
        ("BF.INFO", "f"): e,
        ("BF.INFO", "f", "ITEMS"): e,
        # The add's own check of the count key (by now both proxies have the metadata cached:
        # a proxy that has not reads the counts first, with MGET, and answers `e`).
        ("BF.ADD", "f", "new"): add_warm,
        ("BF.MADD", "f", "new", "a"): add_warm,
        # EXISTS does not use the counts: its answer is right.
        ("BF.EXISTS", "f", "a"): 1,
        ("BF.MEXISTS", "f", "a", "zz"): [1, 0],
    }


def meta_errors(problem, warm_replies):
    e = nonsense(b"HGETALL", problem)
    cmds = [("BF.EXISTS", "f", "a"), ("BF.MEXISTS", "f", "a", "zz"), ("BF.ADD", "f", "new"),
            ("BF.MADD", "f", "new", "a"), ("BF.INFO", "f"), ("BF.CARD", "f")]
    return {c: {"cold": e, "warm": warm_replies.get(c, e)} for c in cmds}


SCENARIOS = {
    "bits-deleted": (damage_bits_deleted, bits_errors(b"the key is missing")),
    "bits-other-type": (damage_bits_other_type, bits_errors(WRONGTYPE_TEXT)),
    "bits-garbage": (damage_bits_garbage, None),  # filled in below: depends on the size
    "count-deleted": (damage_count_deleted, count_errors(
        b"the count of link 0 is missing or not a string",
        nonsense(b"STRLEN of the count of link 0", b"the key is missing"))),
    "count-garbage": (damage_count_garbage, count_errors(
        b"the count of link 0 is not an integer >= 0",
        nonsense(b"INCRBY of the count of link 0",
                 b"ERR value is not an integer or out of range"))),
    "count-other-type": (damage_count_other_type, count_errors(
        b"the count of link 0 is missing or not a string",
        nonsense(b"STRLEN of the count of link 0", WRONGTYPE_TEXT))),
    # The validation of every round does not read l0: a proxy that has the metadata cached
    # answers from it (the bits are intact, so its answers are right); a fresh one cannot.
    "meta-link-garbage": (damage_meta_link, meta_errors(
        b"the filter's metadata field 'l0' is not valid",
        {("BF.EXISTS", "f", "a"): 1, ("BF.MEXISTS", "f", "a", "zz"): [1, 0],
         ("BF.ADD", "f", "new"): 1, ("BF.MADD", "f", "new", "a"): [0, 0],
         ("BF.INFO", "f"): "info", ("BF.CARD", "f"): 4})),
    # Every round checks the id: both proxies re-read the metadata and find it damaged.
    "meta-id-deleted": (damage_meta_id, meta_errors(b"the filter's metadata has no field 'id'", {})),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_filter_keys_changed_under_the_proxy(scenario, proxy, redis_instance):
    direct = redis_instance.client()
    warm = proxy()
    cold_proxy = proxy()
    with warm.raw() as conn:
        make_filter(conn)
        # The warm proxy has the metadata cached and has read every key once.
        assert conn.command("BF.MEXISTS", "f", *ITEMS, "zz") == [1, 1, 1, 0]
        assert conn.command("BF.CARD", "f") == 3
        info_before = conn.command("BF.INFO", "f")
    meta, bits, count, nbytes, _ = filter_layout(direct)
    damage, expected = SCENARIOS[scenario]
    if expected is None:
        expected = bits_errors(b"the key holds 7 bytes, expected %d" % nbytes)
    damage(direct, bits, count, meta)
    keys_before = sorted(direct.keys("*"))
    for which, p in (("warm", warm), ("cold", cold_proxy)):
        with p.raw() as conn:
            for cmd, want in expected.items():
                if isinstance(want, dict):
                    want = want[which]
                # An error twice: the first must not have changed what follows.
                for attempt in range(2 if isinstance(want, Err) else 1):
                    got = conn.command(*cmd)
                    where = f"{which} proxy, {' '.join(cmd)} (#{attempt + 1})"
                    if want == "info":
                        assert got[:6] == info_before[:6], where
                    else:
                        # The error, or the right answer where the damaged key does not matter:
                        # never an answer made up from the damaged key.
                        assert got == want, where
        assert_still_serving(p, direct)
    if not scenario.startswith("meta-link"):
        # No key was created or recreated by the failed commands (a missing shard is not
        # created anew, small and empty; a missing count is not restarted), none deleted.
        assert sorted(k for k in direct.keys("*") if k != b"plain") == keys_before


def test_name_overwritten_is_another_type_as_with_redisbloom(bp, redis_instance):
    """The name itself changed type: RedisBloom's answers (WRONGTYPE, EXISTS 0), as before."""
    direct = redis_instance.client()
    with bp.raw() as conn:
        make_filter(conn)
        direct.delete("f")
        direct.rpush("f", "x")
        assert conn.command("BF.ADD", "f", "a") == Err(WRONGTYPE_TEXT)
        assert conn.command("BF.CARD", "f") == Err(WRONGTYPE_TEXT)
        assert conn.command("BF.EXISTS", "f", "a") == 0
    assert_still_serving(bp, direct)


# ---------------------------------------------------------------------------------------------
# (b) a fake upstream answering the proxy's plans with nonsense

CLOSE = object()  # a handler's answer: close the connection (after what was sent before)


class FakeUpstream:
    """A RESP2 server on a free loopback port. It answers the proxy's handshake (AUTH, INFO
    server/replication, CLIENT ID, PING) like Redis, the commands of BF plans like a Redis
    holding filter `f` with metadata `meta` (all bits 0, count 3), GET like an empty Redis, and
    lets `self.inject(args)` answer first: bytes (sent instead), a (bytes, CLOSE) pair (sent,
    then the connection is closed), or None (the normal answer)."""

    def __init__(self, meta):
        self.meta = meta
        self.inject = lambda args: None
        self.lock = threading.Lock()
        self.seen = []  # every command received, upper-case name first
        self.conns = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((HOST, 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self):
        return (HOST, self.port)

    def close(self):
        self.closed = True
        for s in [self.listener] + self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = bytearray()
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                out = bytearray()
                while True:
                    try:
                        args, end = parse_resp(buf, 0)
                    except Incomplete:
                        break
                    del buf[:end]
                    args = [args[0].upper()] + args[1:]
                    with self.lock:
                        self.seen.append(args)
                    reply = self.inject(args)
                    if isinstance(reply, tuple) and reply[1] is CLOSE:
                        conn.sendall(bytes(out) + reply[0])
                        conn.shutdown(socket.SHUT_RDWR)
                        conn.close()
                        return
                    out += reply if reply is not None else self.answer(args)
                if out:
                    conn.sendall(bytes(out))
        except OSError:
            return

    def answer(self, args):
        name = args[0]
        if name == b"AUTH":
            return b"+OK\r\n"
        if name == b"PING":
            return b"+PONG\r\n"
        if name == b"INFO":
            body = (b"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n"
                    if args[1:] == [b"server"] else b"# Replication\r\nrole:master\r\n")
            return b"$%d\r\n%s\r\n" % (len(body), body)
        if name == b"CLIENT" and args[1].upper() == b"ID":
            return b":7\r\n"
        if name == b"GET":
            return b"$-1\r\n"
        if name == b"TYPE":
            return b"+hash\r\n" if args[1] == b"f" else b"+none\r\n"
        if name == b"HGETALL":
            fields = [x for kv in self.meta.items() for x in kv]
            return b"*%d\r\n" % len(fields) + b"".join(
                b"$%d\r\n%s\r\n" % (len(x), x) for x in fields)
        if name == b"HMGET":
            out = b"*%d\r\n" % (len(args) - 2)
            for f in args[2:]:
                v = self.meta.get(f)
                out += b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v)
            return out
        if name == b"MGET":
            return b"*%d\r\n" % (len(args) - 1) + b"$1\r\n3\r\n" * (len(args) - 1)
        if name == b"STRLEN":
            if args[1].endswith(b":n"):
                return b":1\r\n"
            return b":%d\r\n" % int(self.meta[b"l0"].split()[0])
        if name in (b"INCRBY", b"DECRBY"):
            return b":%d\r\n" % (3 + int(args[2]) if name == b"INCRBY" else 3)
        if name in (b"BITFIELD", b"BITFIELD_RO"):
            n = (len(args) - 2) // (4 if name == b"BITFIELD" else 3)
            return b"*%d\r\n" % n + b":0\r\n" * n
        return b"-ERR unknown command '%s'\r\n" % name.lower()


@pytest.fixture
def fake_meta(bp, redis_instance):
    """The metadata of a real filter (created through a proxy on a real redis-server), for
    the fake upstream to serve."""
    with bp.raw() as conn:
        make_filter(conn)
    meta, _, _, nbytes, k = filter_layout(redis_instance.client())
    return meta, nbytes, k


@pytest.fixture
def fake_upstream(fake_meta):
    servers = []

    def start():
        s = FakeUpstream(fake_meta[0])
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def when(command, reply, nth=1):
    """An injection: `reply` instead of the answer to the nth `command` (1 = the first)."""
    seen = [0]

    def inject(args):
        if args[0] == command:
            seen[0] += 1
            if seen[0] == nth:
                return reply
        return None

    return inject


def check_fake(fake_upstream, proxy, fake_meta, inject, commands):
    """A fresh fake upstream and proxy; `inject` set; each (command, expected) through one
    client; then another client still gets PONG and plain commands still get the upstream's
    answer."""
    fake = fake_upstream()
    p = proxy(upstream=fake.address)
    # The handshake: the proxy asks INFO server and INFO replication on each shared connection.
    wait_until(lambda: sum(1 for a in fake.seen if a[0] == b"INFO") >= 2, 5, what="handshake")
    with p.raw() as conn:
        # Healthy first: the fake is a plausible Redis holding an empty filter.
        assert conn.command("BF.EXISTS", "f", "a") == 0
        fake.inject = inject
        for cmd, want in commands:
            got = conn.command(*cmd)
            assert_is_error(got, " ".join(cmd))
            if callable(want):
                assert want(got), f"{' '.join(cmd)}: {got!r}"
            else:
                assert got == want, " ".join(cmd)
    fake.inject = lambda args: None
    assert ping_ok(p.port, accept_noauth=False)
    with p.raw() as other:
        assert other.command("PING") == b"PONG"
        # (After a connection was closed, the proxy connects again within a moment.)
        wait_until(lambda: other.command("GET", "plain") is None, 5, what="GET forwarded")
        assert other.command("BF.EXISTS", "f", "a") == 0
    return fake


def test_fake_error_in_the_middle_of_a_pipeline(fake_upstream, proxy, fake_meta):
    # BF.EXISTS: HMGET (validation), STRLEN (the shard), BITFIELD_RO; the STRLEN fails.
    check_fake(fake_upstream, proxy, fake_meta, when(b"STRLEN", b"-ERR injected\r\n"), [
        (("BF.EXISTS", "f", "a"), nonsense(b"STRLEN of link 0 shard 0", b"ERR injected")),
    ])
    # BF.ADD's set step: the server's own state errors reach the client as they are.
    check_fake(fake_upstream, proxy, fake_meta, when(
        b"BITFIELD", b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"), [
        (("BF.ADD", "f", "x"), Err(b"OOM command not allowed when used memory > 'maxmemory'.")),
    ])
    # An error in the middle of BF.MADD's check step (STRLEN of the count, then of the shard).
    check_fake(fake_upstream, proxy, fake_meta, when(b"STRLEN", b"-ERR injected\r\n", nth=2), [
        (("BF.MADD", "f", "x", "y"), nonsense(b"STRLEN of link 0 shard 0", b"ERR injected")),
    ])


def test_fake_array_of_the_wrong_length(fake_upstream, proxy, fake_meta):
    _, _, k = fake_meta
    # BF.EXISTS of one item probes its first bit (one op), then reads the k - 1 others where
    # the probe read 1; BF.MEXISTS of several items reads every bit in one step.
    check_fake(fake_upstream, proxy, fake_meta, when(b"BITFIELD_RO", b"*2\r\n:1\r\n:1\r\n"), [
        (("BF.EXISTS", "f", "a"), nonsense(
            b"BITFIELD_RO of link 0 shard 0",
            b"expected an array of 1 integers 0 or 1, got an array of 2")),
    ])
    probe, rest = when(b"BITFIELD_RO", b"*1\r\n:1\r\n"), when(b"BITFIELD_RO", b"*1\r\n:1\r\n")
    check_fake(fake_upstream, proxy, fake_meta, lambda args: probe(args) or rest(args), [
        (("BF.EXISTS", "f", "a"), nonsense(
            b"BITFIELD_RO of link 0 shard 0",
            b"expected an array of %d integers 0 or 1, got an array of 1" % (k - 1))),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"BITFIELD_RO", b"*1\r\n:1\r\n"), [
        (("BF.MEXISTS", "f", "a", "b"), nonsense(
            b"BITFIELD_RO of link 0 shard 0",
            b"expected an array of %d integers 0 or 1, got an array of 1" % (2 * k))),
    ])
    check_fake(fake_upstream, proxy, fake_meta,
               when(b"BITFIELD", b"*%d\r\n" % (k + 1) + b":0\r\n" * (k + 1)), [
        (("BF.ADD", "f", "x"), nonsense(
            b"BITFIELD of link 0 shard 0",
            b"expected an array of %d integers 0 or 1, got an array of %d" % (k, k + 1))),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"MGET", b"*0\r\n"), [
        (("BF.CARD", "f"), nonsense(b"MGET of the counts", b"expected an array of 1, got an array of 0")),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"HMGET", b"*2\r\n$1\r\n1\r\n$-1\r\n"), [
        (("BF.MEXISTS", "f", "a", "b"), nonsense(b"HMGET", b"expected an array of 3, got an array of 2")),
    ])


def test_fake_integer_where_an_array_is_expected(fake_upstream, proxy, fake_meta):
    _, _, k = fake_meta
    check_fake(fake_upstream, proxy, fake_meta, when(b"HMGET", b":1\r\n"), [
        (("BF.EXISTS", "f", "a"), nonsense(b"HMGET", b"expected an array of 3, got the integer 1")),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"BITFIELD_RO", b":1\r\n"), [
        (("BF.MEXISTS", "f", "a", "b"), nonsense(
            b"BITFIELD_RO of link 0 shard 0",
            b"expected an array of %d integers 0 or 1, got the integer 1" % (2 * k))),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"MGET", b":3\r\n"), [
        (("BF.INFO", "f"), nonsense(b"MGET of the counts", b"expected an array of 1, got the integer 3")),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"INCRBY", b"*1\r\n:4\r\n"), [
        (("BF.ADD", "f", "x"), nonsense(b"INCRBY of the count of link 0",
                                        b"expected an integer, got an array of 1")),
    ])


def test_fake_truncated_reply_then_close(fake_upstream, proxy, fake_meta):
    _, _, k = fake_meta
    unavailable = lambda got: got.startswith(b"ERR upstream unavailable (") and \
        got.endswith(b"connection closed by upstream)")  # noqa: E731
    fake = check_fake(fake_upstream, proxy, fake_meta,
                      when(b"BITFIELD_RO", (b"*%d\r\n:1\r\n:1\r\n" % k, CLOSE)), [
        (("BF.EXISTS", "f", "a"), unavailable),
    ])
    # The connection was replaced: the proxy connects again and does its handshake again.
    wait_until(lambda: sum(1 for a in fake.seen if a[0] == b"INFO") >= 4, 5, what="reconnect")
    check_fake(fake_upstream, proxy, fake_meta, when(b"BITFIELD", (b"*%d\r\n:0\r\n" % k, CLOSE)), [
        (("BF.MADD", "f", "x", "y"), unavailable),
    ])
    check_fake(fake_upstream, proxy, fake_meta, when(b"HGETALL", (b"*14\r\n$10\r\nbloom", CLOSE)), [
        (("BF.CARD", "g"), unavailable),  # "g" is not cached: TYPE + HGETALL first
    ])


def test_fake_nonsense_while_other_clients_are_served(fake_upstream, proxy, fake_meta):
    """One client's BF commands meet nonsense while another client, on the same proxy, goes on
    with plain commands and PINGs between them."""
    fake = fake_upstream()
    p = proxy(upstream=fake.address)
    wait_until(lambda: sum(1 for a in fake.seen if a[0] == b"INFO") >= 2, 5, what="handshake")
    with p.raw() as bf, p.raw() as other:
        for i in range(20):
            fake.inject = when(b"BITFIELD_RO", [b":1\r\n", b"*2\r\n:1\r\n:1\r\n", b"-ERR x\r\n",
                                                b"$-1\r\n"][i % 4])
            got = bf.command("BF.EXISTS", "f", "item%d" % i)
            assert_is_error(got, "BF.EXISTS")
            assert got.startswith(NONSENSE), got
            assert other.command("PING") == b"PONG"
            assert other.command("GET", "k%d" % i) is None
        fake.inject = lambda args: None
        assert bf.command("BF.EXISTS", "f", "a") == 0

"""TLS towards the upstream (--upstream-tls yes): bloomproxy in front of redis-servers that speak
TLS only (--port 0 --tls-port P), its certificates made with the openssl CLI (bp_tls).

Checked: ordinary commands (SET/GET, big values, pipelines, MULTI/EXEC, EVAL, pub/sub, BLPOP) and
every recorded RedisBloom vector through a TLS upstream, with plain and TLS clients; an upstream
whose certificate does not verify (unknown CA, a name that does not match) answered with an error
naming the upstream, TLS and the certificate while the proxy keeps answering what it answers
itself, then service resuming when the CA file is fixed and SIGHUP sent, or when a good upstream
replaces the bad one; a plain port behind upstream-tls (an error, not a hang);
--upstream-tls-server-name (the name verified and sent as SNI); a client
certificate for an upstream with tls-auth-clients yes, and that certificate replaced on SIGHUP;
a Redis Cluster whose nodes and cluster bus speak TLS only; --upstream-kind sharding-proxy over
TLS.

Twemproxy (nutcracker) has no TLS, so the sharding-proxy kind is checked here against a TLS
redis-server standing in for the sharding proxy (the kind's refusals apply, the transport is
TLS); nutcracker itself is not used.
"""

import signal
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

pytest.register_assert_rewrite("bp_tls")  # before its import: it is also a plugin (below)

from bf_vectors import data_keys_of, load_cases, replay_case
from bp_cluster import key_slot, keys_in_distinct_slots
from bp_helpers import HOST, Err, encode_command as cmd, wait_until
from bp_tls import (RELOAD_FAILED, RELOADED, Pair, TlsCluster, concat, install,
                    is_unavailable_tls_error, tls_listener_args, upstream_tls_args)
from test_cluster_bf import case_for

# The fixtures certs, tls_proxy and tls_redis_factory.
pytest_plugins = ("bp_tls",)

CASES = load_cases()


def sighup_and_wait_reload(p, what=RELOADED, timeout=10):
    """Sends SIGHUP to proxy `p` and waits until its log shows one more `what` line."""
    before = p.log_count(what)
    p.process.send_signal(signal.SIGHUP)
    wait_until(lambda: p.log_count(what) > before, timeout, what=f"{what!r} in the log")
    assert p.alive()


# ---------------------------------------------------------------------------------------------
# Commands and BF.* through a TLS upstream


def test_commands_through_tls_upstream(tls_proxy, tls_redis_factory, certs):
    server = tls_redis_factory()
    p = tls_proxy(*upstream_tls_args(certs, server), tls=False)
    big = bytes(range(256)) * 8192  # 2 MiB: many TLS records each way
    with p.raw(timeout=20) as c:
        assert c.command("SET", "k", "v") == b"OK"
        assert c.command("GET", "k") == b"v"
        assert c.command("SET", "big", big) == b"OK"
        assert c.command("GET", "big") == big
        # A pipeline in one write.
        c.send(b"".join(cmd("INCR", "n") for _ in range(3000)))
        assert [c.read_reply() for _ in range(3000)] == list(range(1, 3001))
        c.send(cmd("MULTI") + cmd("SET", "t", "1") + cmd("INCR", "t") + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(4)] == \
            [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*2\r\n+OK\r\n:2\r\n"]
        assert c.command("EVAL", "return redis.call('INCRBY', KEYS[1], ARGV[1])", 1, "e", 5) == 5
    direct = server.client()
    assert direct.get("k") == b"v" and direct.get("big") == big
    assert direct.get("n") == b"3000" and direct.get("t") == b"2" and direct.get("e") == b"5"

    # Pub/sub and a blocked BLPOP, each on its own client.
    with p.raw(timeout=10) as sub, p.raw(timeout=10) as blocked, p.raw(timeout=10) as other:
        assert sub.command("SUBSCRIBE", "news") == [b"subscribe", b"news", 1]
        blocked.send(cmd("BLPOP", "queue", 10))
        wait_until(lambda: b"cmd=blpop" in server.command("CLIENT", "LIST"), 5,
                   what="the BLPOP blocked upstream")
        assert other.command("PUBLISH", "news", "hello") == 1
        assert sub.read_reply() == [b"message", b"news", b"hello"]
        t0 = time.monotonic()
        assert other.command("RPUSH", "queue", "job") == 1
        assert blocked.read_reply() == [b"queue", b"job"]
        assert time.monotonic() - t0 < 2
        assert other.command("PING") == b"PONG"


def test_bf_vectors_through_tls_upstream(tls_proxy, tls_redis_factory, certs):
    """Every recorded case byte for byte, through a plain client connection and through a TLS
    one (TLS on both sides of the proxy)."""
    server = tls_redis_factory()
    p = tls_proxy(*upstream_tls_args(certs, server), *tls_listener_args(certs))
    direct = server.client()
    for label, connect in (("plain client", p.raw), ("TLS client", p.tls_raw)):
        problems = []
        for case in CASES:
            with connect(timeout=30) as conn:
                problem = replay_case(conn, case)
            if problem:
                problems.append(problem)
        assert not problems, f"[{label}]\n" + "\n".join(problems)
    # The filters are stored upstream, in the documented layout.
    with p.tls_raw() as c:
        assert c.command("BF.RESERVE", "tls-filter", "0.01", 1000) == b"OK"
        items = [f"item-{i}" for i in range(1500)]  # past the capacity: a second sub-filter
        added = c.command("BF.MADD", "tls-filter", *items)
        assert len(added) == 1500 and set(added) <= {0, 1} and sum(added) > 1450, added
        assert c.command("BF.MEXISTS", "tls-filter", *items) == [1] * 1500
        assert c.command("BF.CARD", "tls-filter") > 1400
    assert data_keys_of(direct, "tls-filter"), "no data key of the filter upstream"


# ---------------------------------------------------------------------------------------------
# Certificates that do not verify


def test_untrusted_upstream_then_ca_file_fixed_and_sighup(tls_proxy, tls_redis_factory, certs,
                                                           tmp_path):
    server = tls_redis_factory(pair=certs.untrusted_server, verify_ca=certs.untrusted_ca.cert)
    ca_file = tmp_path / "upstream-ca.pem"
    install(certs.ca.cert, ca_file)
    p = tls_proxy(*upstream_tls_args(certs, server, ca=ca_file), "--reconnect-max-ms", "300",
                  tls=False)
    address = f"{HOST}:{server.port}".encode()
    with p.raw(timeout=10) as c, p.raw(timeout=10) as c2:
        for args in (("GET", "k"), ("SET", "k", "v"), ("BF.ADD", "f", "x"), ("MGET", "a", "b")):
            t0 = time.monotonic()
            reply = c.command(*args)
            assert is_unavailable_tls_error(reply), f"{args}: {reply!r}"
            assert time.monotonic() - t0 < 2, f"{args}: the error took {time.monotonic() - t0}s"
            assert address in reply, reply
            assert b"certificate verify failed" in reply, reply
            assert b"unable to get local issuer certificate" in reply, reply
        # What the proxy answers itself still works, on the same connection and another one.
        assert c.command("PING") == b"PONG"
        assert c.command("ECHO", "still here") == b"still here"
        info = c2.command("INFO", "proxy")
        assert isinstance(info, bytes) and b"upstream" in info, info
        # Many commands: the handshake is attempted again with backoff, not once per command,
        # and the log says why.
        for _ in range(60):
            assert is_unavailable_tls_error(c2.command("GET", "k"))
        log = p.log()
        assert "certificate verify failed" in log, log[-3000:]
        failures = sum(1 for line in log.splitlines() if "certificate verify failed" in line)
        assert failures < 40, f"{failures} log lines about the failed handshake"
        assert server.command("DBSIZE") == 0

        # The CA file now trusts the upstream's CA too; SIGHUP: service resumes.
        concat(ca_file, certs.ca.cert, certs.untrusted_ca.cert)
        sighup_and_wait_reload(p)
        wait_until(lambda: c.command("SET", "k", "v") == b"OK", 10, interval=0.1,
                   what="service after the CA file was fixed")
        assert c2.command("GET", "k") == b"v"
        assert c.command("BF.ADD", "f", "x") == 1
    assert server.client().get("k") == b"v"


def test_untrusted_upstream_replaced_by_a_good_one(tls_proxy, tls_redis_factory, certs):
    server = tls_redis_factory(pair=certs.untrusted_server, verify_ca=certs.untrusted_ca.cert)
    p = tls_proxy(*upstream_tls_args(certs, server), "--reconnect-max-ms", "300", tls=False)
    with p.raw(timeout=10) as c:
        assert is_unavailable_tls_error(c.command("GET", "k"))
        server.kill()
        server.pair, server.verify_ca = certs.server_a, certs.ca.cert  # same port, good cert
        server.start()
        wait_until(lambda: c.command("SET", "k", "good") == b"OK", 10, interval=0.1,
                   what="service from the good upstream")
        assert server.client().get("k") == b"good"
    assert p.alive()


def test_upstream_port_without_tls(tls_proxy, redis_factory, certs):
    """A plain redis-server port behind --upstream-tls yes: it does not answer the ClientHello
    as TLS (it waits for a newline, or answers a RESP error); clients get an error naming the
    upstream and its TLS handshake, bounded by connect-timeout-ms, not a hang."""
    plain = redis_factory()
    p = tls_proxy(*upstream_tls_args(certs, plain), "--connect-timeout-ms", "500",
                  "--upstream-timeout-ms", "5000", tls=False)
    with p.raw(timeout=10) as c:
        for _ in range(3):
            t0 = time.monotonic()
            reply = c.command("GET", "k")
            took = time.monotonic() - t0
            assert isinstance(reply, Err) and b"upstream TLS handshake" in reply, reply
            assert took < 2.0, f"the error took {took:.1f} s"
        assert c.command("PING") == b"PONG"
    assert plain.client().dbsize() == 0


class SlowHandshakeRelay:
    """A TCP relay in front of `server` that holds the first bytes (the ClientHello) of every
    connection accepted while `slow` is set for `delay` seconds, then relays both ways."""

    def __init__(self, server, delay):
        self.server, self.delay = server, delay
        self.slow = threading.Event()
        self.slow.set()
        self.listener = socket.create_server((HOST, 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection((HOST, self.server.port))
            delay = self.delay if self.slow.is_set() else 0
            threading.Thread(target=self._pipe, args=(conn, up, delay), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, conn, 0), daemon=True).start()

    @staticmethod
    def _pipe(src, dst, delay):
        try:
            first = True
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if first and delay:
                    time.sleep(delay)
                first = False
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        self.listener.close()


def test_slow_upstream_handshake_is_not_a_stall(tls_proxy, tls_redis_factory, certs):
    """The upstream's TLS handshake takes 2 s (within connect-timeout-ms 4000; upstream-timeout-ms
    5000): the command waiting for it is answered once the handshake is done; the connection is
    not taken for a stalled one (a check that starts a probe connection, fast here, every 500
    ms)."""
    server = tls_redis_factory()
    relay = SlowHandshakeRelay(server, 2.0)
    try:
        p = tls_proxy("--upstream", f"{HOST}:{relay.port}", *upstream_tls_args(certs),
                      "--connect-timeout-ms", "4000", "--upstream-timeout-ms", "5000",
                      tls=False)
        with p.raw(timeout=10) as c:
            c.send(cmd("SET", "k", "slow"))
            relay.slow.clear()  # connections from now on (a probe, a reconnection) are fast
            t0 = time.monotonic()
            reply = c.read_reply()
            assert reply == b"OK", f"{reply!r} after {time.monotonic() - t0:.2f} s"
        assert server.client().get("k") == b"slow"
    finally:
        relay.close()


def test_hostname_mismatch_and_upstream_tls_server_name(tls_proxy, tls_redis_factory, certs):
    other = tls_redis_factory(pair=certs.other_name)  # SAN DNS:other.example only
    # Default: the upstream's host (the IP literal 127.0.0.1) is what the certificate must name.
    p = tls_proxy(*upstream_tls_args(certs, other), tls=False)
    with p.raw() as c:
        reply = c.command("GET", "k")
        assert is_unavailable_tls_error(reply) and b"mismatch" in reply, reply
        assert c.command("PING") == b"PONG"
    # The name given is the one verified.
    p = tls_proxy(*upstream_tls_args(certs, other), "--upstream-tls-server-name",
                  "other.example", tls=False)
    with p.raw() as c:
        assert c.command("SET", "k", "named") == b"OK"
    assert other.client().get("k") == b"named"

    good = tls_redis_factory()  # server-a: SANs IP:127.0.0.1 and DNS:localhost
    p = tls_proxy(*upstream_tls_args(certs, good), "--upstream-tls-server-name",
                  "other.example", tls=False)
    with p.raw() as c:
        reply = c.command("GET", "k")
        assert is_unavailable_tls_error(reply) and b"mismatch" in reply, reply
    p = tls_proxy(*upstream_tls_args(certs, good), "--upstream-tls-server-name", "localhost",
                  tls=False)
    with p.raw() as c:
        assert c.command("SET", "k", "localhost") == b"OK"


def test_host_name_upstream_verified_by_name(tls_proxy, tls_redis_factory, certs):
    """--upstream localhost:P: the host name is the name verified (no server name given)."""
    addresses = {a[4][0] for a in socket.getaddrinfo("localhost", None, socket.AF_UNSPEC,
                                                     socket.SOCK_STREAM)}
    if addresses != {HOST}:
        pytest.skip(f"localhost resolves to {addresses}, not only {HOST}")
    good, other = tls_redis_factory(), tls_redis_factory(pair=certs.other_name)
    p = tls_proxy("--upstream", f"localhost:{good.port}", *upstream_tls_args(certs), tls=False)
    with p.raw() as c:
        assert c.command("SET", "k", "by-name") == b"OK"
    p = tls_proxy("--upstream", f"localhost:{other.port}", *upstream_tls_args(certs), tls=False)
    with p.raw() as c:
        reply = c.command("GET", "k")
        assert is_unavailable_tls_error(reply) and b"mismatch" in reply, reply


def test_upstream_tls_server_name_is_sent_as_sni(tls_proxy, certs):
    """A TLS listener standing in for the upstream records the SNI of each ClientHello."""
    seen = []
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.server_a.cert, certs.server_a.key)
    ctx.sni_callback = lambda sslobj, name, _ctx: seen.append(name)
    listener = socket.create_server((HOST, 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            conn.settimeout(2)
            try:
                with ctx.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        port = listener.getsockname()[1]
        p = tls_proxy("--upstream", f"{HOST}:{port}", *upstream_tls_args(certs),
                      "--upstream-tls-server-name", "localhost", tls=False)
        with p.raw() as c:
            c.command("GET", "k")  # an error (the stand-in speaks no RESP); the hello was sent
        wait_until(lambda: seen, 5, what="a ClientHello at the stand-in")
        assert set(seen) == {"localhost"}, seen
    finally:
        stop.set()
        t.join(5)
        listener.close()


# ---------------------------------------------------------------------------------------------
# Client certificate towards the upstream


def refused_by_upstream(conn, reason, timeout=5.0):
    """Sends GET until a reply names `reason` (the TLS alert the upstream sent); every reply
    meanwhile must be the upstream-unavailable error. The alert can be lost to the reset that
    follows it when the proxy's first request crosses the upstream's close; the proxy's next
    attempts (100 ms apart at most here) read it."""
    replies = []

    def named():
        reply = conn.command("GET", "k")
        assert isinstance(reply, Err) and reply.startswith(b"ERR upstream unavailable"), reply
        replies.append(reply)
        return reason in reply

    wait_until(named, timeout, interval=0.1, what=f"an error naming {reason!r}: {replies[-3:]}")


def test_upstream_client_certificate(tls_proxy, tls_redis_factory, certs):
    server = tls_redis_factory(auth_clients="yes")
    p = tls_proxy(*upstream_tls_args(certs, server), "--reconnect-max-ms", "100", tls=False)
    with p.raw() as c:
        refused_by_upstream(c, b"certificate required")
        assert c.command("PING") == b"PONG"
    p = tls_proxy(*upstream_tls_args(certs, server, client=certs.untrusted_client),
                  "--reconnect-max-ms", "100", tls=False)
    with p.raw() as c:
        refused_by_upstream(c, b"unknown ca")
    assert server.command("DBSIZE") == 0
    p = tls_proxy(*upstream_tls_args(certs, server, client=certs.client), tls=False)
    with p.raw() as c:
        assert c.command("SET", "k", "with-cert") == b"OK"
        assert c.command("GET", "k") == b"with-cert"
    assert server.client().get("k") == b"with-cert"


def test_upstream_client_certificate_replaced_on_sighup(tls_proxy, tls_redis_factory, certs,
                                                         tmp_path):
    """The proxy's upstream certificate files are replaced and SIGHUP sent: open upstream
    connections go on; the next ones (after the server dropped them) present the new
    certificate. Observable through the upstream's tls-auth-clients yes: a certificate of the
    untrusted CA is refused ("unknown ca"), the CA's own accepted again."""
    server = tls_redis_factory(auth_clients="yes")
    mine = Pair(tmp_path / "upstream-client.crt", tmp_path / "upstream-client.key")
    install(certs.client.cert, mine.cert)
    install(certs.client.key, mine.key)
    p = tls_proxy(*upstream_tls_args(certs, server, client=mine), "--reconnect-max-ms", "100",
                  tls=False)
    with p.raw(timeout=10) as c:
        assert c.command("SET", "k", "1") == b"OK"
        # A key file that does not load: the reload fails and changes nothing, so connections
        # made after it still present the CA's certificate.
        Path(mine.key).write_bytes(b"not a key\n")
        sighup_and_wait_reload(p, RELOAD_FAILED)
        assert server.command("CLIENT", "KILL", "TYPE", "normal") >= 1
        wait_until(lambda: c.command("GET", "k") == b"1", 10, interval=0.1,
                   what="service after the failed reload")

        install(certs.untrusted_client.cert, mine.cert)
        install(certs.untrusted_client.key, mine.key)
        sighup_and_wait_reload(p)
        # The upstream connection opened before the reload still serves.
        assert c.command("GET", "k") == b"1"
        assert c.command("INCR", "k") == 2
        # The upstream drops every client (not this admin connection): the proxy reconnects
        # with the certificate it has now, which the upstream refuses.
        assert server.command("CLIENT", "KILL", "TYPE", "normal") >= 1
        refused_by_upstream(c, b"unknown ca")
        time.sleep(0.5)  # more reconnect attempts: none succeeds
        assert isinstance(c.command("GET", "k"), Err)
        # Back to the CA's certificate: service resumes.
        install(certs.client.cert, mine.cert)
        install(certs.client.key, mine.key)
        sighup_and_wait_reload(p)
        wait_until(lambda: c.command("GET", "k") == b"2", 10, interval=0.1,
                   what="service with the good certificate again")


# ---------------------------------------------------------------------------------------------
# Redis Cluster over TLS, and the sharding-proxy kind


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory, certs):
    cluster = TlsCluster(tmp_path_factory.mktemp("tls-cluster"), certs)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def test_cluster_over_tls(tls_proxy, tls_cluster, certs):
    tls_cluster.flushall()
    p = tls_proxy("--upstream-cluster", tls_cluster.seeds(), *upstream_tls_args(certs),
                  *tls_listener_args(certs))
    keys = keys_in_distinct_slots("tls", 60)
    with p.tls_raw(timeout=20) as c:
        c.send(b"".join(cmd("SET", k, f"v-{k}") for k in keys))
        assert [c.read_reply() for _ in keys] == [b"OK"] * len(keys)
        c.send(b"".join(cmd("GET", k) for k in keys))
        assert [c.read_reply() for _ in keys] == [f"v-{k}".encode() for k in keys]
    # Each key on the node serving its slot; every node got some.
    by_node = {}
    for k in keys:
        node = tls_cluster.node_for_slot(key_slot(k))
        by_node.setdefault(node.port, []).append(k)
        with node.raw() as direct:
            assert direct.command("GET", k) == f"v-{k}".encode()
    assert len(by_node) == 3, by_node

    # The recorded BF vectors with a hash tag per case (the cases spread over the masters).
    problems = []
    with p.raw(timeout=30) as conn:
        for i in range(len(CASES)):
            problem = replay_case(conn, case_for("tagged", i))
            if problem:
                problems.append(problem)
    assert not problems, "\n".join(problems)


def test_sharding_proxy_kind_over_tls(tls_proxy, tls_redis_factory, certs):
    server = tls_redis_factory()
    p = tls_proxy("--upstream-kind", "sharding-proxy", *upstream_tls_args(certs, server),
                  tls=False)
    with p.raw() as c:
        assert c.command("SET", "k", "v") == b"OK"
        assert c.command("GET", "k") == b"v"
        assert c.command("BF.ADD", "{sp}f", "x") == 1
        assert c.command("BF.EXISTS", "{sp}f", "x") == 1
        reply = c.command("RENAME", "k", "k2")
        assert isinstance(reply, Err) and b"not supported behind a sharding proxy" in reply
        info = c.command("INFO", "proxy")
        assert b"upstream_kind:sharding-proxy" in info
    assert server.client().get("k") == b"v"

"""TLS towards clients (--tls-port and redis.conf's tls-* settings): bloomproxy in front of a
plain redis-server, its certificates made with the openssl CLI (bp_tls).

Checked: commands over TLS (raw RESP, big values, pipelines, MULTI/EXEC, pub/sub, BLPOP) next to
the plain port; redis-py (ssl=True), redis-cli --tls and redis-benchmark --tls, with and without
a client certificate; tls-auth-clients yes / optional / no (with tls-ca-cert-file or
tls-ca-cert-dir); requirepass and maxclients applying to TLS clients as to plain ones;
--port 0 (TLS only); tls-protocols, tls-ciphers, tls-ciphersuites,
tls-prefer-server-ciphers, tls-session-caching; an encrypted key with tls-key-file-pass; the
settings in a config file; what the proxy refuses to start with; plaintext, garbage, a silent
client and half a ClientHello on the TLS port (closed, within the handshake timeout for the
silent ones, logged at the verbose level only) while other clients, plain and TLS, go on
undisturbed; SIGHUP reloading the certificate, key and client CA, with one event loop and two
(new connections get the new ones, open connections keep working, a file that does not load
changes nothing and is logged); SIGHUP without TLS leaving the proxy running.
"""

import os
import random
import signal
import ssl
import subprocess
import time

import pytest
import redis

pytest.register_assert_rewrite("bp_tls")  # before its import: it is also a plugin (below)

from bp_helpers import HOST, Load, RawConn, encode_command as cmd, free_port, wait_until
from bp_tls import (KEY_PASSPHRASE, RELOAD_FAILED, RELOADED, TlsConn, TlsLoad, client_context,
                    client_hello, install, listening_ports, peer_cn, run_bloomproxy,
                    tls_listener_args, tls_ping, tls_redis_py)

# The fixtures certs and tls_proxy.
pytest_plugins = ("bp_tls",)


def refused(result):
    """tls_ping's result for a connection the server refused at the TLS level (an alert, or
    closed), not with a Redis reply."""
    return result.startswith("ssl error") or result.startswith("closed")


def upstream(redis_instance):
    return ("--upstream", f"{HOST}:{redis_instance.port}")


def sighup_and_wait(p, what, loops=1, timeout=10):
    """Sends SIGHUP and waits until each of the proxy's `loops` event loops has logged `what`
    (every loop reloads its own TLS contexts, and says so)."""
    before = p.log_count(what)
    p.process.send_signal(signal.SIGHUP)
    wait_until(lambda: p.log_count(what) >= before + loops, timeout,
               what=f"{loops} more {what!r} in the log")
    assert p.alive()


# ---------------------------------------------------------------------------------------------
# Clients over TLS


def test_commands_over_tls_next_to_plain(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs))
    big = os.urandom(3 << 20)
    with p.tls_raw(timeout=20) as t, p.raw() as plain:
        assert t.peer_cn() == "server-a"
        assert t.sock.version() == "TLSv1.3"
        assert t.command("SET", "k", "over-tls") == b"OK"
        assert plain.command("GET", "k") == b"over-tls"
        assert t.command("SET", "big", big) == b"OK"
        assert t.command("GET", "big") == big
        t.send(cmd("GET", "big") * 4)  # 12 MiB of replies queued before the client reads
        time.sleep(0.3)
        assert all(t.read_reply() == big for _ in range(4))
        t.send(b"".join(cmd("INCR", "n") for _ in range(5000)))
        assert [t.read_reply() for _ in range(5000)] == list(range(1, 5001))
        t.send(cmd("MULTI") + cmd("INCR", "n") + cmd("GET", "k") + cmd("EXEC"))
        assert [t.read_reply_raw() for _ in range(4)] == \
            [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*2\r\n:5001\r\n$8\r\nover-tls\r\n"]
        assert t.command("BF.ADD", "f", "x") == 1 and plain.command("BF.EXISTS", "f", "x") == 1
    assert redis_instance.client().get("big") == big
    with p.tls_raw(timeout=10) as sub, p.tls_raw(timeout=10) as blocked, p.raw() as other:
        assert sub.command("SUBSCRIBE", "ch") == [b"subscribe", b"ch", 1]
        blocked.send(cmd("BLPOP", "q", 10))
        wait_until(lambda: b"cmd=blpop" in redis_instance.client().execute_command(
            "CLIENT", "LIST"), 5, what="the BLPOP blocked upstream")
        assert other.command("PUBLISH", "ch", "hi") == 1
        assert sub.read_reply() == [b"message", b"ch", b"hi"]
        assert other.command("RPUSH", "q", "job") == 1
        assert blocked.read_reply() == [b"q", b"job"]


def test_redis_py_over_tls(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs, auth_clients="yes"))
    r = tls_redis_py(p.tls_port, certs.ca.cert, certs.client.cert, certs.client.key)
    assert r.ping() is True
    assert r.set("py", "1") is True and r.get("py") == b"1"
    pipe = r.pipeline(transaction=True)
    for _ in range(200):
        pipe.incr("py:n")
    assert pipe.execute() == list(range(1, 201))
    assert r.execute_command("BF.MADD", "py:f", "a", "b") == [1, 1]
    ps = r.pubsub()
    ps.subscribe("py:ch")
    assert ps.get_message(timeout=5)["type"] == "subscribe"
    assert r.publish("py:ch", "m") == 1
    msg = ps.get_message(timeout=5)
    assert msg and msg["data"] == b"m", msg
    ps.close()
    # Without a client certificate the handshake is refused (tls-auth-clients yes).
    with pytest.raises(redis.exceptions.ConnectionError):
        tls_redis_py(p.tls_port, certs.ca.cert).ping()
    assert redis_instance.client().get("py:n") == b"200"


def _cli(*args, timeout=30):
    return subprocess.run(["redis-cli", *map(str, args)], capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_redis_cli_tls(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs))
    base = ["--tls", "--cacert", certs.ca.cert, "-h", HOST, "-p", p.tls_port]
    res = _cli(*base, "SET", "cli", "tls")
    assert res.returncode == 0 and res.stdout == b"OK\n", res
    assert _cli(*base, "GET", "cli").stdout == b"tls\n"
    # A CA that did not sign the proxy's certificate: redis-cli refuses the connection.
    res = _cli("--tls", "--cacert", certs.untrusted_ca.cert, "-h", HOST, "-p", p.tls_port,
               "GET", "cli")
    assert res.returncode != 0 and res.stdout == b"", res
    assert b"certificate verify failed" in res.stderr, res

    mtls = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs, auth_clients="yes"))
    base = ["--tls", "--cacert", certs.ca.cert, "-h", HOST, "-p", mtls.tls_port]
    res = _cli(*base, "--cert", certs.client.cert, "--key", certs.client.key, "GET", "cli")
    assert res.returncode == 0 and res.stdout == b"tls\n", res
    res = _cli(*base, "GET", "cli")  # no client certificate: the TLS alert, then the close
    assert res.returncode != 0 and res.stdout == b"", res
    assert b"Server closed the connection" in res.stderr, res


def test_redis_benchmark_tls(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs, auth_clients="yes"))
    res = subprocess.run(
        ["redis-benchmark", "--tls", "--cacert", certs.ca.cert, "--cert", certs.client.cert,
         "--key", certs.client.key, "-h", HOST, "-p", str(p.tls_port), "-n", "3000", "-c", "10",
         "-P", "8", "-t", "set,get", "-q"], capture_output=True, timeout=60,
        stdin=subprocess.DEVNULL)
    out = res.stdout.decode(errors="replace")
    assert res.returncode == 0, out + res.stderr.decode(errors="replace")
    for test in ("SET", "GET"):
        assert any(line.startswith(f"{test}:") and "requests per second" in line
                   for line in out.replace("\r", "\n").splitlines()), out
    assert redis_instance.client().strlen("key:__rand_int__") == 3  # -d 3, the default


# ---------------------------------------------------------------------------------------------
# What is not a TLS client on the TLS port


def _closed_within(conn, timeout):
    """(seconds until the peer closed `conn` (a RawConn), the bytes it sent before);
    AssertionError if it is still open after `timeout` seconds."""
    t0 = time.monotonic()
    data = conn.read_until_eof(timeout)
    return time.monotonic() - t0, data


def test_non_tls_clients_on_the_tls_port(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs))
    load = Load(p.port, clients=2).start()
    tls_load = TlsLoad(p).start()
    idle_tls = p.tls_raw(timeout=10)  # handshake done, then silent longer than the timeout
    try:
        # Plaintext RESP and an inline command: no Redis reply, closed at once.
        for data in (cmd("PING"), b"PING\r\n", cmd("SET", "plain", "x")):
            with RawConn(p.tls_port, timeout=10) as c:
                c.send_quietly(data)
                took, got = _closed_within(c, 7)
                assert b"PONG" not in got and b"-ERR" not in got and b"+OK" not in got, got
                assert took < 3, f"{data!r}: closed after {took:.1f} s"
        # Garbage, and a TLS record header followed by garbage: closed at once. (Not any random
        # bytes: ones that happen to read as an SSLv2 ClientHello header, byte 0 >= 0x80 and
        # byte 2 == 1, announce up to 32 KB and are rightly waited for, until the handshake
        # timeout below. The garbage starts with "G", which no record type or SSLv2 header does.)
        garbage = b"G\x00" + random.Random(1).randbytes(298)
        for data in (garbage, b"\x16\x03\x01\x00\x40" + os.urandom(64),
                     b"\x00" * 5000):
            with RawConn(p.tls_port, timeout=10) as c:
                c.send_quietly(data)
                took, _ = _closed_within(c, 7)
                assert took < 3, f"{data[:8]!r}...: closed after {took:.1f} s"
        # Silent clients and one that sent half a ClientHello: closed by the handshake timeout
        # (about 5 s: not at once, a slow client must have time to say hello).
        hello = client_hello()
        t0 = time.monotonic()
        silent = [RawConn(p.tls_port, timeout=10) for _ in range(8)]
        half = RawConn(p.tls_port, timeout=10)
        half.send(hello[:len(hello) // 2])
        closed_at = []
        for c in silent + [half]:
            left = 7.5 - (time.monotonic() - t0)
            assert left > 0, "silent clients still open 7.5 s after they connected"
            _, got = _closed_within(c, left)
            closed_at.append(time.monotonic() - t0)
            assert b"PONG" not in got
            c.close()
        assert 3.0 <= min(closed_at) and max(closed_at) < 7.5, closed_at
        # Failed handshakes are not logged at the default level (a scanner cannot fill the log).
        assert "TLS error from client" not in p.log() and "TLS handshake within" not in p.log()
        # The client whose handshake was done is not subject to the handshake timeout.
        assert idle_tls.command("PING") == b"PONG"
        assert redis_instance.client().get("plain") is None
    finally:
        idle_tls.close()
        tls_load.stop()
        load.stop()
    load.assert_clean(max_stall=2.0)
    assert not tls_load.problems, tls_load.problems
    assert tls_load.longest < 2.0, tls_load.longest
    assert tls_load.rounds > 50
    assert p.alive()
    # At the verbose level they are.
    verbose = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs), "--loglevel",
                        "verbose")
    with RawConn(verbose.tls_port, timeout=10) as c:
        c.send_quietly(cmd("PING"))
        _closed_within(c, 7)
    wait_until(lambda: "TLS error from client" in verbose.log(), 5,
               what="the failed handshake in the verbose log")


# ---------------------------------------------------------------------------------------------
# tls-auth-clients, listeners, protocols and ciphers


def _ca_dir(certs, tmp_path):
    d = tmp_path / "client-ca-dir"
    d.mkdir()
    install(certs.ca.cert, d / "ca.pem")
    res = subprocess.run(["openssl", "rehash", str(d)], capture_output=True, timeout=30)
    assert res.returncode == 0, res
    return d


@pytest.mark.parametrize("mode", ["yes", "yes-ca-dir", "optional", "no"])
def test_tls_auth_clients(mode, tls_proxy, redis_instance, certs, tmp_path):
    auth = mode.split("-")[0]
    if mode == "yes-ca-dir":
        args = tls_listener_args(certs, auth_clients="yes", ca=False) + \
            ["--tls-ca-cert-dir", _ca_dir(certs, tmp_path)]
    else:
        args = tls_listener_args(certs, auth_clients=auth)
    p = tls_proxy(*upstream(redis_instance), *args)
    ca = certs.ca.cert
    none = tls_ping(p.tls_port, ca)
    good = tls_ping(p.tls_port, ca, certs.client.cert, certs.client.key)
    untrusted = tls_ping(p.tls_port, ca, certs.untrusted_client.cert, certs.untrusted_client.key)
    assert good == "PONG"
    if auth == "yes":
        assert refused(none) and refused(untrusted), (none, untrusted)
    elif auth == "optional":
        assert none == "PONG" and refused(untrusted), (none, untrusted)
    else:
        assert none == "PONG" and untrusted == "PONG", (none, untrusted)
    assert p.alive()
    with p.raw() as c:
        assert c.command("PING") == b"PONG"


def test_tls_only_listener(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs), plain=False)
    assert listening_ports(p.process.pid) == {p.tls_port}
    with p.tls_raw() as c:
        assert c.command("SET", "only", "tls") == b"OK"
    assert redis_instance.client().get("only") == b"tls"


def test_tls_clients_need_auth_and_count_in_maxclients(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), *tls_listener_args(certs), "--requirepass", "pw",
                  "--maxclients", "3")
    with p.tls_raw() as t, p.raw() as plain:
        t.send(cmd("GET", "k"))
        assert t.read_reply_raw() == b"-NOAUTH Authentication required.\r\n"
        assert t.command("AUTH", "pw") == b"OK"
        assert t.command("SET", "k", "v") == b"OK"
        with p.tls_raw() as third:  # the third client: the limit is reached
            assert third.command("AUTH", "pw") == b"OK"
            assert refused(tls_ping(p.tls_port, certs.ca.cert))  # closed, no Redis reply
            with RawConn(p.port) as fourth:
                assert fourth.read_reply_raw().startswith(b"-ERR max number of clients")
        assert plain.command("AUTH", "pw") == b"OK"
        # Both listed, the TLS one and the plain one (once the others' closes are seen).
        wait_until(lambda: t.command("CLIENT", "LIST").count(b"\n") == 2, 5,
                   what="CLIENT LIST with the two clients left")
    wait_until(lambda: "NOAUTH" in tls_ping(p.tls_port, certs.ca.cert), 5,
               what="a TLS client admitted again below the limit")


def test_tls_protocols(tls_proxy, redis_instance, certs):
    ca = certs.ca.cert
    p13 = tls_proxy(*upstream(redis_instance),
                    *tls_listener_args(certs, extra=["--tls-protocols", "TLSv1.3"]))
    reply = tls_ping(p13.tls_port, ca, max_version=ssl.TLSVersion.TLSv1_2)
    assert reply.startswith("ssl error"), reply
    with p13.tls_raw() as c:
        assert c.sock.version() == "TLSv1.3" and c.command("PING") == b"PONG"
    p12 = tls_proxy(*upstream(redis_instance),
                    *tls_listener_args(certs, extra=["--tls-protocols", "TLSv1.2"]))
    reply = tls_ping(p12.tls_port, ca, min_version=ssl.TLSVersion.TLSv1_3)
    assert reply.startswith("ssl error"), reply
    with p12.tls_raw() as c:
        assert c.sock.version() == "TLSv1.2" and c.command("PING") == b"PONG"
    both = tls_proxy(*upstream(redis_instance),
                     *tls_listener_args(certs, extra=["--tls-protocols", "TLSv1.2 TLSv1.3"]))
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        with both.tls_raw(min_version=version, max_version=version) as c:
            assert c.command("PING") == b"PONG"


def test_tls_ciphers_and_ciphersuites(tls_proxy, redis_instance, certs):
    suite = "TLS_CHACHA20_POLY1305_SHA256"
    p = tls_proxy(*upstream(redis_instance),
                  *tls_listener_args(certs, extra=["--tls-ciphersuites", suite]))
    with p.tls_raw() as c:
        assert c.sock.cipher()[0] == suite and c.command("PING") == b"PONG"
    server_first = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305"
    client_first = "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256"
    for prefer, expected in (("yes", "ECDHE-ECDSA-AES128-GCM-SHA256"),
                             ("no", "ECDHE-ECDSA-CHACHA20-POLY1305")):
        p = tls_proxy(*upstream(redis_instance), *tls_listener_args(
            certs, extra=["--tls-protocols", "TLSv1.2", "--tls-ciphers", server_first,
                          "--tls-prefer-server-ciphers", prefer]))
        with p.tls_raw(ciphers=client_first) as c:
            assert c.sock.cipher()[0] == expected, (prefer, c.sock.cipher())
            assert c.command("PING") == b"PONG"
        # A client offering no cipher of the list is refused.
        reply = tls_ping(p.tls_port, certs.ca.cert, ciphers="ECDHE-ECDSA-AES256-SHA")
        assert reply.startswith("ssl error"), reply


@pytest.mark.parametrize("caching", ["yes", "no"])
def test_tls_session_caching(caching, tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance),
                  *tls_listener_args(certs, extra=["--tls-session-caching", caching]))
    ctx = client_context(certs.ca.cert)
    with TlsConn(p.tls_port, context=ctx) as first:
        assert first.command("PING") == b"PONG"  # the session ticket arrives with the reply
        session = first.sock.session
    with TlsConn(p.tls_port, context=ctx, session=session) as second:
        assert second.command("PING") == b"PONG"
        assert second.sock.session_reused is (caching == "yes")


def test_encrypted_key_with_tls_key_file_pass(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), "--tls-cert-file", certs.server_a.cert,
                  "--tls-key-file", certs.server_a_enc_key, "--tls-key-file-pass",
                  KEY_PASSPHRASE, "--tls-auth-clients", "no")
    assert peer_cn(p.tls_port, certs.ca.cert) == "server-a"
    with p.tls_raw() as c:
        assert c.command("PING") == b"PONG"
    logged = p.log().split("\n", 1)[1]  # what bloomproxy wrote (not the command line)
    assert KEY_PASSPHRASE not in logged
    res = run_bloomproxy(["--bind", HOST, "--port", free_port(), "--tls-port", free_port(),
                          *upstream(redis_instance), "--tls-cert-file", certs.server_a.cert,
                          "--tls-key-file", certs.server_a_enc_key, "--tls-key-file-pass",
                          "wrong passphrase", "--tls-auth-clients", "no"])
    assert res.returncode != 0
    assert "tls-key-file" in res.stderr or certs.server_a_enc_key in res.stderr, res.stderr


def test_tls_settings_in_a_config_file(tls_proxy, redis_instance, certs, tmp_path):
    conf = tmp_path / "tls.conf"
    conf.write_text(f"upstream {HOST}:{redis_instance.port}\n"
                    f"tls-cert-file {certs.server_b.cert}\n"
                    f"tls-key-file {certs.server_b.key}\n"
                    f"tls-ca-cert-file {certs.ca.cert}\n"
                    "tls-auth-clients yes\n"
                    'tls-protocols "TLSv1.2 TLSv1.3"\n')
    p = tls_proxy("--config", conf)
    assert peer_cn(p.tls_port, certs.ca.cert, certs.client.cert, certs.client.key) == "server-b"
    assert refused(tls_ping(p.tls_port, certs.ca.cert))  # tls-auth-clients yes from the file


# ---------------------------------------------------------------------------------------------
# Settings refused at startup


def _config_errors(certs):
    a = certs.server_a
    P = "TLS_PORT"
    listener = ["--tls-port", P, "--tls-cert-file", a.cert, "--tls-key-file", a.key]
    no_auth = listener + ["--tls-auth-clients", "no"]
    return {
        "tls-port without cert and key": (["--tls-port", P], "tls-port"),
        "tls-port without key": (["--tls-port", P, "--tls-cert-file", a.cert,
                                  "--tls-auth-clients", "no"], "tls-key-file"),
        "tls-port equal to port": (no_auth + ["--port", P], "tls-port"),
        "tls-auth-clients yes without CA": (listener, "tls-auth-clients"),
        "tls-auth-clients optional without CA": (listener + ["--tls-auth-clients", "optional"],
                                                 "tls-auth-clients"),
        "tls-auth-clients bad value": (no_auth + ["--tls-auth-clients", "maybe"],
                                       "tls-auth-clients"),
        "tls-protocols bad value": (no_auth + ["--tls-protocols", "TLSv1.4"], "tls-protocols"),
        "upstream cert without key": (["--upstream-tls", "yes", "--upstream-tls-cert-file",
                                       a.cert], "upstream-tls-key-file"),
        "upstream key without cert": (["--upstream-tls", "yes", "--upstream-tls-key-file",
                                       a.key], "upstream-tls-cert-file"),
        "upstream-tls-* while upstream-tls no": (["--upstream-tls-ca-cert-file", certs.ca.cert],
                                                 "upstream-tls"),
        "upstream-tls-server-name while upstream-tls no": (
            ["--upstream-tls-server-name", "localhost"], "upstream-tls"),
        "upstream-tls with a unix upstream": (["--upstream", "unix:/tmp/bp-no.sock",
                                               "--upstream-tls", "yes"], "upstream-tls"),
        "cert file missing": (["--tls-port", P, "--tls-cert-file", "/nonexistent/cert.pem",
                               "--tls-key-file", a.key, "--tls-auth-clients", "no"],
                              "/nonexistent/cert.pem"),
        "cert and key do not match": (["--tls-port", P, "--tls-cert-file", a.cert,
                                       "--tls-key-file", certs.server_b.key,
                                       "--tls-auth-clients", "no"],
                                      ("tls-key-file", certs.server_b.key)),
        "client CA file missing": (listener + ["--tls-ca-cert-file", "/nonexistent/ca.pem"],
                                   "/nonexistent/ca.pem"),
        "upstream CA file missing": (["--upstream-tls", "yes", "--upstream-tls-ca-cert-file",
                                      "/nonexistent/upstream-ca.pem"],
                                     "/nonexistent/upstream-ca.pem"),
    }


def test_config_errors(certs):
    problems = []
    for label, (args, named) in _config_errors(certs).items():
        tls_port = free_port()
        args = [tls_port if a == "TLS_PORT" else a for a in args]
        full = ["--bind", HOST, *args]
        if "--port" not in args:
            full += ["--port", free_port()]
        if "--upstream" not in args:
            full += ["--upstream", "127.0.0.1:1"]
        try:
            res = run_bloomproxy(full, timeout=5)
        except AssertionError as exc:
            problems.append(f"{label}: {exc}")
            continue
        if res.returncode == 0:
            problems.append(f"{label}: exit code 0")
        elif not any(n in res.stderr for n in (named if isinstance(named, tuple) else (named,))):
            problems.append(f"{label}: stderr does not name {named!r}: {res.stderr!r}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# SIGHUP


@pytest.mark.parametrize("threads", [1, 2])
def test_sighup_rotates_certificate(threads, tls_proxy, redis_instance, certs, tmp_path):
    """With 2 threads both event loops accept on the TLS port: the new connections (spread over
    both by the kernel) all see the new certificate."""
    cert, key = tmp_path / "proxy.crt", tmp_path / "proxy.key"
    install(certs.server_a.cert, cert)
    install(certs.server_a.key, key)
    p = tls_proxy(*upstream(redis_instance), "--tls-cert-file", cert, "--tls-key-file", key,
                  "--tls-auth-clients", "no", "--threads", threads)
    ca = certs.ca.cert
    old = p.tls_raw(timeout=10)
    try:
        assert old.peer_cn() == "server-a"
        assert old.command("SET", "k", "before") == b"OK"
        install(certs.server_b.cert, cert)
        install(certs.server_b.key, key)
        sighup_and_wait(p, RELOADED, loops=threads)
        assert [peer_cn(p.tls_port, ca) for _ in range(16)] == ["server-b"] * 16
        # The connection opened before goes on, pipelines and big values included.
        assert old.command("GET", "k") == b"before"
        big = os.urandom(1 << 20)
        assert old.command("SET", "big", big) == b"OK" and old.command("GET", "big") == big
        old.send(b"".join(cmd("INCR", "n") for _ in range(1000)))
        assert [old.read_reply() for _ in range(1000)] == list(range(1, 1001))

        # Files that do not load change nothing: server-b is still served, and it is logged.
        for broken in ((b"not a certificate\n", None),  # garbage certificate
                       (None, certs.server_a.key)):    # a key that is not the certificate's
            if broken[0] is not None:
                cert.write_bytes(broken[0])
            else:
                install(certs.server_b.cert, cert)
                install(broken[1], key)
            sighup_and_wait(p, RELOAD_FAILED, loops=threads)
            line = next(line for line in reversed(p.log().splitlines()) if RELOAD_FAILED in line)
            assert "keeping the current configuration" in line, line
            assert [peer_cn(p.tls_port, ca) for _ in range(8)] == ["server-b"] * 8
            assert old.command("GET", "k") == b"before"
        with p.tls_raw() as c:
            assert c.command("INCR", "n") == 1001
        with p.raw() as c:
            assert c.command("GET", "k") == b"before"
    finally:
        old.close()


def test_sighup_reloads_client_ca(tls_proxy, redis_instance, certs, tmp_path):
    ca_file = tmp_path / "client-ca.pem"
    install(certs.untrusted_ca.cert, ca_file)
    p = tls_proxy(*upstream(redis_instance),
                  *tls_listener_args(certs, auth_clients="yes", ca=ca_file),
                  probe={"ca": certs.ca.cert, "cert": certs.untrusted_client.cert,
                         "key": certs.untrusted_client.key})
    ca = certs.ca.cert
    assert refused(tls_ping(p.tls_port, ca, certs.client.cert, certs.client.key))
    install(certs.ca.cert, ca_file)
    sighup_and_wait(p, RELOADED)
    assert tls_ping(p.tls_port, ca, certs.client.cert, certs.client.key) == "PONG"
    assert refused(tls_ping(p.tls_port, ca, certs.untrusted_client.cert,
                            certs.untrusted_client.key))


def test_sighup_without_tls_keeps_running(tls_proxy, redis_instance, certs):
    p = tls_proxy(*upstream(redis_instance), tls=False)
    with p.raw() as c:
        assert c.command("SET", "k", "v") == b"OK"
        sighup_and_wait(p, "no TLS configured, nothing to reload")
        assert c.command("GET", "k") == b"v"
    with p.raw() as c:
        assert c.command("PING") == b"PONG"

"""The upstream redis-server dies and comes back: prompt error replies while it is down (no
hang), service resumes on the same client connections after it restarts on the same port."""

import threading
import time

from bp_helpers import RawConn, RedisServer, encode_command as cmd, wait_until

UNAVAILABLE = b"-ERR upstream unavailable"
PROMPT = 2.5  # seconds an error reply may take while the upstream is down


def timed_reply(conn, *args):
    t0 = time.monotonic()
    conn.send(cmd(*args))
    raw = conn.read_reply_raw()
    return raw, time.monotonic() - t0


def assert_unavailable(conn, *args):
    raw, elapsed = timed_reply(conn, *args)
    assert raw.startswith(UNAVAILABLE), f"{args}: got {raw!r}"
    assert raw.endswith(b"\r\n") and raw.count(b"\r\n") == 1
    assert elapsed < PROMPT, f"{args}: error reply took {elapsed:.2f}s"


def test_upstream_killed_and_restarted(bp, redis_instance, restart_redis):
    c = RawConn(bp.port, timeout=10)
    assert c.command("SET", "k", "before") == b"OK"
    redis_instance.kill()
    for i in range(5):
        assert_unavailable(c, "GET", "k")
        assert_unavailable(c, "SET", "k", str(i))
    # A client that connects while the upstream is down gets the same errors.
    with RawConn(bp.port, timeout=10) as late:
        assert_unavailable(late, "INCR", "n")
        # Pipelined commands each get their error, in order.
        late.send(cmd("GET", "a") + cmd("GET", "b") + cmd("GET", "c"))
        for _ in range(3):
            assert late.read_reply_raw().startswith(UNAVAILABLE)
    restart_redis(redis_instance.port, kill_only=False)  # same port again
    t0 = time.monotonic()

    def works():
        raw, elapsed = timed_reply(c, "SET", "k", "after")
        assert elapsed < PROMPT, f"reply took {elapsed:.2f}s"
        assert raw == b"+OK\r\n" or raw.startswith(UNAVAILABLE), raw
        return raw == b"+OK\r\n"

    wait_until(works, 10, interval=0.1, what="service to resume after the restart")
    assert time.monotonic() - t0 < 10
    assert c.command("GET", "k") == b"after"
    assert redis_instance.client().get("k") == b"after"
    with RawConn(bp.port) as fresh:
        assert fresh.command("INCR", "fresh") == 1
    c.close()


def test_pinned_commands_while_upstream_down(bp, redis_instance):
    redis_instance.kill()
    # Each on its own connection: the proxy may close a client whose connection state (a
    # transaction, a subscription, a WATCH) it could not set up.
    for args in (("MULTI",), ("BLPOP", "q", "0"), ("SUBSCRIBE", "ch"), ("WATCH", "k"),
                 ("SELECT", "2")):
        with RawConn(bp.port, timeout=10) as c:
            raw, elapsed = timed_reply(c, *args)
            assert raw.startswith(UNAVAILABLE), f"{args}: got {raw!r}"
            assert elapsed < PROMPT, f"{args}: took {elapsed:.2f}s"
    redis_instance.start()
    with RawConn(bp.port, timeout=10) as c:
        wait_until(lambda: c.command("SET", "x", "1") == b"OK", 10, interval=0.1,
                   what="service to resume")
        c.send(cmd("MULTI") + cmd("INCR", "x") + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n",
                                                          b"*1\r\n:2\r\n"]


def test_upstream_restart_mid_run(bp, redis_instance):
    """A client hammering the proxy while redis-server is killed and restarted: every reply is
    either the right one or an upstream-unavailable error, never late, never someone else's."""
    stop = threading.Event()
    stats = {"ok": 0, "err": 0, "ok_after_err": 0, "problems": []}

    def worker():
        try:
            c = RawConn(bp.port, timeout=PROMPT + 2)
            i = 0
            while not stop.is_set():
                i += 1
                value = f"v{i}"
                for args, good in ((("SET", "mid", value), b"+OK\r\n"),
                                   (("GET", "mid"), b"$%d\r\n%s\r\n" % (len(value), value.encode()))):
                    raw, elapsed = timed_reply(c, *args)
                    if elapsed > PROMPT:
                        stats["problems"].append(f"{args} took {elapsed:.2f}s")
                    if raw == good:
                        stats["ok"] += 1
                        if stats["err"]:
                            stats["ok_after_err"] += 1
                    elif raw.startswith(UNAVAILABLE):
                        stats["err"] += 1
                        break
                    else:
                        stats["problems"].append(f"{args}: unexpected reply {raw!r}")
                        break
                time.sleep(0.002)
            c.close()
        except (OSError, EOFError) as exc:
            stats["problems"].append(f"connection failed: {exc!r}")

    t = threading.Thread(target=worker)
    t.start()
    try:
        time.sleep(0.5)
        assert stats["ok"] > 0 and not stats["problems"]
        redis_instance.kill()
        wait_until(lambda: stats["err"] > 0 or stats["problems"], 5,
                   what="an error reply while the upstream is down")
        time.sleep(1.0)
        redis_instance.start()
        wait_until(lambda: stats["ok_after_err"] >= 50 or stats["problems"], 10,
                   what="successful replies after the restart")
    finally:
        stop.set()
        t.join(10)
    assert not stats["problems"], stats["problems"][:10]
    assert stats["err"] > 0 and stats["ok_after_err"] >= 50, stats


def test_proxy_started_before_its_upstream(proxy, tmp_path):
    server = RedisServer(tmp_path / "late-redis")  # port chosen, not started yet
    p = proxy(upstream=server.address)
    with RawConn(p.port, timeout=10) as c:
        assert c.command("PING") == b"PONG"  # answered by the proxy itself
        assert_unavailable(c, "GET", "k")
        server.start()
        try:
            wait_until(lambda: c.command("SET", "k", "v") == b"OK", 10, interval=0.1,
                       what="the proxy to connect to the upstream that started late")
            assert c.command("GET", "k") == b"v"
        finally:
            server.kill()


def _reply_or_close(conn, timeout):
    """The next reply, or None if the proxy closed the connection. Fails on a hang."""
    t0 = time.monotonic()
    try:
        conn.sock.settimeout(timeout)
        raw = conn.read_reply_raw()
    except (EOFError, ConnectionResetError, BrokenPipeError):
        raw = None
    except OSError as exc:  # socket.timeout
        raise AssertionError(f"no reply and no close within {timeout}s ({exc!r})")
    assert time.monotonic() - t0 < timeout + 0.1
    return raw


def test_pinned_clients_when_upstream_dies(bp, redis_instance):
    """Clients holding pinned connections (blocked, subscribed, in MULTI, in SELECT 3) get an
    error or are disconnected promptly; none hangs, and none has its later commands run with
    the wrong state after the restart."""
    blocked = RawConn(bp.port, timeout=10)
    blocked.send(cmd("BLPOP", "q", "0"))
    sub = RawConn(bp.port, timeout=10)
    sub.send(cmd("SUBSCRIBE", "ch"))
    assert sub.read_reply() == [b"subscribe", b"ch", 1]
    multi = RawConn(bp.port, timeout=10)
    assert multi.command("MULTI") == b"OK"
    assert multi.command("SET", "queued", "1") == b"QUEUED"
    db3 = RawConn(bp.port, timeout=10)
    assert db3.command("SELECT", "3") == b"OK"
    assert db3.command("SET", "in3", "before") == b"OK"
    time.sleep(0.2)
    redis_instance.kill()
    for name, conn in (("blocked", blocked), ("subscribed", sub)):
        raw = _reply_or_close(conn, PROMPT)
        assert raw is None or raw.startswith(UNAVAILABLE), f"{name}: {raw!r}"
    redis_instance.start()
    direct3, direct0 = redis_instance.client(db=3), redis_instance.client(db=0)
    time.sleep(1.5)  # time enough for the proxy to reconnect
    # The client in db 3: an error, a close, or a write that lands in db 3 - never in db 0.
    try:
        db3.send(cmd("SET", "in3", "after"))
        raw = _reply_or_close(db3, 5)
    except (BrokenPipeError, ConnectionResetError):
        raw = None
    assert direct0.get("in3") is None, "a client that selected db 3 wrote into db 0"
    if raw == b"+OK\r\n":
        assert direct3.get("in3") == b"after"
    else:
        assert raw is None or raw.startswith(b"-"), raw
    # The client in MULTI: EXEC either fails (error or close) or really executed the queue.
    try:
        multi.send(cmd("EXEC"))
        raw = _reply_or_close(multi, 5)
    except (BrokenPipeError, ConnectionResetError):
        raw = None
    if raw is not None and raw.startswith(b"*") and raw != b"*-1\r\n":
        assert direct0.get("queued") == b"1", f"EXEC replied {raw!r} but nothing ran"
    else:
        assert direct0.get("queued") is None, f"EXEC replied {raw!r} yet the queue ran"
    for c in (blocked, sub, multi, db3):
        c.close()
    with RawConn(bp.port) as c:
        assert c.command("SET", "fine", "1") == b"OK"


def test_pipeline_in_flight_when_upstream_dies(bp, redis_instance):
    """20001 pipelined commands, the upstream killed while they are in flight: every command
    gets exactly one reply (right value or upstream error), in order, promptly; the connection
    stays usable."""
    value = b"x" * 1000
    good_get = b"$1000\r\n" + value + b"\r\n"
    with RawConn(bp.port, timeout=PROMPT + 2) as c:
        c.send(cmd("SET", "v", value) + cmd("GET", "v") * 20000 + cmd("ECHO", "end"))
        time.sleep(0.01)
        redis_instance.kill()
        first = c.read_reply_raw()
        assert first == b"+OK\r\n" or first.startswith(UNAVAILABLE), first
        errors = 0
        for i in range(20000):
            raw = c.read_reply_raw()
            if raw.startswith(UNAVAILABLE):
                errors += 1
            else:
                assert raw == good_get, f"reply #{i + 1}: {raw[:80]!r}"
        assert c.read_reply_raw() == b"$3\r\nend\r\n"  # answered by the proxy, in order
        assert errors > 0
        redis_instance.start()
        wait_until(lambda: c.command("SET", "again", "1") == b"OK", 10, interval=0.1,
                   what="service to resume")


def test_upstream_password_is_sent_again_after_restart(proxy, redis_factory):
    upstream = redis_factory(password="upw")
    p = proxy("--upstream-password", "upw", upstream=upstream.address)
    with RawConn(p.port, timeout=10) as c:
        assert c.command("SET", "k", "1") == b"OK"
        upstream.kill()
        assert_unavailable(c, "GET", "k")
        upstream.start()
        wait_until(lambda: c.command("SET", "k", "2") == b"OK", 10, interval=0.1,
                   what="service to resume with the upstream password")
        c.send(cmd("MULTI") + cmd("INCR", "k") + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n",
                                                          b"*1\r\n:3\r\n"]
    assert upstream.client().get("k") == b"3"


def test_stalled_upstream_times_out_and_recovers(proxy, redis_instance):
    """An upstream that stops answering (SIGSTOP) fails the requests waiting on it after
    upstream-timeout-ms instead of hanging them, and service resumes when it answers again."""
    import os
    import signal

    p = proxy("--upstream-timeout-ms", "500")
    with RawConn(p.port, timeout=10) as c:
        assert c.command("SET", "stall", "1") == b"OK"
        os.kill(redis_instance.proc.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            c.send(cmd("GET", "stall"))
            reply = c.read_reply_raw()
            waited = time.monotonic() - t0
            assert reply.startswith(b"-ERR upstream unavailable"), reply
            assert b"command timeout" in reply, reply
            assert waited < 3, waited
        finally:
            os.kill(redis_instance.proc.pid, signal.SIGCONT)
        wait_until(lambda: c.command("GET", "stall") == b"1", timeout=10)

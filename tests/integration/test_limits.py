"""Client limits: --timeout (idle clients closed), --maxclients, and very large values."""

import hashlib
import os
import threading
import time

from bp_helpers import RawConn, encode_command as cmd, wait_until

MAXCLIENTS_ERR = b"-ERR max number of clients reached\r\n"


def test_idle_timeout_closes_idle_client(proxy):
    p = proxy("--timeout", "1")
    idle = RawConn(p.port, timeout=10)
    assert idle.command("PING") == b"PONG"
    busy = RawConn(p.port, timeout=10)
    t0 = time.monotonic()
    # The busy client keeps talking for 3.5 s and is not closed; the idle one is.
    while time.monotonic() - t0 < 3.5:
        assert busy.command("SET", "busy", "1") == b"OK"
        time.sleep(0.25)
    assert idle.is_closed(wait=0.5), "idle client still connected after 3.5 s with --timeout 1"
    assert busy.command("GET", "busy") == b"1"
    idle.close()
    busy.close()


def test_timeout_spares_blocked_and_subscribed_clients(proxy):
    # Like Redis: a client blocked in BLPOP or subscribed to channels is not idle.
    p = proxy("--timeout", "1")
    blocked = RawConn(p.port, timeout=10)
    blocked.send(cmd("BLPOP", "tq", "0"))
    sub = RawConn(p.port, timeout=10)
    sub.send(cmd("SUBSCRIBE", "tch"))
    assert sub.read_reply() == [b"subscribe", b"tch", 1]
    time.sleep(3)
    with RawConn(p.port) as other:
        assert other.command("RPUSH", "tq", "late") == 1
        assert other.command("PUBLISH", "tch", "late") == 1
    assert blocked.read_reply() == [b"tq", b"late"]
    assert sub.read_reply() == [b"message", b"tch", b"late"]
    blocked.close()
    sub.close()


def test_no_timeout_by_default(bp):
    c = RawConn(bp.port)
    assert c.command("PING") == b"PONG"
    time.sleep(2.5)
    assert not c.is_closed(0.1)
    assert c.command("PING") == b"PONG"
    c.close()


def _connect_working(port):
    """A connection the proxy accepted (its PING answered)."""
    def attempt():
        c = RawConn(port)
        try:
            if c.command("PING") == b"PONG":
                return c
        except (OSError, EOFError):
            pass
        c.close()
        return None
    return wait_until(attempt, 5, what="a connection accepted by the proxy")


def test_maxclients(proxy):
    p = proxy("--maxclients", "2")
    a = _connect_working(p.port)
    b = _connect_working(p.port)
    with RawConn(p.port) as third:
        assert third.read_until_eof(5) == MAXCLIENTS_ERR
    with RawConn(p.port) as fourth:
        fourth.send(cmd("PING"))
        assert fourth.read_until_eof(5) == MAXCLIENTS_ERR
    # The two admitted clients are unaffected.
    assert a.command("SET", "mc", "a") == b"OK"
    assert b.command("GET", "mc") == b"a"
    # When one leaves, a new client is admitted.
    a.close()
    c = _connect_working(p.port)
    assert c.command("GET", "mc") == b"a"
    b.close()
    c.close()


def test_large_value_50mb(bp, redis_instance):
    value = os.urandom(1 << 20) * 50  # 50 MB
    digest = hashlib.sha256(value).hexdigest()
    r = bp.client()
    r2 = bp.client()
    # Another client keeps getting prompt replies while 50 MB travel through the proxy.
    stop = threading.Event()
    slow = []

    def other():
        while not stop.is_set():
            t0 = time.monotonic()
            r2.incr("ticks")
            if time.monotonic() - t0 > 2:
                slow.append(time.monotonic() - t0)
            time.sleep(0.01)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert r.set("big", value) is True
        got = r.get("big")
        assert got is not None and len(got) == len(value)
        assert hashlib.sha256(got).hexdigest() == digest
        assert r.strlen("big") == len(value)
        # And twice more in one pipeline.
        pipe = r.pipeline(transaction=False)
        pipe.get("big")
        pipe.set("big2", value)
        pipe.get("big2")
        a, ok, b = pipe.execute()
        assert ok is True
        assert hashlib.sha256(a).hexdigest() == digest
        assert hashlib.sha256(b).hexdigest() == digest
    finally:
        stop.set()
        t.join(10)
    assert not slow, f"another client waited {slow} s"
    assert hashlib.sha256(redis_instance.client().get("big2")).hexdigest() == digest

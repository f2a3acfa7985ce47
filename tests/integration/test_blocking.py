"""Blocking commands (BLPOP, BLMOVE, XREAD BLOCK, WAIT): woken by other clients, and never
stalling the other clients of the proxy."""

import threading
import time

from bp_helpers import RawConn, encode_command as cmd, wait_until


def test_blpop_woken_by_another_clients_lpush(bp):
    with bp.raw(timeout=10) as blocked, bp.raw() as pusher:
        blocked.send(cmd("BLPOP", "queue", "5"))
        time.sleep(0.3)
        assert not blocked.is_closed(0.1) and not blocked.buf  # still blocked, no reply yet
        t0 = time.monotonic()
        assert pusher.command("LPUSH", "queue", "job-1") == 1
        assert blocked.read_reply() == [b"queue", b"job-1"]
        assert time.monotonic() - t0 < 1.0
        assert pusher.command("LLEN", "queue") == 0
        # The blocked client is an ordinary client again.
        assert blocked.command("SET", "b", "1") == b"OK"
        assert blocked.command("GET", "b") == b"1"


def test_blpop_with_redis_py_threads(bp):
    r_block, r_push = bp.client(), bp.client()
    result = {}

    def waiter():
        result["v"] = r_block.blpop(["q1", "q2"], timeout=5)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    assert t.is_alive()
    r_push.rpush("q2", "a", "b")
    t.join(3)
    assert not t.is_alive()
    assert result["v"] == (b"q2", b"a")
    assert r_push.lrange("q2", 0, -1) == [b"b"]


def test_blpop_timeout_returns_nil(bp):
    with bp.raw(timeout=5) as c:
        t0 = time.monotonic()
        c.send(cmd("BLPOP", "empty", "1"))
        assert c.read_reply_raw() == b"*-1\r\n"
        elapsed = time.monotonic() - t0
        assert 0.8 < elapsed < 2.5, elapsed


def test_blocked_clients_do_not_stall_others(bp):
    blockers = [RawConn(bp.port, timeout=10) for _ in range(4)]
    blockers[0].send(cmd("BLPOP", "never", "3"))
    blockers[1].send(cmd("XREAD", "BLOCK", "3000", "STREAMS", "nostream", "$"))
    blockers[2].send(cmd("WAIT", "1", "3000"))
    blockers[3].send(cmd("BLMOVE", "never2", "dst", "LEFT", "RIGHT", "3"))
    time.sleep(0.3)
    others = [RawConn(bp.port, timeout=2) for _ in range(3)]
    for i in range(20):
        for o in others:
            t0 = time.monotonic()
            assert o.command("SET", "fast", str(i)) == b"OK"
            assert o.command("GET", "fast") == str(i).encode()
            assert time.monotonic() - t0 < 0.5, "a forwarded command waited behind a blocked one"
    for o in others:
        o.close()
    assert blockers[0].read_reply_raw() == b"*-1\r\n"
    assert blockers[1].read_reply_raw() == b"*-1\r\n"
    assert blockers[2].read_reply_raw() == b":0\r\n"
    assert blockers[3].read_reply_raw() == b"*-1\r\n"
    for b in blockers:
        b.close()


def test_xread_block_woken_by_xadd(bp):
    with bp.raw(timeout=10) as reader, bp.raw() as writer:
        reader.send(cmd("XREAD", "BLOCK", "5000", "STREAMS", "s", "$"))
        time.sleep(0.3)
        assert writer.command("XADD", "s", "5-1", "f", "v") == b"5-1"
        assert reader.read_reply() == [[b"s", [[b"5-1", [b"f", b"v"]]]]]


def test_disconnected_blocked_client_does_not_steal_elements(bp, redis_instance):
    """When a client blocked in BLPOP goes away, its BLPOP must not still be waiting upstream
    and pop the next element pushed (Redis unblocks and frees such a client)."""
    direct = redis_instance.client()
    for i in range(3):
        c = RawConn(bp.port)
        c.send(cmd("BLPOP", "stolen", "0"))
        wait_until(lambda: direct.info("clients")["blocked_clients"] >= 1, 3,
                   what="the BLPOP to block upstream")
        c.close()
        wait_until(lambda: direct.info("clients")["blocked_clients"] == 0, 3,
                   what="the upstream BLPOP of a disconnected client to end")
    with bp.raw() as p:
        assert p.command("RPUSH", "stolen", "precious") == 1
        time.sleep(0.2)
        assert p.command("LRANGE", "stolen", "0", "-1") == [b"precious"]


def test_many_blocked_clients_woken_in_order(bp, redis_instance):
    direct = redis_instance.client()
    blocked = []
    for i in range(10):
        c = RawConn(bp.port, timeout=10)
        c.send(cmd("BLPOP", "fifo", "5"))
        blocked.append(c)
        # Redis serves blocked clients first come, first served: block them one by one.
        wait_until(lambda: direct.info("clients")["blocked_clients"] == i + 1, 3,
                   what=f"BLPOP #{i} to block upstream")
    with bp.raw() as p:
        for i in range(10):
            assert p.command("RPUSH", "fifo", f"e{i}") >= 0
    for i, c in enumerate(blocked):
        assert c.read_reply() == [b"fifo", b"e%d" % i], i
        c.close()


def test_commands_pipelined_after_a_blocking_one_wait_for_it(bp, redis_instance):
    """As in Redis, commands a client sent after BLPOP run only once BLPOP has returned."""
    with bp.raw(timeout=5) as a, bp.raw() as b:
        a.send(cmd("BLPOP", "q", "1") + cmd("SET", "x", "1") + cmd("PING") + cmd("GET", "x"))
        time.sleep(0.3)
        assert b.command("GET", "x") is None, "SET ran before the BLPOP in front of it returned"
        assert [a.read_reply_raw() for _ in range(4)] == [b"*-1\r\n", b"+OK\r\n", b"+PONG\r\n",
                                                          b"$1\r\n1\r\n"]

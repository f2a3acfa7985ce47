"""MULTI/EXEC/DISCARD and WATCH through the proxy (pinned upstream connections)."""

import pytest
import redis

from bp_helpers import RawConn, compare_with_redis, encode_command as cmd


def test_multi_exec_queues_and_executes(bp, redis_instance):
    with bp.raw() as c:
        c.send(cmd("MULTI") + cmd("SET", "t", "1") + cmd("INCR", "t") + cmd("GET", "t")
               + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(5)] == [
            b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n",
            b"*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n"]
    assert redis_instance.client().get("t") == b"2"


def test_other_clients_are_not_part_of_the_transaction(bp):
    with bp.raw() as a, bp.raw() as b:
        assert a.command("MULTI") == b"OK"
        assert b.command("SET", "x", "1") == b"OK"        # runs now, not queued
        assert a.command("INCR", "x") == b"QUEUED"
        assert b.command("GET", "x") == b"1"              # a's INCR has not run
        assert a.command("PING") == b"QUEUED"
        assert a.command("EXEC") == [2, b"PONG"]
        assert b.command("GET", "x") == b"2"


def test_watch_conflict_with_redis_py(bp, redis_instance):
    r1, r2 = bp.client(), bp.client()
    r1.set("balance", 100)
    with r1.pipeline() as pipe:
        pipe.watch("balance")
        assert int(pipe.get("balance")) == 100
        r2.set("balance", 50)                         # another client modifies the key
        pipe.multi()
        pipe.set("balance", 200)
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r1.get("balance") == b"50"
    assert redis_instance.client().get("balance") == b"50"
    # Without a conflict the same transaction succeeds.
    with r1.pipeline() as pipe:
        pipe.watch("balance")
        pipe.multi()
        pipe.set("balance", 200)
        assert pipe.execute() == [True]
    assert r2.get("balance") == b"200"


def test_watch_conflict_raw_exec_returns_nil(bp, redis_instance):
    with bp.raw() as a, bp.raw() as b:
        assert a.command("SET", "w", "0") == b"OK"
        assert a.command("WATCH", "w") == b"OK"
        assert b.command("INCR", "w") == 1
        assert a.command("MULTI") == b"OK"
        assert a.command("SET", "w", "from-a") == b"QUEUED"
        a.send(cmd("EXEC"))
        assert a.read_reply_raw() == b"*-1\r\n"
        assert a.command("GET", "w") == b"1"
        # After EXEC the watch is gone: a new transaction goes through.
        assert a.command("MULTI") == b"OK"
        assert a.command("SET", "w", "from-a") == b"QUEUED"
        assert a.command("EXEC") == [b"OK"]
        # A modification made directly on redis-server also trips WATCH.
        assert a.command("WATCH", "w") == b"OK"
        redis_instance.client().set("w", "direct")
        a.send(cmd("MULTI") + cmd("SET", "w", "again") + cmd("EXEC"))
        assert [a.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n", b"*-1\r\n"]
        assert b.command("GET", "w") == b"direct"


def test_unwatch_and_discard(bp):
    with bp.raw() as a, bp.raw() as b:
        assert a.command("WATCH", "u") == b"OK"
        assert a.command("UNWATCH") == b"OK"
        assert b.command("SET", "u", "b") == b"OK"
        assert a.command("MULTI") == b"OK"
        assert a.command("SET", "u", "a") == b"QUEUED"
        assert a.command("EXEC") == [b"OK"]
        assert a.command("MULTI") == b"OK"
        assert a.command("SET", "u", "discarded") == b"QUEUED"
        assert a.command("DISCARD") == b"OK"
        assert b.command("GET", "u") == b"a"
        assert a.command("GET", "u") == b"a"


def test_transaction_errors_like_redis(bp, redis_instance):
    payload = (cmd("EXEC") + cmd("DISCARD") + cmd("MULTI") + cmd("MULTI") + cmd("SET", "k")
               + cmd("SET", "k", "v") + cmd("EXEC") + cmd("GET", "k")
               + cmd("MULTI") + cmd("SET", "s", "str") + cmd("LPUSH", "s", "x") + cmd("EXEC")
               + cmd("MULTI") + cmd("WATCH", "k") + cmd("DISCARD"))
    replies = compare_with_redis(bp.port, redis_instance, payload, 15)
    assert replies[0] == b"-ERR EXEC without MULTI\r\n"
    assert replies[1] == b"-ERR DISCARD without MULTI\r\n"
    assert replies[3] == b"-ERR MULTI calls can not be nested\r\n"
    assert replies[6] == (b"-EXECABORT Transaction discarded because of previous errors.\r\n")
    assert replies[7] == b"$-1\r\n"
    assert replies[11] == (b"*2\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong "
                           b"kind of value\r\n")


def test_disconnect_in_multi_leaves_no_state(bp, redis_instance):
    """A client that disconnects inside MULTI (or with a WATCH) must not leak that state into a
    pinned connection another client gets later."""
    for _ in range(3):
        a = RawConn(bp.port)
        assert a.command("WATCH", "leak") == b"OK"
        assert a.command("MULTI") == b"OK"
        assert a.command("SET", "leak", "from-a") == b"QUEUED"
        a.close()
    b = RawConn(bp.port)
    w = RawConn(bp.port)
    assert w.command("WATCH", "leak2") == b"OK"
    w.close()
    redis_instance.client().set("leak", "changed")
    redis_instance.client().set("leak2", "changed")
    with bp.raw() as clients_later:
        for i in range(4):
            assert clients_later.command("MULTI") == b"OK", i
            assert clients_later.command("SET", f"later{i}", "1") == b"QUEUED"
            assert clients_later.command("EXEC") == [b"OK"], i
    assert redis_instance.client().get("leak") == b"changed"  # the abandoned EXEC never ran
    b.close()


def test_abandoned_multi_is_not_executed(bp, redis_instance):
    a = RawConn(bp.port)
    assert a.command("MULTI") == b"OK"
    assert a.command("SET", "ghost", "1") == b"QUEUED"
    a.close()
    with bp.raw() as b:
        for _ in range(5):
            assert b.command("MULTI") == b"OK"
            assert b.command("INCR", "n") == b"QUEUED"
            reply = b.command("EXEC")
            assert isinstance(reply, list) and len(reply) == 1, reply
    assert redis_instance.client().get("ghost") is None
    assert redis_instance.client().get("n") == b"5"


def test_commands_inside_multi_like_redis(bp, redis_instance):
    """Blocking commands inside MULTI do not block; SELECT inside MULTI changes the database of
    the connection after EXEC, as in Redis."""
    payload = (cmd("SET", "k", "db0") + cmd("MULTI") + cmd("BLPOP", "empty", "0")
               + cmd("SELECT", "3") + cmd("SET", "k", "db3") + cmd("EXEC") + cmd("GET", "k")
               + cmd("SELECT", "0") + cmd("GET", "k"))
    replies = compare_with_redis(bp.port, redis_instance, payload, 9)
    assert replies[5] == b"*3\r\n*-1\r\n+OK\r\n+OK\r\n"
    assert replies[6] == b"$3\r\ndb3\r\n"
    assert replies[8] == b"$3\r\ndb0\r\n"


def test_many_concurrent_transactions(bp, redis_instance):
    """More clients inside MULTI at once than the pinned pool keeps idle (16)."""
    conns = [RawConn(bp.port, timeout=10) for _ in range(40)]
    for c in conns:
        assert c.command("MULTI") == b"OK"
    for i, c in enumerate(conns):
        assert c.command("INCRBY", "total", str(i)) == b"QUEUED"
        assert c.command("SET", f"tx{i}", str(i)) == b"QUEUED"
    for i, c in enumerate(conns):
        reply = c.command("EXEC")
        assert isinstance(reply, list) and reply[1] == b"OK", reply
        c.close()
    assert redis_instance.client().get("total") == str(sum(range(40))).encode()

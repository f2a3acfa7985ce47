"""SELECT: per-client database, isolated from the other clients of the proxy; a client that
selected a database and left must not leave any other client in that database."""

import time

from bp_helpers import RawConn, encode_command as cmd


def test_select_3_isolation(bp, redis_instance):
    with bp.raw() as a, bp.raw() as b:
        assert a.command("SELECT", "3") == b"OK"
        assert a.command("SET", "iso", "in-db3") == b"OK"
        assert a.command("GET", "iso") == b"in-db3"
        assert b.command("GET", "iso") is None           # b is in db 0
        assert b.command("SET", "iso", "in-db0") == b"OK"
        assert a.command("GET", "iso") == b"in-db3"
        assert b.command("GET", "iso") == b"in-db0"
        # Verified on redis-server directly.
        assert redis_instance.client(db=3).get("iso") == b"in-db3"
        assert redis_instance.client(db=0).get("iso") == b"in-db0"
        assert a.command("DBSIZE") == 1
        assert a.command("SELECT", "0") == b"OK"
        assert a.command("GET", "iso") == b"in-db0"


def test_redis_py_db_argument(bp, redis_instance):
    r3 = bp.client(db=3)
    r0 = bp.client()
    r3.set("k", "three")
    assert r0.get("k") is None
    assert r3.get("k") == b"three"
    assert redis_instance.client(db=3).get("k") == b"three"
    assert redis_instance.client(db=0).exists("k") == 0


def test_disconnected_select_does_not_leak_to_other_clients(bp, redis_instance):
    direct0 = redis_instance.client(db=0)
    for i in range(5):
        a = RawConn(bp.port)
        assert a.command("SELECT", "3") == b"OK"
        assert a.command("SET", f"a{i}", "db3") == b"OK"
        a.close()
    time.sleep(0.2)
    # New clients, doing every kind of command, must all be in db 0.
    for i in range(5):
        with bp.raw() as b:
            assert b.command("SET", f"plain{i}", "db0") == b"OK"
            assert b.command("MULTI") == b"OK"
            assert b.command("SET", f"tx{i}", "db0") == b"QUEUED"
            assert b.command("EXEC") == [b"OK"]
            assert b.command("WATCH", f"w{i}") == b"OK"
            assert b.command("SET", f"watched{i}", "db0") == b"OK"
            assert b.command("UNWATCH") == b"OK"
            assert b.command("RPUSH", f"l{i}", "x") == 1
            assert b.command("BLPOP", f"l{i}", "1") == [f"l{i}".encode(), b"x"]
            assert b.command("SET", f"after-blpop{i}", "db0") == b"OK"
            assert b.command("GET", "a0") is None
    for i in range(5):
        for k in (f"plain{i}", f"tx{i}", f"watched{i}", f"after-blpop{i}"):
            assert direct0.get(k) == b"db0", k
    assert redis_instance.client(db=3).dbsize() == 5


def test_select_then_transaction_and_blocking_stay_in_db(bp, redis_instance):
    with bp.raw() as a, bp.raw() as b:
        assert a.command("SELECT", "5") == b"OK"
        a.send(cmd("MULTI") + cmd("SET", "t", "5") + cmd("EXEC"))
        assert [a.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n",
                                                          b"*1\r\n+OK\r\n"]
        assert b.command("RPUSH", "bl", "db0-item") == 1
        a.send(cmd("BLPOP", "bl", "1"))
        assert a.read_reply_raw() == b"*-1\r\n"          # db 5 has no "bl"
        assert b.command("LLEN", "bl") == 1
    assert redis_instance.client(db=5).get("t") == b"5"
    assert redis_instance.client(db=0).get("t") is None


def test_many_clients_in_different_dbs(bp, redis_instance):
    conns = [RawConn(bp.port) for _ in range(8)]
    for db, c in enumerate(conns):
        assert c.command("SELECT", str(db)) == b"OK"
    for round_ in range(20):
        for db, c in enumerate(conns):
            c.send(cmd("SET", "who", f"{db}:{round_}"))
        for db, c in enumerate(conns):
            assert c.read_reply_raw() == b"+OK\r\n"
            assert c.command("GET", "who") == f"{db}:{round_}".encode()
    for db, c in enumerate(conns):
        assert redis_instance.client(db=db).get("who") == f"{db}:19".encode()
        c.close()


def test_inline_select_and_transaction(bp, redis_instance):
    with bp.raw() as c:
        c.send(b"SELECT 4\r\nSET ik \"inline v\"\r\nMULTI\r\nINCR n\r\nEXEC\r\nSELECT 0\r\nGET ik\r\n")
        assert [c.read_reply_raw() for _ in range(7)] == [
            b"+OK\r\n", b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n:1\r\n", b"+OK\r\n",
            b"$-1\r\n"]
    assert redis_instance.client(db=4).get("ik") == b"inline v"
    assert redis_instance.client(db=4).get("n") == b"1"

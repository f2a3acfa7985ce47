"""Protocol errors: Redis's exact reply, then the connection is closed; replies to the commands
before the error still arrive first; other clients are not disturbed."""

import pytest

from bp_helpers import RawConn, encode_command as cmd, roundtrip_raw

CASES = [
    ("multibulk-too-long", b"*20000000000\r\n",
     b"-ERR Protocol error: invalid multibulk length\r\n"),
    ("multibulk-not-a-number", b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    ("expected-dollar", b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
     b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    ("bulk-not-a-number", b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("bulk-negative", b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("bulk-over-512mb", b"*1\r\n$600000000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("too-big-inline", b"a" * (128 * 1024), b"-ERR Protocol error: too big inline request\r\n"),
    ("too-big-mbulk-count", b"*" + b"1" * (70 * 1024),
     b"-ERR Protocol error: too big mbulk count string\r\n"),
    ("too-big-bulk-count", b"*1\r\n$" + b"1" * (70 * 1024),
     b"-ERR Protocol error: too big bulk count string\r\n"),
    ("unbalanced-quotes", b'SET k "abc\r\n',
     b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ("unbalanced-single-quotes", b"SET k 'abc\r\n",
     b"-ERR Protocol error: unbalanced quotes in request\r\n"),
]


@pytest.mark.parametrize("name,payload,expected", CASES, ids=[c[0] for c in CASES])
def test_protocol_error_exact_reply_then_close(bp, redis_instance, name, payload, expected):
    direct = roundtrip_raw(redis_instance.port, payload, expect_close=True)
    assert direct == expected, "the test's expectation disagrees with redis-server itself"
    assert roundtrip_raw(bp.port, payload, expect_close=True) == expected
    assert bp.alive()


def test_replies_before_the_error_come_first(bp, redis_instance):
    payload = (cmd("SET", "a", "1") + b"PING\r\n" + cmd("GET", "a") + cmd("INCR", "a")
               + b"*1\r\n$x\r\n" + cmd("SET", "never", "1"))
    expected = (b"+OK\r\n+PONG\r\n$1\r\n1\r\n:2\r\n"
                b"-ERR Protocol error: invalid bulk length\r\n")
    assert roundtrip_raw(redis_instance.port, payload, expect_close=True) == expected
    redis_instance.client().flushall()
    assert roundtrip_raw(bp.port, payload, expect_close=True) == expected
    assert redis_instance.client().get("a") == b"2"
    assert redis_instance.client().exists("never") == 0


def test_other_clients_keep_working(bp, redis_instance):
    with RawConn(bp.port) as other, RawConn(bp.port) as bad:
        assert other.command("SET", "other", "1") == b"OK"
        # `other` has half a command in flight while `bad` breaks the protocol.
        full = cmd("SET", "other", "2")
        other.send(full[:9])
        bad.send(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n")
        assert bad.read_until_eof(5) == b"-ERR Protocol error: expected '$', got 'f'\r\n"
        other.send(full[9:])
        assert other.read_reply_raw() == b"+OK\r\n"
        assert other.command("GET", "other") == b"2"
    for payload in (b"*20000000000\r\n", b"a" * (128 * 1024)):
        with RawConn(bp.port) as other:
            other.send(cmd("PING"))
            assert other.read_reply_raw() == b"+PONG\r\n"
            roundtrip_raw(bp.port, payload, expect_close=True)
            other.send(cmd("INCR", "counter"))
            assert other.read_reply() >= 1
    assert bp.alive()


def test_http_request_closes_without_reply(bp, redis_instance):
    # Redis treats "POST" and "Host:" as an attack: it closes the connection, no reply.
    for payload in (b"POST / HTTP/1.1\r\nHost: localhost\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"):
        direct = roundtrip_raw(redis_instance.port, payload, expect_close=True)
        assert roundtrip_raw(bp.port, payload, expect_close=True) == direct
    assert bp.alive()


def test_empty_multibulk_and_blank_lines_are_ignored(bp):
    with RawConn(bp.port) as c:
        c.send(b"*0\r\n*-1\r\n\r\n\n*1\r\n$4\r\nPING\r\n")
        assert c.read_reply_raw() == b"+PONG\r\n"
        assert not c.is_closed(0.2)


@pytest.fixture
def password_redis(redis_factory):
    return redis_factory(password="sekret")


@pytest.mark.parametrize("name,payload,expected", [
    ("unauthenticated-multibulk", b"*11\r\n",
     b"-ERR Protocol error: unauthenticated multibulk length\r\n"),
    ("unauthenticated-bulk", b"*2\r\n$4\r\nAUTH\r\n$20000\r\n",
     b"-ERR Protocol error: unauthenticated bulk length\r\n"),
], ids=["multibulk", "bulk"])
def test_unauthenticated_limits(proxy, password_redis, name, payload, expected):
    direct = roundtrip_raw(password_redis.port, payload, expect_close=True)
    assert direct == expected, "the test's expectation disagrees with redis-server itself"
    p = proxy("--requirepass", "sekret")
    assert roundtrip_raw(p.port, payload, expect_close=True) == expected
    # Once authenticated, the limits do not apply.
    with RawConn(p.port) as c:
        assert c.command("AUTH", "sekret") == b"OK"
        args = ["MSET"] + [f"k{i}" if j == 0 else "v" * 20000 for i in range(6) for j in (0, 1)]
        assert len(args) == 13
        assert c.command(*args) == b"OK"


def test_proto_max_bulk_len(proxy):
    p = proxy("--proto-max-bulk-len", "1mb")
    with RawConn(p.port) as c:
        assert c.command("SET", "ok", "x" * (1024 * 1024)) == b"OK"
    assert roundtrip_raw(p.port, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n",
                         expect_close=True) == b"-ERR Protocol error: invalid bulk length\r\n"

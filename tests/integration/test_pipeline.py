"""Pipelining: 10k commands in one redis-py pipeline, and a raw pipeline mixing forwarded and
locally answered commands; every reply checked, in order."""

from bp_helpers import encode_command as cmd


def test_redis_py_pipeline_10k_set_then_get(bp, redis_instance):
    r = bp.client()
    n = 10000
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"pipe:{i}", f"value-{i}-{i * 7919}")
    for i in range(n):
        pipe.get(f"pipe:{i}")
    replies = pipe.execute()
    assert len(replies) == 2 * n
    for i in range(n):
        assert replies[i] is True, (i, replies[i])
    for i in range(n):
        assert replies[n + i] == f"value-{i}-{i * 7919}".encode(), (i, replies[n + i])
    assert redis_instance.client().dbsize() == n


def test_raw_pipeline_mixing_local_and_forwarded_commands(bp):
    n = 2500
    payload = b"".join(cmd("SET", f"k{i}", f"v{i}") + cmd("ECHO", f"e{i}") + cmd("GET", f"k{i}")
                       + cmd("PING") + cmd("INCR", "ctr") for i in range(n))
    expected = []
    for i in range(n):
        v, e = b"v%d" % i, b"e%d" % i
        expected += [b"+OK\r\n", b"$%d\r\n%s\r\n" % (len(e), e), b"$%d\r\n%s\r\n" % (len(v), v),
                     b"+PONG\r\n", b":%d\r\n" % (i + 1)]
    with bp.raw(timeout=30) as c:
        c.send(payload)
        got = [c.read_reply_raw() for _ in range(len(expected))]
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"reply #{i}: got {g!r}, expected {e!r}"


def test_replies_are_not_held_back(bp):
    """A client that sends one command at a time gets each reply without waiting for more."""
    with bp.raw(timeout=2) as c:
        for i in range(200):
            c.send(cmd("SET", "k", str(i)))
            assert c.read_reply_raw() == b"+OK\r\n"
            c.send(cmd("GET", "k"))
            assert c.read_reply() == str(i).encode()

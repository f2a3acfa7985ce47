"""Pub/sub through the proxy: SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE on one connection, PUBLISH from
another, messages in order, UNSUBSCRIBE, then ordinary commands on the same connection."""

import time

from bp_helpers import RawConn, compare_with_redis, encode_command as cmd, wait_until


def test_subscribe_publish_unsubscribe_then_normal_commands(bp, redis_instance):
    sub = RawConn(bp.port)
    pub = bp.client()
    sub.send(cmd("SUBSCRIBE", "news", "sport"))
    assert sub.read_reply_raw() == b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    assert sub.read_reply_raw() == b"*3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:2\r\n"
    for i in range(100):
        channel = "news" if i % 3 else "sport"
        assert pub.publish(channel, f"msg-{i}") == 1, i
    for i in range(100):
        channel = b"news" if i % 3 else b"sport"
        assert sub.read_reply() == [b"message", channel, b"msg-%d" % i], i
    assert pub.publish("other", "x") == 0
    sub.send(cmd("UNSUBSCRIBE", "news"))
    assert sub.read_reply_raw() == b"*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    assert pub.publish("news", "unheard") == 0
    assert pub.publish("sport", "heard") == 1
    assert sub.read_reply() == [b"message", b"sport", b"heard"]
    sub.send(cmd("UNSUBSCRIBE"))
    assert sub.read_reply_raw() == b"*3\r\n$11\r\nunsubscribe\r\n$5\r\nsport\r\n:0\r\n"
    # Back to a normal connection.
    assert sub.command("SET", "after-pubsub", "ok") == b"OK"
    assert sub.command("GET", "after-pubsub") == b"ok"
    assert sub.command("PING") == b"PONG"
    assert pub.publish("sport", "nobody") == 0
    sub.close()


def test_redis_py_pubsub(bp):
    r = bp.client()
    p = r.pubsub()
    p.subscribe("chan")
    assert p.get_message(timeout=2) == {"type": "subscribe", "pattern": None,
                                        "channel": b"chan", "data": 1}
    for i in range(20):
        assert r.publish("chan", i) == 1
    got = []
    deadline = time.monotonic() + 5
    while len(got) < 20 and time.monotonic() < deadline:
        m = p.get_message(timeout=1)
        if m:
            got.append(m["data"])
    assert got == [str(i).encode() for i in range(20)]
    p.close()


def test_psubscribe_and_ssubscribe(bp):
    with bp.raw() as sub, bp.raw() as pub:
        sub.send(cmd("PSUBSCRIBE", "ev.*"))
        assert sub.read_reply() == [b"psubscribe", b"ev.*", 1]
        assert pub.command("PUBLISH", "ev.one", "1") == 1
        assert pub.command("PUBLISH", "other", "2") == 0
        assert pub.command("PUBLISH", "ev.two", "3") == 1
        assert sub.read_reply() == [b"pmessage", b"ev.*", b"ev.one", b"1"]
        assert sub.read_reply() == [b"pmessage", b"ev.*", b"ev.two", b"3"]
        sub.send(cmd("PUNSUBSCRIBE"))
        assert sub.read_reply() == [b"punsubscribe", b"ev.*", 0]
        sub.send(cmd("SSUBSCRIBE", "shard"))
        assert sub.read_reply() == [b"ssubscribe", b"shard", 1]
        assert pub.command("SPUBLISH", "shard", "s1") == 1
        assert sub.read_reply() == [b"smessage", b"shard", b"s1"]
        sub.send(cmd("SUNSUBSCRIBE"))
        assert sub.read_reply() == [b"sunsubscribe", b"shard", 0]
        assert sub.command("ECHO", "normal") == b"normal"


def test_subscribed_mode_replies_like_redis(bp, redis_instance):
    # In RESP2 subscribed mode Redis answers PING with a ["pong", msg] array and refuses most
    # commands with a specific error.
    payload = (cmd("SUBSCRIBE", "c") + cmd("PING") + cmd("PING", "hi") + cmd("GET", "k")
               + cmd("UNSUBSCRIBE", "c") + cmd("PING"))
    replies = compare_with_redis(bp.port, redis_instance, payload, 6)
    assert replies[1] == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert replies[2] == b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"
    assert replies[3].startswith(b"-ERR Can't execute 'get'")
    assert replies[5] == b"+PONG\r\n"


def test_many_subscribers_all_receive(bp):
    subs = [RawConn(bp.port) for _ in range(6)]
    for s in subs:
        s.send(cmd("SUBSCRIBE", "fan"))
        assert s.read_reply() == [b"subscribe", b"fan", 1]
    with bp.raw() as pub:
        for i in range(10):
            assert pub.command("PUBLISH", "fan", f"m{i}") == 6
    for s in subs:
        for i in range(10):
            assert s.read_reply() == [b"message", b"fan", b"m%d" % i]
        s.close()


def test_subscriber_disconnect_releases_upstream_subscription(bp, redis_instance):
    sub = RawConn(bp.port)
    sub.send(cmd("SUBSCRIBE", "gone"))
    assert sub.read_reply() == [b"subscribe", b"gone", 1]
    direct = redis_instance.client()
    assert direct.pubsub_numsub("gone") == [(b"gone", 1)]
    sub.close()
    wait_until(lambda: direct.pubsub_numsub("gone") == [(b"gone", 0)], 3,
               what="the upstream subscription of a disconnected client to end")
    with bp.raw() as pub:
        assert pub.command("PUBLISH", "gone", "x") == 0

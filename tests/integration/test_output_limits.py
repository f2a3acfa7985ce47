"""Output buffer limits, as Redis's client-output-buffer-limit: a pub/sub client that does not
read its messages is disconnected past client-output-limit-pubsub, and a client that does not
read its replies stops being read from past client-output-pause; the proxy's memory stays
bounded and other clients are served meanwhile."""

import socket
import time

from bp_helpers import SMALL_QUARANTINE, RawConn, ask_without_reading, encode_command as cmd, rss_kb


# What the proxy may hold for one client beyond what it holds idle: a few times the limit (the
# output kept, the replies in flight, a buffer's growth), far less than what is asked for. Measured
# from the idle proxy, so that a sanitizer build's own memory (tens of MB) does not count.
GROWTH_BOUND_KB = 32 * 1024


def idle_rss_kb(p):
    with RawConn(p.port) as c:
        assert c.command("PING") == b"PONG"
    return rss_kb(p.process.pid)


def test_pubsub_client_past_its_output_limit_is_disconnected(proxy):
    p = proxy("--client-output-limit-pubsub", "4mb", env=SMALL_QUARANTINE)
    idle = idle_rss_kb(p)
    sub = socket.create_connection(("127.0.0.1", p.port))
    sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.sendall(cmd("SUBSCRIBE", "flood"))
    time.sleep(0.3)  # the subscription is in place; from now on the subscriber reads nothing
    message = "x" * 100_000
    with RawConn(p.port, timeout=10) as pub, RawConn(p.port, timeout=10) as other:
        receivers = 1
        for i in range(300):  # 30 MB of messages, far past the 4 MB limit
            receivers = pub.command("PUBLISH", "flood", message)
            if receivers == 0:
                break
        # The subscriber was dropped: nobody receives any more.
        assert receivers == 0, "the subscriber that does not read was not disconnected"
        assert rss_kb(p.process.pid) - idle < GROWTH_BOUND_KB
        assert other.command("PING") == b"PONG"
    sub.close()


def test_client_that_does_not_read_stops_being_read(proxy, redis_instance):
    p = proxy("--client-output-pause", "8mb", env=SMALL_QUARANTINE)
    idle = idle_rss_kb(p)
    redis_instance.client().set("big", b"v" * 200_000)
    slow = ask_without_reading(p.port, cmd("GET", "big"), 2_000)  # 400 MB of replies, none read
    time.sleep(0.5)
    # Far less than the 400 MB asked for is buffered: reading stopped, and the commands sent
    # upstream before it did were bounded too.
    assert rss_kb(p.process.pid) - idle < GROWTH_BOUND_KB
    with RawConn(p.port, timeout=10) as other:
        assert other.command("SET", "k", "v") == b"OK"
        assert other.command("GET", "k") == b"v"
    slow.close()

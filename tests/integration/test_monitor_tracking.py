"""MONITOR and CLIENT TRACKING (pinned connection state)."""

import time

from bp_helpers import RawConn, encode_command as cmd


def test_monitor_sees_other_clients_commands(bp):
    with bp.raw() as mon, bp.raw() as other:
        assert mon.command("MONITOR") == b"OK"
        time.sleep(0.1)
        assert other.command("SET", "monitored", "value-1") == b"OK"
        assert other.command("GET", "monitored") == b"value-1"
        lines = [mon.read_reply() for _ in range(2)]
        assert all(isinstance(l, bytes) for l in lines), lines
        assert b'"SET" "monitored" "value-1"' in lines[0], lines
        assert b'"GET" "monitored"' in lines[1], lines
    # A new client is not in monitor mode.
    with bp.raw() as c:
        assert c.command("SET", "after-monitor", "1") == b"OK"


def test_client_tracking_redirect_invalidation(bp):
    """RESP2 tracking: invalidations go to the client named by REDIRECT, which subscribed to
    __redis__:invalidate. The ids are the proxy's client ids (CLIENT ID)."""
    with bp.raw() as inv, bp.raw() as tracked, bp.raw() as writer:
        inv_id = inv.command("CLIENT", "ID")
        inv.send(cmd("SUBSCRIBE", "__redis__:invalidate"))
        assert inv.read_reply() == [b"subscribe", b"__redis__:invalidate", 1]
        assert tracked.command("CLIENT", "TRACKING", "on", "REDIRECT", str(inv_id)) == b"OK"
        assert tracked.command("CLIENT", "GETREDIR") == inv_id
        assert tracked.command("SET", "tk", "1") == b"OK"
        assert tracked.command("GET", "tk") == b"1"
        assert writer.command("SET", "tk", "2") == b"OK"
        assert inv.read_reply() == [b"message", b"__redis__:invalidate", [b"tk"]]
        assert tracked.command("CLIENT", "TRACKING", "off") == b"OK"
        assert tracked.command("GET", "tk") == b"2"


def test_client_tracking_redirect_to_unknown_client_like_redis(bp, redis_instance):
    with bp.raw() as c:
        c.send(cmd("CLIENT", "TRACKING", "on", "REDIRECT", "987654"))
        got = c.read_reply_raw()
    with RawConn(redis_instance.port) as d:
        d.send(cmd("CLIENT", "TRACKING", "on", "REDIRECT", "987654"))
        assert got == d.read_reply_raw()

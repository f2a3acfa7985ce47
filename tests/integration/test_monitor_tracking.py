"""MONITOR and CLIENT TRACKING (pinned connection state). A MONITOR through the proxy shows the
clients' commands, not the proxy's own traffic (proxy/monitor_filter.h): a MONITOR on Redis
directly, beside it, shows that traffic was there."""

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


def monitor_lines(conn, marker, timeout=10.0):
    """The lines a monitor shows up to and with the first that holds `marker`, as text."""
    lines = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = conn.read_reply()
        assert isinstance(line, bytes), line
        lines.append(line.decode("latin-1"))
        if marker in lines[-1]:
            return lines
    raise AssertionError(f"no {marker!r} in {lines[-20:]}")


def command_of(line):
    """'SET "k" "v"' of '+1.2 [0 127.0.0.1:5] "SET" "k" "v"'; senders stay out."""
    return line.split("] ", 1)[1]


def start_monitor(port, password=None):
    conn = RawConn(port)
    if password:
        assert conn.command("AUTH", password) == b"OK"
    assert conn.command("MONITOR") == b"OK"
    return conn


SWEEP_WORDS = ("sweep-lock", "SCAN", "SCRIPT", "EVALSHA", "bloomproxy:background", "INFO",
               "SELECT", "NO-TOUCH", "[0 lua]")


def test_monitor_hides_every_proxys_sweep(proxy, redis_instance):
    """Two proxies sweep every second (one holds the lock and runs passes, both renew or try
    it): neither's MONITOR shows any of it, while Redis's own MONITOR does. One proxy runs two
    threads: each sweeps, and a MONITOR hides the other thread's connections too."""
    sweep = ("--sweep-interval", "1", "--sweep-grace", "1")
    p1, p2 = proxy(*sweep, "--threads", "2"), proxy(*sweep)
    with RawConn(p1.port) as c:
        assert c.command("BF.RESERVE", "swept", "0.01", "100") == b"OK"  # internal keys to scan
        assert c.command("BF.ADD", "swept", "x") == 1
    direct = start_monitor(redis_instance.port)
    m1, m2 = start_monitor(p1.port), start_monitor(p2.port)
    with direct, m1, m2, RawConn(p1.port) as c1, RawConn(p2.port) as c2:
        sent = []
        for i in range(16):  # 4 s: several lock rounds of each proxy, passes of the holder
            for name, c in (("c1", c1), ("c2", c2)):
                assert c.command("SET", f"{name}-{i}", "v") == b"OK"
                sent.append(f'"SET" "{name}-{i}" "v"')
            time.sleep(0.25)
        assert c1.command("SET", "the-end", "v") == b"OK"
        sent.append('"SET" "the-end" "v"')
        seen_direct = monitor_lines(direct, '"the-end"')
        seen = [monitor_lines(m, '"the-end"') for m in (m1, m2)]
    text = "\n".join(seen_direct)
    assert text.count("bloomproxy:sweep-lock") >= 4, text  # both proxies' lock rounds
    assert '"SCAN"' in text and "bloomproxy:background" in text and "[0 lua]" in text, text
    for lines in seen:
        assert [command_of(line) for line in lines] == sent, lines
        for word in SWEEP_WORDS:
            assert not [line for line in lines if word in line], word


def test_monitor_hides_connection_setup(proxy, redis_factory):
    """Connections the proxy opens after MONITOR started (RESP3 ones, a named client's pinned one,
    WAIT's) log in with upstream-password and say HELLO 3, CLIENT SETNAME and, before WAIT,
    PING: Redis's MONITOR shows all that, the proxy's only what the clients sent. A BF.* command's
    plan shows: it is what reached Redis for the client."""
    upstream = redis_factory(password="upw")
    p = proxy("--upstream-password", "upw", upstream=upstream.address)
    direct = start_monitor(upstream.port, password="upw")
    via = start_monitor(p.port)
    with direct, via, RawConn(p.port) as r3, RawConn(p.port) as named, RawConn(p.port) as w:
        r3.send(cmd("HELLO", "3"))
        assert isinstance(r3.read_reply(), (dict, list))
        assert r3.command("SET", "r3", "1") == b"OK"
        assert named.command("CLIENT", "SETNAME", "worker") == b"OK"
        assert named.command("MULTI") == b"OK"
        assert named.command("SET", "m", "1") == b"QUEUED"
        assert named.command("EXEC") == [b"OK"]
        assert w.command("WAIT", "0", "0") == 0
        assert w.command("BF.ADD", "planned", "x") == 1
        assert w.command("SET", "the-end", "v") == b"OK"
        seen_direct = monitor_lines(direct, '"the-end"')
        seen = monitor_lines(via, '"the-end"')
    text = "\n".join(seen_direct)
    for shown in ('"AUTH" "(redacted)"', '"INFO" "server"', '"HELLO" "3"',
                  '"CLIENT" "SETNAME" "worker"', '"PING"'):
        assert shown in text, (shown, text)
    commands = [command_of(line) for line in seen]
    assert commands[:5] == ['"SET" "r3" "1"', '"MULTI"', '"SET" "m" "1"', '"EXEC"',
                            '"WAIT" "0" "0"'], commands
    assert any('"planned"' in c for c in commands[5:-1]), commands
    assert commands[-1] == '"SET" "the-end" "v"', commands
    for word in ("AUTH", "INFO", "HELLO", "SETNAME", '"PING"'):
        assert not [c for c in commands if word in c], (word, commands)

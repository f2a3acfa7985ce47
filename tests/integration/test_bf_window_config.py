"""bf-window rules through a real proxy: the filters BF.ADD, BF.MADD and BF.INSERT create under a
matching name are windowed with the rule's window, slots, error and capacity (BF.INFO's Window
and Slots show it); a command's own WINDOW, CAPACITY and ERROR win; BF.RESERVE, other names and
filters that exist are left alone; a SIGHUP reload applies to filters created after it; inside
MULTI a windowed filter is refused, not made plain. What a windowed filter does over time is not
tested here."""

import signal

from bp_helpers import RawConn, wait_until


def info(c, key):
    """BF.INFO key as {field: value}."""
    reply = c.command("BF.INFO", key)
    assert isinstance(reply, list), f"BF.INFO {key}: {reply!r}"
    return {bytes(reply[i]).decode(): reply[i + 1] for i in range(0, len(reply), 2)}


def window_of(c, key):
    i = info(c, key)
    return i.get("Window"), i.get("Slots"), i["Capacity"]


def test_rules_make_new_filters_windowed(proxy):
    p = proxy("--bf-window", "w:* 60000 capacity 1000 error 0.001",
              "--bf-window", "t:* 2000 slots 5", "--bf-window", "w:late:* 5")
    with RawConn(p.port) as c:
        assert c.command("BF.ADD", "w:add", "a") == 1
        assert window_of(c, "w:add") == (60000, 3, 1000)
        assert c.command("BF.MADD", "w:madd", "a", "b") == [1, 1]
        assert window_of(c, "w:madd") == (60000, 3, 1000)
        assert c.command("BF.INSERT", "t:ins", "ITEMS", "a") == [1]
        assert window_of(c, "t:ins") == (2000, 5, 100)
        # First match wins: w:late:* comes after w:*.
        assert c.command("BF.ADD", "w:late:x", "a") == 1
        assert window_of(c, "w:late:x") == (60000, 3, 1000)

        # The command's own CAPACITY wins over the rule's, its own WINDOW over the whole rule.
        assert c.command("BF.INSERT", "w:cap", "CAPACITY", "50", "ITEMS", "a") == [1]
        assert window_of(c, "w:cap") == (60000, 3, 50)
        assert c.command("BF.INSERT", "w:own", "WINDOW", "9000", "SLOTS", "2", "ITEMS", "a") == [1]
        assert window_of(c, "w:own") == (9000, 2, 100)

        # Other names, BF.RESERVE, and a filter that already exists: plain.
        assert c.command("BF.ADD", "plain", "a") == 1
        assert window_of(c, "plain") == (None, None, 100)
        assert c.command("BF.RESERVE", "w:reserved", "0.01", "100") == b"OK"
        assert c.command("BF.ADD", "w:reserved", "a") == 1
        assert window_of(c, "w:reserved") == (None, None, 100)


def test_reload_applies_to_filters_created_after(proxy, tmp_path):
    conf = tmp_path / "bloomproxy.conf"
    conf.write_text("bf-window a:* 1000\n")
    p = proxy("--config", conf)
    with RawConn(p.port) as c:
        assert c.command("BF.ADD", "a:1", "x") == 1
        assert c.command("BF.ADD", "b:1", "x") == 1
        assert window_of(c, "a:1")[:2] == (1000, 3)
        assert window_of(c, "b:1")[:2] == (None, None)

    conf.write_text("bf-window a:* 1000\nbf-window b:* 7000 slots 4\n")
    p.process.send_signal(signal.SIGHUP)
    wait_until(lambda: "bf-window is now a:* 1000; b:* 7000 slots 4" in p.log(), 10,
               what="the reload's bf-window line")

    def created_windowed():
        with RawConn(p.port) as c:
            c.command("DEL", "b:2")
            c.command("BF.ADD", "b:2", "x")
            return window_of(c, "b:2")[:2] == (7000, 4)

    wait_until(created_windowed, 10, what="b:2 created with the new rule")
    with RawConn(p.port) as c:
        assert window_of(c, "b:1")[:2] == (None, None)  # created before: still plain


def test_inside_multi_a_windowed_filter_is_not_created(proxy):
    """Inside MULTI a BF command runs as one script, where no slot can be picked by the
    upstream's clock: creating a windowed filter there gets the error using one does; a plain
    filter that exists under a rule's name is used as usual."""
    p = proxy("--bf-window", "w:* 60000")
    refused = b"ERR bloomproxy: BF commands on a windowed filter cannot run inside MULTI"
    with RawConn(p.port) as c:
        assert c.command("BF.RESERVE", "w:plain", "0.01", "100") == b"OK"
        assert c.command("MULTI") == b"OK"
        for args in (("BF.ADD", "w:new", "a"), ("BF.INSERT", "x:new", "WINDOW", "5000", "ITEMS",
                                                "a"), ("BF.ADD", "w:plain", "a")):
            assert c.command(*args) == b"QUEUED"
        new, insert, plain = c.command("EXEC")
        assert bytes(new).startswith(refused), new
        assert bytes(insert).startswith(refused), insert
        assert plain == 1
        assert c.command("EXISTS", "w:new", "x:new") == 0
        assert window_of(c, "w:plain") == (None, None, 100)

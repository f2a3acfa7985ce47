"""Options from the environment (BLOOMPROXY_<NAME>, precedence flags > environment > file,
--test-conf's sources, unknown names refused) and SIGHUP reload (a new user can AUTH while open
connections go on, a removed user's connections close, the log level changes, a broken file
changes nothing, a restart-only change is logged and not applied, every loop of --threads
reloads)."""

import re
import signal
import subprocess

from bp_helpers import (BLOOMPROXY_BIN, HOST, RawConn, free_port, proxy_env, wait_until)

WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
NOPERM_SET = b"-NOPERM this user has no permissions to run the 'set' command\r\n"


def run_bin(*args, env=None):
    return subprocess.run([BLOOMPROXY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=10, env=proxy_env(env), stdin=subprocess.DEVNULL)


def info_field(port, name, auth=None):
    with RawConn(port) as c:
        if auth:
            assert c.command("AUTH", *auth) == b"OK"
        info = c.command("INFO", "proxy").decode()
    m = re.search(rf"^{name}:(.*)\r$", info, re.M)
    assert m, info
    return m.group(1)


def proxy_lines(p):
    """The proxy's own log lines (the fixture writes the command line first, as "$ ...")."""
    return [line for line in p.log().splitlines() if not line.startswith("$ ")]


def count(p, text):
    return sum(text in line for line in proxy_lines(p))


def sighup_and_wait(p, text, timeout=10):
    """SIGHUP, then wait for one more log line containing `text`; returns that line."""
    before = count(p, text)
    p.process.send_signal(signal.SIGHUP)
    wait_until(lambda: count(p, text) > before, timeout, what=f"{text!r} in the log")
    assert p.alive()
    return [line for line in proxy_lines(p) if text in line][-1]


RELOADED = "Received SIGHUP: configuration reloaded"
FAILED = "Configuration reload failed"

# ---------------------------------------------------------------------------------------------
# Environment


def test_environment_sets_an_option(proxy):
    p = proxy(env={"BLOOMPROXY_MAXCLIENTS": "123", "BLOOMPROXY_REQUIREPASS": "envpw"})
    assert info_field(p.port, "maxclients", auth=("envpw",)) == "123"
    with RawConn(p.port) as c:
        assert c.command("AUTH", "wrong").startswith(b"WRONGPASS")


def test_flag_beats_environment_beats_file(proxy, tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text("maxclients 77\ntimeout 40\n")
    env = {"BLOOMPROXY_MAXCLIENTS": "123", "BLOOMPROXY_TIMEOUT": "50"}
    p = proxy("--config", conf, env=env)
    assert info_field(p.port, "maxclients") == "123"  # environment over file
    q = proxy("--config", conf, "--maxclients", "99", env=env)
    assert info_field(q.port, "maxclients") == "99"  # flag over environment
    r = proxy("--config", conf)
    assert info_field(r.port, "maxclients") == "77"  # file over default


def test_environment_user_line(proxy):
    p = proxy(env={"BLOOMPROXY_USER": "carol 'c pw' nocommands +get +ping"})
    with RawConn(p.port) as c:
        assert c.command("AUTH", "carol", "c pw") == b"OK"
        assert c.command("PING") == b"PONG"
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
        assert c.read_reply_raw() == NOPERM_SET


def test_test_conf_shows_sources(tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text("# sources\nupstream 127.0.0.1:1\ntimeout 40\nmaxclients 77\n")
    res = run_bin("--config", conf, "--maxclients", "99", "--test-conf",
                  env={"BLOOMPROXY_BF_ERROR_RATE": "0.05", "BLOOMPROXY_TIMEOUT": "50",
                       "BLOOMPROXY_REQUIREPASS": "hidden-secret"})
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "configuration OK" in out
    assert f"  upstream 127.0.0.1:1 ({conf}:2)\n" in out, out
    assert "  timeout 50 (env BLOOMPROXY_TIMEOUT)\n" in out, out
    assert "  maxclients 99 (--maxclients)\n" in out, out
    assert "  bf-error-rate 0.05 (env BLOOMPROXY_BF_ERROR_RATE)\n" in out, out
    assert "  requirepass (set) (env BLOOMPROXY_REQUIREPASS)\n" in out, out
    assert "hidden-secret" not in out + res.stderr
    assert "bf-expansion" not in out  # at its default


def test_unknown_environment_option_is_an_error():
    res = run_bin("--port", free_port(), "--bind", HOST, "--upstream", "127.0.0.1:1",
                  env={"BLOOMPROXY_MAXCLIENT": "5"})
    assert res.returncode == 1, res.stdout + res.stderr
    assert "unknown option in environment: BLOOMPROXY_MAXCLIENT" in res.stderr
    # The names the test scripts use are not options, and not errors.
    ok = run_bin("--upstream", "127.0.0.1:1", "--test-conf",
                 env={"BLOOMPROXY_BIN": BLOOMPROXY_BIN, "BLOOMPROXY_ARGS": "--threads 2"})
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_bad_environment_value_names_the_variable():
    res = run_bin("--upstream", "127.0.0.1:1", "--test-conf",
                  env={"BLOOMPROXY_BF_ERROR_RATE": "2"})
    assert res.returncode == 1
    assert "BLOOMPROXY_BF_ERROR_RATE: '2' is not an error rate in (0, 1)" in res.stderr


# ---------------------------------------------------------------------------------------------
# Reload


def test_reload_adds_a_user_and_open_connections_go_on(proxy, tmp_path):
    conf = tmp_path / "p.conf"
    base = "requirepass rootpw\nuser alice apw\n"
    conf.write_text(base)
    p = proxy("--config", conf)
    alice = RawConn(p.port, timeout=10)
    root = RawConn(p.port, timeout=10)
    try:
        assert alice.command("AUTH", "alice", "apw") == b"OK"
        assert alice.command("SET", "k", "before") == b"OK"
        assert root.command("AUTH", "rootpw") == b"OK"
        with RawConn(p.port) as c:
            c.send(b"*3\r\n$4\r\nAUTH\r\n$3\r\nbob\r\n$3\r\nbpw\r\n")
            assert c.read_reply_raw() == WRONGPASS

        conf.write_text(base + "user bob bpw nocommands +get +ping\n")
        line = sighup_and_wait(p, RELOADED)
        assert "no TLS configured" in line
        assert count(p, "Configuration reload: user is now (set)") == 1
        with RawConn(p.port) as c:
            assert c.command("AUTH", "bob", "bpw") == b"OK"
            assert c.command("GET", "k") == b"before"
            c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
            assert c.read_reply_raw() == NOPERM_SET
        # The connections opened before the reload go on, with their users and rules.
        assert alice.command("GET", "k") == b"before"
        assert alice.command("SET", "k", "after") == b"OK"
        assert root.command("GET", "k") == b"after"

        # Alice removed: her connection closes (as Redis's ACL DELUSER), root's goes on.
        conf.write_text("requirepass rootpw\nuser bob bpw nocommands +get +ping\n")
        sighup_and_wait(p, RELOADED)
        assert alice.is_closed(wait=5)
        assert root.command("GET", "k") == b"after"
        with RawConn(p.port) as c:
            c.send(b"*3\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n$3\r\napw\r\n")
            assert c.read_reply_raw() == WRONGPASS
    finally:
        alice.close()
        root.close()


def test_reload_changes_log_level_and_limits(proxy, tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text("requirepass rootpw\nloglevel notice\nmaxclients 100\n")
    p = proxy("--config", conf)
    with RawConn(p.port) as c:
        assert c.command("AUTH", "nope").startswith(b"WRONGPASS")
    wait_until(lambda: count(p, "AUTH failed for user 'default'") == 1, 5, what="AUTH logged")
    assert info_field(p.port, "maxclients", auth=("rootpw",)) == "100"

    conf.write_text("requirepass rootpw\nloglevel warning\nmaxclients 200\n")
    p.process.send_signal(signal.SIGHUP)
    # At level warning the reload's own notices are not written: its effect is the signal.
    wait_until(lambda: info_field(p.port, "maxclients", auth=("rootpw",)) == "200", 10,
               what="maxclients 200")
    with RawConn(p.port) as c:
        assert c.command("AUTH", "nope").startswith(b"WRONGPASS")
        assert c.command("AUTH", "rootpw") == b"OK"  # a round trip after the failed AUTH
    assert count(p, "AUTH failed for user 'default'") == 1


def test_broken_file_changes_nothing(proxy, tmp_path):
    conf = tmp_path / "p.conf"
    good = "maxclients 100\nuser alice apw\n"
    conf.write_text(good)
    p = proxy("--config", conf)
    with RawConn(p.port, timeout=10) as c:
        assert c.command("AUTH", "alice", "apw") == b"OK"
        conf.write_text("maxclients 300\nuser bob bpw\nmaxclients lots\nnosuchdirective 1\n")
        line = sighup_and_wait(p, FAILED)
        assert f"{conf}:3: maxclients: 'lots' is not a valid number" in line, line
        assert f"{conf}:4: unknown directive 'nosuchdirective'" in line, line
        assert "keeping the current configuration" in line, line
        assert count(p, RELOADED) == 0
        # Nothing changed: not maxclients (line 1), not bob (line 2); alice goes on.
        assert info_field(p.port, "maxclients") == "100"
        with RawConn(p.port) as d:
            d.send(b"*3\r\n$4\r\nAUTH\r\n$3\r\nbob\r\n$3\r\nbpw\r\n")
            assert d.read_reply_raw() == WRONGPASS
        assert c.command("SET", "k", "v") == b"OK"
        # A user rule naming an unknown command is refused at reload as at start.
        conf.write_text(good + "user bob bpw +nosuchcommand\n")
        line = sighup_and_wait(p, FAILED)
        assert "unknown command 'nosuchcommand'" in line, line
        # Fixed: the reload goes through.
        conf.write_text("maxclients 300\nuser alice apw\n")
        sighup_and_wait(p, RELOADED)
        assert info_field(p.port, "maxclients") == "300"
        assert c.command("GET", "k") == b"v"


def test_restart_only_change_is_logged_and_not_applied(proxy, tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text("upstream-kind redis\nmaxclients 100\n")
    p = proxy("--config", conf)
    assert info_field(p.port, "upstream_kind") == "redis"
    conf.write_text("upstream-kind sharding-proxy\nmaxclients 150\n")
    line = sighup_and_wait(p, RELOADED)
    assert "(1 changed, 1 needing a restart)" in line, line
    assert count(p, "upstream-kind changed in the config file: needs a restart") == 1
    assert info_field(p.port, "upstream_kind") == "redis"  # kept
    assert info_field(p.port, "maxclients") == "150"  # applied
    # A flag given at start still wins over the file after a reload.
    assert count(p, "port changed") == 0


def test_reload_with_threads_reaches_every_loop(proxy, tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text("user alice apw\n")
    p = proxy("--config", conf, "--threads", "2")
    conf.write_text("user alice apw\nuser bob bpw\n")
    p.process.send_signal(signal.SIGHUP)
    # Each loop says when it has the new configuration; the option's line is written once.
    for n in (1, 2):
        wait_until(lambda: count(p, f"(1 changed, 0 needing a restart; event loop {n} of 2)") == 1,
                   10, what=f"loop {n}'s reload line")
    assert count(p, RELOADED) == 2
    assert count(p, "Configuration reload: user is now") == 1

    def all_accept():
        for _ in range(16):  # new connections spread over both loops
            with RawConn(p.port) as c:
                if c.command("AUTH", "bob", "bpw") != b"OK":
                    return False
        return True

    wait_until(all_accept, 10, what="bob accepted by both loops")

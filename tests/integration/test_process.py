"""The process: signals (SIGTERM/SIGINT exit 0), --help, bad flags, --config and --test-conf."""

import re
import signal
import subprocess
import time

from bp_helpers import (BLOOMPROXY_BIN, HOST, _die_with_parent, RawConn, encode_command as cmd, free_port,
                        ping_ok, proxy_env, tail, wait_until)


def run_bin(*args, timeout=10):
    return subprocess.run([BLOOMPROXY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=proxy_env(), stdin=subprocess.DEVNULL)


def test_sigint_exits_0(proxy):
    p = proxy()
    with RawConn(p.port) as c:
        assert c.command("SET", "k", "v") == b"OK"
    assert p.terminate_and_wait(signal.SIGINT) == 0


def test_sigterm_with_busy_clients_exits_0(proxy):
    p = proxy()
    blocked = RawConn(p.port, timeout=15)
    blocked.send(cmd("BLPOP", "never", "0"))
    sub = RawConn(p.port, timeout=15)
    sub.send(cmd("SUBSCRIBE", "ch"))
    assert sub.read_reply() == [b"subscribe", b"ch", 1]
    multi = RawConn(p.port, timeout=15)
    assert multi.command("MULTI") == b"OK"
    idle = RawConn(p.port, timeout=15)
    assert idle.command("PING") == b"PONG"
    time.sleep(0.2)
    t0 = time.monotonic()
    assert p.terminate_and_wait(signal.SIGTERM, timeout=10) == 0
    assert time.monotonic() - t0 < 10
    for c in (blocked, sub, multi, idle):
        c.read_until_eof(5)  # every client connection is closed
        c.close()


def test_help_exits_0_and_lists_flags():
    res = run_bin("--help")
    assert res.returncode == 0, res.stderr
    out = res.stdout + res.stderr
    for flag in ("--port", "--bind", "--upstream", "--unixsocket", "--requirepass",
                 "--maxclients", "--timeout", "--config", "--test-conf"):
        assert flag in out, f"--help does not mention {flag}:\n{out}"


def test_bad_flags_exit_nonzero():
    base = ["--port", free_port(), "--bind", HOST, "--upstream", "127.0.0.1:1"]
    for bad in (["--no-such-flag"], ["--port", "notaport"], ["--maxclients", "-3"],
                ["--port"]):
        args = base + bad
        try:
            res = run_bin(*args, timeout=5)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{bad}: bloomproxy started instead of refusing the flag")
        assert res.returncode != 0, f"{args}: exit 0\n{res.stdout}{res.stderr}"
        assert (res.stdout + res.stderr).strip(), f"{args}: exited without a message"


def write(path, text):
    path.write_text(text)
    return path


def test_test_conf_good_file(tmp_path):
    conf = write(tmp_path / "good.conf",
                 "# a comment\n\n"
                 f"port {free_port()}\n"
                 "bind 127.0.0.1\n"
                 "upstream 127.0.0.1:1\n"
                 "maxclients 100\n"
                 "timeout 30\n"
                 "loglevel notice\n"
                 "requirepass secret\n")
    t0 = time.monotonic()
    res = run_bin("--config", conf, "--test-conf")
    assert res.returncode == 0, res.stdout + res.stderr
    assert time.monotonic() - t0 < 5


def test_test_conf_bad_file_reports_every_error(tmp_path):
    conf = write(tmp_path / "bad.conf",
                 "port notanumber\n"
                 "upstream 127.0.0.1:1\n"
                 "nosuchdirective 1\n"
                 "maxclients -5\n"
                 "loglevel shouty\n")
    res = run_bin("--config", conf, "--test-conf")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    # Each of the four bad lines is reported (by its directive, value or line number).
    for line_no, names in ((1, ("notanumber", r"\bport\b")), (3, ("nosuchdirective",)),
                           (4, ("maxclients", "-5")), (5, ("shouty", "loglevel"))):
        assert any(re.search(n, out) for n in names) or re.search(r"\bline %d\b" % line_no, out), \
            f"error on line {line_no} not reported:\n{out}"


def test_test_conf_missing_file(tmp_path):
    res = run_bin("--config", tmp_path / "does-not-exist.conf", "--test-conf")
    assert res.returncode != 0
    assert "does-not-exist.conf" in res.stdout + res.stderr


def start_raw(tmp_path, *args):
    log = tmp_path / "bp.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen([BLOOMPROXY_BIN, *map(str, args)], stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=proxy_env(), preexec_fn=_die_with_parent)
    return proc, log


def stop_raw(proc, log):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("no exit within 10 s of SIGTERM:\n" + tail(log))
    assert code == 0, f"exit code {code}:\n" + tail(log)


def test_config_file_is_used_and_flags_override_it(tmp_path, redis_instance):
    conf_port, flag_port = free_port(), free_port()
    conf = write(tmp_path / "run.conf",
                 f"port {conf_port}\nbind 127.0.0.1\n"
                 f"upstream 127.0.0.1:{redis_instance.port}\nrequirepass fromconf\n")
    proc, log = start_raw(tmp_path, "--config", conf)
    try:
        wait_until(lambda: ping_ok(conf_port) or proc.poll() is not None, 10,
                   what="bloomproxy started from a config file")
        assert proc.poll() is None, tail(log)
        with RawConn(conf_port) as c:
            c.send(cmd("GET", "k"))
            assert c.read_reply_raw() == b"-NOAUTH Authentication required.\r\n"
            assert c.command("AUTH", "fromconf") == b"OK"
            assert c.command("SET", "k", "conf") == b"OK"
        assert redis_instance.client().get("k") == b"conf"
    finally:
        stop_raw(proc, log)
    proc, log = start_raw(tmp_path, "--config", conf, "--port", flag_port, "--requirepass",
                          "fromflag")
    try:
        wait_until(lambda: ping_ok(flag_port) or proc.poll() is not None, 10,
                   what="bloomproxy with --port overriding the config file")
        assert proc.poll() is None, tail(log)
        assert not ping_ok(conf_port), "listening on the config file's port despite --port"
        with RawConn(flag_port) as c:
            c.send(cmd("AUTH", "fromconf"))
            assert c.read_reply_raw().startswith(b"-WRONGPASS")
            assert c.command("AUTH", "fromflag") == b"OK"
            assert c.command("GET", "k") == b"conf"
    finally:
        stop_raw(proc, log)


def test_sigterm_finishes_in_flight_request(proxy):
    """A reply the upstream is still computing when SIGTERM arrives is delivered before the
    client connection is closed (shutdown-timeout-ms defaults to 5 s)."""
    p = proxy()
    c = RawConn(p.port, timeout=10)
    assert c.command("PING") == b"PONG"
    busy_script = ("local t0 = redis.call('TIME') "
                   "while true do local t = redis.call('TIME') "
                   "if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 700000 then break end end "
                   "return 'done'")
    c.send(cmd("EVAL", busy_script, "0"))
    time.sleep(0.2)
    p.process.send_signal(signal.SIGTERM)
    assert c.read_until_eof(8) == b"$4\r\ndone\r\n"
    assert p.process.wait(10) == 0
    c.close()


def test_version_matches_info(proxy):
    res = run_bin("--version")
    assert res.returncode == 0, res.stderr
    p = proxy()
    with RawConn(p.port) as c:
        info = c.command("INFO").decode()
    version = re.search(r"^proxy_version:(\S+)\r?$", info, re.M)
    assert version, info
    assert version.group(1) in res.stdout + res.stderr


def test_config_file_as_only_argument(tmp_path, redis_instance):
    port = free_port()
    conf = write(tmp_path / "pos.conf",
                 f"port {port}\nbind 127.0.0.1\nupstream 127.0.0.1:{redis_instance.port}\n")
    proc, log = start_raw(tmp_path, conf)
    try:
        wait_until(lambda: ping_ok(port) or proc.poll() is not None, 10,
                   what="bloomproxy started with the config file as its argument")
        assert proc.poll() is None, tail(log)
        with RawConn(port) as c:
            assert c.command("SET", "pos", "1") == b"OK"
    finally:
        stop_raw(proc, log)


def test_logfile(proxy, tmp_path):
    path = tmp_path / "bp-file.log"
    p = proxy("--logfile", path)
    with RawConn(p.port) as c:
        assert c.command("PING") == b"PONG"
    assert p.terminate_and_wait() == 0
    assert path.exists() and path.stat().st_size > 0


def test_extra_users(proxy):
    p = proxy("--user", "alice:alicepw", "--requirepass", "defpw")
    with RawConn(p.port) as c:
        c.send(cmd("AUTH", "alice", "wrong"))
        assert c.read_reply_raw() == \
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        c.send(cmd("GET", "k"))
        assert c.read_reply_raw() == b"-NOAUTH Authentication required.\r\n"
        assert c.command("AUTH", "alice", "alicepw") == b"OK"
        assert c.command("SET", "k", "alice") == b"OK"
    with RawConn(p.port) as c:
        assert c.command("AUTH", "defpw") == b"OK"
        assert c.command("GET", "k") == b"alice"

"""Logs: `log-format json` (one JSON object per line: ts, level, msg, pid and fields such as
client, upstream, command), the text format unchanged (Redis's "pid:P dd Mon yyyy
hh:mm:ss.mmm <mark> message"), and secrets (requirepass, users' passwords, upstream-password,
tls-key-file-pass) never in a log line, on stdout/stderr, in config errors or in --test-conf."""

import datetime
import json
import re
import signal
import subprocess

import pytest

from bp_helpers import (BLOOMPROXY_BIN, HOST, RawConn, _die_with_parent, free_port, proxy_env,
                        start_redis_with_retry, wait_until)

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TEXT_RE = re.compile(r"^(\d+):P \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} ([.\-*#]) (.*)$")
LEVELS = {"debug", "verbose", "notice", "warning"}
MARKS = {".": "debug", "-": "verbose", "*": "notice", "#": "warning"}
VERSION_RE = r"\d+\.\d+\.\d+"


class Running:
    """A bloomproxy started here (not by the fixture, whose output file starts with the command
    line and so with any secret passed as a flag): stdout, stderr and the logfile apart."""

    def __init__(self, tmp_path, name, args, env=None, port=None):
        self.dir = tmp_path / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port if port is not None else free_port()
        self.logfile = self.dir / "bloomproxy.log"
        self.stdout = self.dir / "stdout"
        self.stderr = self.dir / "stderr"
        argv = [BLOOMPROXY_BIN, "--port", str(self.port), "--bind", HOST,
                "--logfile", str(self.logfile), *map(str, args)]
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=proxy_env(env), cwd=self.dir,
                                         preexec_fn=_die_with_parent)

    def wait_listening(self):
        def answers():
            assert self.proc.poll() is None, f"exited {self.proc.returncode}: {self.output()}"
            with RawConn(self.port, timeout=2) as c:
                c.send(b"*1\r\n$4\r\nPING\r\n")
                return c.read_reply() is not None
        wait_until(answers, 10, what="bloomproxy answering")
        return self

    def log_text(self):
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def output(self):
        return (self.stdout.read_bytes() + self.stderr.read_bytes()).decode(errors="replace")

    def wait_log(self, pattern, timeout=10):
        return wait_until(lambda: re.search(pattern, self.log_text()), timeout,
                          what=f"log line matching {pattern!r}; log:\n{self.log_text()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("bloomproxy did not exit after SIGTERM")


@pytest.fixture
def running(tmp_path):
    started = []

    def start(*args, env=None, name=None, port=None):
        r = Running(tmp_path, name or f"bp{len(started)}", args, env=env, port=port)
        started.append(r)
        return r

    yield start
    for r in started:
        if r.proc.poll() is None:
            r.proc.kill()
            r.proc.wait(5)


def json_lines(text, pid):
    """Every line parsed; each checked for the base keys and their formats."""
    lines = text.splitlines()
    assert lines, "no log line"
    now = datetime.datetime.now(datetime.timezone.utc)
    records = []
    for line in lines:
        rec = json.loads(line)  # raises on a line that is not one JSON value
        assert isinstance(rec, dict), line
        assert isinstance(rec.get("ts"), str) and TS_RE.match(rec["ts"]), line
        ts = datetime.datetime.strptime(rec["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc)
        assert abs((now - ts).total_seconds()) < 120, f"ts not UTC now ({now}): {line}"
        assert rec.get("level") in LEVELS, line
        assert isinstance(rec.get("msg"), str) and rec["msg"], line
        assert type(rec.get("pid")) is int and rec["pid"] == pid, line
        for key in ("client", "upstream", "command", "user"):
            assert key not in rec or isinstance(rec[key], str), line
        assert "client_id" not in rec or type(rec["client_id"]) is int, line
        records.append(rec)
    return records


def find(records, pattern, **fields):
    hits = [r for r in records if re.search(pattern, r["msg"])
            and all(r.get(k) == v for k, v in fields.items())]
    assert hits, f"no line matching {pattern!r} with {fields}; lines:\n" + \
        "\n".join(json.dumps(r) for r in records)
    return hits[0]


# ---------------------------------------------------------------------------------------------
# JSON format


def test_json_lines_have_base_keys_and_fields(running, redis_instance, tmp_path):
    upstream = "%s:%d" % redis_instance.address
    sock = tmp_path / "bp.sock"
    r = running("--upstream", upstream, "--log-format", "json", "--loglevel", "verbose",
                "--requirepass", "json-pass-3141", "--unixsocket", sock).wait_listening()
    with RawConn(r.port) as c:
        client_addr = "%s:%d" % c.sock.getsockname()[:2]
        assert c.command("AUTH", "nobody", "wrong").startswith(b"WRONGPASS")
    with RawConn(unix=str(sock)) as c:
        assert c.command("AUTH", "wrong-again").startswith(b"WRONGPASS")
    with RawConn(r.port) as c:
        post_addr = "%s:%d" % c.sock.getsockname()[:2]
        c.send(b"POST / HTTP/1.1\r\nHost: x\r\n\r\n")
        c.read_until_eof()
    with RawConn(r.port) as c:
        c.send(b"*1\r\n$x\r\n")  # a protocol error (logged at verbose)
        c.read_until_eof()
    r.wait_log(r"Protocol error")
    assert r.stop() == 0
    recs = json_lines(r.log_text(), r.proc.pid)

    ready = find(recs, r"^bloomproxy %s ready to accept connections on 127\.0\.0\.1:%d, "
                       r"upstream %s$" % (VERSION_RE, r.port, re.escape(upstream)))
    assert ready["level"] == "notice" and ready["upstream"] == upstream
    find(recs, r"ready to accept connections at " + re.escape(str(sock)), upstream=upstream)

    auth = find(recs, r"^AUTH failed for user 'nobody' from %s \(client id=\d+\)$"
                % re.escape(client_addr), level="notice", client=client_addr, user="nobody")
    assert auth["client_id"] == int(re.search(r"id=(\d+)", auth["msg"]).group(1))
    unix_auth = find(recs, r"^AUTH failed for user 'default'", user="default")
    assert unix_auth["client"].startswith(str(sock)), unix_auth

    attack = find(recs, r"Possible SECURITY ATTACK", level="warning", client=post_addr)
    assert attack["command"] in ("post", "host:"), attack
    proto = find(recs, r"^Protocol error \(.*\) from client: id=\d+ addr=", level="verbose")
    assert proto["client"].startswith("127.0.0.1:") and type(proto["client_id"]) is int

    find(recs, r"^Received SIGTERM, finishing in-flight replies and shutting down$",
         level="notice")
    find(recs, r"^bloomproxy is now ready to exit, bye bye\.\.\.$")
    # Nothing but the log file is written to: stdout and stderr stay empty.
    assert r.output() == ""


def test_json_upstream_unreachable_and_lost(running, tmp_path):
    dead = "127.0.0.1:%d" % free_port()
    r = running("--upstream", dead, "--log-format", "json").wait_listening()
    r.wait_log(r"connection failed")
    assert r.stop() == 0
    recs = json_lines(r.log_text(), r.proc.pid)
    failed = find(recs, r"^upstream %s: connection failed: .* \(retrying\)$" % re.escape(dead))
    assert failed["level"] == "warning" and failed["upstream"] == dead

    redis = start_redis_with_retry(tmp_path / "redis")
    try:
        upstream = "%s:%d" % redis.address
        r = running("--upstream", upstream, "--log-format", "json",
                    name="lost").wait_listening()
        with RawConn(r.port) as c:
            assert c.command("SET", "k", "v") == b"OK"
        redis.kill()
        r.wait_log(r"connection lost")
        assert r.stop() == 0
    finally:
        redis.kill()
    recs = json_lines(r.log_text(), r.proc.pid)
    lost = find(recs, r"^upstream %s connection lost: " % re.escape(upstream))
    assert lost["level"] == "warning" and lost["upstream"] == upstream


def test_json_goes_to_stderr_without_logfile(proxy):
    p = proxy("--log-format", "json")
    assert p.terminate_and_wait() == 0
    lines = p.log_path.read_text().splitlines()
    assert lines[0].startswith("$ ")  # the fixture's own first line: the command
    recs = json_lines("\n".join(lines[1:]), p.process.pid)
    find(recs, r"ready to accept connections on 127\.0\.0\.1:%d" % p.port)
    find(recs, r"bye bye")


def test_log_format_from_config_file(running, redis_instance, tmp_path):
    conf = tmp_path / "json.conf"
    conf.write_text("upstream %s:%d\nlog-format json\n" % redis_instance.address)
    r = running("--config", conf).wait_listening()
    assert r.stop() == 0
    recs = json_lines(r.log_text(), r.proc.pid)
    find(recs, r"ready to accept connections")
    # A flag overrides the file.
    r = running("--config", conf, "--log-format", "text", name="flag").wait_listening()
    assert r.stop() == 0
    text = r.log_text()
    assert text and all(TEXT_RE.match(line) for line in text.splitlines()), text


def test_bad_log_format_is_refused():
    res = subprocess.run([BLOOMPROXY_BIN, "--upstream", "127.0.0.1:1", "--log-format", "xml",
                          "--test-conf"], capture_output=True, text=True, timeout=10,
                         env=proxy_env())
    assert res.returncode != 0
    assert "log-format" in res.stderr and "xml" in res.stderr, res.stderr


# ---------------------------------------------------------------------------------------------
# Text format


@pytest.mark.parametrize("explicit", [False, True])
def test_text_format_unchanged(running, redis_instance, explicit):
    upstream = "%s:%d" % redis_instance.address
    args = ["--upstream", upstream, "--requirepass", "text-pass-2718"]
    if explicit:
        args += ["--log-format", "text"]
    r = running(*args).wait_listening()
    with RawConn(r.port) as c:
        addr = "%s:%d" % c.sock.getsockname()[:2]
        assert c.command("AUTH", "nobody", "wrong").startswith(b"WRONGPASS")
    r.wait_log(r"AUTH failed")
    assert r.stop() == 0
    lines = r.log_text().splitlines()
    parsed = []
    for line in lines:
        m = TEXT_RE.match(line)
        assert m, f"not in Redis's log format: {line!r}"
        assert int(m.group(1)) == r.proc.pid
        parsed.append((MARKS[m.group(2)], m.group(3)))
    msgs = dict((msg, level) for level, msg in parsed)
    ready = [m for m in msgs if re.fullmatch(
        r"bloomproxy %s ready to accept connections on 127\.0\.0\.1:%d, upstream %s"
        % (VERSION_RE, r.port, re.escape(upstream)), m)]
    assert ready and msgs[ready[0]] == "notice", lines
    auth = [m for m in msgs if re.fullmatch(
        r"AUTH failed for user 'nobody' from %s \(client id=\d+\)" % re.escape(addr), m)]
    assert auth and msgs[auth[0]] == "notice", lines
    assert msgs.get("Received SIGTERM, finishing in-flight replies and shutting down") == \
        "notice", lines
    assert msgs.get("bloomproxy is now ready to exit, bye bye...") == "notice", lines
    assert not any(line.lstrip().startswith("{") for line in lines)


# ---------------------------------------------------------------------------------------------
# Secrets

SECRETS = {
    "env_requirepass": "Env-Requirepass-9f3a",
    "file_requirepass": "File-Requirepass-77c1",  # overridden by the environment
    "alice": "Alice-Flag-Pw-5e21",
    "bob": "Bob-File-Pw-0d94",
    "upstream": "Upstream-Pw-a6b3",
    "tls_pass": "Tls-Key-Pass-18e0",
}


def assert_no_secret(text, where, secrets=SECRETS.values()):
    for s in secrets:
        assert s not in text, f"secret {s!r} in {where}:\n{text}"
        assert s.lower() not in text.lower(), f"secret {s!r} (any case) in {where}:\n{text}"


def secrets_config(tmp_path, upstream):
    conf = tmp_path / "secrets.conf"
    conf.write_text(
        f"upstream {upstream}\n"
        f"requirepass {SECRETS['file_requirepass']}\n"
        f"user bob {SECRETS['bob']} +@all\n"
        f"upstream-password {SECRETS['upstream']}\n"
        f"tls-key-file-pass {SECRETS['tls_pass']}\n")
    return conf


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_secrets_never_in_logs(running, tmp_path, fmt):
    redis = start_redis_with_retry(tmp_path / "redis", password=SECRETS["upstream"])
    try:
        upstream = "%s:%d" % redis.address
        conf = secrets_config(tmp_path, upstream)
        env = {"BLOOMPROXY_REQUIREPASS": SECRETS["env_requirepass"]}
        r = running("--config", conf, "--user", f"alice:{SECRETS['alice']}", "--log-format", fmt,
                    "--loglevel", "debug", env=env).wait_listening()
        with RawConn(r.port) as c:
            assert c.command("AUTH", SECRETS["file_requirepass"]).startswith(b"WRONGPASS")
            assert c.command("AUTH", SECRETS["env_requirepass"]) == b"OK"
            assert c.command("AUTH", "alice", SECRETS["bob"]).startswith(b"WRONGPASS")
            assert c.command("AUTH", "alice", SECRETS["alice"]) == b"OK"
            # A password typed where the user name goes: the name is logged, masked.
            assert c.command("AUTH", SECRETS["alice"], "alice").startswith(b"WRONGPASS")
            assert c.command("AUTH", "bob", SECRETS["bob"]) == b"OK"
            assert c.command("HELLO", "2", "AUTH", "bob", SECRETS["alice"]).startswith(
                b"WRONGPASS")
            assert c.command("HELLO", "2", "AUTH", SECRETS["upstream"], "x").startswith(
                b"WRONGPASS")
            assert isinstance(c.command("HELLO", "2", "AUTH", "bob", SECRETS["bob"]), list)
            assert c.command("SET", "k", "v") == b"OK"
            c.command("MIGRATE", "127.0.0.1", str(free_port()), "", "0", "100",
                      "AUTH", SECRETS["upstream"], "KEYS", "k")
            c.command("MIGRATE", "127.0.0.1", str(free_port()), "", "0", "100",
                      "AUTH2", "bob", SECRETS["bob"], "KEYS", "k")
        # The upstream restarts: the proxy reconnects and AUTHs again.
        redis.restart()
        r.wait_log(r"connection lost|connection failed")
        with RawConn(r.port) as c:
            assert c.command("AUTH", SECRETS["env_requirepass"]) == b"OK"
            wait_until(lambda: c.command("PING") == b"PONG", 10, what="upstream back")
        r.wait_log(r"AUTH failed for user '\(redacted\)'")
        assert r.stop() == 0
    finally:
        redis.kill()
    log = r.log_text()
    assert log.count("AUTH failed") >= 5, log  # the failures were logged...
    assert_no_secret(log, "the log file")  # ...without any secret
    assert_no_secret(r.output(), "stdout/stderr")
    if fmt == "json":
        recs = json_lines(log, r.proc.pid)
        for rec in recs:
            assert_no_secret(json.dumps(rec, ensure_ascii=False), "a decoded JSON line")
        find(recs, r"AUTH failed for user 'alice'", user="alice")
        find(recs, r"AUTH failed for user '\(redacted\)'", user="(redacted)")


def test_upstream_rejecting_the_password_logs_no_secret(running, tmp_path):
    redis = start_redis_with_retry(tmp_path / "redis", password="Real-Upstream-Pw-4411")
    wrong = "Wrong-Upstream-Pw-9c2e"
    try:
        r = running("--upstream", "%s:%d" % redis.address, "--log-format", "json",
                    env={"BLOOMPROXY_UPSTREAM_PASSWORD": wrong}).wait_listening()
        r.wait_log(r"upstream rejected the proxy's AUTH")
        assert r.stop() == 0
    finally:
        redis.kill()
    recs = json_lines(r.log_text(), r.proc.pid)
    rej = find(recs, r"upstream rejected the proxy's AUTH", level="warning")
    assert rej["upstream"] == "%s:%d" % redis.address
    assert_no_secret(r.log_text() + r.output(), "the logs", [wrong, "Real-Upstream-Pw-4411"])


def run_bin(*args, env=None):
    return subprocess.run([BLOOMPROXY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=10, env=proxy_env(env), stdin=subprocess.DEVNULL)


def test_test_conf_shows_no_secret(tmp_path):
    conf = secrets_config(tmp_path, "127.0.0.1:%d" % free_port())
    res = run_bin("--config", conf, "--user", f"alice:{SECRETS['alice']}", "--test-conf",
                  env={"BLOOMPROXY_REQUIREPASS": SECRETS["env_requirepass"],
                       "BLOOMPROXY_UPSTREAM_PASSWORD": SECRETS["upstream"]})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip(), "--test-conf printed nothing"
    assert_no_secret(res.stdout + res.stderr, "--test-conf output")


# Config errors near a secret: each must be reported (by directive, option or line) without
# echoing the secret.
BAD_CONFIGS = [
    # Redis's ACL syntax, where the password is a ">" rule.
    ("file", "user carol on >Carol-Acl-Pw-31d7 ~* +@all\n", "Carol-Acl-Pw-31d7", r"user"),
    ("file", "user dave Dave-Pw-c0de +nosuchcommand\n", "Dave-Pw-c0de", r"nosuchcommand"),
    ("file", "requirepass Rp-Two-Words-1 extra\n", "Rp-Two-Words-1", r"requirepass"),
    ("file", "user default Default-Pw-77aa\n", "Default-Pw-77aa", r"requirepass|default"),
    ("file", "upstream-password Up-Two-Words-2 x\n", "Up-Two-Words-2", r"upstream-password"),
    ("file", "tls-key-file-pass Tls-Two-Words-3 x\n", "Tls-Two-Words-3", r"tls-key-file-pass"),
    ("file", "user erin Erin-Pw-5b5b +get\nuser erin Erin-Pw-5b5b +get\n", "Erin-Pw-5b5b",
     r"erin"),
    ("flags", ["--requirepas", "Typo-Flag-Pw-4e4e"], "Typo-Flag-Pw-4e4e", r"requirepas"),
    ("flags", ["--user", "frank:Frank-Pw-6f6f", "--port", "notaport"], "Frank-Pw-6f6f",
     r"port"),
    ("env", {"BLOOMPROXY_REQUIREPASS": "Env-Pw-7a7a"}, "Env-Pw-7a7a", r"port"),
    ("env", {"BLOOMPROXY_USER": "gina on >Gina-Env-Pw-1a1a +@all"}, "Gina-Env-Pw-1a1a",
     r"BLOOMPROXY_USER"),
    ("env", {"BLOOMPROXY_USER": "hank:Hank-Flag-Style-Pw-2b2b"}, "Hank-Flag-Style-Pw-2b2b",
     r"BLOOMPROXY_USER"),
]


@pytest.mark.parametrize("kind,bad,secret,mentioned", BAD_CONFIGS,
                         ids=[f"{k}{i}" for i, (k, *_) in enumerate(BAD_CONFIGS)])
@pytest.mark.parametrize("test_conf", [True, False])
def test_config_errors_do_not_echo_secrets(tmp_path, kind, bad, secret, mentioned, test_conf):
    base = ["--upstream", "127.0.0.1:%d" % free_port(), "--port", str(free_port())]
    env = None
    if kind == "file":
        conf = tmp_path / "bad.conf"
        conf.write_text(bad)
        args = base + ["--config", conf]
    elif kind == "flags":
        args = base + bad
    else:
        env = bad
        args = base + ["--port", "notaport"]
    if test_conf:
        args.append("--test-conf")
    res = run_bin(*args, env=env)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert re.search(mentioned, out), f"the error does not say what is wrong:\n{out}"
    assert_no_secret(out, "the error output", [secret])

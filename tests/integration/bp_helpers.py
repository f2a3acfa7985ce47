"""Shared helpers of the integration tests: processes (redis-server, bloomproxy), free ports and
a raw RESP2 socket client for byte-exact checks.

Only the Python standard library and redis-py (Debian's python3-redis) are used.
"""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]
BLOOMPROXY_BIN = os.environ.get("BLOOMPROXY_BIN", str(REPO / "build" / "bloomproxy"))
REDIS_SERVER = os.environ.get("REDIS_SERVER_BIN", "redis-server")

# Environment variables the proxy reads; never inherited from the caller's environment.
# Every option can be set as BLOOMPROXY_<NAME>: a proxy started by a test gets none of the
# developer's (only the scripts' own BLOOMPROXY_BIN and BLOOMPROXY_ARGS pass), so the test alone
# says how it is configured.
PROXY_ENV_KEEP = ("BLOOMPROXY_BIN", "BLOOMPROXY_ARGS")


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL when the test process dies (even by SIGKILL, e.g. a
    ctest timeout), so no redis-server or bloomproxy outlives its test."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port():
    """A TCP port on the loopback that was free a moment ago (bind to port 0, read, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def listens_on(pid, port):
    """Whether process `pid` holds a socket listening on the loopback's TCP `port` (so the server
    answering there is that process, not another that took the port between free_port() and its
    bind)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except OSError:
            continue
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


def wait_until(predicate, timeout, interval=0.05, what="condition"):
    """Polls `predicate` until it returns a truthy value; returns it, or raises AssertionError."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - polling: remember and retry
            last_exc = exc
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)


def tail(path, limit=60000):
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    if len(data) > limit:
        data = b"...[truncated]...\n" + data[-limit:]
    return data.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# RESP2


class Simple(bytes):
    """A RESP simple string (+...)."""


class Err(bytes):
    """A RESP error reply (-...), without the '-' and CRLF."""


class Incomplete(Exception):
    pass


def parse_resp(buf, pos=0):
    """Parses one RESP value at buf[pos:]. Returns (value, end). Raises Incomplete.

    +x -> Simple, -x -> Err, :n -> int, $n -> bytes or None, *n -> list or None. RESP3 (after
    HELLO 3): _ -> None, #t/#f -> bool, ,x and (x -> bytes of the number, =n -> bytes (with the
    "txt:" prefix), !n -> Err, %n -> dict, ~n and >n -> list, |n attribute -> skipped (the value
    after it is returned).
    """
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise Incomplete()
    kind, line = buf[pos:pos + 1], buf[pos + 1:end]
    pos = end + 2
    if kind == b"+":
        return Simple(line), pos
    if kind == b"-":
        return Err(line), pos
    if kind == b":":
        return int(line), pos
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, pos
        if len(buf) < pos + n + 2:
            raise Incomplete()
        if buf[pos + n:pos + n + 2] != b"\r\n":
            raise ValueError(f"bulk not terminated by CRLF at {pos + n}: {buf[pos + n:pos + n + 2]!r}")
        return bytes(buf[pos:pos + n]), pos + n + 2
    if kind in (b"*", b"~", b">"):
        n = int(line)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n):
            item, pos = parse_resp(buf, pos)
            items.append(item)
        return items, pos
    if kind == b"_":
        return None, pos
    if kind == b"#":
        return line == b"t", pos
    if kind in (b",", b"("):
        return bytes(line), pos
    if kind in (b"=", b"!"):
        n = int(line)
        if len(buf) < pos + n + 2:
            raise Incomplete()
        body = bytes(buf[pos:pos + n])
        return (Err(body) if kind == b"!" else body), pos + n + 2
    if kind in (b"%", b"|"):
        pairs = {}
        for _ in range(int(line)):
            k, pos = parse_resp(buf, pos)
            v, pos = parse_resp(buf, pos)
            pairs[k if not isinstance(k, (list, dict)) else repr(k)] = v
        if kind == b"|":
            return parse_resp(buf, pos)
        return pairs, pos
    raise ValueError(f"not a RESP reply at offset {pos}: {bytes(buf[pos - 1:pos + 40])!r}")


def encode_command(*args):
    """Multibulk encoding of a command."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawConn:
    """A blocking socket speaking raw bytes, with helpers to read whole RESP replies."""

    def __init__(self, port=None, host=HOST, unix=None, timeout=5.0):
        if unix:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unix)
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = bytearray()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def send_quietly(self, data):
        """Sends what the peer accepts; a peer that closed early is not an error here."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def command(self, *args):
        """Sends one multibulk command and returns its parsed reply."""
        self.send(encode_command(*args))
        return self.read_reply()

    def _fill(self, timeout=None):
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("connection closed by peer; unread bytes: %r" % bytes(self.buf[:200]))
        self.buf += chunk

    def read_reply_raw(self):
        """Bytes of exactly one complete RESP reply."""
        while True:
            try:
                _, end = parse_resp(self.buf, 0)
            except Incomplete:
                self._fill()
                continue
            raw = bytes(self.buf[:end])
            del self.buf[:end]
            return raw

    def read_reply(self):
        return parse_resp(self.read_reply_raw())[0]

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_until_eof(self, timeout=5.0):
        """All bytes until the peer closes. AssertionError if it does not close within timeout.

        A reset after the data counts as a close (a server closing a socket with unread input
        sends RST; the bytes before it are still delivered)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("peer did not close the connection within %ss; got %r"
                                     % (timeout, bytes(self.buf[:300])))
            try:
                self.sock.settimeout(left)
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                data = bytes(self.buf)
                self.buf.clear()
                return data
            self.buf += chunk

    def is_closed(self, wait=0.0):
        """True if the peer closed (EOF or reset) within `wait` seconds and sent nothing."""
        self.sock.settimeout(wait if wait > 0 else 0.001)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            return False
        except BlockingIOError:
            return False
        except ConnectionResetError:
            return True
        if chunk:
            self.buf += chunk
            return False
        return True


def roundtrip_raw(port, data, unix=None, timeout=5.0, expect_close=False):
    """Sends `data` on a fresh connection and returns the bytes received until the peer closes
    (expect_close) or until `timeout` of silence after the last byte."""
    with RawConn(port, unix=unix, timeout=timeout) as c:
        c.send_quietly(data)
        if expect_close:
            return c.read_until_eof(timeout)
        out = bytearray()
        c.sock.settimeout(timeout)
        while True:
            try:
                chunk = c.sock.recv(1 << 20)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return bytes(out)


def exec_elements(raw):
    """The raw elements of EXEC's array reply, or None for a nil or an error reply."""
    if not raw.startswith(b"*"):
        return None
    eol = raw.index(b"\r\n")
    n = int(raw[1:eol])
    if n < 0:
        return None
    pos, out = eol + 2, []
    for _ in range(n):
        _, end = parse_resp(raw, pos)
        out.append(raw[pos:end])
        pos = end
    assert pos == len(raw), f"bytes after EXEC's array: {raw[pos:pos + 80]!r}"
    return out


def exec_block(conn, block):
    """MULTI, the commands of `block` (each must be queued) and EXEC on RawConn `conn`: EXEC's
    raw elements, one per command."""
    conn.send(encode_command("MULTI") + b"".join(encode_command(*a) for a in block)
              + encode_command("EXEC"))
    assert conn.read_reply_raw() == b"+OK\r\n"
    for a in block:
        queued = conn.read_reply_raw()
        assert queued == b"+QUEUED\r\n", f"{a[:3]} answered {queued[:200]!r} when queued"
    raw = conn.read_reply_raw()
    elements = exec_elements(raw)
    assert elements is not None and len(elements) == len(block), \
        f"EXEC of {[a[:2] for a in block]} answered {raw[:300]!r}"
    return elements


def read_replies(conn, n):
    """n consecutive raw replies from RawConn `conn`, concatenated."""
    return b"".join(conn.read_reply_raw() for _ in range(n))


def ping_ok(port=None, unix=None, timeout=1.0, accept_noauth=True):
    try:
        with RawConn(port, unix=unix, timeout=timeout) as c:
            c.send(b"*1\r\n$4\r\nPING\r\n")
            reply = c.read_reply()
    except (OSError, EOFError):
        return False
    if reply == b"PONG" and isinstance(reply, Simple):
        return True
    return accept_noauth and isinstance(reply, Err) and reply.startswith(b"NOAUTH")


# ---------------------------------------------------------------------------------------------
# Processes


class RedisServer:
    """A redis-server on a free loopback port, no persistence, in its own directory."""

    def __init__(self, workdir, port=None, extra_args=(), password=None):
        self.host = HOST
        self.port = port or free_port()
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.extra_args = list(extra_args)
        self.password = password
        self.proc = None
        self.log_path = self.dir / "redis.log"
        self.starts = 0

    def start(self, timeout=10.0):
        """Starts the server (on the same port as before) and waits for PING."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", HOST, "--save", "",
                "--appendonly", "no", "--dir", str(self.dir), "--protected-mode", "no",
                *self.extra_args]
        if self.password:
            args += ["--requirepass", self.password]
        self.starts += 1
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.dir,
                                         preexec_fn=_die_with_parent)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        # The server answering must be this one: another process may have taken the port
        # between free_port() and the bind (then this one exits with "Address already in use").
        while not (ping_ok(self.port, timeout=0.5) and self._answering_pid() == self.proc.pid):
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited with %s:\n%s"
                                   % (self.proc.returncode, tail(self.log_path)))
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("redis-server did not answer PING:\n" + tail(self.log_path))
            time.sleep(0.02)
        return self

    def start_on_a_free_port(self, attempts=4):
        """start(), on another free port while the chosen one turns out taken meanwhile (the
        server exits with "Address already in use"). For a server nothing knows the port of
        yet."""
        for attempt in range(attempts):
            try:
                return self.start()
            except RuntimeError as exc:
                if "in use" not in str(exc) or attempt + 1 == attempts:
                    raise
                self.port = free_port()
        return self

    def _answering_pid(self):
        """process_id of the server answering on our port (None if it cannot tell)."""
        try:
            with RawConn(self.port, timeout=1.0) as c:
                if self.password:
                    c.command("AUTH", self.password)
                info = c.command("INFO", "server")
        except (OSError, EOFError):
            return None
        if not isinstance(info, bytes):
            return None
        for line in info.split(b"\r\n"):
            if line.startswith(b"process_id:"):
                return int(line.split(b":")[1])
        return None

    def kill(self):
        """SIGKILL (an abrupt upstream failure) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        self.kill()

    def restart(self):
        self.kill()
        return self.start()

    @property
    def address(self):
        return (self.host, self.port)

    def client(self, db=0, **kw):
        import redis
        return redis.Redis(host=self.host, port=self.port, db=db, password=self.password,
                           socket_timeout=10, **kw)


# Servers started by the fixtures, by port (for restart_redis_server).
REDIS_BY_PORT = {}


def start_redis_with_retry(workdir, extra_args=(), password=None, attempts=4):
    last = None
    for i in range(attempts):
        server = RedisServer(Path(workdir) / f"try{i}", extra_args=extra_args, password=password)
        try:
            server.start()
        except RuntimeError as exc:  # most likely the port was taken meanwhile: another port
            last = exc
            continue
        REDIS_BY_PORT[server.port] = server
        return server
    raise last


def restart_redis_server(port, kill_only=False):
    """Kills the redis-server the fixtures started on `port` and (unless kill_only) starts a
    new one on the same port. Returns the RedisServer."""
    server = REDIS_BY_PORT[port]
    server.kill()
    if not kill_only:
        server.start()
    return server


class Proxy:
    """A running bloomproxy. Unpacks as (host, port, process)."""

    def __init__(self, host, port, process, log_path, unixsocket=None, args=None):
        self.host = host
        self.port = port
        self.process = process
        self.log_path = log_path
        self.unixsocket = unixsocket
        self.args = args or []
        self.expected_exit = 0  # checked at teardown after SIGTERM; None = do not check

    def __iter__(self):
        return iter((self.host, self.port, self.process))

    def __getitem__(self, i):
        return (self.host, self.port, self.process)[i]

    def client(self, db=0, **kw):
        import redis
        if self.port:
            return redis.Redis(host=self.host, port=self.port, db=db, socket_timeout=10, **kw)
        return redis.Redis(unix_socket_path=self.unixsocket, db=db, socket_timeout=10, **kw)

    def raw(self, timeout=5.0):
        if self.port:
            return RawConn(self.port, timeout=timeout)
        return RawConn(unix=self.unixsocket, timeout=timeout)

    def log(self):
        return tail(self.log_path)

    def alive(self):
        return self.process.poll() is None

    def terminate_and_wait(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends `sig` and returns the exit code (AssertionError if it does not exit)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise AssertionError(f"bloomproxy did not exit within {timeout}s of signal {sig!r}")


def proxy_env(extra_env=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BLOOMPROXY_") or k in PROXY_ENV_KEEP}
    env.update(extra_env or {})
    return env


def launch_proxy(workdir, attempts, ready_timeout, build, ready, env=None, retry=True):
    """Starts bloomproxy until one attempt answers: `build(attempt)` gives (argv, the log file's
    name, make(proc, log_path) -> the Proxy object); `ready(proxy)` says whether it answers yet.
    An attempt whose process exits during startup is retried (with `retry`, and only when its
    log says a port was in use: a free port taken by another process meanwhile)."""
    if not os.path.exists(BLOOMPROXY_BIN):
        raise RuntimeError(f"bloomproxy binary not found at {BLOOMPROXY_BIN} "
                           "(build it, or set BLOOMPROXY_BIN)")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    last_error = None
    for attempt in range(attempts):
        argv, log_name, make = build(attempt)
        log_path = workdir / log_name
        with open(log_path, "wb") as log:
            log.write(("$ " + " ".join(argv) + "\n").encode())
            log.flush()
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=proxy_env(env), cwd=workdir,
                                    preexec_fn=_die_with_parent)
        proxy = make(proc, log_path)
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                last_error = RuntimeError("bloomproxy exited with code %s during startup:\n%s"
                                          % (proc.returncode, tail(log_path)))
                break
            if ready(proxy):
                return proxy
            if time.monotonic() > deadline:
                proxy.terminate_and_wait(signal.SIGKILL, 5)
                raise RuntimeError("bloomproxy did not answer PING within %ss:\n%s"
                                   % (ready_timeout, tail(log_path)))
            time.sleep(0.02)
        if not retry or "in use" not in tail(log_path).lower():
            raise last_error
    raise last_error


def start_proxy(workdir, upstream, extra_args=(), env=None, port=None, unixsocket=None,
                tcp=True, ready_timeout=10.0, attempts=3):
    """Starts bloomproxy and waits until it accepts connections and answers PING (PONG, or
    NOAUTH when a password is required)."""
    def build(attempt):
        p = (port or free_port()) if tcp else 0
        args = [BLOOMPROXY_BIN, "--port", str(p), "--bind", HOST]
        if upstream is not None:
            args += ["--upstream", upstream if isinstance(upstream, str)
                     else "%s:%d" % tuple(upstream)]
        if unixsocket:
            args += ["--unixsocket", str(unixsocket)]
        args += [str(a) for a in extra_args]
        return args, f"bloomproxy-{p}-{attempt}.log", lambda proc, log_path: Proxy(
            HOST, p, proc, log_path, unixsocket=str(unixsocket) if unixsocket else None,
            args=args)

    def ready(proxy):
        if not ping_ok(proxy.port if tcp else None, unix=None if tcp else str(unixsocket),
                       timeout=1.0):
            return False
        if tcp and not listens_on(proxy.process.pid, proxy.port):
            return False  # another process answers on the port (this one then exits: retried)
        if unixsocket and tcp:
            wait_until(lambda: ping_ok(unix=str(unixsocket)), 5, what="unix socket")
        return True

    return launch_proxy(workdir, attempts, ready_timeout, build, ready, env=env,
                        retry=bool(tcp and not port))
    raise last_error


# ---------------------------------------------------------------------------------------------
# A proxy with its clocks off (libfaketime, Debian package faketime)

# Where Debian's libfaketime package puts the library the `faketime` command preloads (-m: the
# variant safe with threads).
FAKETIME_LIBRARIES = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                      "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                      "/usr/lib/faketime/libfaketimeMT.so.1")
FAKETIME_MISSING = ("faketime is not installed: these tests run a proxy whose clock is minutes "
                    "off under libfaketime (Debian package `faketime`; scripts/deps.sh installs "
                    "it: `apt-get install faketime`)")


def offset_seconds(offset):
    """Seconds of a libfaketime relative offset: "+7m" -> 420, "-5m" -> -300, "+30s", "-2h"."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    assert offset[0] in "+-" and offset[-1] in units, f"not a relative offset: {offset!r}"
    return float(offset[:-1]) * units[offset[-1]]


def faketime_env(offset):
    """The environment `faketime -m -f OFFSET cmd` gives cmd: libfaketime preloaded, FAKETIME set.
    (The `faketime` command itself forks and waits, and does not pass signals on, so a proxy is
    started with this environment instead, as its own process.) libfaketime 0.9.10 fakes
    CLOCK_REALTIME and CLOCK_MONOTONIC alike (the monotonic clock then reads the faked wall
    time); faketime_env checks both are off. pytest.fail (never a skip) when it is missing."""
    import shutil
    import sys
    import pytest
    lib = next((p for p in FAKETIME_LIBRARIES if os.path.exists(p)), None)
    if shutil.which("faketime") is None or lib is None:
        pytest.fail(FAKETIME_MISSING, pytrace=False)
    env = {"LD_PRELOAD": lib, "FAKETIME": offset}
    probe = ("import time; print(time.time(), time.clock_gettime(time.CLOCK_MONOTONIC))")
    real_wall, real_mono = time.time(), time.clock_gettime(time.CLOCK_MONOTONIC)
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, f"python under libfaketime failed: {out.stderr}"
    wall, mono = (float(x) for x in out.stdout.split())
    want = offset_seconds(offset)
    assert abs((wall - real_wall) - want) < 10, \
        f"libfaketime with FAKETIME={offset}: the wall clock is {wall - real_wall:+.1f} s off"
    assert abs(mono - real_mono) > abs(want) / 2, \
        f"libfaketime with FAKETIME={offset} does not fake CLOCK_MONOTONIC ({mono} vs {real_mono})"
    # A proxy built with AddressSanitizer refuses to start when another library is preloaded
    # before its runtime; the order does not matter for libfaketime's few clock functions.
    asan = os.environ.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    return env


def check_proxy_clock_offset(p, offset, tolerance=10.0):
    """The proxy's own clock is `offset` off: the time of its log's "ready" line against ours."""
    import re
    want = offset_seconds(offset)
    for line in p.log().splitlines():
        m = re.match(r"^\d+:\w (\d+ \w+ \d+ \d\d:\d\d:\d\d)\.\d+ . .*ready", line)
        if m:
            logged = time.mktime(time.strptime(m.group(1), "%d %b %Y %H:%M:%S"))
            off = logged - time.time()
            assert abs(off - want) < tolerance, \
                f"the proxy under FAKETIME={offset} logs times {off:+.0f} s off:\n{line}"
            return off
    raise AssertionError("no 'ready' line with a time in the proxy's log:\n" + p.log())


def replies_of(port, payload, nreplies, unix=None, timeout=10.0):
    """Sends `payload` in one write on a fresh connection; returns the list of the first
    `nreplies` raw replies."""
    with RawConn(port, unix=unix, timeout=timeout) as c:
        c.send(payload)
        return [c.read_reply_raw() for _ in range(nreplies)]


def compare_with_redis(proxy_port, redis_server, payload, nreplies):
    """Runs `payload` through the proxy, then (after FLUSHALL) directly against redis-server,
    asserts both produced byte-identical replies and returns them."""
    flush = encode_command("FLUSHALL")
    replies_of(redis_server.port, flush, 1)
    via_proxy = replies_of(proxy_port, payload, nreplies)
    replies_of(redis_server.port, flush, 1)
    direct = replies_of(redis_server.port, payload, nreplies)
    for i, (p, d) in enumerate(zip(via_proxy, direct)):
        assert p == d, f"reply #{i} differs: proxy {p[:300]!r} vs redis {d[:300]!r}"
    return via_proxy


# Under AddressSanitizer freed memory is held in a quarantine (256 MB by default) that RSS counts;
# tests that measure what the proxy keeps start it with this environment so the quarantine is
# small. A Release binary ignores the variable.
SMALL_QUARANTINE = {"ASAN_OPTIONS": "quarantine_size_mb=4"}


def rss_kb(pid, field="VmRSS"):
    """Resident memory of process `pid`, in KiB: all of it, or one part (RssAnon: the heap)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field}")


def ask_without_reading(port, command, count, seconds=5.0):
    """A client that sends `command` `count` times (in writes of 100) and reads none of the
    replies, with a small receive buffer; gives up sending after `seconds` (the proxy stopped
    reading it). Returns the socket, still open."""
    slow = socket.create_connection((HOST, port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.setblocking(False)
    request = command * 100
    sent = 0
    deadline = time.time() + seconds
    while time.time() < deadline and sent < count * len(command):
        try:
            sent += slow.send(request)
        except BlockingIOError:
            time.sleep(0.05)
    return slow


# ---------------------------------------------------------------------------------------------
# Clients under load, for tests that check one client cannot disturb the others.


class Load:
    """`clients` threads, each on its own connection to `port`, sending pipelined batches of
    SET k v / GET k / INCR n with values of its own and checking every reply, until stop().

    Records every error or wrong reply (first ones kept), the number of batches, and the
    longest time a batch took (a stall). Use as a context manager, or start()/stop()."""

    def __init__(self, port, clients=4, batch=40, prefix="load", unix=None, bf=False):
        import os
        import threading
        self.port, self.unix, self.clients, self.batch = port, unix, clients, batch
        self.prefix = f"{prefix}:{os.getpid()}:{id(self)}"  # counters start at 1 every run
        self.bf = bf  # also BF.ADD an item and BF.EXISTS it (must be :1) in every step
        self.problems = []
        self.batches = 0
        self.longest = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(clients)]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        for t in self._threads:
            t.start()
        # Every client has a batch answered before the test goes on.
        wait_until(lambda: self.batches >= self.clients or self.problems, 10, what="load running")
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(30)
        assert not any(t.is_alive() for t in self._threads), "load clients still running"
        return self

    def _problem(self, text):
        with self._lock:
            if len(self.problems) < 20:
                self.problems.append(text)

    def _run(self, tid):
        try:
            conn = RawConn(self.port, unix=self.unix, timeout=30)
        except OSError as exc:
            self._problem(f"client {tid}: cannot connect: {exc!r}")
            return
        counter = f"{self.prefix}:{tid}:n"
        n = 0
        b = 0
        with conn:
            while not self._stop.is_set():
                b += 1
                payload = []
                expected = []
                for i in range(self.batch):
                    key, value = f"{self.prefix}:{tid}:{i}", f"{tid}-{b}-{i}"
                    payload += [encode_command("SET", key, value), encode_command("GET", key),
                                encode_command("INCR", counter)]
                    n += 1
                    expected += [b"+OK\r\n", b"$%d\r\n%s\r\n" % (len(value), value.encode()),
                                 b":%d\r\n" % n]
                    if self.bf:
                        # A new item may be a false positive (:0); it is never missing after.
                        payload += [encode_command("BF.ADD", f"{self.prefix}:bf:{tid}", value),
                                    encode_command("BF.EXISTS", f"{self.prefix}:bf:{tid}", value)]
                        expected += [(b":1\r\n", b":0\r\n"), b":1\r\n"]
                t0 = time.monotonic()
                try:
                    conn.send(b"".join(payload))
                    got = [conn.read_reply_raw() for _ in expected]
                except (OSError, EOFError) as exc:
                    self._problem(f"client {tid} batch {b}: {exc!r}")
                    return
                took = time.monotonic() - t0
                for i, (g, e) in enumerate(zip(got, expected)):
                    if g != e and not (isinstance(e, tuple) and g in e):
                        self._problem(f"client {tid} batch {b} reply {i}: got {g[:120]!r}, "
                                      f"expected {e!r}")
                        return
                with self._lock:
                    self.batches += 1
                    self.longest = max(self.longest, took)

    def assert_clean(self, max_stall=2.0, min_batches=None):
        """No error, no wrong reply, no batch slower than `max_stall` seconds."""
        assert not self.problems, "load clients were disturbed:\n" + "\n".join(self.problems)
        assert self.longest < max_stall, f"a load batch stalled for {self.longest:.2f} s"
        if min_batches is not None:
            assert self.batches >= min_batches, f"only {self.batches} batches answered"


def failed_in_test(request):
    """Whether the test of `request` failed in setup or call (conftest records the reports)."""
    node = request.node
    return any(getattr(getattr(node, "rep_" + w, None), "failed", False)
               for w in ("setup", "call"))


def stop_proxies(request, started):
    """Fixture teardown: SIGTERM to each proxy started, which must exit with its expected code;
    their logs are printed when the test failed."""
    problems = []
    for p in started:
        try:
            code = p.terminate_and_wait()
        except AssertionError as exc:
            problems.append(f"{p.args}: {exc}")
            continue
        if p.expected_exit is not None and code != p.expected_exit:
            problems.append(f"{p.args}: exit code {code} after SIGTERM, expected "
                            f"{p.expected_exit}")
    if problems or failed_in_test(request):
        for p in started:
            print(f"===== bloomproxy output ({p.log_path}) =====")
            print(p.log())
    assert not problems, "; ".join(problems)


def scan_all(conn, *args, limit=100000):
    """Every key of a full SCAN iteration (with `args`, e.g. COUNT 7), in order."""
    out, cursor = [], b"0"
    for _ in range(limit):
        cursor, page = conn.command("SCAN", cursor, *args)
        out += page
        if cursor == b"0":
            return out
    raise AssertionError(f"SCAN did not end within {limit} calls")

"""TLS helpers of the integration tests: certificates made with the `openssl` CLI, a redis-server
that speaks TLS only, a small Redis Cluster whose nodes (and cluster bus) speak TLS only,
bloomproxy started with TLS listeners, and TLS clients (raw RESP over an ssl socket, redis-py).

    certs = make_certs(tmp_dir)          # once per module: the `certs` fixture
    server = TlsRedisServer(dir, certs).start()
    with tls_conn(server.port, certs.ca) as c:
        c.command("PING")
    peer_cn(port, certs.ca)              # the CN of the certificate the server presents

Certificates (EC prime256v1, signed with SHA-256, valid for ten years), in one directory:
    ca                 the CA every test trusts
    server_a, server_b servers "server-a" / "server-b": SANs IP:127.0.0.1 and DNS:localhost
    client             a client certificate signed by the CA ("client")
    untrusted_ca       another CA nobody trusts
    untrusted_server   a server certificate (same SANs) signed by the untrusted CA
    untrusted_client   a client certificate signed by the untrusted CA
    other_name         signed by the CA, for DNS:other.example only (hostname mismatch)
    server_a_enc_key   server_a's key encrypted with KEY_PASSPHRASE
Each certificate is a Pair (.cert, .key paths).

Only the Python standard library, redis-py and the openssl / redis-server binaries are used.
"""

import os
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bp_helpers import (BLOOMPROXY_BIN, HOST, REDIS_SERVER, Err, Proxy, RawConn, RedisServer,
                        Simple, _die_with_parent, encode_command as cmd, free_port,
                        launch_proxy, ping_ok, proxy_env, stop_proxies, tail, wait_until)

OPENSSL = os.environ.get("OPENSSL_BIN", "openssl")
KEY_PASSPHRASE = "correct horse battery"
RELOADED = "TLS configuration reloaded"
RELOAD_FAILED = "TLS reload failed"


# ---------------------------------------------------------------------------------------------
# Certificates


class Pair:
    """A certificate and its private key (paths, as str)."""

    def __init__(self, cert, key):
        self.cert = str(cert)
        self.key = str(key)

    def __repr__(self):
        return f"<Pair {Path(self.cert).name}>"


class Certs:
    pass


def _openssl(*args, cwd):
    res = subprocess.run([OPENSSL, *[str(a) for a in args]], cwd=cwd, capture_output=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        raise RuntimeError("openssl %s failed:\n%s%s" % (" ".join(map(str, args)),
                                                         res.stdout.decode(errors="replace"),
                                                         res.stderr.decode(errors="replace")))
    return res


def _ec_key(path, cwd):
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-out", path, cwd=cwd)


_serial = [1000]


def _make_ca(d, name, cn):
    key, cert = d / f"{name}.key", d / f"{name}.crt"
    _ec_key(key, d)
    _openssl("req", "-x509", "-new", "-key", key, "-sha256", "-days", "3650", "-subj", f"/CN={cn}",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-addext", "subjectKeyIdentifier=hash", "-out", cert, cwd=d)
    return Pair(cert, key)


def _make_leaf(d, name, cn, ca, sans, usage):
    key, csr, cert, ext = (d / f"{name}.key", d / f"{name}.csr", d / f"{name}.crt",
                           d / f"{name}.ext")
    _ec_key(key, d)
    _openssl("req", "-new", "-key", key, "-subj", f"/CN={cn}", "-out", csr, cwd=d)
    lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature",
             f"extendedKeyUsage={usage}", "subjectKeyIdentifier=hash",
             "authorityKeyIdentifier=keyid,issuer"]
    if sans:
        lines.append("subjectAltName=" + ",".join(sans))
    ext.write_text("\n".join(lines) + "\n")
    _serial[0] += 1
    _openssl("x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-set_serial",
             str(_serial[0]), "-days", "3650", "-sha256", "-extfile", ext, "-out", cert, cwd=d)
    return Pair(cert, key)


SERVER_SANS = ("IP:127.0.0.1", "DNS:localhost")


def make_certs(directory):
    """Every certificate the TLS tests use, made in `directory` (a few hundred milliseconds)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    c = Certs()
    c.dir = d
    c.ca = _make_ca(d, "ca", "bloomproxy test CA")
    # Servers carry both usages: Redis Cluster nodes present their server certificate as client
    # certificate on the cluster bus.
    both = "serverAuth,clientAuth"
    c.server_a = _make_leaf(d, "server-a", "server-a", c.ca, SERVER_SANS, both)
    c.server_b = _make_leaf(d, "server-b", "server-b", c.ca, SERVER_SANS, both)
    c.client = _make_leaf(d, "client", "client", c.ca, (), "clientAuth")
    c.untrusted_ca = _make_ca(d, "untrusted-ca", "untrusted test CA")
    c.untrusted_server = _make_leaf(d, "untrusted-server", "server-untrusted", c.untrusted_ca,
                                    SERVER_SANS, both)
    c.untrusted_client = _make_leaf(d, "untrusted-client", "client-untrusted", c.untrusted_ca,
                                    (), "clientAuth")
    c.other_name = _make_leaf(d, "other-name", "other", c.ca, ("DNS:other.example",), both)
    enc = d / "server-a.enc.key"
    _openssl("pkey", "-in", c.server_a.key, "-aes256", "-passout", f"pass:{KEY_PASSPHRASE}",
             "-out", enc, cwd=d)
    c.server_a_enc_key = str(enc)
    return c


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The certificates of make_certs(), made once per test module."""
    return make_certs(tmp_path_factory.mktemp("certs"))


def install(src, dst):
    """Copies file `src` over `dst` through a temporary file and a rename, as a deployment tool
    would: a reader sees the old file or the new one, never half of one."""
    dst = Path(dst)
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def concat(dst, *srcs):
    """Writes the files `srcs` one after the other into `dst` (a CA bundle)."""
    data = b"".join(Path(s).read_bytes() for s in srcs)
    tmp = Path(dst).with_name(Path(dst).name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, dst)


# ---------------------------------------------------------------------------------------------
# Clients


def client_context(ca=None, cert=None, key=None, check_hostname=True, min_version=None,
                   max_version=None, ciphers=None):
    """An ssl.SSLContext for a client: verifies the server against `ca` (no verification when
    ca is None), presents `cert`/`key` when given."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.load_verify_locations(cafile=str(ca))
        ctx.check_hostname = check_hostname
    if cert:
        ctx.load_cert_chain(str(cert), str(key))
    if min_version is not None:
        ctx.minimum_version = min_version
    if max_version is not None:
        ctx.maximum_version = max_version
    if ciphers:
        ctx.set_ciphers(ciphers)
    return ctx


class TlsConn(RawConn):
    """RawConn over TLS: the same RESP helpers on an ssl-wrapped socket. The handshake is done in
    the constructor (ssl.SSLError / OSError when it fails)."""

    def __init__(self, port, host=HOST, ca=None, cert=None, key=None, timeout=5.0,
                 server_hostname=None, context=None, session=None, **ctx_kw):
        ctx = context or client_context(ca, cert, key, **ctx_kw)
        raw = socket.create_connection((host, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = ctx.wrap_socket(raw, server_hostname=server_hostname or host,
                                        session=session)
        except BaseException:
            raw.close()
            raise
        self.timeout = timeout
        self.buf = bytearray()

    def peer_cn(self):
        return cn_of(self.sock.getpeercert())

    def read_until_eof(self, timeout=5.0):
        try:
            return super().read_until_eof(timeout)
        except (ssl.SSLError, ConnectionAbortedError):  # an alert, then the close
            data = bytes(self.buf)
            self.buf.clear()
            return data


class TlsLoad:
    """A TLS client doing SET/GET round trips in a thread until stop(); records problems."""

    def __init__(self, p):
        self.p = p  # a TlsProxy
        self.problems, self.rounds, self.longest = [], 0, 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._t.start()
        wait_until(lambda: self.rounds or self.problems, 10, what="TLS load running")
        return self

    def _run(self):
        try:
            with self.p.tls_raw(timeout=10) as c:
                while not self._stop.is_set():
                    t0 = time.monotonic()
                    v = str(self.rounds)
                    c.send(cmd("SET", "tls:load", v) + cmd("GET", "tls:load"))
                    got = [c.read_reply(), c.read_reply()]
                    if got != [b"OK", v.encode()]:
                        self.problems.append(got)
                        return
                    self.longest = max(self.longest, time.monotonic() - t0)
                    self.rounds += 1
        except (OSError, EOFError, ssl.SSLError) as exc:
            self.problems.append(repr(exc))

    def stop(self):
        self._stop.set()
        self._t.join(15)


def tls_conn(port, ca, cert=None, key=None, **kw):
    return TlsConn(port, ca=ca, cert=cert, key=key, **kw)


def cn_of(peercert):
    """The commonName of a certificate as ssl.getpeercert() returns it."""
    for rdn in peercert.get("subject", ()):
        for name, value in rdn:
            if name == "commonName":
                return value
    return None


def peer_cn(port, ca, cert=None, key=None, **kw):
    """The CN of the certificate a new TLS connection to `port` is shown (verified with ca)."""
    with TlsConn(port, ca=ca, cert=cert, key=key, **kw) as c:
        return c.peer_cn()


def tls_ping(port, ca=None, cert=None, key=None, timeout=3.0, **kw):
    """A TLS connection sends PING: 'PONG' when answered, else a short text naming what
    happened instead (the handshake error, the TLS alert after it, the close, the reply).
    Raises AssertionError if nothing at all happens within `timeout`."""
    try:
        with TlsConn(port, ca=ca, cert=cert, key=key, timeout=timeout, **kw) as c:
            c.send(b"*1\r\n$4\r\nPING\r\n")
            reply = c.read_reply()
    except socket.timeout:
        raise AssertionError(f"no answer and no close within {timeout}s on TLS port {port}")
    except ssl.SSLError as exc:
        return f"ssl error: {exc}"
    except (ConnectionError, EOFError) as exc:
        return f"closed: {exc!r}"
    if isinstance(reply, Simple) and reply == b"PONG":
        return "PONG"
    return f"reply: {reply!r}"


def tls_redis_py(port, ca, cert=None, key=None, db=0, **kw):
    """A redis-py client over TLS (ssl=True), verifying the server against `ca`."""
    import redis
    return redis.Redis(host=HOST, port=port, db=db, ssl=True, ssl_ca_certs=str(ca),
                       ssl_cert_reqs="required", ssl_certfile=cert and str(cert),
                       ssl_keyfile=key and str(key), socket_timeout=10, **kw)


def client_hello(server_hostname="localhost"):
    """The bytes of a real TLS ClientHello (what a client sends first)."""
    ctx = client_context(None)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    data = outgoing.read()
    assert data[:1] == b"\x16" and len(data) > 100, data[:20]
    return data


# ---------------------------------------------------------------------------------------------
# redis-server over TLS


class TlsRedisServer(RedisServer):
    """A redis-server listening on TLS only (--port 0 --tls-port P), no persistence.

    `pair`: its certificate (default certs.server_a); `verify_ca`: the CA that signed it (what
    the probes trust; default certs.ca); `auth_clients`: its tls-auth-clients (its CA file is
    certs.ca). Probes and helpers connect with certs.client, so they work whatever auth_clients
    is."""

    def __init__(self, workdir, certs, pair=None, verify_ca=None, auth_clients="no", port=None,
                 extra_args=()):
        super().__init__(workdir, port=port, extra_args=extra_args)
        self.certs = certs
        self.pair = pair or certs.server_a
        self.verify_ca = str(verify_ca or certs.ca.cert)
        self.auth_clients = auth_clients

    def args(self):
        return [REDIS_SERVER, "--port", "0", "--tls-port", str(self.port), "--bind", HOST,
                "--save", "", "--appendonly", "no", "--dir", str(self.dir),
                "--protected-mode", "no", "--tls-cert-file", self.pair.cert,
                "--tls-key-file", self.pair.key, "--tls-ca-cert-file", self.certs.ca.cert,
                "--tls-auth-clients", self.auth_clients, *self.extra_args]

    def start(self, timeout=10.0):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.args(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.dir,
                                         preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while self._answering_pid() != self.proc.pid:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited with %s:\n%s"
                                   % (self.proc.returncode, tail(self.log_path)))
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("redis-server did not answer over TLS:\n"
                                   + tail(self.log_path))
            time.sleep(0.02)
        return self

    def raw(self, timeout=5.0):
        """A TlsConn to this server (client certificate given, hostname not checked)."""
        return TlsConn(self.port, ca=self.verify_ca, cert=self.certs.client.cert,
                       key=self.certs.client.key, timeout=timeout, check_hostname=False)

    def command(self, *args, timeout=5.0):
        with self.raw(timeout) as c:
            return c.command(*args)

    def _answering_pid(self):
        try:
            info = self.command("INFO", "server", timeout=1.0)
        except (OSError, EOFError, ssl.SSLError):
            return None
        if not isinstance(info, bytes):
            return None
        m = re.search(rb"process_id:(\d+)", info)
        return int(m.group(1)) if m else None

    def client(self, db=0, **kw):
        import redis
        return redis.Redis(host=self.host, port=self.port, db=db, ssl=True,
                           ssl_ca_certs=self.verify_ca, ssl_cert_reqs="required",
                           ssl_certfile=self.certs.client.cert, ssl_keyfile=self.certs.client.key,
                           ssl_check_hostname=False, socket_timeout=10, **kw)


def start_tls_redis(workdir, certs, attempts=4, **kw):
    """A TlsRedisServer on a free port (another port when the first was taken meanwhile)."""
    last = None
    for i in range(attempts):
        server = TlsRedisServer(Path(workdir) / f"try{i}", certs, **kw)
        try:
            return server.start()
        except RuntimeError as exc:
            last = exc
    raise last


@pytest.fixture
def tls_redis_factory(tmp_path, certs):
    """tls_redis_factory(**TlsRedisServer kwargs) starts a TlsRedisServer; all are killed after
    the test."""
    servers = []

    def start(**kw):
        server = start_tls_redis(tmp_path / f"tls-redis{len(servers)}", certs, **kw)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.kill()


# ---------------------------------------------------------------------------------------------
# A Redis Cluster over TLS (3 masters, no replica; cluster bus over TLS)


class TlsCluster:
    """`masters` TLS-only redis-server nodes (--tls-cluster yes: the cluster bus speaks TLS as
    well), joined by `redis-cli --tls --cluster create`."""

    def __init__(self, workdir, certs, masters=3):
        self.workdir = Path(workdir)
        self.certs = certs
        self.n_masters = masters
        self.nodes = []

    def start(self, timeout=40.0, attempts=2):
        from bp_cluster import cluster_port
        deadline = time.monotonic() + timeout
        for attempt in range(attempts):
            self.nodes = []
            try:
                taken = set()
                for i in range(self.n_masters):
                    port = cluster_port(taken)
                    node = TlsRedisServer(
                        self.workdir / f"try{attempt}" / f"node{i}", self.certs, port=port,
                        extra_args=["--cluster-enabled", "yes", "--cluster-config-file",
                                    "nodes.conf", "--cluster-node-timeout", "2000",
                                    "--tls-cluster", "yes"])
                    self.nodes.append(node)
                    node.start()
                    taken.update((port, port + 10000))
                self._create(max(5.0, deadline - time.monotonic()))
                wait_until(self.state_ok, max(1.0, deadline - time.monotonic()), interval=0.05,
                           what="TLS cluster state ok on every node")
                return self
            except (RuntimeError, AssertionError):
                self.stop()
                if attempt == attempts - 1 or time.monotonic() > deadline:
                    raise

    def _create(self, timeout):
        res = subprocess.run(
            ["redis-cli", "--tls", "--cacert", self.certs.ca.cert, "--cert",
             self.certs.client.cert, "--key", self.certs.client.key, "--cluster", "create",
             *[f"{HOST}:{n.port}" for n in self.nodes], "--cluster-replicas", "0",
             "--cluster-yes"], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            raise RuntimeError("redis-cli --tls --cluster create failed:\n%s%s"
                               % (res.stdout.decode(errors="replace"),
                                  res.stderr.decode(errors="replace")))

    def state_ok(self):
        for n in self.nodes:
            info = n.command("CLUSTER", "INFO").decode()
            if "cluster_state:ok" not in info or \
                    f"cluster_known_nodes:{len(self.nodes)}" not in info:
                return False
        return True

    def seeds(self):
        return ",".join(f"{HOST}:{n.port}" for n in self.nodes)

    def node_for_slot(self, slot):
        """The node whose CLUSTER SLOTS range covers `slot` (as the first node sees it)."""
        for lo, hi, master, *_ in self.nodes[0].command("CLUSTER", "SLOTS"):
            if lo <= slot <= hi:
                port = master[1]
                return next(n for n in self.nodes if n.port == port)
        return None

    def flushall(self):
        for n in self.nodes:
            assert n.command("FLUSHALL") == b"OK"

    def stop(self):
        for n in self.nodes:
            n.kill()


# ---------------------------------------------------------------------------------------------
# bloomproxy with TLS


class TlsProxy(Proxy):
    """A running bloomproxy; `port` is its plain TCP port (0: none), `tls_port` its TLS port
    (0: none). tls_raw() / tls_client() connect over TLS with the probe's credentials unless
    told otherwise."""

    tls_port = 0
    probe = None

    def tls_raw(self, timeout=5.0, **kw):
        args = dict(self.probe)
        args.update(kw)
        return TlsConn(self.tls_port, timeout=timeout, **args)

    def tls_client(self, **kw):
        args = dict(self.probe)
        args.update(kw)
        args.pop("check_hostname", None)
        return tls_redis_py(self.tls_port, **args)

    def log_count(self, text):
        return self.log().count(text)


def run_bloomproxy(args, timeout=10.0):
    """Runs bloomproxy with `args` expecting it to exit by itself (a configuration it refuses).
    Returns the CompletedProcess (stderr as text); AssertionError if it is still running after
    `timeout` seconds (it accepted the configuration)."""
    try:
        return subprocess.run([BLOOMPROXY_BIN, *[str(a) for a in args]], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env=proxy_env(), preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"bloomproxy {' '.join(map(str, args))} kept running "
                             f"(accepted the configuration)")


def start_tls_proxy(workdir, args, certs, plain=True, tls=True, probe=None, env=None,
                    ready_timeout=10.0, attempts=3):
    """Starts bloomproxy with `args` (the upstream and TLS settings) plus --bind and the
    listeners: --port (a free port, or 0 when `plain` is false) and --tls-port (a free port when
    `tls`). Waits until every listener answers PING (TLS: with `probe`, keyword arguments of
    TlsConn; default: trusts certs.ca and presents certs.client); NOAUTH counts as an answer."""
    probe = dict(probe if probe is not None else
                 {"ca": certs.ca.cert, "cert": certs.client.cert, "key": certs.client.key})

    def build(attempt):
        port = free_port() if plain else 0
        tls_port = free_port() if tls else 0
        full = [BLOOMPROXY_BIN, "--bind", HOST, "--port", str(port)]
        if tls:
            full += ["--tls-port", str(tls_port)]
        full += [str(a) for a in args]

        def make(proc, log_path):
            p = TlsProxy(HOST, port, proc, log_path, args=full)
            p.tls_port = tls_port
            p.probe = probe
            return p
        return full, f"bloomproxy-{port}-{tls_port}-{attempt}.log", make

    def ready(p):
        if plain and not ping_ok(p.port, timeout=1.0):
            return False
        if not tls:
            return True
        try:
            answer = tls_ping(p.tls_port, timeout=1.0, **probe)
        except AssertionError:
            return False
        return answer == "PONG" or (answer.startswith("reply: ") and "NOAUTH" in answer)

    return launch_proxy(workdir, attempts, ready_timeout, build, ready, env=env)
    raise last_error


@pytest.fixture
def tls_proxy(request, tmp_path, certs):
    """tls_proxy(*args, plain=True, tls=True, probe=None, env=None): start_tls_proxy in the
    test's directory. At teardown each proxy gets SIGTERM and must exit with code 0 within 10 s
    (its output is printed when the test failed)."""
    started = []

    def start(*args, **kw):
        p = start_tls_proxy(tmp_path / f"proxy{len(started)}", args, certs, **kw)
        started.append(p)
        return p

    yield start
    stop_proxies(request, started)


def upstream_tls_args(certs, server=None, ca=None, client=None):
    """The arguments of a bloomproxy in front of TlsRedisServer `server` over TLS, trusting `ca`
    (default certs.ca), presenting `client` (a Pair) when given."""
    args = []
    if server is not None:
        args += ["--upstream", f"{HOST}:{server.port}"]
    args += ["--upstream-tls", "yes", "--upstream-tls-ca-cert-file", str(ca or certs.ca.cert)]
    if client is not None:
        args += ["--upstream-tls-cert-file", client.cert, "--upstream-tls-key-file", client.key]
    return args


def tls_listener_args(certs, pair=None, auth_clients="no", ca=None, extra=()):
    """The client-side TLS settings of bloomproxy (the port is added by start_tls_proxy)."""
    pair = pair or certs.server_a
    args = ["--tls-cert-file", pair.cert, "--tls-key-file", pair.key,
            "--tls-auth-clients", auth_clients]
    if ca is not False and (ca is not None or auth_clients != "no"):
        args += ["--tls-ca-cert-file", str(ca or certs.ca.cert)]
    return args + list(extra)


def is_unavailable_tls_error(reply):
    """The error a client gets while the upstream's certificate does not verify: an error reply
    naming the upstream, TLS and the certificate."""
    return (isinstance(reply, Err) and b"upstream" in reply and b"TLS" in reply
            and b"certificate" in reply)


def listening_ports(pid):
    """The TCP ports process `pid` listens on (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", target)
        if m:
            inodes.add(m.group(1))
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports

"""A real Redis Cluster for the integration tests: redis-server nodes on free loopback ports,
joined by `redis-cli --cluster create`, plus the helpers tests need around it (the slot of a key,
the master serving it, SIGKILL and failover, resharding).

    cluster = RedisCluster(tmp_path / "cluster", masters=3, replicas=1)
    cluster.start()
    cluster.seeds()                 # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
    cluster.node_for_key("user:1")  # the RedisServer that serves the key's slot now
    cluster.stop()

A password given as `--requirepass PASS` in extra_args (or password=PASS) is used by every node,
by the nodes among themselves (masterauth) and by the helpers.
"""

import os
import subprocess
import time
from pathlib import Path

from bp_helpers import HOST, Err, RawConn, RedisServer, free_port, tail, wait_until

SLOTS = 16384
# Redis refuses a port above 55535: its cluster bus listens on port + 10000.
MAX_CLUSTER_PORT = 65535 - 10000
REDIS_CLI = os.environ.get("REDIS_CLI_BIN", "redis-cli")


# ---------------------------------------------------------------------------------------------
# Key slots (CRC16/XMODEM of the key or of its {hash tag}, modulo 16384), as Redis computes them.


def _crc16_table():
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC16 = _crc16_table()


def crc16(data):
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[((crc >> 8) ^ b) & 0xFF]
    return crc


def key_slot(key):
    if isinstance(key, str):
        key = key.encode()
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % SLOTS


def keys_in_distinct_slots(prefix, count):
    """`count` keys `prefix:N` whose slots are all different."""
    keys, seen, i = [], set(), 0
    while len(keys) < count:
        key = f"{prefix}:{i}"
        i += 1
        if key_slot(key) not in seen:
            seen.add(key_slot(key))
            keys.append(key)
    return keys


# ---------------------------------------------------------------------------------------------
# CLUSTER NODES


class NodeLine:
    """One line of CLUSTER NODES."""

    def __init__(self, line):
        fields = line.split(" ")
        self.id = fields[0]
        address = fields[1].split("@")[0]  # ip:port@cport[,hostname]
        self.port = int(address.rsplit(":", 1)[1]) if ":" in address else 0
        self.flags = set(fields[2].split(","))
        self.master_id = None if fields[3] == "-" else fields[3]
        self.link = fields[7]
        self.slots = set()
        for part in fields[8:]:
            if part.startswith("["):  # a slot being migrated or imported
                continue
            lo, _, hi = part.partition("-")
            self.slots.update(range(int(lo), int(hi or lo) + 1))

    @property
    def is_master(self):
        return "master" in self.flags

    @property
    def failing(self):
        return "fail" in self.flags or "fail?" in self.flags


def parse_cluster_nodes(text):
    if isinstance(text, bytes):
        text = text.decode()
    return [NodeLine(line) for line in text.splitlines() if line.strip()]


def parse_info(text):
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, _, v = line.partition(":")
            out[k] = v
    return out


# ---------------------------------------------------------------------------------------------


class ClusterNode(RedisServer):
    """A cluster node: a RedisServer that also knows its cluster node id once joined."""

    node_id = None

    @property
    def process(self):
        """The redis-server Popen (RedisServer calls it proc)."""
        return self.proc

    def command(self, *args, timeout=2.0):
        """One command on a fresh raw connection (AUTH first when the cluster has a password)."""
        with RawConn(self.port, timeout=timeout) as c:
            if self.password:
                c.command("AUTH", self.password)
            return c.command(*args)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def __repr__(self):
        return f"<node {self.port} {self.node_id and self.node_id[:8]}>"


def _port_pair_free(port):
    """True if `port` and its bus port `port + 10000` can both be bound on the loopback now."""
    import socket
    for p in (port, port + 10000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, p))
            except OSError:
                return False
    return True


def cluster_port(taken=()):
    """A free loopback port <= 55535 whose cluster bus port (+10000) is free as well."""
    for _ in range(1000):
        port = free_port()
        if port <= MAX_CLUSTER_PORT and port not in taken and port + 10000 not in taken \
                and _port_pair_free(port):
            return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisCluster:
    def __init__(self, workdir, masters=3, replicas=1, extra_args=(), password=None):
        self.workdir = Path(workdir)
        self.n_masters = masters
        self.n_replicas = replicas
        args = list(extra_args)
        # The password goes to RedisServer (it adds --requirepass and AUTHs when it checks the
        # node is up); the nodes use it among themselves as masterauth.
        if "--requirepass" in args:
            i = args.index("--requirepass")
            password = args[i + 1]
            del args[i:i + 2]
        if password is not None and "--masterauth" not in args:
            args += ["--masterauth", password]
        self.extra_args = args
        self.password = password
        self.nodes = []
        self.start_seconds = None  # how long start() took

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout=30.0, attempts=2):
        """Starts the nodes, creates the cluster and waits until it is stable. A node whose
        port was taken meanwhile is started again on other ports; a failed create starts
        everything again."""
        t0 = time.monotonic()
        deadline = t0 + timeout
        for attempt in range(attempts):
            self.nodes = []
            try:
                self._start_all(self.workdir / f"try{attempt}", deadline)
                self.wait_stable(max(1.0, deadline - time.monotonic()))
                break
            except (RuntimeError, AssertionError):
                self.stop()
                if attempt == attempts - 1 or time.monotonic() > deadline:
                    raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _start_all(self, workdir, deadline):
        workdir.mkdir(parents=True, exist_ok=True)
        taken = set()
        for i in range(self.n_masters * (1 + self.n_replicas)):
            self.nodes.append(self._start_node(workdir, i, taken, deadline))
        self._create(deadline)

    def _node_args(self):
        return ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
                "--cluster-config-file", "nodes.conf", "--enable-debug-command", "yes",
                # Replicas sync at once (no diskless delay): failover needs a synced replica.
                "--repl-diskless-sync-delay", "0", *self.extra_args]

    def _start_node(self, workdir, index, taken, deadline, attempts=5):
        last = None
        for attempt in range(attempts):
            port = cluster_port(taken)
            node = ClusterNode(workdir / f"node{index}-{attempt}", port=port,
                               extra_args=self._node_args(), password=self.password)
            try:
                node.start(timeout=max(1.0, min(10.0, deadline - time.monotonic())))
            except RuntimeError as exc:  # most likely a port (or bus port) was taken meanwhile
                last = exc
                continue
            taken.update((port, port + 10000))
            return node
        raise last

    def _cli(self, *args, timeout=60.0, stdout=None):
        env = dict(os.environ)
        env.pop("REDISCLI_AUTH", None)
        if self.password:
            env["REDISCLI_AUTH"] = self.password
        return subprocess.run([REDIS_CLI, *args], capture_output=stdout is None, stdout=stdout,
                              stderr=subprocess.STDOUT if stdout is not None else None,
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)

    def _create(self, deadline):
        if self.n_masters < 3:  # redis-cli --cluster create wants 3 masters at least
            return self._create_small()
        addresses = [f"{HOST}:{n.port}" for n in self.nodes]
        res = self._cli("--cluster", "create", *addresses, "--cluster-replicas",
                        str(self.n_replicas), "--cluster-yes",
                        timeout=max(5.0, deadline - time.monotonic()))
        if res.returncode != 0:
            raise RuntimeError("redis-cli --cluster create failed:\n%s%s"
                               % (res.stdout.decode(errors="replace"),
                                  res.stderr.decode(errors="replace")))
        for node in self.nodes:
            node.node_id = node.command("CLUSTER", "MYID").decode()

    def _create_small(self):
        """The same cluster as redis-cli would create, by hand: slots split evenly among the
        first `masters` nodes, the others replicating them in turn."""
        masters = self.nodes[:self.n_masters]
        for node in self.nodes:
            node.node_id = node.command("CLUSTER", "MYID").decode()
        for i, node in enumerate(masters):
            lo, hi = SLOTS * i // len(masters), SLOTS * (i + 1) // len(masters) - 1
            assert node.command("CLUSTER", "ADDSLOTSRANGE", lo, hi) == b"OK"
        for node in self.nodes[1:]:
            assert node.command("CLUSTER", "MEET", HOST, self.nodes[0].port) == b"OK"
        wait_until(lambda: all(int(parse_info(n.command("CLUSTER", "INFO"))
                                   ["cluster_known_nodes"]) == len(self.nodes)
                               for n in self.nodes), 20, interval=0.02, what="nodes met")
        for i, node in enumerate(self.nodes[len(masters):]):
            master = masters[i % len(masters)]
            wait_until(lambda: node.command("CLUSTER", "REPLICATE", master.node_id) == b"OK",
                       20, interval=0.02, what="replica attached")

    def stop(self):
        for node in self.nodes:
            node.kill()

    # -- topology -----------------------------------------------------------------------------

    def live_nodes(self):
        return [n for n in self.nodes if n.alive()]

    def by_id(self, node_id):
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        return None

    def by_port(self, port):
        for n in self.nodes:
            if n.port == port:
                return n
        return None

    def cluster_nodes(self, node=None):
        """CLUSTER NODES of `node` (default: the first live node that answers), parsed."""
        candidates = [node] if node is not None else self.live_nodes()
        last = None
        for n in candidates:
            try:
                reply = n.command("CLUSTER", "NODES")
            except (OSError, EOFError) as exc:
                last = exc
                continue
            if isinstance(reply, Err):
                last = RuntimeError(reply.decode())
                continue
            return parse_cluster_nodes(reply)
        raise RuntimeError(f"no node answered CLUSTER NODES: {last!r}")

    def slot_owners(self, node=None):
        """{slot: master node id} as `node` (or any live node) sees it."""
        owners = {}
        for line in self.cluster_nodes(node):
            if line.is_master:
                for s in line.slots:
                    owners[s] = line.id
        return owners

    def masters(self):
        """The nodes that are masters now (and not failed), as a live node sees it."""
        return [self.by_id(line.id) for line in self.cluster_nodes()
                if line.is_master and not line.failing and self.by_id(line.id) is not None
                and self.by_id(line.id).alive()]

    def replicas_of(self, master):
        return [self.by_id(line.id) for line in self.cluster_nodes()
                if line.master_id == master.node_id and self.by_id(line.id) is not None]

    def seeds(self):
        """The masters' addresses, comma-separated (for --upstream-cluster)."""
        return ",".join(f"{HOST}:{n.port}" for n in self.masters())

    def node_for_key(self, key):
        """The master serving `key`'s slot now."""
        return self.node_for_slot(key_slot(key))

    def node_for_slot(self, slot):
        owner = self.slot_owners().get(slot)
        return self.by_id(owner) if owner else None

    def client_for_key(self, key, **kw):
        return self.node_for_key(key).client(**kw)

    def flushall(self):
        for m in self.masters():
            assert m.command("FLUSHALL") == b"OK"

    def dbsize(self):
        return sum(m.command("DBSIZE") for m in self.masters())

    # -- convergence --------------------------------------------------------------------------

    def _state(self, node):
        """(cluster_state, {slot range owner map as a frozenset}, known nodes) of one node."""
        info = parse_info(node.command("CLUSTER", "INFO"))
        lines = self.cluster_nodes(node)
        owners = frozenset((line.id, frozenset(line.slots)) for line in lines
                           if line.is_master and line.slots)
        roles = frozenset((line.id, line.master_id) for line in lines)
        return info.get("cluster_state"), owners, roles, int(info.get("cluster_known_nodes", 0))

    def stable(self):
        """Every live node says cluster_state:ok, knows every node, and all agree on who serves
        which slots and who replicates whom; every live replica has synced with its master."""
        live = self.live_nodes()
        states = [self._state(n) for n in live]
        if any(s[0] != "ok" or s[3] != len(self.nodes) for s in states):
            return False
        if len({(s[1], s[2]) for s in states}) != 1:
            return False
        covered = sum(len(slots) for _, slots in states[0][1])
        if covered != SLOTS:
            return False
        for n in live:
            info = parse_info(n.command("INFO", "replication"))
            if info.get("role") == "slave" and info.get("master_link_status") != "up":
                return False
        return True

    def wait_stable(self, timeout=30.0):
        wait_until(self.stable, timeout, interval=0.02, what="cluster stable")

    def wait_state_ok(self, timeout=20.0):
        """Every live node says cluster_state:ok."""
        wait_until(lambda: all(parse_info(n.command("CLUSTER", "INFO")).get("cluster_state")
                               == "ok" for n in self.live_nodes()),
                   timeout, interval=0.02, what="cluster_state:ok on every live node")

    # -- faults -------------------------------------------------------------------------------

    def kill(self, node):
        """SIGKILL one node (remembering its replicas for wait_for_failover)."""
        node.replicas_before_kill = [r for r in self.replicas_of(node) if r.alive()] \
            if node.alive() else getattr(node, "replicas_before_kill", [])
        node.kill()

    def wait_for_failover(self, dead_node, timeout=20.0):
        """Waits until a replica of `dead_node` is a master and every live node says
        cluster_state:ok. Returns the time.monotonic() at which a replica was first seen
        promoted (ROLE polled every 20 ms)."""
        candidates = getattr(dead_node, "replicas_before_kill", None)
        if candidates is None:
            candidates = [r for r in self.replicas_of(dead_node) if r.alive()]
        assert candidates, f"{dead_node} has no live replica to promote"
        deadline = time.monotonic() + timeout
        promoted_at = None
        while promoted_at is None:
            for r in candidates:
                try:
                    role = r.command("ROLE", timeout=0.5)
                except (OSError, EOFError):
                    continue
                if isinstance(role, list) and role and role[0] == b"master":
                    promoted_at = time.monotonic()
                    break
            if promoted_at is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no replica of {dead_node} promoted within {timeout}s")
                time.sleep(0.02)
        self.wait_state_ok(max(1.0, deadline - time.monotonic()))
        return promoted_at

    # -- resharding ---------------------------------------------------------------------------

    def _reshard_args(self, src, dst, slots):
        return ["--cluster", "reshard", f"{HOST}:{src.port}", "--cluster-from", src.node_id,
                "--cluster-to", dst.node_id, "--cluster-slots", str(slots), "--cluster-yes",
                "--cluster-pipeline", "10"]

    def reshard(self, src, dst, slots, timeout=120.0):
        """Moves `slots` slots from master `src` to master `dst` with redis-cli; returns when
        redis-cli is done and every node agrees on the new slot map."""
        log_path = self.workdir / f"reshard-{time.monotonic_ns()}.log"
        with open(log_path, "wb") as log:
            res = self._cli(*self._reshard_args(src, dst, slots), timeout=timeout, stdout=log)
        if res.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster reshard exited {res.returncode}:\n"
                               + tail(log_path, 4000))
        self.wait_stable(30)

    def reshard_async(self, src, dst, slots):
        """Starts the same redis-cli reshard in the background; returns the Popen (its output
        goes to the file named by its `log_path` attribute)."""
        env = dict(os.environ)
        env.pop("REDISCLI_AUTH", None)
        if self.password:
            env["REDISCLI_AUTH"] = self.password
        log_path = self.workdir / f"reshard-{time.monotonic_ns()}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([REDIS_CLI, *self._reshard_args(src, dst, slots)],
                                    stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env)
        proc.log_path = log_path
        return proc


"""Faults of a Redis Cluster upstream under load through bloomproxy: 2,000 slots moved by
`redis-cli --cluster reshard`, and a master SIGKILLed and replaced by its replica.

Sixteen clients, each on its own connection with its own keys (spread over every slot) and its
own filters, send pipelined batches of SET / GET / MGET / BF.ADD / BF.EXISTS and log every reply
with the time its batch was sent and the time it was read. The logs are judged afterwards
against what each client wrote (ClusterLoad.judge), then every acknowledged write is read back
through the proxy and straight from the master that serves it.

Each test starts its own cluster (3 masters with a replica each, cluster-node-timeout 1000 ms).
"""

import random
import threading
import time
from collections import Counter, defaultdict

from bf_vectors import data_keys_of, key_hash_slot
from bp_helpers import Err, RawConn, Simple, encode_command as cmd, parse_resp

THREADS = 16
BATCH = 8
SLOTS_MOVED = 2000
# After a master is killed: from promotion + SERVE_WITHIN every command must succeed.
SERVE_WITHIN = 2.0
CLUSTERDOWN = b"CLUSTERDOWN"


def keys_where(prefix, count, wanted=None):
    """`count` names `prefix:N`, all in slots of `wanted` (a set of slots) when given."""
    out, i = [], 0
    while len(out) < count:
        name = f"{prefix}:{i}"
        i += 1
        if wanted is None or key_hash_slot(name) in wanted:
            out.append(name)
    return out


def owner_ports(cluster):
    """{slot: port of the master serving it}."""
    port_of = {n.node_id: n.port for n in cluster.nodes}
    return {s: port_of[o] for s, o in cluster.slot_owners().items()}


class ClusterLoad:
    """THREADS clients through the proxy on `port`; client t uses keys[t] and filters[t] only.

    Every client first gives each of its keys a value and each filter an item, then sends
    batches of BATCH commands until stop(): SET k v (a value never used before), GET k, MGET of
    4 keys, BF.ADD f item (a new item), BF.EXISTS f item (an item it added before). Each reply
    is logged as (sent, read, kind, key(s), argument, parsed reply). A broken connection or a
    reply that does not come within `reply_timeout` is a problem at once."""

    ADD, EXISTS, MEXISTS = "BF.ADD", "BF.EXISTS", "BF.MEXISTS"

    def __init__(self, port, keys, filters, reply_timeout=15.0):
        self.port = port
        self.keys, self.filters = keys, filters
        self.reply_timeout = reply_timeout
        self.logs = [[] for _ in keys]
        self.problems = []
        self._started = threading.Semaphore(0)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(t,), daemon=True)
                         for t in range(len(keys))]

    def start(self):
        for t in self._threads:
            t.start()
        for _ in self._threads:
            assert self._started.acquire(timeout=30), "load clients did not start"
        assert not self.problems, "\n".join(self.problems)
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(self.reply_timeout + 10)
        assert not any(t.is_alive() for t in self._threads), "load clients still running"

    def ops(self):
        return sum(len(log) for log in self.logs)

    # -- clients ------------------------------------------------------------------------------

    def _connect(self):
        return RawConn(self.port, timeout=self.reply_timeout)

    def _exchange(self, conn, ops):
        """Sends `ops` in one write; yields (time read, parsed reply) for each."""
        conn.send(b"".join(self._encode(op) for op in ops))
        for _ in ops:
            reply = parse_resp(conn.read_reply_raw())[0]
            yield time.monotonic(), reply

    def _encode(self, op):
        kind, key, arg = op
        if kind == "MGET":
            return cmd("MGET", *key)
        if kind == "GET":
            return cmd("GET", key)
        return cmd({"SET": "SET", "ADD": self.ADD, "EXISTS": self.EXISTS}[kind], key, arg)

    def _batch(self, tid, conn, ops, added):
        log = self.logs[tid]
        sent = time.monotonic()
        try:
            for op, (read, reply) in zip(ops, self._exchange(conn, ops)):
                log.append((sent, read, op[0], op[1], op[2], reply))
                if op[0] == "ADD" and not isinstance(reply, Err):
                    added[op[1]].append(op[2])
        except (OSError, EOFError) as exc:
            self.problems.append(f"client {tid}: {exc!r} after {len(log)} replies "
                                 f"(batch sent {sent:.3f})")
            return False
        return True

    def _run(self, tid):
        rnd = random.Random(tid)
        keys, filters = self.keys[tid], self.filters[tid]
        added = {f: [] for f in filters}
        seq = 0
        try:
            conn = self._connect()
        except OSError as exc:
            self.problems.append(f"client {tid}: cannot connect: {exc!r}")
            self._started.release()
            return
        with conn:
            first = [("SET", k, f"{tid}:0:{k}") for k in keys] + \
                [("ADD", f, f"{tid}:0") for f in filters]
            ok = all(self._batch(tid, conn, first[i:i + 50], added)
                     for i in range(0, len(first), 50))
            self._started.release()
            while ok and not self._stop.is_set():
                ops = []
                for _ in range(BATCH):
                    seq += 1
                    r = rnd.random()
                    with_items = [f for f in filters if added[f]]
                    if r < 0.3:
                        ops.append(("SET", rnd.choice(keys), f"{tid}:{seq}"))
                    elif r < 0.55:
                        ops.append(("GET", rnd.choice(keys), None))
                    elif r < 0.65:
                        ops.append(("MGET", tuple(rnd.sample(keys, 4)), None))
                    elif r < 0.85 or not with_items:
                        ops.append(("ADD", rnd.choice(filters), f"{tid}:{seq}"))
                    else:
                        f = rnd.choice(with_items)
                        ops.append(("EXISTS", f, rnd.choice(added[f])))
                ok = self._batch(tid, conn, ops, added)

    # -- judging ------------------------------------------------------------------------------

    def judge(self, dead_slots=frozenset(), t_kill=None, t_dead=None, t_ok=None):
        """Checks every logged reply; returns ({key: values it may hold now}, {filter: items
        surely in it}) over all clients, and the problems found (a list of strings).

        Without a fault every reply must be right: SET +OK, GET and MGET the value last set,
        BF.ADD 0 or 1, BF.EXISTS 1 for an item added before; no error at all.

        With a master killed (its slots `dead_slots`, SIGKILL sent at t_kill, reaped by t_dead)
        and every command due to succeed from t_ok on: an error is allowed only if it starts
        with CLUSTERDOWN and its batch was sent before t_ok; a batch sent from t_ok on is
        answered within SERVE_WITHIN seconds. The replica may not have received
        the dead master's last writes (replication is asynchronous), so for a key or filter in
        `dead_slots` whose reply comes after t_kill, any value it was ever given (or none) is
        possible again, and any item added before; commands sent before t_dead may still have
        reached the dead master, so their results stay uncertain."""
        values, sure, problems, tally = {}, {}, [], Counter()
        for tid, log in enumerate(self.logs):
            v, s = self._judge_client(tid, log, dead_slots, t_kill, t_dead, t_ok, problems,
                                      tally)
            values.update(v)
            sure.update(s)
        if tally:
            problems.insert(0, f"{sum(tally.values())} wrong replies of {self.ops()} (by "
                               f"command and reply: {dict(tally.most_common(12))}); the first:")
        return values, sure, problems

    @staticmethod
    def _judge_client(tid, log, dead_slots, t_kill, t_dead, t_ok, problems, tally):
        values = defaultdict(lambda: {None})  # key -> the values it may hold
        written = defaultdict(set)           # key -> every value ever sent for it
        sure = defaultdict(set)              # filter -> items that must be found
        widened = set()

        def problem(text, word=None):
            if word is None:
                word = reply.split(b" ")[0].decode(errors="replace") \
                    if isinstance(reply, Err) else "wrong"
            tally[f"{kind} {word}"] += 1
            if len(problems) < 30:
                problems.append(f"client {tid}: {text}")

        for sent, read, kind, key, arg, reply in log:
            keys = key if kind == "MGET" else (key,)
            fuzzy = {}
            for k in keys:
                if t_kill is not None and read >= t_kill and key_hash_slot(k) in dead_slots:
                    if k not in widened:
                        widened.add(k)
                        if kind in ("ADD", "EXISTS"):
                            sure[k] = set()
                        else:
                            values[k] = written[k] | {None}
                    fuzzy[k] = sent < t_dead
            what = f"{kind} {key} {arg or ''} (sent {sent:.3f}, read {read:.3f})"
            if t_ok is not None and sent >= t_ok and read - sent > SERVE_WITHIN:
                problem(f"{what}: answered {read - sent:.1f} s after it was sent", "slow")
            if isinstance(reply, Err):
                if not (t_ok is not None and sent < t_ok and reply.startswith(CLUSTERDOWN)):
                    problem(f"{what}: error -{reply.decode(errors='replace')}")
                if kind == "SET":  # it may have been applied
                    written[key].add(arg.encode())
                    values[key] = values[key] | {arg.encode()}
                continue
            if kind == "SET":
                written[key].add(arg.encode())
                if not (isinstance(reply, Simple) and reply == b"OK"):
                    problem(f"{what}: {reply!r}")
                values[key] = values[key] | {arg.encode()} if fuzzy.get(key) else {arg.encode()}
            elif kind in ("GET", "MGET"):
                got = [reply] if kind == "GET" else reply
                if not isinstance(got, list) or len(got) != len(keys):
                    problem(f"{what}: {reply!r}")
                    continue
                for k, g in zip(keys, got):
                    if isinstance(g, (Err, Simple, int, list)) or g not in values[k]:
                        problem(f"{what}: {k} is {g!r}, expected one of {values[k]}")
                    elif not fuzzy.get(k):
                        values[k] = {g}
            elif kind == "ADD":
                if reply not in (0, 1):
                    problem(f"{what}: {reply!r}")
                elif not fuzzy.get(key):
                    sure[key].add(arg)
            elif kind == "EXISTS":
                if reply not in (0, 1):
                    problem(f"{what}: {reply!r}")
                elif arg in sure[key] and reply != 1:
                    problem(f"{what}: 0 for an item added before (false negative)")
        return dict(values), dict(sure)

    # -- final state --------------------------------------------------------------------------

    def verify_stored(self, conn, cluster, values, sure):
        """Every key holds a value it may hold (`values`), the same through the proxy (RawConn
        `conn`) and straight from the master serving it; every filter finds every item of
        `sure` through the proxy and keeps its data keys on the master serving it only.
        Returns the problems."""
        problems = []
        owners = owner_ports(cluster)
        masters = {m.port: m for m in cluster.masters()}
        keys = sorted(values)
        via_proxy = {}
        for i in range(0, len(keys), 100):
            part = keys[i:i + 100]
            via_proxy.update(zip(part, conn.command("MGET", *part)))
        by_node = defaultdict(list)
        for k in keys:
            by_node[owners[key_hash_slot(k)]].append(k)
        for port, part in by_node.items():
            pipe = masters[port].client().pipeline(transaction=False)
            for k in part:
                pipe.get(k)
            for k, direct in zip(part, pipe.execute()):
                if via_proxy[k] not in values[k]:
                    problems.append(f"{k}: {via_proxy[k]!r} through the proxy, expected one of "
                                    f"{values[k]}")
                if direct != via_proxy[k]:
                    problems.append(f"{k}: {direct!r} on node {port}, {via_proxy[k]!r} through "
                                    "the proxy")
        node_keys = {port: set(m.client().keys("*")) for port, m in masters.items()}
        for f, items in sorted(sure.items()):
            if items:
                got = conn.command(self.MEXISTS, f, *sorted(items))
                missing = [it for it, g in zip(sorted(items), got) if g != 1]
                if missing:
                    problems.append(f"{f}: {len(missing)} of {len(items)} items not found, "
                                    f"e.g. {missing[:3]}")
            problems += self.filter_keys_problems(f, owners[key_hash_slot(f)], node_keys)
        return problems[:30]

    @staticmethod
    def filter_keys_problems(f, owner, node_keys):
        """The data keys of filter `f` are on master `owner` and on no other."""
        out = []
        for port, keys in node_keys.items():
            data = data_keys_of(None, f, keys)
            if port == owner and not data:
                out.append(f"{f}: no data keys on node {port}, which serves its slot")
            if port != owner and data:
                out.append(f"{f}: data keys on node {port}, its slot is on {owner}: {data[:3]}")
        return out


def stats(load, slots, since=None, until=None):
    """(commands, errors) logged for keys in `slots`, sent in [since, until)."""
    n = errors = 0
    for log in load.logs:
        for sent, _, kind, key, _, reply in log:
            keys = key if kind == "MGET" else (key,)
            if (since is None or sent >= since) and (until is None or sent < until) \
                    and any(key_hash_slot(k) in slots for k in keys):
                n += 1
                errors += isinstance(reply, Err)
    return n, errors


def test_reshard_under_load(cluster_factory, cluster_proxy):
    cluster = cluster_factory()
    p = cluster_proxy(cluster=cluster)
    src, dst = cluster.masters()[:2]
    before = cluster.slot_owners()
    # redis-cli takes the slots to move from the start of the source's range: half the keys and
    # filters of every client are in those slots, the others anywhere.
    src_slots = sorted(s for s, o in before.items() if o == src.node_id)
    moving = set(src_slots[:SLOTS_MOVED])
    keys = [keys_where(f"rk:{t}:m", 50, moving) + keys_where(f"rk:{t}:a", 50)
            for t in range(THREADS)]
    filters = [keys_where(f"rf:{t}:m", 4, moving) + keys_where(f"rf:{t}:a", 4)
               for t in range(THREADS)]
    load = ClusterLoad(p.port, keys, filters).start()
    try:
        time.sleep(1.0)
        t_begin = time.monotonic()
        proc = cluster.reshard_async(src, dst, SLOTS_MOVED)
        try:
            rc = proc.wait(60)  # a few seconds normally; well within the CTest timeout
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        t_end = time.monotonic()
        assert rc == 0, "redis-cli --cluster reshard failed:\n" + proc.log_path.read_text()
        cluster.wait_stable(30)
        time.sleep(1.0)
    finally:
        load.stop()
    assert p.alive(), "bloomproxy died"
    after = cluster.slot_owners()
    moved = {s for s in before if before[s] != after[s]}
    assert len(moved) == SLOTS_MOVED and all(after[s] == dst.node_id for s in moved)
    n_moving, _ = stats(load, moved, t_begin, t_end)
    print(f"reshard took {t_end - t_begin:.1f} s; {load.ops()} commands in all, {n_moving} on "
          f"the moving slots during the reshard")
    assert n_moving >= 200, f"only {n_moving} commands on the moving slots during the reshard"

    values, sure, problems = load.judge()
    problems += load.problems
    assert not problems, "wrong or failed replies under the reshard:\n" + "\n".join(problems)
    assert all(len(v) == 1 for v in values.values())
    with p.raw(timeout=30) as c:
        problems = load.verify_stored(c, cluster, values, sure)
    assert not problems, "after the reshard:\n" + "\n".join(problems)


def test_master_killed_replica_promoted_under_load(cluster_factory, cluster_proxy):
    cluster = cluster_factory()
    p = cluster_proxy(cluster=cluster)
    keys = [keys_where(f"fk:{t}", 90) for t in range(THREADS)]
    filters = [keys_where(f"ff:{t}", 6) for t in range(THREADS)]
    victim = cluster.masters()[0]
    dead_slots = {s for s, o in cluster.slot_owners().items() if o == victim.node_id}
    load = ClusterLoad(p.port, keys, filters).start()
    try:
        time.sleep(1.5)
        t_kill = time.monotonic()
        cluster.kill(victim)
        t_dead = time.monotonic()
        promoted = cluster.wait_for_failover(victim)
        t_ok = promoted + SERVE_WITHIN
        # Keep the load on for 4 s past the deadline.
        time.sleep(max(0.0, t_ok + 4.0 - time.monotonic()))
    finally:
        load.stop()
    assert p.alive(), "bloomproxy died"
    with p.raw() as c:
        assert c.command("PING") == b"PONG"

    served, errors = stats(load, dead_slots, since=t_ok)
    down, down_errors = stats(load, dead_slots, since=t_kill, until=t_ok)
    print(f"promoted {promoted - t_kill:.2f} s after the kill; on the dead master's slots: "
          f"{down} commands ({down_errors} errors) before promotion + {SERVE_WITHIN} s, "
          f"{served} ({errors} errors) after")
    assert served >= 200, f"only {served} commands on the dead master's slots after t_ok"

    values, sure, problems = load.judge(dead_slots, t_kill, t_dead, t_ok)
    problems += load.problems
    assert not problems, "wrong or failed replies around the failover:\n" + "\n".join(problems)
    # Every write acknowledged by the masters that stayed up is there (their keys' values are
    # uncertain only after an error reply to a SET); the dead master's keys hold a value they
    # were given, read after the promotion.
    with p.raw(timeout=30) as c:
        problems = load.verify_stored(c, cluster, values, sure)
    assert not problems, "after the failover:\n" + "\n".join(problems)

"""The proxy's own upstream commands leave no trace a client could see (docs/connections.md, "The
proxy's own commands"):

- WATCH keeps working around the key commands the proxy runs as scripts (DEL, UNLINK, the EXPIRE
  family, PERSIST, RENAME, RENAMENX, TYPE): every sequence gives the replies a direct
  redis-server gives, byte for byte, and leaves the same keys (a filter's data keys follow its
  name);
- its probes count no error in INFO errorstats;
- its probes move no key's LRU/LFU clock (OBJECT IDLETIME, OBJECT FREQ);
- MONITOR shows no CLIENT ID, no MULTI/EXEC but the client's own, no HGET/HMGET of plain keys;
- CLIENT UNBLOCK and CLIENT TRACKING ... REDIRECT take the proxy's client ids and answer as
  Redis does.

Filters are compared with the same sequence run directly on Redis on a plain hash (the name of a
filter is a hash upstream), where Redis's reply is the same (TYPE aside: MBbloom--).
"""

import re
import time

import pytest

from bf_vectors import data_keys_of, marker_keys_of, upstream_keys
from bp_helpers import Err, Load, RawConn, encode_command as cmd, parse_resp, wait_until

PLAIN_KINDS = ("string", "hash", "list", "set", "zset")
KINDS = PLAIN_KINDS + ("bloom",)


def make_key(direct, via_proxy, kind, key, ttl=None):
    """Creates `key` of `kind` ("bloom": a filter, created through the proxy; others directly on
    Redis), with a TTL in seconds when `ttl` is given (through the proxy for a filter, so its
    data keys share it)."""
    if kind == "bloom":
        assert via_proxy.command("BF.RESERVE", key, "0.01", "100") == b"OK"
        assert via_proxy.command("BF.MADD", key, "a", "b", "c") == [1, 1, 1]
        if ttl is not None:
            assert via_proxy.command("EXPIRE", key, str(ttl)) == 1
        return
    create = {
        "string": ("SET", key, "v"),
        "hash": ("HSET", key, "f", "v", "g", "w"),
        "list": ("RPUSH", key, "a", "b"),
        "set": ("SADD", key, "a", "b"),
        "zset": ("ZADD", key, "1", "a", "2", "b"),
        "stream": ("XADD", key, "1-1", "f", "v"),
        "comparator": ("HSET", key, "f", "v", "g", "w"),
    }[kind]
    reply = direct.command(*create)
    assert not isinstance(reply, Err), (create, reply)
    if ttl is not None:
        assert direct.command("EXPIRE", key, str(ttl)) == 1


def run_steps(port, steps):
    """Runs `steps` on connections to `port`: each step is (who, [command, ...]); the commands
    of one step go out in one write, then their replies are read. Returns the raw replies."""
    conns = {}
    out = []
    try:
        for who, commands in steps:
            if who not in conns:
                conns[who] = RawConn(port)
            c = conns[who]
            c.send(b"".join(cmd(*a) for a in commands))
            out.extend(c.read_reply_raw() for _ in commands)
    finally:
        for c in conns.values():
            c.close()
    return out


def describe(steps):
    return "; ".join(f"{who}: " + " | ".join(" ".join(a) for a in commands)
                     for who, commands in steps)


# ---------------------------------------------------------------------------------------------
# 1. WATCH around the key commands the proxy intercepts

# The key names of the WATCH sequences: x is watched by "other client" cases, y is the key of the
# kind under test, y2 a missing rename target, o an existing string, z and cnt written inside
# the transactions.
STATE_KEYS = ("x", "y", "y2", "o", "z", "cnt")
NOW = int(time.time())

# (case, commands on y, y has a TTL (1000 s) before, the keys the commands modify in Redis's
# sense: signalModifiedKey, so that a WATCH on one of them aborts EXEC)
CASES = [
    ("DEL", [("DEL", "y")], True, ("y",)),
    ("DEL several", [("DEL", "y", "missing", "o")], True, ("y", "o")),
    ("UNLINK", [("UNLINK", "y")], False, ("y",)),
    ("EXPIRE", [("EXPIRE", "y", "100")], False, ("y",)),
    ("EXPIRE NX (no-op)", [("EXPIRE", "y", "100", "NX")], True, ()),
    ("EXPIRE in the past", [("EXPIRE", "y", "-1")], True, ("y",)),
    ("PEXPIRE", [("PEXPIRE", "y", "100000")], True, ("y",)),
    ("EXPIREAT", [("EXPIREAT", "y", str(NOW + 100))], True, ("y",)),
    ("PEXPIREAT", [("PEXPIREAT", "y", str((NOW + 100) * 1000))], True, ("y",)),
    ("PERSIST", [("PERSIST", "y")], True, ("y",)),
    ("PERSIST (no TTL, no-op)", [("PERSIST", "y")], False, ()),
    ("RENAME", [("RENAME", "y", "y2")], True, ("y", "y2")),
    ("RENAME over a string", [("RENAME", "y", "o")], True, ("y", "o")),
    ("RENAME to itself", [("RENAME", "y", "y")], True, ()),
    ("RENAMENX", [("RENAMENX", "y", "y2")], True, ("y", "y2")),
    ("RENAMENX existing (no-op)", [("RENAMENX", "y", "o")], True, ()),
    ("TYPE", [("TYPE", "y")], True, ()),
    ("TYPE EXISTS TTL", [("TYPE", "y"), ("EXISTS", "y"), ("TTL", "y"), ("TYPE", "missing")],
     True, ()),
]


def _one_by_one(who, commands):
    return [(who, [c]) for c in commands]


def scenarios(cmds, modifies):
    """{scenario: (steps, how EXEC must answer in Redis)} for a case's commands `cmds` and the
    keys they modify; the expectation is checked on the direct run, to be sure each scenario
    tests what it says."""
    modifies_y = "y" in modifies
    modifies_dst = "y2" in modifies or "o" in modifies
    exec_cnt = [("a", [("MULTI",)]), ("a", [("INCR", "cnt")]), ("a", [("EXEC",)])]
    exec_z = [("a", [("MULTI",)]), ("a", [("SET", "z", "1")]), ("a", [("EXEC",)])]
    return {
        # Another client writes the watched key, then the command: EXEC aborts.
        "other writes, then the command": (
            [("a", [("WATCH", "x")]), ("b", [("SET", "x", "1")])] + _one_by_one("a", cmds)
            + exec_cnt, "abort"),
        # The command, then another client writes the watched key: EXEC aborts.
        "the command, then other writes": (
            [("a", [("WATCH", "x")])] + _one_by_one("a", cmds) + [("b", [("SET", "x", "1")])]
            + exec_cnt, "abort"),
        # Nobody writes the watched key: the command must not abort EXEC by itself.
        "no conflict": ([("a", [("WATCH", "x")])] + _one_by_one("a", cmds) + exec_cnt, "run"),
        # The client's own write to a watched key aborts its transaction.
        "own command on the watched key": (
            [("a", [("WATCH", "y")])] + _one_by_one("a", cmds) + exec_z,
            "abort" if modifies_y else "run"),
        "own command on the watched target": (
            [("a", [("WATCH", "y2", "o")])] + _one_by_one("a", cmds) + exec_z,
            "abort" if modifies_dst else "run"),
        # Another client's command on the watched key.
        "other client's command on the watched key": (
            [("a", [("WATCH", "y")])] + _one_by_one("b", cmds) + exec_z,
            "abort" if modifies_y else "run"),
        # Pipelined: the command with MULTI/EXEC in one write (and WATCH too).
        "pipelined after other writes": (
            [("a", [("WATCH", "x")]), ("b", [("SET", "x", "1")]),
             ("a", list(cmds) + [("MULTI",), ("INCR", "cnt"), ("EXEC",)])], "abort"),
        "pipelined own write": (
            [("a", [("WATCH", "y")] + list(cmds) + [("MULTI",), ("SET", "z", "1"), ("EXEC",)])],
            "abort" if modifies_y else "run"),
        # UNWATCH between the command and MULTI: nothing aborts.
        "UNWATCH after the command": (
            [("a", [("WATCH", "x", "y")]), ("b", [("SET", "x", "1")])] + _one_by_one("a", cmds)
            + [("a", [("UNWATCH",)])] + exec_cnt, "run"),
        # The command queued inside the transaction: runs in EXEC, or not at all.
        "inside MULTI": (
            [("a", [("WATCH", "x")]), ("a", [("MULTI",)])] + _one_by_one("a", cmds)
            + [("a", [("INCR", "cnt")]), ("a", [("EXEC",)])], "run"),
        "inside MULTI, other writes": (
            [("a", [("WATCH", "x")]), ("a", [("MULTI",)])] + _one_by_one("a", cmds)
            + [("b", [("SET", "x", "1")]), ("a", [("INCR", "cnt")]), ("a", [("EXEC",)])],
            "abort"),
        "inside MULTI, pipelined": (
            [("a", [("WATCH", "y"), ("MULTI",)] + list(cmds) + [("INCR", "cnt"), ("EXEC",)])],
            "run"),
        "UNWATCH before the command": (
            [("a", [("WATCH", "y")]), ("a", [("UNWATCH",)])] + _one_by_one("a", cmds) + exec_z,
            "run"),
    }


def snapshot(direct, compare_values):
    """{key: (type, pttl, value)} upstream for STATE_KEYS (value: DUMP, for the keys whose
    content is comparable between the two runs)."""
    out = {}
    for k in STATE_KEYS:
        value = None
        if compare_values or k in ("x", "z", "cnt"):
            value = direct.command("DUMP", k)
        out[k] = (direct.command("TYPE", k), direct.command("PTTL", k), value)
    return out


def diff_snapshots(via_proxy, direct_run, tolerance_ms=5000):
    problems = []
    for k in STATE_KEYS:
        (t1, p1, v1), (t2, p2, v2) = via_proxy[k], direct_run[k]
        if min(p1, p2) < 0:
            same_ttl = p1 == p2
        else:
            same_ttl = abs(p1 - p2) <= tolerance_ms
        if t1 != t2 or v1 != v2 or not same_ttl:
            problems.append(f"{k}: via proxy type {t1!r} pttl {p1} value {v1!r}; "
                            f"direct type {t2!r} pttl {p2} value {v2!r}")
    return problems


def filter_key_problems(direct_py, names=STATE_KEYS, only_these=True):
    """Every filter upstream among `names` has its data keys and one marker, expiring with the
    name; no data key or marker belongs to a name that is not a filter; with `only_these`, no
    key exists upstream but `names` and those data keys and markers."""
    keys = upstream_keys(direct_py)
    allowed = {k.encode() for k in names}
    problems = []
    for name in names:
        data = data_keys_of(direct_py, name, keys)
        markers = marker_keys_of(direct_py, name, keys)
        is_filter = (direct_py.type(name) == b"hash"
                     and direct_py.hget(name, "bloomproxy") == b"1")
        if not is_filter:
            if data or markers:
                problems.append(f"{name} is no filter but has keys {sorted(data + markers)[:4]}")
            continue
        if not data or len(markers) != 1:
            problems.append(f"filter {name}: data keys {data}, markers {markers}")
        when = direct_py.execute_command("PEXPIRETIME", name)
        for k in data + markers:
            t = direct_py.execute_command("PEXPIRETIME", k)
            if (t == -1) != (when == -1) or abs(t - when) > 100:
                problems.append(f"filter {name} expires at {when}, its key {k!r} at {t}")
        allowed |= set(data) | set(markers)
    if only_these and keys - allowed:
        problems.append(f"unexpected keys upstream: {sorted(keys - allowed)[:6]}")
    return problems


def setup_state(direct, via_proxy, kind, ttl, comparator):
    assert direct.command("FLUSHALL") == b"OK"
    make_key(direct, via_proxy, "comparator" if comparator else kind, "y",
             1000 if ttl else None)
    assert direct.command("SET", "x", "0") == b"OK"
    assert direct.command("SET", "o", "other") == b"OK"


def total_errors(direct):
    info = direct.command("INFO", "stats").decode()
    return int(re.search(r"^total_error_replies:(\d+)", info, re.M).group(1))


def compare_sequences(bp, redis_instance, kind, inside_multi):
    """Runs every case of CASES in every scenario (those with the command inside MULTI, or the
    others) through the proxy and directly on Redis, from the same keys. Returns (number of
    runs, descriptions of the differences: replies, keys left, errors counted upstream)."""
    direct_py = redis_instance.client()
    failures = []
    runs = 0
    with RawConn(redis_instance.port) as direct, bp.raw() as setup_conn:
        for name, commands, ttl, modifies in CASES:
            for scenario, (steps, expected) in scenarios(commands, modifies).items():
                if scenario.startswith("inside MULTI") != inside_multi:
                    continue
                label = f"[{kind}] {name} / {scenario}: {describe(steps)}"
                setup_state(direct, setup_conn, kind, ttl, comparator=False)
                errors = total_errors(direct)
                got = run_steps(bp.port, steps)
                errors = total_errors(direct) - errors
                state_proxy = snapshot(direct, compare_values=(kind != "bloom"))
                key_problems = filter_key_problems(direct_py) if kind == "bloom" else []
                setup_state(direct, setup_conn, kind, ttl, comparator=(kind == "bloom"))
                want = run_steps(redis_instance.port, steps)
                state_direct = snapshot(direct, compare_values=(kind != "bloom"))
                runs += 1
                if kind == "bloom":
                    # TYPE of the comparator hash, alone or inside EXEC's reply.
                    want = [w.replace(b"+hash\r\n", b"+MBbloom--\r\n") for w in want]
                # The scenario itself must be what it says (checked on Redis's own replies).
                assert (want[-1] == b"*-1\r\n") == (expected == "abort"), \
                    f"test bug: Redis answered {want[-1]!r} for {label}"
                if got != want:
                    failures.append(f"{label}\n    proxy: {got}\n    redis: {want}")
                problems = diff_snapshots(state_proxy, state_direct) + key_problems
                if errors:
                    problems.append(f"{errors} error replies counted upstream (Redis: none)")
                if problems:
                    failures.append(f"{label}\n    state: " + "\n    state: ".join(problems))
    return runs, failures


@pytest.mark.parametrize("kind", KINDS)
def test_watch_around_key_commands_like_redis(bp, redis_instance, kind):
    """For each intercepted key command (DEL, UNLINK, EXPIRE family, PERSIST, RENAME, RENAMENX,
    TYPE; no-op forms too) on a key of `kind`, and each WATCH scenario (another client writes
    the watched key before/after the command, no conflict, the client's own command on its
    watched key or rename target, another client's command on it, pipelined, UNWATCH before or
    after): the replies through the proxy equal a direct redis-server's byte for byte (a filter
    against a plain hash), the keys end up as with Redis, a filter's data keys follow, and no
    error is counted upstream."""
    runs, failures = compare_sequences(bp, redis_instance, kind, inside_multi=False)
    assert runs > 100
    assert not failures, f"{len(failures)} of {runs} sequences differ from Redis:\n" \
        + "\n".join(failures[:25])


@pytest.mark.parametrize("kind", KINDS)
def test_key_commands_queued_inside_multi_like_redis(bp, redis_instance, kind):
    """The same cases queued inside MULTI under WATCH (EXEC runs them, or aborts because another
    client wrote the watched key; pipelined too): EXEC's reply equals Redis's byte for byte (TYPE
    of a filter: MBbloom--), and a filter's data keys follow what EXEC did to its name (gone,
    expiring, renamed), as docs/connections.md says of these commands on a filter's name."""
    runs, failures = compare_sequences(bp, redis_instance, kind, inside_multi=True)
    assert runs > 30
    assert not failures, f"{len(failures)} of {runs} sequences differ from Redis:\n" \
        + "\n".join(failures[:25])


def test_watch_of_a_filter_deleted_or_changed_by_another_client(bp, redis_instance):
    """WATCH of a filter's name, then another proxy client DELs it (or EXPIREs, RENAMEs,
    UNLINKs, PERSISTs it): EXEC answers *-1, as Redis does for any watched key that is
    modified; the filter's data keys are gone / expiring / renamed."""
    direct_py = redis_instance.client()
    with bp.raw() as a, bp.raw() as b:
        for other, after in [(("DEL", "f"), "gone"), (("UNLINK", "f"), "gone"),
                             (("EXPIRE", "f", "500"), "expiring"),
                             (("PEXPIREAT", "f", str((NOW + 500) * 1000)), "expiring"),
                             (("RENAME", "f", "g"), "renamed"), (("RENAMENX", "f", "g"), "renamed"),
                             (("PERSIST", "f"), "persistent")]:
            direct_py.flushall()
            make_key(None, b, "bloom", "f", ttl=1000 if other[0] == "PERSIST" else None)
            assert a.command("WATCH", "f") == b"OK"
            reply = b.command(*other)
            assert reply in (1, b"OK"), (other, reply)
            a.send(cmd("MULTI") + cmd("SET", "z", "1") + cmd("EXEC"))
            assert [a.read_reply_raw() for _ in range(3)] == \
                [b"+OK\r\n", b"+QUEUED\r\n", b"*-1\r\n"], other
            assert direct_py.get("z") is None
            if after == "gone":
                assert not direct_py.exists("f")
                assert not data_keys_of(direct_py, "f") and not marker_keys_of(direct_py, "f")
            elif after == "renamed":
                assert not direct_py.exists("f") and direct_py.exists("g")
                assert not data_keys_of(direct_py, "f") and not marker_keys_of(direct_py, "f")
                assert data_keys_of(direct_py, "g") and marker_keys_of(direct_py, "g")
                assert b.command("BF.EXISTS", "g", "a") == 1
            else:
                assert a.command("TYPE", "f") == b"MBbloom--"
                assert a.command("BF.EXISTS", "f", "a") == 1
            assert filter_key_problems(direct_py, ("f", "g", "z")) == []
            # The connection is fine afterwards: a new WATCH/MULTI/EXEC goes through.
            a.send(cmd("WATCH", "z") + cmd("MULTI") + cmd("SET", "z", "2") + cmd("EXEC"))
            assert [a.read_reply_raw() for _ in range(4)] == \
                [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n+OK\r\n"]


def test_watch_of_a_filter_and_bf_add_by_another_client(bp, redis_instance):
    """WATCH of a filter's name, another client BF.ADDs a new item. With RedisBloom the module
    key is opened for writing and closing it signals the key as modified, so EXEC would answer
    *-1; bloomproxy writes only the filter's data keys (the name's hash is unchanged), so EXEC
    may run. Neither is asserted: only that EXEC answers one of the two, consistently with what
    ran, and that everything works afterwards."""
    with bp.raw() as a, bp.raw() as b:
        make_key(None, b, "bloom", "f")
        assert a.command("WATCH", "f") == b"OK"
        assert b.command("BF.ADD", "f", "new-item") == 1
        a.send(cmd("MULTI") + cmd("SET", "z", "1") + cmd("EXEC"))
        replies = [a.read_reply_raw() for _ in range(3)]
        assert replies[:2] == [b"+OK\r\n", b"+QUEUED\r\n"]
        assert replies[2] in (b"*-1\r\n", b"*1\r\n+OK\r\n"), replies
        assert redis_instance.client().get("z") == (None if replies[2] == b"*-1\r\n" else b"1")
        assert a.command("BF.EXISTS", "f", "new-item") == 1
        assert a.command("BF.CARD", "f") == 4


def test_watch_transactions_on_filters_do_not_disturb_other_clients(bp, redis_instance):
    """While several clients run checked pipelined load, two clients loop over WATCH, key
    commands on a filter and a plain hash (run as scripts on the watching client's connection),
    another client's DEL of the watched filter, and MULTI/EXEC: each EXEC answers as Redis would
    (*-1 after a write to a watched key, the result otherwise), the load sees no error, wrong
    reply or stall, and no data key is left behind."""
    direct_py = redis_instance.client()
    rounds = 0
    with Load(bp.port, clients=3, batch=40, prefix="wl") as load, bp.raw() as a, \
            bp.raw() as b:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline or rounds < 5:
            rounds += 1
            make_key(None, b, "bloom", "wf")
            assert b.command("HSET", "wh", "f", "v") == 1
            # Own commands on watched keys: EXPIRE of the filter aborts EXEC.
            a.send(cmd("WATCH", "wf", "wh") + cmd("TYPE", "wf") + cmd("TYPE", "wh")
                   + cmd("EXPIRE", "wf", "100") + cmd("MULTI") + cmd("INCR", "wcnt")
                   + cmd("EXEC"))
            assert [a.read_reply_raw() for _ in range(7)] == \
                [b"+OK\r\n", b"+MBbloom--\r\n", b"+hash\r\n", b":1\r\n", b"+OK\r\n",
                 b"+QUEUED\r\n", b"*-1\r\n"]
            # Probes only: EXEC runs.
            a.send(cmd("WATCH", "wf", "wh") + cmd("TYPE", "wf") + cmd("TTL", "wh")
                   + cmd("MULTI") + cmd("INCR", "wcnt") + cmd("EXEC"))
            assert [a.read_reply_raw() for _ in range(6)] == \
                [b"+OK\r\n", b"+MBbloom--\r\n", b":-1\r\n", b"+OK\r\n", b"+QUEUED\r\n",
                 b"*1\r\n:%d\r\n" % rounds]
            # Another client renames then deletes the watched filter: EXEC aborts.
            assert a.command("WATCH", "wg") == b"OK"
            assert b.command("RENAME", "wf", "wg") == b"OK"
            assert b.command("DEL", "wg", "wh") == 2
            a.send(cmd("MULTI") + cmd("INCR", "wcnt") + cmd("EXEC"))
            assert [a.read_reply_raw() for _ in range(3)] == \
                [b"+OK\r\n", b"+QUEUED\r\n", b"*-1\r\n"]
            assert filter_key_problems(direct_py, ("wf", "wg", "wh"), only_these=False) == []
    load.assert_clean(max_stall=2.0)
    assert direct_py.get("wcnt") == b"%d" % rounds


# ---------------------------------------------------------------------------------------------
# 2. Probes count no errors

def probe_commands(key, other):
    """The key commands of the probe test on `key` (`other`: an existing string)."""
    return [("TYPE", key), ("EXISTS", key), ("TTL", key), ("PTTL", key),
            ("EXPIRE", key, "100"), ("TTL", key), ("PERSIST", key), ("PERSIST", key),
            ("EXPIRE", key, "100", "XX"), ("PEXPIRE", key, "100000", "GT"),
            ("EXPIRE", key, "not-a-number"), ("EXPIRE", key, "100", "NX", "XX"),
            ("EXPIRE", key, "100", "BADOPTION"),
            ("RENAMENX", key, other), ("RENAMENX", key, key + ":n"),
            ("RENAME", key + ":n", key + ":r"), ("RENAME", key + ":r", key),
            ("RENAME", key, key), ("TYPE", key), ("EXISTS", key, other, "missing"),
            ("DEL", key + ":gone"), ("UNLINK", key + ":gone"),
            ("DEL", key), ("UNLINK", key), ("TYPE", key), ("TTL", key),
            ("RENAME", key, key + ":x"), ("RENAMENX", key, key + ":x"), ("PERSIST", key),
            ("EXPIRE", key, "5")]


def error_counts(direct):
    info = direct.command("INFO", "errorstats").decode()
    stats = dict(line.split(":", 1) for line in info.splitlines() if line.startswith("errorstat_"))
    return stats, total_errors(direct)


def test_probes_count_no_errors(bp, redis_instance):
    """CONFIG RESETSTAT upstream, then TYPE, EXISTS, TTL, PTTL, the EXPIRE family (valid and
    invalid arguments), PERSIST, RENAME/RENAMENX (of existing and missing keys), DEL and UNLINK
    through the proxy on keys of every type, a missing key and a filter: INFO errorstats and
    total_error_replies upstream equal what the same commands directly on Redis produce (a
    filter compared with a plain hash), and the replies are the same."""
    keys = [(f"k:{kind}", kind) for kind in PLAIN_KINDS + ("stream",)] + [("k:missing", None)]
    with RawConn(redis_instance.port) as direct, bp.raw() as c:
        results = {}
        for target in ("proxy", "redis"):
            assert direct.command("FLUSHALL") == b"OK"
            for key, kind in keys:
                if kind:
                    make_key(direct, c, kind, key)
            if target == "proxy":
                make_key(direct, c, "bloom", "k:bloom")
            else:
                make_key(direct, c, "comparator", "k:bloom")
            assert direct.command("SET", "k:other", "v") == b"OK"
            assert direct.command("CONFIG", "RESETSTAT") == b"OK"
            assert error_counts(direct) == ({}, 0)
            conn = c if target == "proxy" else direct
            replies = []
            for key, _ in keys + [("k:bloom", "bloom")]:
                for args in probe_commands(key, "k:other"):
                    conn.send(cmd(*args))
                    replies.append((key, args, conn.read_reply_raw()))
            results[target] = (replies, error_counts(direct))
        proxy_replies, proxy_errors = results["proxy"]
        redis_replies, redis_errors = results["redis"]
    for (key, args, got), (_, _, want) in zip(proxy_replies, redis_replies):
        if key == "k:bloom" and want == b"+hash\r\n":
            want = b"+MBbloom--\r\n"
        assert got == want, f"{' '.join(args)}: proxy {got!r}, redis {want!r}"
    assert redis_errors[1] > 0, "the direct run has errors to compare with"
    assert proxy_errors == redis_errors, \
        f"errors upstream through the proxy {proxy_errors}, directly {redis_errors}"


def test_probes_on_a_filter_count_no_errors(bp, redis_instance):
    """The probes on filters only (TYPE, EXISTS, TTL, PTTL, DEL, EXPIRE, PERSIST, RENAME,
    RENAMENX, UNLINK, several keys at once, mixed with keys of other types): no error is
    counted upstream at all, since none of these commands fails in Redis."""
    with RawConn(redis_instance.port) as direct, bp.raw() as c:
        for kind in PLAIN_KINDS:
            make_key(direct, c, kind, f"p:{kind}")
        for name in ("f1", "f2", "f3"):
            make_key(direct, c, "bloom", name)
        assert direct.command("CONFIG", "RESETSTAT") == b"OK"
        plain = [f"p:{k}" for k in PLAIN_KINDS]
        sequence = [("TYPE", "f1"), ("EXISTS", "f1", "f2", *plain), ("TTL", "f1"),
                    ("PTTL", "f2"), ("EXPIRE", "f1", "100"), ("PEXPIRE", "f2", "100000"),
                    ("EXPIREAT", "f3", str(NOW + 100)), ("PERSIST", "f1"), ("PERSIST", "f1"),
                    ("RENAME", "f1", "f4"), ("RENAMENX", "f4", "f2"), ("RENAMENX", "f4", "f1"),
                    ("RENAME", "f1", "p:string"), ("RENAMENX", "p:hash", "f5"),
                    ("RENAME", "p:list", "f6")] \
            + [("TYPE", k) for k in plain] \
            + [("EXPIRE", k, "100") for k in plain] + [("PERSIST", k) for k in plain] \
            + [("DEL", "f2", "p:set", "missing", "f5"), ("UNLINK", "p:string", "f3", "p:zset"),
               ("DEL", "f6", "f6")]
        for args in sequence:
            reply = c.command(*args)
            assert not isinstance(reply, Err), (args, reply)
        assert error_counts(direct) == ({}, 0)
        assert direct.command("KEYS", "*") == []


# ---------------------------------------------------------------------------------------------
# 3. LRU / LFU

def idle_times(direct, keys):
    return {k: direct.command("OBJECT", "IDLETIME", k) for k in keys}


def test_probes_keep_lru_idle_time(bp, redis_instance):
    """Keys of every type and a filter, idle for 2 s or more; TYPE, EXISTS, TTL, PTTL and OBJECT
    ENCODING through the proxy on all of them: OBJECT IDLETIME of every plain key and of the
    filter's data and marker keys does not drop (a touched key reads 0). Controls: the same
    probes directly on Redis touch nothing either, and a GET through the proxy does touch."""
    kinds = PLAIN_KINDS + ("stream",)
    plain = [f"l:{k}" for k in kinds]
    with RawConn(redis_instance.port) as direct, bp.raw() as c:
        for kind, key in zip(kinds, plain):
            make_key(direct, c, kind, key)
        make_key(direct, c, "bloom", "l:bloom")
        direct_py = redis_instance.client()
        internal = data_keys_of(direct_py, "l:bloom") + marker_keys_of(direct_py, "l:bloom")
        assert len(internal) >= 2
        watched = plain + [k.decode() for k in internal]
        wait_until(lambda: min(idle_times(direct, watched).values()) >= 2, 10,
                   what="keys idle for 2 s")

        def probes(key):
            return [("TYPE", key), ("EXISTS", key), ("TTL", key), ("PTTL", key),
                    ("OBJECT", "ENCODING", key), ("EXISTS", key, key)]

        for conn, who in ((direct, "redis"), (c, "proxy")):
            before = idle_times(direct, watched)
            for key in plain + ["l:bloom", "l:missing"]:
                for args in probes(key):
                    conn.send(cmd(*args))
                    assert not isinstance(parse_resp(conn.read_reply_raw())[0], Err), args
            after = idle_times(direct, watched)
            touched = {k: (before[k], after[k]) for k in watched if after[k] < before[k]}
            assert not touched, f"probes through {who} touched keys (idle before, after): " \
                f"{touched}"
        # The measurement works: a read through the proxy touches its key.
        assert c.command("GET", "l:string") == b"v"
        assert direct.command("OBJECT", "IDLETIME", "l:string") <= 1


def lfu_server(direct):
    """LFU with exact counters: log factor 0 makes every access count (+1), decay time 0 stops
    the decay, so OBJECT FREQ = 5 (new key) + the number of times the key was touched."""
    for args in (("maxmemory-policy", "allkeys-lfu"), ("lfu-log-factor", "0"),
                 ("lfu-decay-time", "0")):
        assert direct.command("CONFIG", "SET", *args) == b"OK"


def freqs(direct, keys):
    return {k: direct.command("OBJECT", "FREQ", k) for k in keys
            if direct.command("EXISTS", k) == 1}


def test_type_keeps_lfu_counters(bp, redis_instance):
    """allkeys-lfu: OBJECT FREQ of keys of every type and of a filter's data and marker keys is
    unchanged by TYPE, EXISTS, TTL, PTTL, OBJECT ENCODING through the proxy, repeated; a GET
    through the proxy does count (the measurement works)."""
    kinds = PLAIN_KINDS + ("stream",)
    plain = [f"q:{k}" for k in kinds]
    with RawConn(redis_instance.port) as direct, bp.raw() as c:
        lfu_server(direct)
        for kind, key in zip(kinds, plain):
            make_key(direct, c, kind, key)
        make_key(direct, c, "bloom", "q:bloom")
        direct_py = redis_instance.client()
        internal = [k.decode() for k in
                    data_keys_of(direct_py, "q:bloom") + marker_keys_of(direct_py, "q:bloom")]
        watched = plain + internal
        before = freqs(direct, watched)
        for _ in range(5):
            for key in plain + ["q:bloom"]:
                for args in (("TYPE", key), ("EXISTS", key), ("TTL", key), ("PTTL", key),
                             ("OBJECT", "ENCODING", key)):
                    assert not isinstance(c.command(*args), Err), args
        assert freqs(direct, watched) == before
        assert c.command("GET", "q:string") == b"v"
        assert direct.command("OBJECT", "FREQ", "q:string") == before["q:string"] + 1


def test_type_of_a_filter_touches_nothing(bp, redis_instance):
    """TYPE of a filter through the proxy touches nothing (docs/connections.md: "touches
    nothing"), as TYPE of a RedisBloom key: the name's LFU counter does not move."""
    with RawConn(redis_instance.port) as direct, bp.raw() as c:
        lfu_server(direct)
        make_key(direct, c, "bloom", "t:bloom")
        before = direct.command("OBJECT", "FREQ", "t:bloom")
        for _ in range(3):
            assert c.command("TYPE", "t:bloom") == b"MBbloom--"
        assert direct.command("OBJECT", "FREQ", "t:bloom") == before, \
            "TYPE through the proxy touched the filter's name"


@pytest.mark.parametrize("kind", PLAIN_KINDS + ("stream",))
def test_key_commands_touch_keys_as_redis_does(bp, redis_instance, kind):
    """allkeys-lfu with exact counters: after each intercepted key command on plain keys
    (EXPIRE family, PERSIST, RENAME, RENAMENX, DEL with other keys, TYPE, ...) through the proxy,
    OBJECT FREQ of every key equals what the same command directly on Redis leaves: the proxy's
    script touches keys exactly as the command itself does (docs/connections.md)."""
    commands = [("TYPE", "a"), ("EXPIRE", "a", "100"), ("EXPIRE", "a", "100", "NX"),
                ("PEXPIRE", "a", "100000"), ("EXPIREAT", "a", str(NOW + 100)),
                ("PEXPIREAT", "a", str((NOW + 100) * 1000)), ("PERSIST", "a"),
                ("RENAME", "a", "c"), ("RENAME", "a", "b"), ("RENAMENX", "a", "b"),
                ("RENAMENX", "a", "c"), ("RENAME", "a", "a"), ("DEL", "c", "b"),
                ("UNLINK", "c", "b")]
    differences = []
    with RawConn(redis_instance.port) as direct, bp.raw() as c:
        lfu_server(direct)
        for args in commands:
            seen = {}
            for target, conn in (("proxy", c), ("redis", direct)):
                assert direct.command("FLUSHALL") == b"OK"
                make_key(direct, None, kind, "a", ttl=1000)
                make_key(direct, None, kind, "b")
                conn.send(cmd(*args))
                reply = conn.read_reply_raw()
                seen[target] = (reply, freqs(direct, ["a", "b", "c"]))
            if seen["proxy"] != seen["redis"]:
                differences.append(f"{' '.join(args)}: proxy {seen['proxy']}, "
                                   f"redis {seen['redis']}")
    assert not differences, f"[{kind}] (reply, OBJECT FREQ) differ:\n" + "\n".join(differences)


# ---------------------------------------------------------------------------------------------
# 4. MONITOR

MONITOR_LINE = re.compile(rb'^\d+\.\d+ \[\d+ [^\]]*\] (.*)$', re.S)
QUOTED = re.compile(rb'"((?:[^"\\]|\\.)*)"')


def parse_monitor_line(line):
    """[command, arg, ...] of a MONITOR line (arguments still escaped)."""
    m = MONITOR_LINE.match(line)
    assert m, f"not a MONITOR line: {line[:200]!r}"
    return QUOTED.findall(m.group(1))


def read_monitor_until(mon, marker, timeout=10):
    """MONITOR lines read from `mon` up to and including the one of `SET <marker> 1`."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = mon.read_reply()
        assert isinstance(line, bytes), line
        lines.append(line)
        words = parse_monitor_line(line)
        if words[:2] == [b"SET", marker.encode()]:
            return lines
    raise AssertionError(f"no {marker} in MONITOR after {timeout}s")


def check_monitor(words_list, plain_keys, transactions):
    names = [w[0].upper() for w in words_list if w]
    assert names.count(b"MULTI") == transactions, names
    assert names.count(b"EXEC") == transactions, names
    client_id = [w for w in words_list if len(w) >= 2 and w[0].upper() == b"CLIENT"
                 and w[1].upper() == b"ID"]
    assert not client_id, f"CLIENT ID in MONITOR: {client_id}"
    reads = [w for w in words_list if len(w) >= 2 and w[0].upper() in (b"HGET", b"HMGET")
             and w[1].decode() in plain_keys]
    assert not reads, f"HGET/HMGET of plain keys in MONITOR: {reads}"


def test_monitor_shows_no_proxy_traces(bp, redis_instance):
    """A MONITOR directly on Redis and one through the proxy, while proxy clients run one
    MULTI/EXEC (under WATCH), BLPOP with timeout 0.1, BLPOP ended by CLIENT UNBLOCK <proxy id>,
    SUBSCRIBE/PUBLISH/UNSUBSCRIBE, WATCH/UNWATCH, TYPE/EXISTS/TTL of every kind, and DEL/EXPIRE/
    PERSIST/RENAME of plain keys and filters: both monitors show the same lines; exactly one
    MULTI and one EXEC; no CLIENT ID; no HGET/HMGET of a plain key (the proxy's scripts may read
    a filter's name, never a plain key)."""
    kinds = PLAIN_KINDS + ("stream",)
    plain = [f"m:{k}" for k in kinds]
    with RawConn(redis_instance.port) as direct, RawConn(redis_instance.port) as dmon, \
            bp.raw() as pmon, bp.raw() as a, bp.raw() as blocked, bp.raw() as sub, \
            bp.raw() as d:
        for kind, key in zip(kinds, plain):
            make_key(direct, d, kind, key)
        for name in ("m:f1", "m:f2"):
            make_key(direct, d, "bloom", name)
        assert dmon.command("MONITOR") == b"OK"
        assert pmon.command("MONITOR") == b"OK"
        assert direct.command("SET", "mon:start", "1") == b"OK"
        read_monitor_until(dmon, "mon:start")
        read_monitor_until(pmon, "mon:start")

        blocked.send(cmd("BLPOP", "m:nolist", "0.1"))
        a.send(cmd("WATCH", "m:string") + cmd("MULTI") + cmd("SET", "m:string", "t")
               + cmd("INCR", "m:cnt") + cmd("EXEC"))
        assert [a.read_reply_raw() for _ in range(5)] == \
            [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*2\r\n+OK\r\n:1\r\n"]
        sub.send(cmd("SUBSCRIBE", "m:ch"))
        assert sub.read_reply() == [b"subscribe", b"m:ch", 1]
        assert d.command("PUBLISH", "m:ch", "hi") == 1
        assert sub.read_reply() == [b"message", b"m:ch", b"hi"]
        assert sub.command("UNSUBSCRIBE") == [b"unsubscribe", b"m:ch", 0]
        assert blocked.read_reply_raw() == b"*-1\r\n"
        # A client unblocked by its proxy id: the proxy looks up its upstream id.
        blocked_id = blocked.command("CLIENT", "ID")
        blocked.send(cmd("BLPOP", "m:nolist", "0"))
        wait_until(lambda: blocked_clients(direct) == 1, 5, what="client blocked")
        assert d.command("CLIENT", "UNBLOCK", str(blocked_id)) == 1
        assert blocked.read_reply_raw() == b"*-1\r\n"
        assert d.command("WATCH", "m:hash", "m:f1") == b"OK"
        for key in plain + ["m:f1", "m:missing"]:
            d.command("TYPE", key)
            d.command("EXISTS", key)
            d.command("TTL", key)
        assert d.command("UNWATCH") == b"OK"
        assert a.command("WATCH", "m:f2") == b"OK"
        for key in plain + ["m:f1"]:
            assert a.command("EXPIRE", key, "100") == 1, key
            assert a.command("PERSIST", key) == 1, key
        assert a.command("UNWATCH") == b"OK"
        assert d.command("RENAME", "m:list", "m:list2") == b"OK"
        assert d.command("RENAMENX", "m:f1", "m:f3") == 1
        assert d.command("DEL", *plain[:3], "m:f2", "m:missing") == 3
        assert d.command("UNLINK", *plain[3:], "m:list2", "m:f3") == 5
        assert direct.command("SET", "mon:end", "1") == b"OK"
        lines = read_monitor_until(dmon, "mon:end")
        via_proxy = read_monitor_until(pmon, "mon:end")
    assert lines == via_proxy, "the two MONITORs saw different lines"
    words = [parse_monitor_line(line) for line in lines]
    check_monitor(words, set(plain) | {"m:list2", "m:missing", "m:cnt", "m:nolist"},
                  transactions=1)
    # The clients' own commands are all there.
    names = [w[0].upper() for w in words]
    for name in (b"BLPOP", b"SUBSCRIBE", b"PUBLISH", b"UNSUBSCRIBE", b"WATCH", b"UNWATCH"):
        assert name in names, (name, names)


# ---------------------------------------------------------------------------------------------
# 5. CLIENT UNBLOCK and CLIENT TRACKING REDIRECT with the proxy's ids


BLOCKING = [("BLPOP", "u:list", "0"), ("BRPOP", "u:list", "5"),
            ("BLMOVE", "u:list", "u:dst", "LEFT", "RIGHT", "5"), ("BZPOPMIN", "u:zset", "5"),
            ("XREAD", "BLOCK", "5000", "STREAMS", "u:stream", "$")]


def blocked_clients(direct):
    info = direct.command("INFO", "clients").decode()
    return int(re.search(r"^blocked_clients:(\d+)", info, re.M).group(1))


def unblock_sequence(port, direct):
    """Blocks a client in each BLOCKING command and unblocks it with CLIENT UNBLOCK <its id>
    (plain, TIMEOUT, ERROR); then CLIENT UNBLOCK of clients that are not blocked (idle, under
    WATCH, subscribed, the asking client, an unknown id) and with bad arguments. Ids are what
    CLIENT ID answers on `port`. Returns the raw replies, in order."""
    out = []
    with RawConn(port, timeout=10) as blocked, RawConn(port) as admin, \
            RawConn(port) as idle, RawConn(port) as watching, RawConn(port) as sub:
        ids = {name: conn.command("CLIENT", "ID") for name, conn in
               (("blocked", blocked), ("admin", admin), ("idle", idle),
                ("watching", watching), ("sub", sub))}
        for args in BLOCKING:
            for how in ((), ("TIMEOUT",), ("ERROR",)):
                blocked.send(cmd(*args))
                wait_until(lambda: blocked_clients(direct) == 1, 5, what="client blocked")
                admin.send(cmd("CLIENT", "UNBLOCK", str(ids["blocked"]), *how))
                out.append(admin.read_reply_raw())
                out.append(blocked.read_reply_raw())
                assert blocked_clients(direct) == 0
                assert blocked.command("PING") == b"PONG"
        assert watching.command("WATCH", "u:w") == b"OK"
        sub.send(cmd("SUBSCRIBE", "u:ch"))
        assert sub.read_reply() == [b"subscribe", b"u:ch", 1]
        for name in ("idle", "watching", "sub", "admin", "blocked"):
            admin.send(cmd("CLIENT", "UNBLOCK", str(ids[name])))
            out.append(admin.read_reply_raw())
        for args in (("CLIENT", "UNBLOCK", "abc"),
                     ("CLIENT", "UNBLOCK", str(ids["blocked"]), "BAD"),
                     ("CLIENT", "UNBLOCK", "-1"), ("CLIENT", "UNBLOCK", "0"),
                     ("CLIENT", "UNBLOCK", "987654321")):
            admin.send(cmd(*args))
            out.append(admin.read_reply_raw())
        # Everybody still works.
        assert watching.command("UNWATCH") == b"OK"
        assert sub.command("UNSUBSCRIBE") == [b"unsubscribe", b"u:ch", 0]
        for conn in (blocked, admin, idle, watching, sub):
            assert conn.command("PING") == b"PONG"
    return out


def start_direct_monitor(redis_instance):
    mon = RawConn(redis_instance.port)
    assert mon.command("MONITOR") == b"OK"
    return mon


def assert_no_client_id(mon, redis_instance):
    """Reads the MONITOR `mon` up to a marker and checks there is no CLIENT ID in it."""
    with RawConn(redis_instance.port) as direct:
        assert direct.command("SET", "mon:end", "1") == b"OK"
    words = [parse_monitor_line(line) for line in read_monitor_until(mon, "mon:end")]
    check_monitor(words, set(), transactions=0)
    return words


def test_client_unblock_like_redis(bp, redis_instance):
    """CLIENT UNBLOCK <proxy id> of a client blocked through the proxy in BLPOP (timeout 0),
    BRPOP, BLMOVE, BZPOPMIN, XREAD BLOCK: :1 and the blocked client gets nil (TIMEOUT) or
    -UNBLOCKED (ERROR); of a client that is not blocked (idle, under WATCH, subscribed, itself,
    unknown ids): :0; bad arguments: Redis's errors. Byte for byte as with Redis's own ids
    directly; no CLIENT ID in MONITOR."""
    with RawConn(redis_instance.port) as direct:
        want = unblock_sequence(redis_instance.port, direct)
        mon = start_direct_monitor(redis_instance)
        with mon:
            got = unblock_sequence(bp.port, direct)
            words = assert_no_client_id(mon, redis_instance)
    assert got == want
    assert want[:2] == [b":1\r\n", b"*-1\r\n"]
    assert want[4:6] == [b":1\r\n", b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"]
    assert [w[0].upper() for w in words].count(b"BLPOP") == 3


def test_client_unblock_never_reaches_other_connections(bp, redis_instance):
    """Through the proxy, CLIENT UNBLOCK with ids that are not the proxy id of a blocked proxy
    client (the upstream ids of every connection Redis has, including the proxy's own blocked
    connection and a client blocked directly on Redis): :0, and nobody is unblocked. Then the
    proxy id unblocks its client, and the direct client is unblocked directly."""
    with RawConn(redis_instance.port) as direct, RawConn(redis_instance.port, timeout=10) as d, \
            bp.raw(timeout=10) as blocked, bp.raw() as admin:
        blocked_id = blocked.command("CLIENT", "ID")
        direct_id = d.command("CLIENT", "ID")
        d.send(cmd("BLPOP", "n:direct", "0"))
        blocked.send(cmd("BLPOP", "n:proxy", "0"))
        wait_until(lambda: blocked_clients(direct) == 2, 5, what="two blocked clients")
        upstream_ids = [int(m) for m in re.findall(rb"\bid=(\d+)",
                                                   direct.command("CLIENT", "LIST"))]
        assert direct_id in upstream_ids
        for uid in sorted(set(upstream_ids) | {direct_id}):
            if uid == blocked_id:
                continue
            assert admin.command("CLIENT", "UNBLOCK", str(uid)) == 0, uid
            assert admin.command("CLIENT", "UNBLOCK", str(uid), "ERROR") == 0, uid
        assert blocked_clients(direct) == 2
        assert admin.command("CLIENT", "UNBLOCK", str(blocked_id)) == 1
        assert blocked.read_reply_raw() == b"*-1\r\n"
        assert direct.command("CLIENT", "UNBLOCK", str(direct_id)) == 1
        assert d.read_reply_raw() == b"*-1\r\n"
        assert blocked_clients(direct) == 0


def tracking_sequence(port):
    """RESP2 tracking with REDIRECT to a client subscribed to __redis__:invalidate, in default,
    BCAST and OPTIN modes. Returns (raw replies and invalidation messages in order, the
    redirect client's id, the ids CLIENT GETREDIR answered)."""
    out = []
    redirs = []
    with RawConn(port) as inv, RawConn(port) as tracked, RawConn(port) as bcast, \
            RawConn(port) as optin, RawConn(port) as writer:
        inv_id = inv.command("CLIENT", "ID")
        inv.send(cmd("SUBSCRIBE", "__redis__:invalidate"))
        out.append(inv.read_reply_raw())
        for conn, extra in ((tracked, ()), (bcast, ("BCAST", "PREFIX", "b:")),
                            (optin, ("OPTIN",))):
            conn.send(cmd("CLIENT", "TRACKING", "on", "REDIRECT", str(inv_id), *extra))
            out.append(conn.read_reply_raw())
            redirs.append(conn.command("CLIENT", "GETREDIR"))
        steps = [(writer, ("SET", "k", "1")), (writer, ("SET", "k2", "1")),
                 (tracked, ("GET", "k")), (writer, ("SET", "k", "2")), (inv, None),
                 (optin, ("GET", "k2")), (writer, ("SET", "k2", "2")),
                 (optin, ("CLIENT", "CACHING", "yes")), (optin, ("GET", "k2")),
                 (writer, ("SET", "k2", "3")), (inv, None),
                 (writer, ("SET", "b:1", "x")), (inv, None),
                 (tracked, ("GET", "k")), (writer, ("DEL", "k")), (inv, None),
                 (tracked, ("CLIENT", "TRACKING", "off")), (tracked, ("GET", "k")),
                 (writer, ("SET", "k", "3")), (writer, ("SET", "b:2", "y")), (inv, None)]
        for conn, args in steps:
            if args is not None:
                conn.send(cmd(*args))
            out.append(conn.read_reply_raw())
        # Nothing else arrives: the untracked GET and OPTIN's first GET caused no invalidation.
        assert not inv.is_closed(0.2) and not inv.buf, bytes(inv.buf)
    return out, inv_id, redirs


def test_client_tracking_redirect_like_redis(bp, redis_instance):
    """CLIENT TRACKING ON REDIRECT <proxy id of a client subscribed to __redis__:invalidate>
    (default, BCAST PREFIX, OPTIN with CLIENT CACHING yes): GET by the tracking client, SET by
    another client -> the redirect client receives the invalidation for that key; the replies
    and messages are byte for byte Redis's; CLIENT GETREDIR answers the proxy id; no CLIENT ID
    in MONITOR."""
    want, redis_inv, redis_redirs = tracking_sequence(redis_instance.port)
    assert redis_redirs == [redis_inv] * 3
    assert b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n" in want
    mon = start_direct_monitor(redis_instance)
    with mon:
        got, proxy_inv, proxy_redirs = tracking_sequence(bp.port)
        assert_no_client_id(mon, redis_instance)
    assert proxy_redirs == [proxy_inv] * 3
    assert got == want

"""Ordinary (non-BF) commands through bloomproxy --upstream-kind sharding-proxy in front of a real
twemproxy (Debian's nutcracker 0.5.0, 2 redis-servers behind it).

twemproxy closes a client's connection on any command its parser does not know, knows with
another number of arguments, or with a key too long for one buffer; Codis answers an error for
the commands it does not allow. bloomproxy's upstream connections to the sharding proxy are
shared by all its clients, so it must never send one of those: it answers them itself with

    -ERR bloomproxy: 'NAME'[ detail] is not supported behind a sharding proxy (upstream-kind
    sharding-proxy)

Checked here:
- every command and subcommand of Redis's COMMAND table (with the minimum number of arguments
  and, for variadic ones, one and two more) is either refused with that error (and reaches no
  server), answered by bloomproxy itself, or forwarded and accepted by nutcracker: the client's
  connection stays up and no upstream connection is lost (upstream_connection_errors:0); well
  known examples are refused or forwarded, byte for byte;
- the refusals are needed: the same commands sent straight to nutcracker make it close the
  connection (MOVE and RESTORE are refused for Codis; nutcracker forwards RESTORE);
- a client sending hundreds of refused commands, pipelined among valid ones, disturbs neither
  the other clients nor its own connection;
- DEL / UNLINK / EXISTS / TOUCH / MGET / MSET with keys on both servers give Redis's answers
  (nutcracker alone counts EXISTS on the first key's server only);
- EVAL / EVALSHA with keys run on the key's server; without keys they are refused;
- configuration errors of --upstream-kind, and --upstream-password with a nutcracker that has
  `redis_auth`;
- redis-py through bloomproxy.
"""

import hashlib
import re
import subprocess
import time

import pytest
import redis

from bp_helpers import (BLOOMPROXY_BIN, HOST, Err, Load, RawConn, RedisServer, encode_command,
                        free_port, proxy_env, read_replies)
from bp_nutcracker import Twemproxy

cmd = encode_command

SUFFIX = b" is not supported behind a sharding proxy (upstream-kind sharding-proxy)\r\n"
REFUSAL_RE = re.compile(rb"^-ERR bloomproxy: '([A-Z0-9_|.?-]+)'"
                        rb"( with \d+ arguments| without keys"
                        rb"| with a key of 16000 bytes or more)?"
                        + re.escape(SUFFIX) + rb"$")


def refusal(name, detail=""):
    """The exact error bloomproxy answers for a command it does not send a sharding proxy."""
    return b"-ERR bloomproxy: '" + name.encode() + b"'" + detail.encode() + SUFFIX


def is_refusal(raw, args):
    m = REFUSAL_RE.match(raw)
    name = args[0].encode() if isinstance(args[0], str) else args[0]
    return bool(m) and m.group(1) == name.upper()


LONG_KEY = "x" * 16000

# Commands bloomproxy must refuse, with the exact reply, and what nutcracker does with each when
# sent to it directly: "closes" (the client's connection, without a reply), or the start of the
# reply Redis gives when nutcracker forwards it. MOVE and RESTORE are refused because Codis
# refuses them; nutcracker 0.5.0 forwards RESTORE, and closes the connection on MOVE although its
# source lists it. A 16000-byte key is below nutcracker's own limit (16336 bytes with its default
# 16 KB buffers): bloomproxy keeps a margin.
REFUSED = [
    (("EXEC",), refusal("EXEC"), "closes"),
    (("WATCH", "k"), refusal("WATCH"), "closes"),
    (("RENAME", "k", "k2"), refusal("RENAME"), "closes"),
    (("RENAMENX", "k", "k2"), refusal("RENAMENX"), "closes"),
    (("SCAN", "0"), refusal("SCAN"), "closes"),
    (("KEYS", "*"), refusal("KEYS"), "closes"),
    (("INFO",), refusal("INFO"), "closes"),
    (("FLUSHALL",), refusal("FLUSHALL"), "closes"),
    (("DBSIZE",), refusal("DBSIZE"), "closes"),
    (("SUBSCRIBE", "ch"), refusal("SUBSCRIBE"), "closes"),
    (("BLPOP", "k", "0.01"), refusal("BLPOP"), "closes"),
    (("SELECT", "1"), refusal("SELECT"), "closes"),
    (("CLIENT", "PAUSE", "10"), refusal("CLIENT"), "closes"),
    (("OBJECT", "ENCODING", "k"), refusal("OBJECT"), "closes"),
    (("BITFIELD_RO", "k", "GET", "u8", "0"), refusal("BITFIELD_RO"), "closes"),
    (("EVAL_RO", "return 1", "1", "k"), refusal("EVAL_RO"), "closes"),
    (("PEXPIRETIME", "k"), refusal("PEXPIRETIME"), "closes"),
    (("EXPIRE", "k", "10", "NX"), refusal("EXPIRE", " with 3 arguments"), "closes"),
    (("EVAL", "return 1", "0"), refusal("EVAL", " without keys"), "closes"),
    (("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
     refusal("EVALSHA", " without keys"), "closes"),
    (("COMMAND", "COUNT"), refusal("COMMAND", " with 1 arguments"), "closes"),
    (("MOVE", "k", "1"), refusal("MOVE"), "closes"),
    (("RESTORE", "k", "0", "not-a-dump"), refusal("RESTORE"), b"-ERR DUMP payload"),
    (("SET", LONG_KEY, "v"), refusal("SET", " with a key of 16000 bytes or more"), b"+OK\r\n"),
    (("SET", "x" * 16336, "v"), refusal("SET", " with a key of 16000 bytes or more"), "closes"),
]

# Commands forwarded, in order on one connection, with Redis's replies.
FORWARDED = [
    (("DEL", "fw:s", "fw:h", "fw:b", "fw:l", "fw:{t}a", "fw:{t}b"), b":0\r\n"),
    (("SET", "fw:s", "v1"), b"+OK\r\n"),
    (("GET", "fw:s"), b"$2\r\nv1\r\n"),
    (("SET", "fw:s", "v2", "EX", "100"), b"+OK\r\n"),
    (("HSET", "fw:h", "f1", "a", "f2", "b"), b":2\r\n"),
    (("HGET", "fw:h", "f2"), b"$1\r\nb\r\n"),
    (("BITFIELD", "fw:b", "SET", "u8", "0", "200", "GET", "u8", "0"), b"*2\r\n:0\r\n:200\r\n"),
    (("EVAL", "return redis.call('GET', KEYS[1])", "1", "fw:s"), b"$2\r\nv2\r\n"),
    (("EXPIRE", "fw:h", "10"), b":1\r\n"),
    (("RPUSH", "fw:l", "x", "y"), b":2\r\n"),
    (("LRANGE", "fw:l", "0", "-1"), b"*2\r\n$1\r\nx\r\n$1\r\ny\r\n"),
    (("MSET", "fw:{t}a", "1", "fw:{t}b", "2"), b"+OK\r\n"),
    (("MGET", "fw:{t}a", "fw:{t}b", "fw:none"), b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"),
    (("EXISTS", "fw:s", "fw:h", "fw:none"), b":2\r\n"),
    (("DEL", "fw:s", "fw:h", "fw:b", "fw:l", "fw:{t}a", "fw:{t}b"), b":6\r\n"),
]

# The sweep over COMMAND leaves these out.
SKIPPED = {
    "shutdown": "stops the server it reaches",
    "debug": "DEBUG SLEEP / SEGFAULT / RELOAD stall or crash the server it reaches",
    "failover": "starts a failover of the server it reaches",
    "replicaof": "turns the server it reaches into a replica",
    "slaveof": "turns the server it reaches into a replica",
    "client|kill": "closes connections of bloomproxy's clients (the sweep's own)",
    "client|pause": "stops every client for its duration (refusal checked in REFUSED)",
    "quit": "closes the connection, as it should",
    "monitor": "a monitor stream (refusal checked on a connection of its own)",
    "subscribe": "pub/sub mode (refusal checked on a connection of its own)",
    "psubscribe": "pub/sub mode (refusal checked on a connection of its own)",
    "ssubscribe": "pub/sub mode (refusal checked on a connection of its own)",
    "sync": "a replication stream (refusal checked on a connection of its own)",
    "psync": "a replication stream (refusal checked on a connection of its own)",
}

# Sent each on a connection of its own: refused, and the connection answers PING after.
OWN_CONNECTION = [("MONITOR",), ("SUBSCRIBE", "ch"), ("PSUBSCRIBE", "ch*"),
                  ("SSUBSCRIBE", "ch"), ("SYNC",), ("PSYNC", "?", "-1"),
                  ("REPLCONF", "listening-port", "6380"), ("SCRIPT", "DEBUG", "YES")]

# Whole calls for commands whose arguments the arity alone does not place well (numkeys,
# blocking timeouts, values that would change the connection).
OVERRIDES = {
    "eval": [["EVAL", "return 1", "1", "{K}1"], ["EVAL", "return KEYS[1]", "1", "{K}1", "a"]],
    "evalsha": [["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "{K}1"]],
    "eval_ro": [["EVAL_RO", "return 1", "1", "{K}1"]],
    "evalsha_ro": [["EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "{K}1"]],
    "fcall": [["FCALL", "f", "1", "{K}1"]],
    "fcall_ro": [["FCALL_RO", "f", "1", "{K}1"]],
    "zdiff": [["ZDIFF", "2", "{K}1", "{K}2"]],
    "zinter": [["ZINTER", "2", "{K}1", "{K}2"]],
    "zunion": [["ZUNION", "2", "{K}1", "{K}2", "WITHSCORES"]],
    "zdiffstore": [["ZDIFFSTORE", "{K}0", "2", "{K}1", "{K}2"]],
    "zinterstore": [["ZINTERSTORE", "{K}0", "2", "{K}1", "{K}2"]],
    "zunionstore": [["ZUNIONSTORE", "{K}0", "2", "{K}1", "{K}2"]],
    "zintercard": [["ZINTERCARD", "2", "{K}1", "{K}2"]],
    "sintercard": [["SINTERCARD", "2", "{K}1", "{K}2"]],
    "lmpop": [["LMPOP", "1", "{K}1", "LEFT"]],
    "zmpop": [["ZMPOP", "1", "{K}1", "MIN"]],
    "blmpop": [["BLMPOP", "0.01", "1", "{K}1", "LEFT"]],
    "bzmpop": [["BZMPOP", "0.01", "1", "{K}1", "MIN"]],
    "blmove": [["BLMOVE", "{K}1", "{K}2", "LEFT", "RIGHT", "0.01"]],
    "xread": [["XREAD", "COUNT", "1", "STREAMS", "{K}1", "0"]],
    "xreadgroup": [["XREADGROUP", "GROUP", "g", "c", "STREAMS", "{K}1", ">"]],
    "wait": [["WAIT", "0", "10"]],
    "migrate": [["MIGRATE", HOST, "1", "{K}1", "0", "10"]],
    "client|reply": [["CLIENT", "REPLY", "ON"]],
    "hello": [["HELLO"], ["HELLO", "2"]],
    "select": [["SELECT", "0"], ["SELECT", "1"]],
    "info": [["INFO"], ["INFO", "proxy"], ["INFO", "server"]],
    "set": [["SET", "{K}1", "v"], ["SET", "{K}1", "v", "EX", "100"], ["SET", "{K}1", "v", "NX"]],
    "expire": [["EXPIRE", "{K}1", "100"], ["EXPIRE", "{K}1", "100", "NX"]],
    "getex": [["GETEX", "{K}1"], ["GETEX", "{K}1", "PERSIST"]],
}

# What bloomproxy answers itself (a call to one of these may reach no server).
LOCAL = {"auth", "client|getname", "client|getredir", "client|id", "client|info", "client|list",
         "client|reply", "client|setname", "cluster|info", "cluster|keyslot", "cluster|myid",
         "cluster|nodes", "cluster|shards", "cluster|slots", "echo", "hello", "info", "ping",
         "reset"}


def sweep_calls(table):
    """[(stat name, args)] for every command and subcommand of a COMMAND reply: the minimum
    number of arguments, and for variadic commands one and two more. Keys ({K}n, replaced by
    the caller) at the positions the table gives, "1" elsewhere ("0.01" for the timeouts of
    blocking commands)."""
    calls = []

    def add(entry):
        name, arity, flags, first, last, step = entry[:6]
        name = name.decode()
        subs = entry[9] if len(entry) > 9 else []
        if subs:
            for sub in subs:
                add(sub)
            if arity != -1:  # a container that needs its subcommand
                return
        if name in SKIPPED:
            return
        if name in OVERRIDES:
            calls.extend((name, list(args)) for args in OVERRIDES[name])
            return
        words = name.split("|") if "|" in name else [name]
        value = "0.01" if b"blocking" in flags else "1"
        counts = [abs(arity)] if arity > 0 else [-arity, -arity + 1, -arity + 2]
        if subs:  # the bare container (COMMAND)
            counts = [1]
        for n in counts:
            args = [w.upper() for w in words]
            while len(args) < n:
                i = len(args)
                is_key = (first > 0 and i >= first and (last < 0 and i <= n + last or i <= last)
                          and (i - first) % step == 0)
                args.append("{K}%d" % i if is_key else value)
            calls.append((name, args))

    for entry in table:
        add(entry)
    return calls


def command_stats(conns):
    """[{stat name: calls + rejected_calls + failed_calls}] of each server (INFO commandstats
    on the RawConns `conns`; each call adds one to "info")."""
    out = []
    for c in conns:
        stats = {}
        for line in c.command("INFO", "commandstats").decode().split("\r\n"):
            if line.startswith("cmdstat_"):
                name, fields = line[len("cmdstat_"):].split(":", 1)
                kv = dict(f.split("=") for f in fields.split(","))
                stats[name] = (int(kv["calls"]) + int(kv.get("rejected_calls", 0))
                               + int(kv.get("failed_calls", 0)))
        out.append(stats)
    return out


def proxy_info(conn):
    text = conn.command("INFO", "proxy").decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def server_index(tw, key):
    return tw.servers.index(tw.server_for_key(key))


def keys_on_two_servers(tw, prefix, count=2):
    """`count` keys on server 0 and `count` on server 1, without hash tags."""
    found = {0: [], 1: []}
    i = 0
    while min(len(v) for v in found.values()) < count:
        key = f"{prefix}:{i}"
        where = server_index(tw, key)
        if len(found[where]) < count:
            found[where].append(key)
        i += 1
    return found[0], found[1]


# ---------------------------------------------------------------------------------------------
# 1. The whole command set


def test_every_redis_command_is_refused_answered_or_forwarded(twemproxy, sharding_proxy,
                                                              capsys):
    tw = twemproxy
    tw.flushall()
    p = sharding_proxy()
    with RawConn(tw.servers[0].port) as c:
        table = c.command("COMMAND")
    calls = sweep_calls(table)
    for i, (_, args) in enumerate(calls):
        # Keys of one call share a hash tag (one server, so that multi-key commands run).
        calls[i] = (calls[i][0], [a.replace("{K}", "sw:{%d}:" % i) for a in args])

    problems = []
    counts = {"forwarded": 0, "refused": 0, "local": 0}
    local_seen = set()
    stat_conns = [RawConn(s.port) for s in tw.servers]
    conn = p.raw(timeout=10)
    refused_before = int(proxy_info(conn)["sharding_proxy_refused_commands"])
    before = command_stats(stat_conns)
    for stat, args in calls:
        try:
            # A PING after each call: a connection lost is the call's doing.
            conn.send(cmd(*args) + cmd("PING"))
            raw = conn.read_reply_raw()
            pong = conn.read_reply_raw()
            if args[0].upper() == "MULTI" and is_refusal(raw, args):
                # After a refused MULTI the commands up to EXEC / DISCARD are not run
                # (test_transactions_are_refused_whole): DISCARD ends it.
                assert pong.startswith(b"-ERR bloomproxy: 'PING' not run: it follows a MULTI")
                conn.send(cmd("DISCARD") + cmd("PING"))
                discarded = conn.read_reply_raw()
                pong = conn.read_reply_raw() if discarded == b"+OK\r\n" else discarded
        except (OSError, EOFError) as exc:
            problems.append(f"{args}: connection lost ({exc!r})")
            conn.close()
            conn = p.raw(timeout=10)
            before = command_stats(stat_conns)
            continue
        after = command_stats(stat_conns)
        own_info = 1 if stat == "info" else 0  # command_stats' own INFO
        reached = sum(a.get(stat, 0) - b.get(stat, 0) - own_info for a, b in zip(after, before))
        before = after
        if pong != b"+PONG\r\n" or raw.startswith(b"-ERR upstream"):
            problems.append(f"{args}: {raw[:100]!r}, then PING -> {pong[:100]!r}")
            conn.close()  # (bloomproxy may close it after these)
            conn = p.raw(timeout=10)
            continue
        if is_refusal(raw, args):
            counts["refused"] += 1
            if reached:
                problems.append(f"{args}: refused, yet reached a server")
        elif REFUSAL_RE.match(raw) or raw.startswith(b"-ERR bloomproxy: '"):
            problems.append(f"{args}: refusal names another command: {raw!r}")
        elif reached:
            counts["forwarded"] += 1
        elif stat in LOCAL:
            counts["local"] += 1
            local_seen.add(stat)
        else:
            problems.append(f"{args}: neither refused nor seen by a server: {raw[:100]!r}")
    assert conn.command("PING") == b"PONG"
    info = proxy_info(conn)
    conn.close()
    for c in stat_conns:
        c.close()
    with capsys.disabled():
        print(f"\nCOMMAND sweep through bloomproxy + nutcracker: {len(calls)} calls, "
              f"{counts['forwarded']} forwarded, {counts['refused']} refused, "
              f"{counts['local']} answered by bloomproxy; skipped: {', '.join(sorted(SKIPPED))}")
    assert not problems, "\n".join(problems)
    assert info["upstream_connection_errors"] == "0", info
    assert int(info["sharding_proxy_refused_commands"]) - refused_before == counts["refused"]
    # The sweep did cover the three kinds.
    assert counts["forwarded"] > 100 and counts["refused"] > 150, counts
    assert {"ping", "echo", "hello", "client|setname", "client|list", "info"} <= local_seen


def test_disturbing_commands_are_refused_on_a_connection_of_their_own(twemproxy,
                                                                      sharding_proxy):
    p = sharding_proxy()
    problems = []
    for args in OWN_CONNECTION:
        with p.raw() as c:
            try:
                c.send(cmd(*args))
                raw = c.read_reply_raw()
                pong = c.command("PING")
            except (OSError, EOFError) as exc:
                problems.append(f"{args}: connection lost ({exc!r})")
                continue
            if raw != refusal(args[0]) or pong != b"PONG":
                problems.append(f"{args}: {raw!r}, then PING -> {pong!r}")
    with p.raw() as c:
        info = proxy_info(c)
    assert not problems, "\n".join(problems)
    assert info["upstream_connection_errors"] == "0", info


def test_known_commands_refused_and_forwarded(twemproxy, sharding_proxy):
    tw = twemproxy
    tw.flushall()
    p = sharding_proxy()
    with p.raw() as c:
        # One at a time, then pipelined.
        for args, expected, _ in REFUSED:
            c.send(cmd(*args))
            assert c.read_reply_raw() == expected, args
        c.send(b"".join(cmd(*a) for a, _, _ in REFUSED))
        assert read_replies(c, len(REFUSED)) == b"".join(e for _, e, _ in REFUSED)
        # FORWARDED starts and ends with no key: it can run twice.
        for args, expected in FORWARDED:
            c.send(cmd(*args))
            assert c.read_reply_raw() == expected, args
        c.send(b"".join(cmd(*a) for a, _ in FORWARDED))
        for args, expected in FORWARDED:
            assert c.read_reply_raw() == expected, args
        info = proxy_info(c)
    assert info["upstream_connection_errors"] == "0", info
    assert int(info["sharding_proxy_refused_commands"]) == 2 * len(REFUSED)
    assert tw.keys_by_server() == {}


def test_refused_examples_are_needed_by_nutcracker(twemproxy):
    """Sent straight to nutcracker: it closes the connection without a reply; the commands
    only Codis refuses (and the 16000-byte key) it forwards."""
    tw = twemproxy
    tw.flushall()
    for args, _, direct in REFUSED:
        with RawConn(tw.port, timeout=5) as c:
            c.send(cmd(*args))
            if direct == "closes":
                assert c.read_until_eof(5) == b"", args
            else:
                raw = c.read_reply_raw()
                assert raw.startswith(direct), (args, raw)
                assert c.command("PING") == b"PONG"
    assert tw.server_for_key(LONG_KEY).client().get(LONG_KEY) == b"v"
    tw.flushall()


# ---------------------------------------------------------------------------------------------
# 3. Isolation

REFUSED_MIX = [
    (("KEYS", "*"), refusal("KEYS")),
    (("EXPIRE", "iso:k", "10", "NX"), refusal("EXPIRE", " with 3 arguments")),
    (("EVAL", "return 1", "0"), refusal("EVAL", " without keys")),
    (("SET", LONG_KEY, "v"), refusal("SET", " with a key of 16000 bytes or more")),
    (("RENAME", "iso:a", "iso:b"), refusal("RENAME")),
    (("SCAN", "0"), refusal("SCAN")),
    (("INFO",), refusal("INFO")),
    (("FLUSHALL",), refusal("FLUSHALL")),
    (("SUBSCRIBE", "ch"), refusal("SUBSCRIBE")),
    (("SELECT", "1"), refusal("SELECT")),
    (("BLPOP", "iso:l", "0.01"), refusal("BLPOP")),
    (("OBJECT", "ENCODING", "iso:k"), refusal("OBJECT")),
    (("EXEC",), refusal("EXEC")),
    (("PEXPIRETIME", "iso:k"), refusal("PEXPIRETIME")),
    (("WATCH", "iso:k"), refusal("WATCH")),
    (("MOVE", "iso:k", "1"), refusal("MOVE")),
    (("GET", "iso:k", "extra"), refusal("GET", " with 2 arguments")),
]


def test_refused_commands_disturb_no_client(twemproxy, sharding_proxy):
    tw = twemproxy
    tw.flushall()
    p = sharding_proxy()
    with p.raw() as c:
        refused_before = int(proxy_info(c)["sharding_proxy_refused_commands"])
    sent_refused = 0
    with Load(p.port, clients=3, batch=30, prefix="iso-load", bf=True) as load:
        batches_before = load.batches
        with p.raw(timeout=30) as c:
            n = 0
            rnd = 0
            deadline = time.monotonic() + 1.5
            while rnd < 4 or time.monotonic() < deadline:
                payload, expected = [], []
                for i in range(300):
                    if i % 2 == 0:
                        args, error = REFUSED_MIX[(i // 2 + rnd) % len(REFUSED_MIX)]
                        payload.append(cmd(*args))
                        expected.append(error)
                        sent_refused += 1
                    elif i % 6 == 1:
                        n += 1
                        payload.append(cmd("INCR", "iso:n"))
                        expected.append(b":%d\r\n" % n)
                    elif i % 6 == 3:
                        payload.append(cmd("SET", f"iso:{i}", f"v{rnd}-{i}"))
                        expected.append(b"+OK\r\n")
                    else:
                        v = f"v{rnd}-{i - 2}".encode()
                        payload.append(cmd("GET", f"iso:{i - 2}"))
                        expected.append(b"$%d\r\n%s\r\n" % (len(v), v))
                c.send(b"".join(payload))
                got = [c.read_reply_raw() for _ in expected]
                for j, (g, e) in enumerate(zip(got, expected)):
                    assert g == e, f"round {rnd} reply {j}: {g[:120]!r} != {e[:120]!r}"
                assert c.command("BF.ADD", "iso-bf", f"item{rnd}") in (0, 1)
                assert c.command("BF.EXISTS", "iso-bf", f"item{rnd}") == 1
                rnd += 1
            assert c.command("GET", "iso:n") == str(n).encode()
        # The other clients were served meanwhile.
        assert load.batches - batches_before >= 3, load.batches - batches_before
    load.assert_clean(max_stall=5.0)
    with p.raw() as c:
        info = proxy_info(c)
    assert info["upstream_connection_errors"] == "0", info
    assert int(info["sharding_proxy_refused_commands"]) - refused_before == sent_refused


# ---------------------------------------------------------------------------------------------
# 4. Multi-key commands across the servers


def test_multi_key_commands_across_servers(twemproxy, sharding_proxy, redis_instance):
    """The same sequence through bloomproxy (keys on both servers) and on one plain
    redis-server gives the same replies, byte for byte."""
    tw = twemproxy
    tw.flushall()
    (a, a2), (b, b2) = keys_on_two_servers(tw, "mk")
    t1, t2 = "mk{tag}:1", "mk{tag}:2"
    seq = [
        ("MSET", a, "va", b, "vb", t1, "t1", t2, "t2"),
        ("MGET", a, b, a2, t1, b, t2),
        ("EXISTS", a, b),
        ("EXISTS", a, a, b, b, b2),
        ("TOUCH", a, b, b2, t1),
        ("DEL", a, a, b, b2),
        ("EXISTS", a, b, t1, t2),
        ("MSET", a, "1", b, "2", a2, "3", b2, "4"),
        ("UNLINK", b, a2, b, "mk:none"),
        ("MGET", a, b, a2, b2),
        ("DEL", t1, t2, t1),
        ("MGET", t1, t2),
        ("MSET", a, "x", a, "y", b, "z"),
        ("MGET", a, b),
        ("DEL", a, b, b2, a, b2, "mk:none"),
    ]
    payload = b"".join(cmd(*s) for s in seq)
    p = sharding_proxy()
    with p.raw() as c:
        c.send(payload)
        via = [c.read_reply_raw() for _ in seq]
        info = proxy_info(c)
    with RawConn(redis_instance.port) as c:
        c.send(payload)
        direct = [c.read_reply_raw() for _ in seq]
    for s, v, d in zip(seq, via, direct):
        assert v == d, (s, v, d)
    assert info["upstream_connection_errors"] == "0", info
    assert tw.keys_by_server() == {}

    # Where the keys go: each on its server, tagged keys together.
    with p.raw() as c:
        assert c.command("MSET", a, "1", b, "2", t1, "3", t2, "4") == b"OK"
        assert c.command("EXISTS", a, b) == 2
    where = tw.keys_by_server()
    assert where[a.encode()] == 0 and where[b.encode()] == 1, where
    assert where[t1.encode()] == where[t2.encode()], where
    # nutcracker alone sends EXISTS whole to its first key's server: the count is wrong there.
    with RawConn(tw.port) as c:
        assert c.command("EXISTS", a, b) == 1
        assert c.command("EXISTS", b, a) == 1
        assert c.command("MGET", a, b) == [b"1", b"2"]  # (MGET and DEL it splits itself)
    tw.flushall()


EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


def not_run(name):
    return (b"-ERR bloomproxy: '" + name.encode() + b"' not run: it follows a MULTI, and "
            b"transactions are not supported behind a sharding proxy (upstream-kind "
            b"sharding-proxy); EXEC or DISCARD ends it\r\n")


def test_transactions_are_refused_whole(twemproxy, sharding_proxy):
    """MULTI is refused, and so is every command after it up to EXEC (-EXECABORT) or DISCARD
    (+OK), as Redis aborts a transaction with a rejected command: a client that pipelines
    MULTI ... EXEC never sees its commands run one by one, outside a transaction. Sent to
    nutcracker directly, MULTI closes the connection."""
    tw = twemproxy
    tw.flushall()
    with RawConn(tw.port, timeout=5) as c:
        c.send(cmd("MULTI"))
        assert c.read_until_eof(5) == b""
    p = sharding_proxy()
    with p.raw() as c:
        refused_before = int(proxy_info(c)["sharding_proxy_refused_commands"])
        c.send(cmd("MULTI") + cmd("SET", "tx:a", "1") + cmd("INCR", "tx:n") + cmd("PING") +
               cmd("BF.ADD", "tx:bf", "x") + cmd("CLIENT", "SETNAME", "tx") + cmd("MULTI") +
               cmd("EXEC"))
        assert c.read_reply_raw() == refusal("MULTI")
        for name in ("SET", "INCR", "PING", "BF.ADD", "CLIENT"):
            assert c.read_reply_raw() == not_run(name), name
        assert c.read_reply_raw() == b"-ERR MULTI calls can not be nested\r\n"
        assert c.read_reply_raw() == EXECABORT
        # Over: commands run again, and nothing of the transaction did.
        assert c.command("EXISTS", "tx:a", "tx:n", "tx:bf") == 0
        assert c.command("CLIENT", "GETNAME") is None
        assert c.command("EXEC") == Err(refusal("EXEC")[1:-2])
        # DISCARD ends it too; RESET as well.
        c.send(cmd("MULTI") + cmd("SET", "tx:a", "1") + cmd("DISCARD") + cmd("SET", "tx:b", "2"))
        assert [c.read_reply_raw() for _ in range(4)] == [
            refusal("MULTI"), not_run("SET"), b"+OK\r\n", b"+OK\r\n"]
        c.send(cmd("MULTI") + cmd("RESET") + cmd("GET", "tx:b"))
        assert [c.read_reply_raw() for _ in range(3)] == [
            refusal("MULTI"), b"+RESET\r\n", b"$1\r\n2\r\n"]
        assert c.command("EXISTS", "tx:a") == 0
        info = proxy_info(c)
    # Only MULTI and the lone EXEC count as refused by the sharding proxy's rules.
    assert int(info["sharding_proxy_refused_commands"]) - refused_before == 4
    assert info["upstream_connection_errors"] == "0", info
    tw.flushall()


# ---------------------------------------------------------------------------------------------
# 5. Scripts

PORT_SCRIPT = ("redis.call('SET', KEYS[1], ARGV[1]) "
               "return string.match(redis.call('INFO', 'server'), 'tcp_port:(%d+)')")


def test_eval_and_evalsha_run_on_the_key_server(twemproxy, sharding_proxy):
    tw = twemproxy
    tw.flushall()
    for s in tw.servers:
        s.client().script_flush()
    (a,), (b,) = keys_on_two_servers(tw, "ev", count=1)
    sha = hashlib.sha1(PORT_SCRIPT.encode()).hexdigest()
    p = sharding_proxy()
    with p.raw() as c:
        noscript = c.command("EVALSHA", sha, "1", a, "x")
        assert isinstance(noscript, Err) and noscript.startswith(b"NOSCRIPT"), noscript
        assert c.command("EVAL", PORT_SCRIPT, "1", a, "va") == str(tw.servers[0].port).encode()
        # Loaded on a's server only.
        assert c.command("EVALSHA", sha, "1", a, "va2") == str(tw.servers[0].port).encode()
        noscript = c.command("EVALSHA", sha, "1", b, "x")
        assert isinstance(noscript, Err) and noscript.startswith(b"NOSCRIPT"), noscript
        assert c.command("EVAL", PORT_SCRIPT, "1", b, "vb") == str(tw.servers[1].port).encode()
        assert c.command("EVALSHA", sha, "1", b, "vb2") == str(tw.servers[1].port).encode()
        assert c.command("GET", a) == b"va2" and c.command("GET", b) == b"vb2"
        # Without keys: refused.
        for args, detail in ((("EVAL", "return 1", "0"), " without keys"),
                             (("EVALSHA", sha, "0"), " without keys"),
                             (("EVAL", "return 1", "x"), " without keys"),
                             (("EVAL", "return 1", "2", a), " with 3 arguments")):
            c.send(cmd(*args))
            assert c.read_reply_raw() == refusal(args[0], detail), args
        info = proxy_info(c)
    assert info["upstream_connection_errors"] == "0", info
    assert tw.servers[0].client().get(a) == b"va2" and tw.servers[1].client().get(b) == b"vb2"
    tw.flushall()


# ---------------------------------------------------------------------------------------------
# 6. Configuration


def run_bin(*args, timeout=5):
    try:
        return subprocess.run([BLOOMPROXY_BIN, *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, env=proxy_env(),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"bloomproxy started with {args}")


def test_configuration_errors(tmp_path):
    base = ["--port", free_port(), "--bind", HOST]
    cases = [
        (["--upstream", "127.0.0.1:1", "--upstream-kind", "bogus"],
         ["upstream-kind", "'bogus'", "redis", "sharding-proxy"]),
        (["--upstream-kind", "sharding-proxy", "--upstream-cluster", "127.0.0.1:1"],
         ["upstream-kind sharding-proxy", "upstream-cluster"]),
        (["--upstream-kind", "sharding-proxy", "--upstream-cluster", "127.0.0.1:1,127.0.0.1:2",
          "--test-conf"],
         ["upstream-kind sharding-proxy", "upstream-cluster"]),
        (["--upstream-kind", "sharding-proxy", "--upstream", "127.0.0.1:1", "--upstream-user",
          "u", "--upstream-password", "p"],
         ["upstream-user", "upstream-kind sharding-proxy"]),
    ]
    conf = tmp_path / "kind.conf"
    conf.write_text("upstream-kind sharding-proxy\nupstream-cluster 127.0.0.1:1\n")
    cases.append((["--config", conf], ["upstream-kind sharding-proxy", "upstream-cluster"]))
    for extra, words in cases:
        res = run_bin(*base, *extra)
        out = res.stdout + res.stderr
        assert res.returncode != 0, f"{extra}: exit 0\n{out}"
        for w in words:
            assert w in res.stderr, f"{extra}: stderr does not mention {w!r}:\n{out}"
    ok = run_bin(*base, "--upstream", "127.0.0.1:1", "--upstream-kind", "sharding-proxy",
                 "--upstream-password", "p", "--test-conf")
    assert ok.returncode == 0, ok.stdout + ok.stderr


class AuthTwemproxy(Twemproxy):
    """nutcracker with `redis_auth`: clients must AUTH with the password, and nutcracker AUTHs
    to its servers (which require it) with the same one."""

    def __init__(self, workdir, password, servers=2):
        super().__init__(workdir, servers=servers)
        self.password = password
        self.servers = [RedisServer(self.dir / f"redis{i}", password=password)
                        for i in range(servers)]

    def _config(self):
        text = super()._config()
        assert "  redis: true\n" in text
        return text.replace("  redis: true\n",
                            f"  redis: true\n  redis_auth: {self.password}\n")

    def _answers(self):
        try:
            with RawConn(self.port, timeout=1.0) as c:
                return (c.command("AUTH", self.password) == b"OK"
                        and c.command("EXISTS", "bloomproxy-test-probe") == 0)
        except (OSError, EOFError):
            return False


def test_upstream_password_with_nutcracker_redis_auth(tmp_path, sharding_proxy):
    tw = AuthTwemproxy(tmp_path / "tw-auth", "s3cret-pw")
    try:
        tw.start()
        with RawConn(tw.port) as c:  # nutcracker does require it
            assert c.command("GET", "k").startswith(b"NOAUTH"), "nutcracker lets GET through"
        p = sharding_proxy("--upstream-password", "s3cret-pw", tw=tw)
        with p.raw() as c:
            assert c.command("SET", "auth:k", "v") == b"OK"
            assert c.command("GET", "auth:k") == b"v"
            assert c.command("BF.ADD", "auth-bf", "item") == 1
            assert c.command("BF.EXISTS", "auth-bf", "item") == 1
            c.send(cmd("RENAME", "auth:k", "auth:k2"))
            assert c.read_reply_raw() == refusal("RENAME")
            info = proxy_info(c)
        assert info["upstream_connection_errors"] == "0", info
        assert [s.client().get("auth:k") for s in tw.servers].count(b"v") == 1
        # Without the password nutcracker answers NOAUTH (through bloomproxy too).
        p2 = sharding_proxy(tw=tw)
        with p2.raw() as c:
            reply = c.command("GET", "auth:k")
            assert isinstance(reply, Err) and b"NOAUTH" in reply, reply
    finally:
        tw.stop()


# ---------------------------------------------------------------------------------------------
# 7. redis-py


def test_redis_py_client(twemproxy, sharding_proxy):
    tw = twemproxy
    tw.flushall()
    p = sharding_proxy()
    r = p.client()
    (a, a2), (b, b2) = keys_on_two_servers(tw, "py")
    assert r.set(a, "1") is True
    assert r.get(a) == b"1"
    pipe = r.pipeline(transaction=False)
    pipe.set(b, "2").set(a2, "3").mget(a, b, a2, b2).incr(b2).exists(a, b, a2, b2)
    assert pipe.execute() == [True, True, [b"1", b"2", b"3", None], 1, 4]
    assert r.expire(a, 100) is True
    assert 90 < r.ttl(a) <= 100
    assert r.exists(a, b, "py:none") == 2
    assert r.delete(a, b, a2, "py:none") == 3
    assert r.exists(a, b, a2, b2) == 1
    # A transaction: MULTI is refused, and none of its commands runs.
    before = r.get(b2)
    with pytest.raises(redis.ResponseError) as exc:
        pipe = r.pipeline(transaction=True)
        pipe.get(b2).incr(b2)
        pipe.execute()
    assert str(exc.value) == refusal("MULTI")[5:-2].decode(), exc.value
    assert r.get(b2) == before
    # The same pipeline on a raw connection.
    assert r.set("py:t", "t") is True
    with p.raw() as c:
        c.send(cmd("MULTI") + cmd("GET", "py:t") + cmd("EXEC"))
        assert c.read_reply_raw() == refusal("MULTI")
        assert c.read_reply_raw().startswith(b"-ERR bloomproxy: 'GET' not run: it follows a MULTI")
        assert c.read_reply_raw() == EXECABORT
    with pytest.raises(redis.ResponseError, match="'WATCH' is not supported"):
        r.pipeline().watch(b2)
    assert r.ping() is True
    with p.raw() as c:
        info = proxy_info(c)
    assert info["upstream_connection_errors"] == "0", info
    tw.flushall()

"""BF.* inside MULTI/EXEC (docs/transactions.md): each BF command is queued upstream as one script
that does the whole command when EXEC runs.

The differential test runs random sequences of BF commands (and plain commands on the same names)
twice on fresh data: command by command, and grouped in MULTI/EXEC blocks of random sizes. EXEC's
elements must equal the plain replies byte for byte, and afterwards every name must hold the same
thing upstream (its SCANDUMP, its metadata hash but the random id, the keys around it). Small
capacities make filters scale through several links, small shards make links span several keys.
A failure names the seed and the command, and reproduces alone:
pytest "test_multi_bf.py::test_differential[7]".

Then: queue-time errors (EXECABORT, nothing applied) against errors inside EXEC (the rest
applied), atomicity with plain commands, DISCARD, WATCH, two proxies racing transactions on one
filter, and the same on a Redis Cluster."""

import random
import re
import threading

import pytest

from bf_vectors import WRONGTYPE, ModelLink, item_hash, key_hash_slot, prefix_belongs_to
from bp_helpers import (Err, RawConn, encode_command as cmd, exec_block, exec_elements, parse_resp,
                        scan_all, wait_until)

SHARD = 64
# Small shards, and filters BF.ADD creates small too, so that they scale.
FLAGS = ("--bf-max-shard-bytes", str(SHARD), "--bf-initial-capacity", "7", "--bf-error-rate",
         "0.02", "--bf-expansion", "3")
SEEDS = list(range(1, 21))
POOL = [f"i{i}" for i in range(60)] + ["", "\x00\xff"]
ERRORS = ["0.01", "0.1", "0.001", "0.25", "0.0001", "0.5"]
BAD_ERRORS = ["0", "1", "-0.5", "abc", "2", ""]
BAD_NUMBERS = ["0", "-3", "x", "1.5", "99999999999999999999999"]
INFO_FIELDS = ["CAPACITY", "size", "Filters", "ITEMS", "expansion", "bogus"]
EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


# ---------------------------------------------------------------------------------------------
# Random sequences


class Generator:
    """Random commands on a few names. Interactive: SCANDUMP continues from the iterator the
    previous chunk of that name answered and LOADCHUNK copies chunks of a finished dump, so the
    plain run feeds each reply back (observe); the recorded commands are then replayed as they
    are inside MULTI, where their replies must be the same."""

    def __init__(self, seed, names, copies):
        self.rng = random.Random(seed)
        self.names, self.copies = names, copies
        self.scan = {}      # name -> next iterator of a SCANDUMP in progress
        self.chunks = {}    # name -> chunks (iterator, data) of the dump in progress
        self.dumps = {}     # name -> chunks of its last finished dump
        self.loading = {}   # copy name -> (chunks, index of the next one to load)

    def name(self):
        r = self.rng.random()
        return self.rng.choice(self.copies if r < 0.1 else self.names)

    def items(self, lo, hi):
        return [self.item() for _ in range(self.rng.randint(lo, hi))]

    def item(self):
        return self.rng.choice(POOL) if self.rng.random() < 0.9 else f"u{self.rng.random()}"

    def value(self, good, bad):
        return self.rng.choice(bad) if self.rng.random() < 0.08 else str(self.rng.choice(good))

    def reserve(self):
        rng = self.rng
        args = ["BF.RESERVE", self.name(), self.value(ERRORS, BAD_ERRORS),
                self.value(range(1, 21), BAD_NUMBERS)]
        opts = []
        if rng.random() < 0.5:
            opts.append(["EXPANSION", self.value(range(1, 5), BAD_NUMBERS)])
        if rng.random() < 0.3:
            opts.append([rng.choice(["NONSCALING", "nonscaling"])])
        rng.shuffle(opts)
        return args + [a for o in opts for a in o]

    def insert(self):
        rng = self.rng
        opts = []
        if rng.random() < 0.5:
            opts.append(["CAPACITY", self.value(range(1, 21), BAD_NUMBERS)])
        if rng.random() < 0.5:
            opts.append(["ERROR", self.value(ERRORS, BAD_ERRORS)])
        if rng.random() < 0.3:
            opts.append(["EXPANSION", self.value(range(1, 5), BAD_NUMBERS)])
        if rng.random() < 0.3:
            opts.append(["NOCREATE"])
        if rng.random() < 0.2:
            opts.append(["NONSCALING"])
        if rng.random() < 0.03:
            opts.append(["FOO"])
        rng.shuffle(opts)
        return (["BF.INSERT", self.name()] + [a for o in opts for a in o]
                + [rng.choice(["ITEMS", "items"])] + self.items(1, 6))

    def scandump(self):
        name, r = self.name(), self.rng.random()
        if r < 0.1:
            return ["BF.SCANDUMP", name,
                    self.rng.choice(["x", "-1", str(self.rng.randint(1, 600))])]
        return ["BF.SCANDUMP", name, str(self.scan.get(name, 0))]

    def loadchunk(self):
        rng = self.rng
        dst = rng.choice(self.copies)
        if rng.random() < 0.1:
            return rng.choice([["BF.LOADCHUNK", dst, "x", "data"],
                               ["BF.LOADCHUNK", dst, "1", "short header"],
                               ["BF.LOADCHUNK", dst, str(rng.randint(2, 300)), "garbage"],
                               ["BF.LOADCHUNK", dst, "0", ""]])
        chunks, at = self.loading.get(dst, (None, 0))
        if chunks is None or at >= len(chunks):
            if not self.dumps:
                return ["BF.LOADCHUNK", dst, "1", "no dump yet"]
            chunks, at = self.dumps[rng.choice(sorted(self.dumps))], 0
        self.loading[dst] = (chunks, at + 1)
        it, data = chunks[at]
        return ["BF.LOADCHUNK", dst, str(it), data]

    def plain(self):
        name = self.name()
        return self.rng.choice([["SET", name, "v"], ["DEL", name], ["DEL", name],
                                ["HSET", name, "f", "v"], ["GET", name], ["TYPE", name],
                                ["EXISTS", name]])

    def next(self):
        rng = self.rng
        ops = [(3, self.reserve), (10, lambda: ["BF.ADD", self.name(), self.item()]),
               (6, lambda: ["BF.MADD", self.name()] + self.items(1, 8)), (5, self.insert),
               (3, lambda: ["BF.EXISTS", self.name(), self.item()]),
               (3, lambda: ["BF.MEXISTS", self.name()] + self.items(1, 6)),
               (2, lambda: ["BF.CARD", self.name()]),
               (3, lambda: ["BF.INFO", self.name()] + ([rng.choice(INFO_FIELDS)]
                                                       if rng.random() < 0.7 else [])),
               (5, self.scandump), (3, self.loadchunk), (1.5, self.plain)]
        pick = rng.uniform(0, sum(w for w, _ in ops))
        for w, make in ops:
            pick -= w
            if pick <= 0:
                return make()
        return ops[-1][1]()

    def observe(self, args, reply):
        """Follows SCANDUMP iterations from the plain run's replies."""
        if args[0] != "BF.SCANDUMP" or not re.fullmatch(r"\d+", args[2]):
            return
        name, it = args[1], int(args[2])
        if self.scan.get(name, 0) != it:
            return  # a random iterator, not the iteration in progress
        if not isinstance(reply, list) or len(reply) != 2:
            self.scan.pop(name, None)
            self.chunks.pop(name, None)
            return
        nxt, data = reply
        if it == 0:
            self.chunks[name] = []
        self.chunks.setdefault(name, []).append((nxt, data) if nxt else None)
        if nxt == 0:
            self.dumps[name] = [c for c in self.chunks.pop(name) if c is not None]
            self.scan.pop(name, None)
        else:
            self.scan[name] = nxt


def run_plain(conn, gen, count):
    """`count` generated commands one by one: [(args, raw reply)]."""
    out = []
    for _ in range(count):
        args = gen.next()
        conn.send(cmd(*args))
        raw = conn.read_reply_raw()
        gen.observe(args, parse_resp(raw)[0])
        out.append((args, raw))
    return out


def run_in_multi(conn, commands, rng, split=None):
    """The commands in MULTI/EXEC blocks of random sizes (and split where split(prev, next)):
    the replies taken from EXEC's arrays."""
    out, i = [], 0
    while i < len(commands):
        block = commands[i:i + rng.choice([rng.randint(1, 10), rng.randint(1, 40)])]
        if split is not None:
            for j in range(1, len(block)):
                if split(block[j - 1], block[j]):
                    block = block[:j]
                    break
        out += exec_block(conn, block)
        i += len(block)
    return out


def short(b, limit=200):
    return b if len(b) <= limit else b[:limit] + b"...(%d bytes)" % len(b)


def compare_replies(plain, in_multi):
    for i, ((args, want), got) in enumerate(zip(plain, in_multi)):
        assert got == want, (f"command #{i} {[short(str(a).encode(), 60) for a in args]}:\n"
                             f"  plain:    {short(want)!r}\n  in MULTI: {short(got)!r}")
    assert len(plain) == len(in_multi)


# ---------------------------------------------------------------------------------------------
# What the upstream holds afterwards


def full_dump(conn, name):
    """Every SCANDUMP reply of `name` (raw), until iterator 0 or an error."""
    out, it = [], 0
    for _ in range(10000):
        conn.send(cmd("BF.SCANDUMP", name, str(it)))
        raw = conn.read_reply_raw()
        out.append(raw)
        reply = parse_resp(raw)[0]
        if not isinstance(reply, list) or reply[0] == 0:
            return out
        it = reply[0]
    raise AssertionError(f"SCANDUMP of {name!r} does not end")


def owner(prefix, names):
    """The name whose data keys start with `prefix` (its {tag} may depend on the name's slot)."""
    for name in names:
        if prefix_belongs_to(prefix, name):
            return name.encode()
    return b"? " + prefix


def upstream_state(proxy_conn, direct, nodes, names, tag):
    """What each name holds: its type, its value (a hash without its random id), its SCANDUMP
    through the proxy; and every upstream key of the run (those holding `tag`), a data key's id
    replaced by its filter's name. direct(key) is a connection to the upstream holding key;
    nodes, one to each upstream. The run's tag is replaced by "R" (the runs' names differ by
    their tag only where they share an upstream)."""
    state, ids = {}, {}

    def norm(b):
        return b.replace(tag.encode(), b"R")

    for name in names:
        typ = direct(name).command("TYPE", name)
        entry = {"type": typ}
        if typ == b"hash":
            fields = direct(name).command("HGETALL", name)
            h = dict(zip(fields[::2], fields[1::2]))
            if b"id" in h:
                ids[h.pop(b"id")] = norm(name.encode())
            entry["hash"] = h
        elif typ == b"string":
            entry["value"] = direct(name).command("GET", name)
        entry["scandump"] = full_dump(proxy_conn, name)
        state[norm(name.encode())] = entry
    keys = []
    for node in nodes:
        for k in scan_all(node, "MATCH", f"*{tag}*", "COUNT", 1000):
            ttl = node.command("PTTL", k)
            m = re.match(rb"\A(.*):bf:([0-9a-f]{16}):(.*)\Z", k, re.S)
            marker = re.match(rb"\A(.*):bf:m:(.*)\Z", k, re.S)
            if m and m.group(2) in ids:
                k = b"data of %s: %s" % (ids[m.group(2)], m.group(3))
            elif m:
                k = b"data of a filter gone, of %s: %s" % (owner(m.group(1), names), m.group(3))
            elif marker:
                k = b"marker of %s, prefix of %s" % (marker.group(2),
                                                     owner(marker.group(1), names))
            keys.append(norm(k) + (b" (no TTL)" if ttl == -1 else b" (TTL)"))
    state[b"upstream keys"] = sorted(keys)
    return state


def compare_states(a, b):
    for name in sorted(set(a) | set(b)):
        assert a.get(name) == b.get(name), \
            (f"{name}:\n  plain:    {short(repr(a.get(name)).encode(), 600)}"
             f"\n  in MULTI: {short(repr(b.get(name)).encode(), 600)}")


# ---------------------------------------------------------------------------------------------
# The differential test


def names_of(tag):
    # a plain name, one with a hash tag, one with braces but no tag (its data keys take a tag of
    # their own)
    return [f"{tag}:fa", f"{{{tag}t}}:fb", f"{tag}:}}fc{{"], [f"{tag}:cp0", f"{tag}:cp1"]


def differential(seed, plain, multi, tag_plain, tag_multi, count=500, split=None):
    """Runs seed's sequence on `plain` (proxy, direct(key), nodes) command by command, then in
    MULTI blocks on `multi`, and compares replies and what the upstreams hold."""
    names_p, copies_p = names_of(tag_plain)
    gen = Generator(seed, names_p, copies_p)
    with plain[0].raw(timeout=30) as conn:
        replies = run_plain(conn, gen, count)
        before = upstream_state(conn, plain[1], plain[2], names_p + copies_p, tag_plain)
    names_m, copies_m = names_of(tag_multi)
    rename = dict(zip(names_p + copies_p, names_m + copies_m))
    commands = [[rename.get(a, a) if i == 1 else a for i, a in enumerate(args)]
                for args, _ in replies]
    with multi[0].raw(timeout=30) as conn:
        got = run_in_multi(conn, commands, random.Random(seed * 7919), split)
        compare_replies(replies, got)
        after = upstream_state(conn, multi[1], multi[2], names_m + copies_m, tag_multi)
    compare_states(before, after)
    return replies


def test_the_sequences_cover_what_they_should(redis_instance, proxy):
    """The sequences reach every reply kind the differential is about (else it proves little):
    scaling through several links spread over several shards, full non-scaling filters,
    wrong types, missing filters, dumps loaded whole."""
    p = proxy(*FLAGS)
    seen = set()
    for seed in SEEDS:
        gen = Generator(seed, *names_of(f"c{seed}"))
        with p.raw(timeout=30) as conn:
            for args, raw in run_plain(conn, gen, 500):
                if raw.startswith(b"-"):
                    seen.add(raw[:30])
                if args[0] == "BF.LOADCHUNK" and raw == b"+OK\r\n" and args[2] != "1":
                    seen.add("loaded a link")
            for name in sum(names_of(f"c{seed}"), []):
                info = conn.command("BF.INFO", name, "FILTERS")
                if isinstance(info, list) and info[0] >= 3:
                    seen.add("3 links")
    direct = redis_instance.client()
    longest = max(direct.strlen(k) for k in direct.keys("*:bf:*.*"))
    assert longest == SHARD
    for want in [WRONGTYPE[:30], b"-ERR not found", b"-ERR non scaling filter is full"[:30],
                 b"-ERR item exists", "loaded a link", "3 links"]:
        assert any(s == want or isinstance(s, bytes) and isinstance(want, bytes)
                   and s.startswith(want) for s in seen), \
            f"no {want!r} in {sorted(map(str, seen))}"


@pytest.mark.parametrize("seed", SEEDS)
def test_differential(seed, redis_instance, redis_factory, proxy):
    other = redis_factory()
    a, b = proxy(*FLAGS), proxy(*FLAGS, upstream=other.address)
    with RawConn(redis_instance.port) as da, RawConn(other.port) as db:
        differential(seed, (a, lambda k: da, [da]), (b, lambda k: db, [db]), f"s{seed}",
                     f"s{seed}")


# ---------------------------------------------------------------------------------------------
# Errors: when queued (EXECABORT) and inside EXEC


# Redis's own arity check (the command table: bf.add 3, bf.reserve -4, ...) refuses these when
# queued.
TABLE_ARITY = [("BF.ADD", "f"), ("BF.ADD", "f", "a", "b"), ("BF.MADD", "f"), ("bf.exists", "f"),
               ("BF.MEXISTS", "f"), ("BF.RESERVE", "f", "0.01"), ("BF.INSERT", "f", "ITEMS"),
               ("BF.CARD",), ("BF.CARD", "f", "x"), ("BF.INFO",), ("BF.SCANDUMP", "f"),
               ("BF.LOADCHUNK", "f", "1")]


@pytest.mark.parametrize("bad", TABLE_ARITY, ids=[" ".join(b) for b in TABLE_ARITY])
def test_arity_error_when_queued_aborts_the_transaction(bp, redis_instance, bad):
    with bp.raw() as c:
        c.send(cmd("MULTI") + cmd("SET", "s", "1") + cmd("BF.RESERVE", "f", "0.01", "10")
               + cmd(*bad) + cmd("BF.ADD", "g", "a") + cmd("EXEC") + cmd("PING"))
        got = [c.read_reply_raw() for _ in range(7)]
    assert got == [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n",
                   b"-ERR wrong number of arguments for '%s' command\r\n" % bad[0].lower().encode(),
                   b"+QUEUED\r\n", EXECABORT, b"+PONG\r\n"]
    assert redis_instance.client().keys("*") == []


# RedisBloom's own argument checks (after Redis's arity check passed) answer these when EXEC runs
# them: Redis queued them.
MODULE_ARITY = [("BF.RESERVE", "f", "0.01", "10", "EXPANSION", "2", "NONSCALING", "x"),
                ("BF.INSERT", "f", "CAPACITY", "10"), ("BF.INSERT", "f", "ERROR", "0.1", "ITEMS"),
                ("BF.INSERT", "f", "NONSCALING", "CAPACITY"), ("BF.INFO", "f", "CAPACITY", "x")]


@pytest.mark.parametrize("bad", MODULE_ARITY, ids=[" ".join(b) for b in MODULE_ARITY])
def test_argument_count_checked_by_the_module_answers_inside_exec(bp, redis_instance, bad):
    with bp.raw() as c:
        plain = c.command(*bad)
        assert isinstance(plain, Err) and plain.startswith(b"ERR wrong number of arguments")
        c.send(cmd("MULTI") + cmd("SET", "s", "1") + cmd(*bad) + cmd("BF.ADD", "g", "a")
               + cmd("EXEC"))
        got = [c.read_reply_raw() for _ in range(5)]
    assert got == [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n",
                   b"*3\r\n+OK\r\n-" + plain + b"\r\n:1\r\n"]


def test_errors_inside_exec_leave_the_rest_applied(bp, redis_instance):
    commands = [("SET", "s", "1"), ("BF.RESERVE", "f", "2", "100"), ("BF.ADD", "f", "a"),
                ("SET", "w", "x"), ("BF.ADD", "w", "a"), ("BF.MEXISTS", "w", "a", "b"),
                ("BF.INFO", "f", "bogus"), ("BF.SCANDUMP", "f", "x"),
                ("BF.LOADCHUNK", "f", "x", "d"), ("BF.INSERT", "nf", "NOCREATE", "ITEMS", "a"),
                ("BF.RESERVE", "f", "0.01", "10"), ("BF.CARD", "nf"), ("BF.INFO", "nf"),
                ("BF.RESERVE", "n", "0.1", "1", "NONSCALING"), ("BF.MADD", "n", "a", "b", "c"),
                ("BF.INSERT", "f", "CAPACITY", "x", "ITEMS", "a"), ("INCR", "s"),
                ("BF.MADD", "f", "a", "b")]
    want = [b"+OK\r\n", b"-ERR error rate must be in the range (0.000000, 1.000000)\r\n",
            b":1\r\n", b"+OK\r\n", WRONGTYPE, b"*2\r\n:0\r\n:0\r\n"]
    with bp.raw() as c:
        c.send(cmd("MULTI") + b"".join(cmd(*a) for a in commands) + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(len(commands) + 1)] == \
            [b"+OK\r\n"] + [b"+QUEUED\r\n"] * len(commands)
        got = exec_elements(c.read_reply_raw())
        assert got[:len(want)] == want
        assert got[9] == b"-ERR not found\r\n" and got[10] == b"-ERR item exists\r\n"
        assert got[11] == b":0\r\n" and got[12] == b"-ERR not found\r\n"
        assert got[14] == b"*2\r\n:1\r\n-ERR non scaling filter is full\r\n"
        assert got[16:] == [b":2\r\n", b"*2\r\n:0\r\n:1\r\n"]
        # The same commands outside MULTI, on fresh data, answer the same.
        assert c.command("FLUSHALL") == b"OK"
        for a, element in zip(commands, got):
            c.send(cmd(*a))
            assert c.read_reply_raw() == element, a
        assert c.command("BF.MEXISTS", "f", "a", "b", "c") == [1, 1, 0]


# ---------------------------------------------------------------------------------------------
# Atomicity, DISCARD, WATCH


def test_commands_of_a_transaction_see_each_other_in_order(bp):
    commands = [("BF.ADD", "f", "a"), ("BF.EXISTS", "f", "a"), ("DEL", "f"),
                ("BF.EXISTS", "f", "a"), ("BF.CARD", "f"), ("BF.ADD", "f", "b"), ("BF.CARD", "f"),
                ("TYPE", "f"), ("SET", "f", "x"), ("BF.ADD", "f", "c"), ("GET", "f"),
                ("DEL", "f"), ("BF.RESERVE", "f", "0.1", "1"), ("BF.MADD", "f", "a", "b", "c"),
                ("BF.INFO", "f", "FILTERS"), ("RENAME", "f", "g"), ("BF.CARD", "g"),
                ("BF.EXISTS", "f", "a"), ("BF.MEXISTS", "g", "a", "b", "c", "d")]
    with bp.raw() as c:
        c.send(cmd("MULTI") + b"".join(cmd(*a) for a in commands))
        assert [c.read_reply_raw() for _ in range(len(commands) + 1)] == \
            [b"+OK\r\n"] + [b"+QUEUED\r\n"] * len(commands)
        with bp.raw() as other:  # nothing ran yet
            assert other.command("EXISTS", "f", "g") == 0
        assert c.command("EXEC") == [1, 1, 1, 0, 0, 1, 1, b"MBbloom--", b"OK",
                                     Err(WRONGTYPE[1:-2]), b"x", 1, b"OK", [1, 1, 1], [2],
                                     b"OK", 3, 0, [1, 1, 1, 0]]


def test_plain_commands_and_filters_change_together(bp):
    """A reader running MULTI BF.CARD f; GET c; EXEC while a writer runs MULTI BF.ADD f <new>;
    INCR c; EXEC always sees a state between two of the writer's transactions."""
    after = {None: 0}  # c -> BF.CARD f once the writer's transaction setting c ran
    seen, problems = [], []
    done = threading.Event()

    def reader():
        with bp.raw(timeout=30) as r:
            while not done.is_set():
                got = r.command("MULTI") and [r.command("BF.CARD", "f"), r.command("GET", "c")]
                card, c = r.command("EXEC")
                assert got == [b"QUEUED", b"QUEUED"]
                seen.append((None if c is None else int(c), card))

    t = threading.Thread(target=reader)
    t.start()
    try:
        with bp.raw(timeout=30) as w:
            assert w.command("BF.RESERVE", "f", "0.0000001", "3", "EXPANSION", "2") == b"OK"
            card = 0
            for i in range(300):
                w.send(cmd("MULTI") + cmd("BF.ADD", "f", f"item-{i}") + cmd("INCR", "c")
                       + cmd("EXEC"))
                replies = [w.read_reply_raw() for _ in range(4)]
                added, c = parse_resp(replies[3])[0]
                card += added
                after[c] = card
                if i % 30 == 0:  # let the reader look at least once meanwhile
                    n = len(seen)
                    wait_until(lambda: len(seen) > n, 10, what="the reader's next look")
            assert w.command("BF.INFO", "f", "FILTERS")[0] >= 5
    finally:
        done.set()
        t.join()
    assert len(seen) >= 10
    for c, card in seen:
        if after.get(c) != card:
            problems.append((c, card, after.get(c)))
    assert not problems, f"states no transaction left (c, BF.CARD, expected): {problems[:5]}"


def test_discard_applies_nothing(bp, redis_instance):
    with bp.raw() as c:
        assert c.command("BF.MADD", "f", "a", "b") == [1, 1]
        keys = sorted(redis_instance.client().keys("*"))
        c.send(cmd("MULTI") + cmd("BF.ADD", "f", "q") + cmd("BF.RESERVE", "g", "0.1", "5")
               + cmd("BF.LOADCHUNK", "h", "1", "x" * 60) + cmd("SET", "s", "1")
               + cmd("DISCARD"))
        assert [c.read_reply_raw() for _ in range(6)] == \
            [b"+OK\r\n"] + [b"+QUEUED\r\n"] * 4 + [b"+OK\r\n"]
        assert c.command("BF.EXISTS", "f", "q") == 0
        assert c.command("BF.CARD", "f") == 2
        assert c.command("EXISTS", "g", "h", "s") == 0
    assert sorted(redis_instance.client().keys("*")) == keys


def test_watched_key_changed_exec_is_nil_and_no_bf_effect(bp, redis_instance):
    with bp.raw() as a, bp.raw() as b:
        assert a.command("BF.ADD", "f", "x") == 1
        keys = sorted(redis_instance.client().keys("*"))
        assert a.command("WATCH", "k") == b"OK"
        assert b.command("SET", "k", "1") == b"OK"
        a.send(cmd("MULTI") + cmd("BF.ADD", "f", "a") + cmd("BF.RESERVE", "g", "0.1", "5")
               + cmd("BF.MADD", "h", "a") + cmd("EXEC"))
        assert [a.read_reply_raw() for _ in range(5)] == \
            [b"+OK\r\n"] + [b"+QUEUED\r\n"] * 3 + [b"*-1\r\n"]
        assert a.command("BF.MEXISTS", "f", "a", "x") == [0, 1]
        assert a.command("EXISTS", "g", "h") == 0
        assert sorted(redis_instance.client().keys("*")) == sorted(keys + [b"k"])


@pytest.mark.parametrize("change,fires", [
    (("BF.ADD", "f", "new"), True),          # RedisBloom: the module key is written
    (("BF.MADD", "f", "new", "x"), True),
    (("BF.INSERT", "f", "ITEMS", "new"), True),
    (("BF.ADD", "f", "x"), True),            # opened for writing: signalled, even unchanged
    (("BF.MADD", "f", *[f"n{i}" for i in range(120)]), True),  # the filter scales
    (("BF.EXISTS", "f", "x"), False),
    (("BF.INFO", "f"), False),
    (("BF.SCANDUMP", "f", "0"), False),
    (("DEL", "f"), True),
    (("SET", "f", "v"), True),
    (("EXPIRE", "f", "100"), True),
], ids=lambda v: " ".join(v[:4]) if isinstance(v, tuple) else str(v))
def test_watch_on_a_filter_name(bp, change, fires):
    """WATCH f, then another client changes f: EXEC answers nil exactly when Redis with
    RedisBloom would (a key opened for writing by a module command is signalled as modified)."""
    with bp.raw() as a, bp.raw() as b:
        assert a.command("BF.ADD", "f", "x") == 1
        assert a.command("WATCH", "f") == b"OK"
        assert not isinstance(b.command(*change), Err)
        a.send(cmd("MULTI") + cmd("SET", "s", "1") + cmd("EXEC"))
        assert [a.read_reply_raw() for _ in range(2)] == [b"+OK\r\n", b"+QUEUED\r\n"]
        assert a.read_reply_raw() == (b"*-1\r\n" if fires else b"*1\r\n+OK\r\n"), change
        assert a.command("EXISTS", "s") == (0 if fires else 1)


# ---------------------------------------------------------------------------------------------
# Two proxies racing


def sturdy_items(prefix, count, links):
    """`count` items prefix0, prefix1, ... whose k bit positions are all different in each of
    `links` (ModelLink): an item whose positions repeat (RedisBloom's double hashing when b is a
    multiple of a large power of two) is found in a filter that never had it far more often than
    the error rate says, and would make "answered 1 exactly once" a matter of luck."""
    out, j = [], 0
    while len(out) < count:
        item = f"{prefix}{j}"
        j += 1
        h = item_hash(item.encode())
        if all(len(set(link.positions(h))) == link.k for link in links):
            out.append(item)
    return out



def test_two_proxies_racing_transactions_lose_nothing(redis_instance, proxy):
    """Threads on two proxies run MULTI; BF.ADD f <own item>; INCR counter; EXEC (and some
    BF.MADD of items every thread adds) while others add outside MULTI: every EXEC runs, each
    item is answered 1 exactly once, the filter counts exactly the items added, and scales as
    RedisBloom's would (no link over its capacity)."""
    proxies = [proxy(*FLAGS), proxy(*FLAGS)]
    links = [ModelLink(10 * 2 ** i, 1e-9 * 0.5 ** (i + 1)) for i in range(10)]
    shared = sturdy_items("shared-", 40, links)
    answers, problems, execs = [], [], [0]
    lock = threading.Lock()

    def in_multi(p, tid):
        rng = random.Random(tid)
        own = sturdy_items(f"t{tid}-", 120, links)
        with p.raw(timeout=30) as c:
            for i in range(120):
                items = ([own[i]] if rng.random() < 0.8
                         else rng.sample(shared, rng.randint(1, 5)))
                add = ("BF.ADD", "f", items[0]) if len(items) == 1 and items[0][0] == "t" \
                    else ("BF.MADD", "f", *items)
                c.send(cmd("MULTI") + cmd(*add) + cmd("INCR", "counter") + cmd("EXEC"))
                replies = [c.read_reply_raw() for _ in range(4)]
                got = parse_resp(replies[3])[0]
                with lock:
                    if replies[:3] != [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n"] or \
                            not isinstance(got, list) or len(got) != 2:
                        problems.append((add, replies))
                        continue
                    execs[0] += 1
                    added = got[0] if isinstance(got[0], list) else [got[0]]
                    answers.extend(zip(items, added))

    def outside(p, tid):
        with p.raw(timeout=30) as c:
            for item in sturdy_items(f"o{tid}-", 80, links):
                got = c.command("BF.ADD", "f", item)
                with lock:
                    answers.append((item, got))

    threads = [threading.Thread(target=in_multi, args=(p, 10 * n + t))
               for n, p in enumerate(proxies) for t in range(3)]
    threads += [threading.Thread(target=outside, args=(p, 100 + n)) for n, p in enumerate(proxies)]
    with proxies[0].raw() as c:
        assert c.command("BF.RESERVE", "f", "0.000000001", "10", "EXPANSION", "2") == b"OK"
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, problems[:3]
    direct = redis_instance.client()
    assert int(direct.get("counter")) == execs[0] == 6 * 120
    ones = {}
    for item, answer in answers:
        assert answer in (0, 1), (item, answer)
        ones[item] = ones.get(item, 0) + answer
    distinct = {item for item, _ in answers}
    assert {i: n for i, n in ones.items() if n != 1} == {}, "items not answered 1 exactly once"
    with proxies[1].raw() as c:
        assert c.command("BF.CARD", "f") == len(distinct)
        assert c.command("BF.MEXISTS", "f", *sorted(distinct)) == [1] * len(distinct)
        info = dict(zip(*[iter(c.command("BF.INFO", "f"))] * 2))
    assert info[b"Number of items inserted"] == len(distinct)
    assert info[b"Number of filters"] >= 5
    # Each link holds at most its capacity, and links scale as RedisBloom's: 10, 20, 40, ...
    meta = direct.hgetall("f")
    links = sorted((int(k[1:]), v.split()) for k, v in meta.items() if re.fullmatch(rb"l\d+", k))
    assert [n for n, _ in links] == list(range(len(links)))
    assert [int(v[2]) for _, v in links] == [10 * 2 ** n for n in range(len(links))]
    counts = [int(direct.get(f"{{f}}:bf:{meta[b'id'].decode()}:{n}:n")) for n, _ in links]
    assert sum(counts) == len(distinct)
    assert all(c <= int(v[2]) for c, (_, v) in zip(counts, links)), counts
    assert all(c == int(v[2]) for c, (_, v) in zip(counts[:-1], links)), counts


# ---------------------------------------------------------------------------------------------
# Redis Cluster


class ClusterDirect:
    """Connections to the masters of a cluster: direct(key) is the one serving key."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.nodes = {m.port: RawConn(m.port) for m in cluster.masters()}

    def __call__(self, key):
        return self.nodes[self.cluster.node_for_key(key).port]

    def close(self):
        for c in self.nodes.values():
            c.close()


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_cluster_differential(seed, redis_cluster, cluster_proxy):
    """The differential test on a cluster: the names are in different slots (on different
    nodes), and each MULTI block holds commands on names of one slot."""
    redis_cluster.flushall()
    p = cluster_proxy(*FLAGS)
    names = sum(names_of(f"multi{seed}"), [])
    assert len({key_hash_slot(n) for n in names}) == len(names)
    assert len({redis_cluster.node_for_key(n).port for n in names}) > 1
    direct = ClusterDirect(redis_cluster)
    try:
        side = (p, direct, list(direct.nodes.values()))
        differential(seed, side, side, f"plain{seed}", f"multi{seed}",
                     split=lambda a, b: key_hash_slot(a[1]) != key_hash_slot(b[1]))
    finally:
        direct.close()


def test_cluster_multi_on_names_of_one_slot(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy(*FLAGS)
    commands = [("BF.RESERVE", "{u}a", "0.01", "3"), ("BF.MADD", "{u}a", "x", "y", "z", "w"),
                ("BF.ADD", "{u}b", "x"), ("SET", "{u}s", "1"), ("BF.INFO", "{u}a", "FILTERS"),
                ("BF.CARD", "{u}b"), ("BF.EXISTS", "{u}a", "w"), ("INCR", "{u}s"),
                ("BF.SCANDUMP", "{u}a", "0"), ("BF.ADD", "{u}s", "x"), ("RENAME", "{u}a", "{u}c"),
                ("BF.MEXISTS", "{u}c", "x", "y", "q"), ("BF.LOADCHUNK", "{u}d", "1", "junk")]
    with p.raw() as c:
        c.send(cmd("MULTI") + b"".join(cmd(*a) for a in commands) + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(len(commands) + 1)] == \
            [b"+OK\r\n"] + [b"+QUEUED\r\n"] * len(commands)
        got = exec_elements(c.read_reply_raw())
        assert got[:8] == [b"+OK\r\n", b"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n", b":1\r\n", b"+OK\r\n",
                           b"*1\r\n:2\r\n", b":1\r\n", b":1\r\n", b":2\r\n"]
        assert got[9] == WRONGTYPE and got[11] == b"*3\r\n:1\r\n:1\r\n:0\r\n"
        assert redis_cluster.node_for_key("{u}").command("EXISTS", "{u}c", "{u}b") == 2
        # The same commands outside MULTI, on names of another slot, answer the same.
        plain = []
        for a in commands:
            c.send(cmd(*[x.replace("{u}", "{v}") for x in a]))
            plain.append(c.read_reply_raw())
        assert got == plain


def test_cluster_multi_on_names_of_two_nodes_is_what_a_node_answers(redis_cluster,
                                                                     cluster_proxy):
    """BF commands on names of two nodes in one transaction: what the same transaction of SETs
    gets (the node refuses it: CROSSSLOT), and nothing applied."""
    redis_cluster.flushall()
    p = cluster_proxy(*FLAGS)
    owners = redis_cluster.slot_owners()
    a = "pair:a"
    b = next(k for k in (f"pair:{i}" for i in range(1000))
             if owners[key_hash_slot(k)] != owners[key_hash_slot(a)])
    same = next(k for k in (f"pair:{i}" for i in range(1000))
                if owners[key_hash_slot(k)] == owners[key_hash_slot(a)]
                and key_hash_slot(k) != key_hash_slot(a))
    for other in (b, same):
        sets = cmd("MULTI") + cmd("SET", a, "1") + cmd("SET", other, "2") + cmd("EXEC")
        bfs = cmd("MULTI") + cmd("BF.ADD", a, "x") + cmd("BF.RESERVE", other, "0.1", "5") \
            + cmd("EXEC")
        with p.raw() as c:
            c.send(sets)
            want = [c.read_reply_raw() for _ in range(4)]
            c.send(bfs)
            assert [c.read_reply_raw() for _ in range(4)] == want, other
        assert redis_cluster.dbsize() == 0

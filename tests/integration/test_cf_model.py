"""The cuckoo-filter model (cf_model.py) against RedisBloom's recorded vectors, then bloomproxy
against the model: seeded random CF.* sequences whose every raw reply, and every few commands
the whole CF.SCANDUMP, must be the model's byte for byte (slot layout, kicks and their undo,
growth, deletion and compaction), alone and inside MULTI, with one data key per sub-filter and
with sub-filters split over data keys of at most 64 bytes.
"""

import base64
import json
import random
import re

import pytest

from bf_vectors import decode_arg, format_command, shorten
from bp_helpers import REPO, encode_command
from cf_model import HEADER, MAX_EXPANSIONS, CuckooFilter, lookup, model_reply

FIXTURES = REPO / "tests" / "fixtures" / "cf"


def load_cf_cases():
    """[(name, [command], [raw reply])] of cf-cases.json with cf-expected.json (RESP2)."""
    expected = {e["name"]: e["replies"] for e in json.loads(
        (FIXTURES / "cf-expected.json").read_text())}
    out = []
    for case in json.loads((FIXTURES / "cf-cases.json").read_text()):
        cmds = [[decode_arg(a) for a in cmd] for cmd in case["cmds"]]
        replies = [base64.b64decode(r) for r in expected[case["name"]]]
        assert len(cmds) == len(replies), case["name"]
        out.append((case["name"], cmds, replies))
    return out


def test_model_agrees_with_vectors():
    """Every recorded reply the model covers, case by case from fresh keys, until a command
    outside the model (the state after it is unknown to the model)."""
    compared, problems = 0, []
    for name, cmds, replies in load_cf_cases():
        filters = {}
        for i, (args, expected) in enumerate(zip(cmds, replies)):
            got = model_reply(filters, args)
            if got is None:
                break
            compared += 1
            if got != expected and len(problems) < 10:
                problems.append(f"{name} #{i}: {format_command(args)}\n"
                                f"    recorded: {shorten(expected)}\n    model:    {shorten(got)}")
    assert not problems, "the model differs from RedisBloom:\n" + "\n".join(problems)
    assert compared >= 3000, f"only {compared} recorded replies compared"


# ---------------------------------------------------------------------------------------------
# bloomproxy against the model

SHARD_BYTES = 64
MODES = {"default": (), "shards64": ("--bf-max-shard-bytes", str(SHARD_BYTES))}
# Sub-filter i's slots, bytes [s * shard, (s + 1) * shard) (filters/cuckoo/cf_layout.lua).
DATA_KEY_RE = re.compile(rb"\A.*:cf:(?P<id>[0-9a-f]+):(?P<sub>\d+)\.(?P<shard>\d+)\Z", re.S)
# Items: a small pool, so that duplicates, deletes of present items and full buckets are common.
POOL = [b"item:%d" % i for i in range(18)] + [b"", b"\x00\xff\r\n", b"with space"]
# Writes stop (deletes and reads go on) once a filter holds this many bytes of slots, so that
# expansions of 4 and 5 keep every SCANDUMP small.
BYTE_LIMIT = 4096


@pytest.fixture(params=sorted(MODES))
def cfp(request, proxy):
    """(mode, proxy): one data key per sub-filter, or data keys of at most 64 bytes."""
    return request.param, proxy(*MODES[request.param])


class Session:
    """One connection to the proxy and the model of every filter it touched. Commands go in
    pipelined batches; each reply must be the model's byte for byte. Failures name the seed,
    the mode and the last commands."""

    def __init__(self, conn, label):
        self.conn, self.label = conn, label
        self.model = {}
        self.history = []
        self.sent = 0

    def run(self, batch):
        """Sends `batch` (lists of arguments) at once, then checks each reply in order."""
        expected = []
        for args in batch:
            want = model_reply(self.model, args)
            assert want is not None, f"{self.label}: {format_command(args)} is outside the model"
            expected.append(want)
        self.conn.send(b"".join(encode_command(*args) for args in batch))
        for args, want in zip(batch, expected):
            got = self.conn.read_reply_raw()
            self.history.append(args)
            self.sent += 1
            assert got == want, self.failure(f"{format_command(args)}\n"
                                             f"  model: {shorten(want)}\n  proxy: {shorten(got)}")

    def run_multi(self, batch):
        """`batch` inside MULTI ... EXEC, all sent at once: EXEC's array holds the model's
        replies, in order."""
        want = [model_reply(self.model, args) for args in batch]
        assert None not in want, f"{self.label}: a command outside the model"
        expected = ([b"+OK\r\n"] + [b"+QUEUED\r\n"] * len(batch) +
                    [b"*%d\r\n" % len(batch) + b"".join(want)])
        self.conn.send(encode_command("MULTI") + b"".join(encode_command(*a) for a in batch) +
                       encode_command("EXEC"))
        got = [self.conn.read_reply_raw() for _ in expected]
        self.history += [[b"MULTI"], *batch, [b"EXEC"]]
        self.sent += len(expected)
        assert got == expected, self.failure(f"EXEC\n  model: {shorten(expected[-1])}\n"
                                             f"  proxy: {shorten(got[-1])}")

    def failure(self, what):
        recent = "\n".join("  " + format_command(a) for a in self.history[-15:])
        return f"{self.label}, command #{self.sent}: {what}\nlast commands:\n{recent}"

    def check_dump(self, name):
        """The whole SCANDUMP walk of `name` through the proxy is the model's."""
        f = self.model.get(name)
        if not isinstance(f, CuckooFilter):
            return
        its = [0] + [nxt for nxt, _ in f.dump()[:-1]]
        self.run([[b"CF.SCANDUMP", name, b"%d" % it] for it in its])


def upstream_subfilters(direct, name):
    """The sub-filters of `name` as bloomproxy keeps them upstream, each the concatenation of
    its data keys, and the size of the largest data key."""
    fid = direct.hget(name, "id")
    parts = {}
    for key in direct.keys("*"):
        m = DATA_KEY_RE.match(key)
        if m and m.group("id") == fid:
            parts.setdefault(int(m.group("sub")), {})[int(m.group("shard"))] = direct.get(key)
    assert sorted(parts) == list(range(len(parts))), f"{name!r}: sub-filters {sorted(parts)}"
    subs = []
    for i in range(len(parts)):
        assert sorted(parts[i]) == list(range(len(parts[i]))), f"{name!r}: sub-filter {i}"
        subs.append(b"".join(parts[i][s] for s in range(len(parts[i]))))
    largest = max(len(v) for p in parts.values() for v in p.values())
    return subs, largest


def check_upstream(direct, session, mode):
    """Every filter of the session is upstream exactly as the model's slots (whatever its
    counters: a filter of no items dumps nothing), in data keys of at most 64 bytes when the
    mode says so, with no key of a dropped sub-filter left."""
    for name, f in session.model.items():
        if not isinstance(f, CuckooFilter):
            continue
        subs, largest = upstream_subfilters(direct, name)
        assert subs == [bytes(s) for s in f.subs], session.failure(f"{name!r}: upstream slots")
        if mode == "shards64":
            assert largest <= SHARD_BYTES, f"{name!r}: a data key of {largest} bytes"


# ---------------------------------------------------------------------------------------------
# Random commands


def any_case(rng, word):
    """An option word as typed: RedisBloom ignores its case."""
    return word if rng.random() < 0.7 else word.lower()


def reserve_args(rng, name):
    """CF.RESERVE of a small filter: bucket sizes 1..4 mostly, small MAXITERATIONS so that kick
    chains fail and are undone, expansions 0 (no growth), 1, 2 and 4; options in any order."""
    values = {b"BUCKETSIZE": rng.choice([1, 1, 2, 2, 3, 4, 4, 5, 7, 16]),
              b"MAXITERATIONS": rng.choice([1, 2, 3, 4, 5, 20]),
              b"EXPANSION": rng.choice([0, 1, 1, 2, 2, 3, 4])}  # 3 is rounded up to 4
    chosen = rng.sample(sorted(values), rng.randint(1, 3))
    bs = values[b"BUCKETSIZE"] if b"BUCKETSIZE" in chosen else 2
    capacity = rng.randint(2 * bs, 4 * bs + 8)  # 2 to 16 buckets: they fill up soon
    words = [w for word in chosen for w in (any_case(rng, word), b"%d" % values[word])]
    return [b"CF.RESERVE", name, b"%d" % capacity, *words]


def insert_args(rng, name, nx):
    """CF.INSERT(NX) of 1..4 items, sometimes with CAPACITY or NOCREATE first."""
    options = []
    if rng.random() < 0.5:  # a filter INSERT creates is small too
        options += [any_case(rng, b"CAPACITY"), b"%d" % rng.randint(4, 40)]
    if rng.random() < 0.1:
        options.append(any_case(rng, b"NOCREATE"))
    items = [rng.choice(POOL) for _ in range(rng.randint(1, 4))]
    return [b"CF.INSERTNX" if nx else b"CF.INSERT", name, *options, any_case(rng, b"ITEMS"),
            *items]


def read_args(rng, name, f):
    kind = rng.choice(["exists", "mexists", "count", "count", "info", "debug", "scandump"])
    if kind == "exists":
        return [b"CF.EXISTS", name, rng.choice(POOL)]
    if kind == "mexists":
        return [b"CF.MEXISTS", name, *rng.sample(POOL, rng.randint(1, 5))]
    if kind == "count":
        return [b"CF.COUNT", name, rng.choice(POOL)]
    if kind == "scandump":  # any iterator: RedisBloom answers the sub-filter holding it, whole
        total = f.total_bytes() if isinstance(f, CuckooFilter) else 8
        return [b"CF.SCANDUMP", name, b"%d" % rng.randint(0, total + 2)]
    return [b"CF.INFO" if kind == "info" else b"CF.DEBUG", name]


def write_args(rng, name):
    kind = rng.choices(["add", "addnx", "insert", "insertnx"], [5, 2, 3, 2])[0]
    if kind in ("add", "addnx"):
        return [b"CF.ADD" if kind == "add" else b"CF.ADDNX", name, rng.choice(POOL)]
    return insert_args(rng, name, kind == "insertnx")


def next_command(rng, model, names, shrinking=False, churn=True):
    """A random command on one of `names`, given what the model holds: mostly writes, or (when
    shrinking) mostly deletes, so that filters grow, kick, then empty and compact. Writes stop
    at BYTE_LIMIT. With `churn`, a filter is sometimes deleted (DEL of the key) and comes back
    by RESERVE or auto-creation."""
    name = rng.choice(names)
    f = model.get(name)
    if f is None:
        return reserve_args(rng, name) if rng.random() < 0.85 else insert_args(rng, name, False)
    deletes = 0.65 if shrinking else 0.25
    roll = rng.random()
    if roll < 0.02 and churn:
        return [b"DEL", name]
    if roll < 0.03 and churn:
        return reserve_args(rng, name)  # "ERR item exists"
    if 0.03 <= roll < 0.06:
        return [b"CF.COMPACT", name]
    if roll < 0.20:
        return read_args(rng, name, f)
    if roll < 0.20 + deletes or f.total_bytes() >= BYTE_LIMIT:
        return [b"CF.DEL", name, rng.choice(POOL)]
    return write_args(rng, name)


def run_random(session, rng, names, commands, phase=60, dump_every=25, churn=True):
    """`commands` random commands in pipelined batches of 1..6, growing and shrinking the
    filters by turns of about `phase` commands; every `dump_every` commands or so, each
    filter's whole SCANDUMP."""
    done, since_dump = 0, 0
    while done < commands:
        shrinking = (done // phase) % 2 == 1
        # Chosen from the model as it was before the batch: the replies are still predicted in
        # order, command by command.
        batch = [next_command(rng, session.model, names, shrinking, churn)
                 for _ in range(rng.randint(1, 6))]
        session.run(batch)
        done += len(batch)
        since_dump += len(batch)
        if since_dump >= dump_every:
            since_dump = 0
            for name in names:
                session.check_dump(name)


# ---------------------------------------------------------------------------------------------
# The tests


def test_random_sequences(cfp, redis_instance):
    """Four filters per seed, created by RESERVE or by ADD/INSERT, under random writes,
    deletes, compactions and reads."""
    mode, bp = cfp
    direct = redis_instance.client()
    for seed in (11, 12, 13, 14):
        with bp.raw() as conn:
            session = Session(conn, f"seed {seed}, mode {mode}")
            names = [b"cfm:%d:%d" % (seed, k) for k in range(4)]
            run_random(session, random.Random(seed), names, 300)
            for name in names:
                session.check_dump(name)
            check_upstream(direct, session, mode)


def test_random_transactions(cfp, redis_instance):
    """The same random commands by MULTI ... EXEC blocks (CF.* inside a transaction runs as
    the same scripts, in order)."""
    mode, bp = cfp
    seed = 20
    rng = random.Random(seed)
    with bp.raw() as conn:
        session = Session(conn, f"seed {seed}, mode {mode}")
        names = [b"cft:%d" % k for k in range(3)]
        for turn in range(60):
            session.run_multi([next_command(rng, session.model, names, turn % 20 >= 10,
                                            churn=False) for _ in range(rng.randint(1, 6))])
        for name in names:
            session.check_dump(name)
        check_upstream(redis_instance.client(), session, mode)


def load_commands(rng, name, nb, bs, mi, ex, nf, items=None):
    """CF.LOADCHUNK commands of a filter of nf sub-filters (nb * ex^i buckets) whose slots hold
    random fingerprints, each sub-filter loaded in pieces at random cuts (a piece goes to
    offset it - len - 1). The larger sub-filters hold fewer, so that compactions can empty
    them. Its items: the number of fingerprints; or `items`, and then sub-filter 0 also holds
    the pool's items (as CF.ADD would place them), so that deletes find them."""
    subs = [bytearray(rng.randint(1, 255) if rng.random() < 0.4 * 0.25 ** i else 0
                      for _ in range(nb * ex ** i * bs)) for i in range(nf)]
    if items is None:
        items = sum(len(sub) - sub.count(0) for sub in subs)
    else:
        for item in POOL:
            fp, h1, _ = lookup(item)
            start = h1 % nb * bs
            slot = subs[0].find(0, start, start + bs)
            if slot >= 0:
                subs[0][slot] = fp
    cmds = [[b"CF.LOADCHUNK", name, b"1", HEADER.pack(items, nb, 0, nf, bs, mi, ex)]]
    offset = 0
    for sub in subs:
        at = 0
        while at < len(sub):
            piece = sub[at:at + rng.randint(1, len(sub))]
            at += len(piece)
            cmds.append([b"CF.LOADCHUNK", name, b"%d" % (offset + at + 1), piece])
        offset += len(sub)
    # Past the last sub-filter: RedisBloom wraps the offset into the last one.
    cmds.append([b"CF.LOADCHUNK", name, b"%d" % (offset + 3 + 1), bytes([7, 0, 9])])
    return cmds


@pytest.mark.parametrize("expansion", [3, 5])
def test_loaded_filters_of_non_power_of_two_expansion(cfp, redis_instance, expansion):
    """Filters loaded with an expansion of 3 or 5 (sub-filters of nb * 3^i buckets, so every
    `% n` is a true modulo and a failed kick chain's undo does not restore the slots, exactly
    as in RedisBloom), then random adds, deletes, compactions and growth. The last one's items
    counter starts at 1, below its fingerprints: deletes wrap it (INFO shows it signed)."""
    mode, bp = cfp
    direct = redis_instance.client()
    seed = 30 + expansion
    rng = random.Random(seed)
    with bp.raw() as conn:
        session = Session(conn, f"seed {seed}, expansion {expansion}, mode {mode}")
        names = [b"cfl:%d:%d" % (expansion, k) for k in range(3)]
        for name in names:
            for cmd in load_commands(rng, name, nb=rng.choice([1, 2, 4]), bs=rng.randint(1, 4),
                                     mi=rng.randint(1, 3), ex=expansion, nf=rng.randint(2, 4),
                                     items=1 if name == names[-1] else None):
                session.run([cmd])
            session.check_dump(name)
        wrapped = names[-1]
        session.run([[b"CF.DEL", wrapped, item] for item in POOL] +
                    [[b"CF.INFO", wrapped], [b"CF.DEBUG", wrapped],
                     [b"CF.SCANDUMP", wrapped, b"0"]])
        assert session.model[wrapped].items >= 1 << 63, "the items counter did not wrap"
        run_random(session, rng, names, 300, churn=False)
        for name in names:
            session.check_dump(name)
        check_upstream(direct, session, mode)


def test_max_expansions_and_back(cfp, redis_instance):
    """A filter driven past 32 sub-filters (one INSERT may add many): every write answers
    "Maximum expansions reached" while reads and deletes go on; deletes (their compaction) and
    CF.COMPACT bring it back under 32, and writes work again."""
    mode, bp = cfp
    direct = redis_instance.client()
    seed, name = 40, b"cfx"
    rng = random.Random(seed)
    pool = [b"mx:%d" % i for i in range(48)]
    with bp.raw() as conn:
        session = Session(conn, f"seed {seed}, mode {mode}")
        session.run([[b"CF.RESERVE", name, b"4", b"BUCKETSIZE", b"1", b"MAXITERATIONS", b"2"]])
        f = session.model[name]
        added = []
        while len(f.subs) < MAX_EXPANSIONS:
            items = [rng.choice(pool) for _ in range(rng.randint(4, 24))]
            session.run([[b"CF.INSERT", name, b"ITEMS", *items]])
            added += items
        session.check_dump(name)
        refused = [[b"CF.ADD", name, b"x"], [b"CF.ADDNX", name, pool[0]],
                   [b"CF.INSERT", name, b"ITEMS", b"x"],
                   [b"CF.INSERTNX", name, b"NOCREATE", b"ITEMS", b"x"]]
        session.run(refused + [[b"CF.COUNT", name, added[0]], [b"CF.INFO", name]])
        rng.shuffle(added)
        while len(f.subs) >= MAX_EXPANSIONS:
            assert added, session.failure("every item deleted and still 32 sub-filters")
            session.run([[b"CF.DEL", name, added.pop()] for _ in range(min(4, len(added)))])
            if rng.random() < 0.1:
                session.run([[b"CF.COMPACT", name]])
            if rng.random() < 0.2:
                session.check_dump(name)
        session.run([[b"CF.ADD", name, b"x"], [b"CF.INFO", name]])
        session.check_dump(name)
        check_upstream(direct, session, mode)

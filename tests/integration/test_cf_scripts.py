"""The cuckoo filter's Lua on its own (filters/cuckoo/*.lua), against a real Redis: the exact 64-bit
arithmetic in Lua's doubles (an item's fingerprint and buckets, h % n for every kind of n: powers
of two below and above 2^32, and the non-powers of two a LOADCHUNK header with expansion 3 makes,
up to 2^47), and kick chains worked out by hand, a successful one and one undone.
"""

import random
import struct

from bf_vectors import murmur64a
from bp_helpers import encode_command as cmd
from lua_scripts import load_script

M64 = 0xFFFFFFFFFFFFFFFF
M = 0x5bd1e995
TWO32 = 1 << 32


def buckets_script(body):
    """cf_layout.lua and cf_buckets.lua, then `body` (Lua), as one script."""
    return (load_script("cuckoo/cf_layout.lua") + load_script("cuckoo/cf_buckets.lua") + body)


def moduli():
    """Bucket counts of every kind the scripts meet."""
    ns = [1, 2, 4, 512, 1 << 20, 1 << 31, 1 << 32, 1 << 33, 1 << 40, 1 << 46]
    ns += [3, 12, 36, 1000, 4 * 3 ** 10, (1 << 21) + 1, (1 << 21) - 1, 3 << 30, (1 << 32) + 1,
           (1 << 37) - 1, (1 << 37) + 7, 5 ** 20, (1 << 47) - 1]
    return ns


def test_mod64_and_alt_bucket_are_exact(redis_instance):
    rng = random.Random(20261128)
    script = buckets_script("""
local out = {}
for a = 1, #ARGV, 4 do
  local hi, lo, n, fp = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),
                        tonumber(ARGV[a + 3])
  local b = mod64(hi, lo, n)
  out[#out + 1] = num(b)
  out[#out + 1] = num(alt_bucket(b, fp, n))
end
return out
""")
    cases = []
    for n in moduli():
        for h in (0, M64, (1 << 63) + 5, rng.getrandbits(64), rng.getrandbits(64), n - 1, n):
            cases.append((h & M64, n, rng.randrange(1, 256)))
    args = []
    for h, n, fp in cases:
        args += [str(h >> 32), str(h & 0xFFFFFFFF), str(n), str(fp)]
    got = redis_instance.client().eval(script, 0, *args)
    for i, (h, n, fp) in enumerate(cases):
        b = h % n
        assert int(got[2 * i]) == b, (h, n)
        assert int(got[2 * i + 1]) == (b ^ (fp * M)) % n, (h, n, fp)


def test_item_hashes_are_redisbloom_s(redis_instance):
    rng = random.Random(7)
    items = [b"", b"hello", b"a", bytes(range(256))] + [rng.randbytes(rng.randrange(40))
                                                        for _ in range(200)]
    script = buckets_script("""
local out = {}
for a = 1, #ARGV, 2 do
  local fp, h1hi, h1lo, h2hi, h2lo = item_hashes(tonumber(ARGV[a]), tonumber(ARGV[a + 1]))
  out[#out + 1] = {fp, num(h2hi), num(h2lo)}
end
return out
""")
    args = []
    for item in items:
        h = murmur64a(item, 0)
        args += [str(h >> 32), str(h & 0xFFFFFFFF)]
    got = redis_instance.client().eval(script, 0, *args)
    for item, (fp, h2hi, h2lo) in zip(items, got):
        h = murmur64a(item, 0)
        want_fp = h % 255 + 1
        h2 = h ^ (want_fp * M)
        assert (fp, int(h2hi), int(h2lo)) == (want_fp, h2 >> 32, h2 & 0xFFFFFFFF), item


# ---------------------------------------------------------------------------------------------
# Kick chains by hand, through the proxy: a filter of 8 one-slot buckets, no expansion.


def header(items, buckets, filters, bs, mi, exp):
    return struct.pack("<QQQQHHH", items, buckets, 0, filters, bs, mi, exp)


def place(item, n):
    h = murmur64a(item, 0)
    fp = h % 255 + 1
    return fp, h % n, ((h ^ (fp * M)) & M64) % n


def alt(b, fp, n):
    return (b ^ (fp * M)) % n


def load(conn, key, slots, mi):
    """A filter of len(slots) one-slot buckets holding `slots`, MAXITERATIONS mi, EXPANSION 0."""
    assert conn.command("CF.LOADCHUNK", key, "1",
                        header(sum(1 for s in slots if s), len(slots), 1, 1, mi, 0)) == b"OK"
    assert conn.command("CF.LOADCHUNK", key, str(1 + len(slots)), bytes(slots)) == b"OK"


def dump(conn, key):
    return bytes(conn.command("CF.SCANDUMP", key, "1")[1])


def kicked(slots, fp, b, mi):
    """RedisBloom's Filter_KOInsert on one-slot buckets: the slots after it, or None when it fails
    (and then the slots must be as before)."""
    slots, n = list(slots), len(slots)
    for _ in range(mi):
        slots[b], fp = fp, slots[b]
        b = alt(b, fp, n)
        if slots[b] == 0:
            slots[b] = fp
            return slots
    return None


def test_kick_chain_succeeds_and_fails_as_redisbloom(proxy):
    p = proxy()
    n = 8
    rng = random.Random(3)
    with p.raw() as c:
        seen = {"ok": 0, "undone": 0}
        for trial in range(60):
            # A full filter but for one bucket, and an item whose two buckets are full.
            empty = rng.randrange(n)
            slots = [0 if b == empty else rng.randrange(1, 256) for b in range(n)]
            while True:
                item = b"x%d" % rng.randrange(10 ** 9)
                fp, b1, b2 = place(item, n)
                if empty not in (b1, b2):
                    break
            mi = rng.randrange(1, 6)
            key = "kick%d" % trial
            load(c, key, slots, mi)
            want = kicked(slots, fp, b1, mi)
            c.send(cmd("CF.ADD", key, item))
            reply = c.read_reply_raw()
            if want is None:
                assert reply == b"-Filter is full\r\n", (trial, reply)
                assert dump(c, key) == bytes(slots), trial  # the swaps undone
                seen["undone"] += 1
            else:
                assert reply == b":1\r\n", (trial, reply)
                assert dump(c, key) == bytes(want), trial
                seen["ok"] += 1
    assert seen["ok"] > 5 and seen["undone"] > 5, seen


def test_growth_lands_in_the_new_subfilter_at_bucket_1(proxy):
    """With no room and failed kicks, a filter of expansion 3 (a LOADCHUNK header may say 3: the
    new sub-filter has 3n buckets, not a power of two) grows and the item lands in the new
    sub-filter's bucket h % 3n, first slot."""
    p = proxy()
    n = 4
    with p.raw() as c:
        slots = [7, 9, 11, 13]
        item = next(b"g%d" % i for i in range(10 ** 6)
                    if kicked(slots, *place(b"g%d" % i, n)[:2], 1) is None)
        assert c.command("CF.LOADCHUNK", "grow", "1", header(4, n, 1, 1, 1, 3)) == b"OK"
        assert c.command("CF.LOADCHUNK", "grow", "5", bytes(slots)) == b"OK"
        assert c.command("CF.ADD", "grow", item) == 1
        fp, b1, _ = place(item, 3 * n)
        new = [0] * (3 * n)
        new[b1] = fp
        chunks = [(1, bytes(slots)), (5, bytes(new))]
        for it, data in chunks:
            assert bytes(c.command("CF.SCANDUMP", "grow", str(it))[1]) == data
        assert c.command("CF.EXISTS", "grow", item) == 1
        assert c.command("CF.COUNT", "grow", item) == 1

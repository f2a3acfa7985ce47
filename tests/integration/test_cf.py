"""CF.* beyond the recorded vectors (test_cf_vectors.py): several proxies writing one filter at once
(every insert, delete and kick chain atomic upstream), SCANDUMP/LOADCHUNK round trips between
proxies and over chunks of 16 MiB, a new sub-filter's expiry, the scripts reloaded after SCRIPT
FLUSH, a filter damaged behind the proxy's back, sketch-max-bytes, and cf-mode forward.
"""

import struct

import pytest

from bf_vectors import murmur64a
from bp_helpers import encode_command as cmd
from test_bf_concurrency import run_threads

M64 = 0xFFFFFFFFFFFFFFFF


def cf_hash(item):
    """(fingerprint, bucket 1, bucket 2) of `item` in a sub-filter of `n` buckets (a function)."""
    h = murmur64a(item, 0)
    fp = h % 255 + 1
    h2 = (h ^ (fp * 0x5bd1e995)) & M64
    return fp, lambda n: (h % n, h2 % n)


def lonely_items(count, buckets, prefix, largest=1 << 16):
    """`count` items of which no two share a fingerprint in a shared bucket of any sub-filter of
    `buckets`, 2 * `buckets`, ... `largest` buckets (a filter growing with expansion 2): their
    COUNTs are exact whatever the others hold. (Kicks and compaction move a fingerprint only
    between its item's own two buckets.) An item whose two buckets are one in some sub-filter
    is left out too: RedisBloom's COUNT counts a copy there twice."""
    taken = set()
    out = []
    i = 0
    sizes = []
    while buckets <= largest:
        sizes.append(buckets)
        buckets *= 2
    while len(out) < count:
        item = b"%s:%d" % (prefix, i)
        i += 1
        fp, where = cf_hash(item)
        if any(len(set(where(n))) == 1 for n in sizes):
            continue
        places = {(n, fp, b) for n in sizes for b in where(n)}
        if places & taken:
            continue
        taken |= places
        out.append(item)
    return out


def dump_all(conn, key):
    """Every CF.SCANDUMP reply of `key`, from 0 to the end: [(iterator, data)] as it answered
    them, which is what CF.LOADCHUNK takes."""
    out, it = [], 0
    while True:
        reply = conn.command("CF.SCANDUMP", key, str(it))
        assert isinstance(reply, list) and len(reply) == 2, reply
        if reply[0] == 0:
            assert reply[1] is None, reply
            return out
        out.append((reply[0], bytes(reply[1])))
        it = reply[0]


def info(conn, key):
    reply = conn.command("CF.INFO", key)
    return {bytes(reply[i]).decode(): reply[i + 1] for i in range(0, len(reply), 2)}


# ---------------------------------------------------------------------------------------------
# Many proxies, one filter


def test_four_proxies_add_and_delete_at_once(proxy, redis_instance):
    """Four proxies, one thread each, add their own items and the same shared items into one
    filter that grows while they write (a small first sub-filter), then delete half of their own
    and some shared copies at once. Nothing is lost or deleted twice: every COUNT is exact
    (the items never share a fingerprint in a bucket), INFO's counters add up, and every item
    still added is found."""
    proxies = [proxy() for _ in range(4)]
    with proxies[0].raw() as c:
        assert c.command("CF.RESERVE", "many", "64", "BUCKETSIZE", "4", "EXPANSION", "2") == b"OK"
    items = lonely_items(4 * 300 + 40, 16, b"m")  # 64 / BUCKETSIZE 4
    own = [items[t * 300:(t + 1) * 300] for t in range(4)]
    shared = items[1200:]

    def add(t):
        with proxies[t].raw(timeout=60) as c:
            c.send(b"".join(cmd("CF.ADD", "many", it) for it in own[t] + shared))
            got = [c.read_reply() for _ in own[t] + shared]
            assert got == [1] * len(got), got[:10]

    run_threads(add, 4)
    with proxies[1].raw() as c:
        before = info(c, "many")
    assert before["Number of items inserted"] == 1200 + 4 * 40
    assert before["Number of filters"] > 1

    def delete(t):
        with proxies[t].raw(timeout=60) as c:
            gone = own[t][::2] + shared[t::4]
            c.send(b"".join(cmd("CF.DEL", "many", it) for it in gone))
            assert [c.read_reply() for _ in gone] == [1] * len(gone)

    run_threads(delete, 4)
    with proxies[2].raw(timeout=60) as c:
        present = [it for t in range(4) for it in own[t][1::2]] + shared
        assert c.command("CF.MEXISTS", "many", *present) == [1] * len(present)
        for t in range(4):
            for j, it in enumerate(own[t]):
                assert c.command("CF.COUNT", "many", it) == (0 if j % 2 == 0 else 1), it
        for j, it in enumerate(shared):
            assert c.command("CF.COUNT", "many", it) == 3, it
        after = info(c, "many")
    # Deletes that trigger a compaction reset the deletes counter, as RedisBloom's do.
    assert after["Number of items inserted"] == 1200 + 4 * 40 - 600 - 40


def test_concurrent_deletes_remove_each_copy_once(proxy):
    """One copy of each item, four proxies deleting every item at once: each copy goes exactly
    once (one CF.DEL answers 1, the others 0)."""
    proxies = [proxy() for _ in range(4)]
    items = lonely_items(400, 512, b"d")
    with proxies[0].raw(timeout=30) as c:
        c.send(b"".join(cmd("CF.ADD", "dels", it) for it in items))
        assert [c.read_reply() for _ in items] == [1] * len(items)
    results = [None] * 4

    def delete(t):
        with proxies[t].raw(timeout=60) as c:
            c.send(b"".join(cmd("CF.DEL", "dels", it) for it in items))
            results[t] = [c.read_reply() for _ in items]

    run_threads(delete, 4)
    for i in range(len(items)):
        assert sum(r[i] for r in results) == 1, items[i]
    with proxies[0].raw() as c:
        assert info(c, "dels")["Number of items inserted"] == 0
        assert c.command("CF.MEXISTS", "dels", *items[:50]) == [0] * 50


def test_concurrent_kicks_lose_nothing(proxy):
    """Four proxies fill a filter of one-slot buckets (every insert past the first few needs a
    kick chain) until it has grown several times: every item any of them added is still found
    afterwards, through any proxy."""
    proxies = [proxy() for _ in range(4)]
    with proxies[0].raw() as c:
        assert c.command("CF.RESERVE", "kicks", "16", "BUCKETSIZE", "1", "MAXITERATIONS", "50",
                         "EXPANSION", "2") == b"OK"
    added = [[] for _ in range(4)]

    def add(t):
        with proxies[t].raw(timeout=60) as c:
            mine = [b"k%d:%d" % (t, i) for i in range(150)]
            c.send(b"".join(cmd("CF.ADD", "kicks", it) for it in mine))
            for it in mine:
                assert c.read_reply() == 1
                added[t].append(it)

    run_threads(add, 4)
    everything = [it for a in added for it in a]
    for p in proxies:
        with p.raw(timeout=30) as c:
            assert c.command("CF.MEXISTS", "kicks", *everything) == [1] * len(everything)
            assert info(c, "kicks")["Number of items inserted"] == 600


# ---------------------------------------------------------------------------------------------
# SCANDUMP and LOADCHUNK


def test_dump_and_load_between_proxies(proxy):
    """A filter with several sub-filters, deletes and kicks, dumped through one proxy and loaded
    through another with 64-byte data keys, is the same filter: same dump, same INFO, same
    answers, and both go on to answer alike."""
    a, b = proxy(), proxy("--bf-max-shard-bytes", "64")
    items = [b"i%d" % i for i in range(700)]
    with a.raw(timeout=30) as c:
        assert c.command("CF.RESERVE", "src", "200", "BUCKETSIZE", "3", "EXPANSION", "2") == b"OK"
        assert c.command("CF.INSERT", "src", "ITEMS", *items) == [1] * len(items)
        for it in items[:40]:
            assert c.command("CF.DEL", "src", it) == 1
        chunks = dump_all(c, "src")
        src_info = info(c, "src")
    assert len(chunks) == 1 + src_info["Number of filters"]
    with b.raw(timeout=30) as c:
        for it, data in chunks:
            assert c.command("CF.LOADCHUNK", "dst", str(it), data) == b"OK"
        assert dump_all(c, "dst") == chunks
        assert info(c, "dst") == src_info
        assert c.command("CF.MEXISTS", "dst", *items) == [0] * 40 + [1] * 660 or \
            c.command("CF.MEXISTS", "dst", *items[40:]) == [1] * 660
    for p in (a, b):
        with p.raw(timeout=30) as c:
            name = "src" if p is a else "dst"
            assert c.command("CF.ADD", name, "after") == 1
            assert c.command("CF.DEL", name, items[100]) == 1
    with a.raw(timeout=30) as c:
        left = dump_all(c, "src")
    with b.raw(timeout=30) as c:
        assert dump_all(c, "dst") == left


def test_sixteen_mib_chunks(proxy, redis_instance):
    """A sub-filter above 16 MiB is dumped in chunks of 16 MiB (iterators 1, 16777217, then the
    end), and loads back from them."""
    p = proxy()
    with p.raw(timeout=60) as c:
        assert c.command("CF.RESERVE", "big", str(1 << 25), "BUCKETSIZE", "1") == b"OK"
        assert c.command("CF.ADD", "big", "x") == 1
        chunks = dump_all(c, "big")
        assert [(it, len(d)) for it, d in chunks] == \
            [(1, 38), (16777217, 1 << 24), (33554433, 1 << 24)]
        for it, data in chunks:
            assert c.command("CF.LOADCHUNK", "big2", str(it), data) == b"OK"
        assert dump_all(c, "big2") == chunks
        assert c.command("CF.EXISTS", "big2", "x") == 1
        assert c.command("DEL", "big", "big2") == 2
    assert redis_instance.client().dbsize() == 0


# ---------------------------------------------------------------------------------------------
# Expiry, scripts, damage, limits, forwarding


def test_new_subfilter_takes_the_names_expiry(proxy, redis_instance):
    p = proxy()
    direct = redis_instance.client()
    with p.raw() as c:
        assert c.command("CF.RESERVE", "ttl", "4", "BUCKETSIZE", "1") == b"OK"
        assert c.command("PEXPIRE", "ttl", "100000000") == 1
        assert c.command("CF.INSERT", "ttl", "ITEMS", *[b"t%d" % i for i in range(40)])
        assert info(c, "ttl")["Number of filters"] > 1
    at = direct.pexpiretime("ttl")
    data = [k for k in direct.keys("*") if b":cf:" in k]
    assert len(data) > 2
    assert {direct.pexpiretime(k) for k in data} == {at}


def test_scripts_come_back_after_script_flush(proxy, redis_instance):
    """CF commands go as EVALSHA; after SCRIPT FLUSH the server has none of them and the proxy
    sends the script's text instead (NOSCRIPT never reaches the client)."""
    p = proxy()
    with p.raw() as c:
        assert c.command("CF.ADD", "sf", "a") == 1
        redis_instance.client().script_flush()
        assert c.command("CF.ADD", "sf", "b") == 1
        assert c.command("CF.EXISTS", "sf", "a") == 1
        assert c.command("CF.COUNT", "sf", "b") == 1
        assert c.command("CF.DEL", "sf", "a") == 1


def test_damaged_filter_is_refused_unchanged(proxy, redis_instance):
    """A data key deleted behind the proxy's back: writes and reads answer an error naming it,
    and nothing is written."""
    p = proxy()
    direct = redis_instance.client()
    with p.raw() as c:
        assert c.command("CF.ADD", "dmg", "a") == 1
        [data] = [k for k in direct.keys("*") if b":cf:" in k and b":cf:m:" not in k]
        direct.delete(data)
        fields = direct.hgetall("dmg")
        for args in (("CF.ADD", "dmg", "b"), ("CF.EXISTS", "dmg", "a"), ("CF.DEL", "dmg", "a"),
                     ("CF.COMPACT", "dmg"), ("CF.SCANDUMP", "dmg", "1")):
            c.send(cmd(*args))
            reply = c.read_reply_raw()
            assert reply.startswith(b"-ERR bloomproxy: unexpected reply from upstream") and \
                data in reply and b"damaged" in reply, (args, reply)
        assert direct.hgetall("dmg") == fields
        assert not direct.exists(data)


def header(items, buckets, deletes, filters, bs, mi, exp):
    return struct.pack("<QQQQHHH", items, buckets, deletes, filters, bs, mi, exp)


def test_sketch_max_bytes(proxy):
    """sketch-max-bytes stands for the memory RedisBloom could not allocate: a filter that would
    pass it is not made (RESERVE is never that big: its capacity is checked first), a LOADCHUNK
    header answers "Couldn't create filter!", a growth answers CF.ADD's "ERR Insufficient
    memory" and -1 in CF.INSERT; what fits still works."""
    p = proxy("--sketch-max-bytes", "1000")
    with p.raw() as c:
        assert c.command("CF.RESERVE", "lim", "256", "BUCKETSIZE", "2", "EXPANSION", "2") == b"OK"
        assert c.command("CF.INSERT", "lim", "ITEMS", *[b"a%d" % i for i in range(256)])
        # Sub-filters of 256 and 512 bytes fit; the next (1024) would not.
        c.send(cmd("CF.INSERT", "lim", "ITEMS", *[b"b%d" % i for i in range(2000)]))
        got = c.read_reply()
        assert -1 in got and 1 in got, got[:5]
        assert info(c, "lim")["Number of filters"] == 2
        c.send(cmd("CF.ADD", "lim", "one more"))
        assert c.read_reply_raw() in (b"-ERR Insufficient memory\r\n", b":1\r\n")
        c.send(cmd("CF.LOADCHUNK", "hdr", "1", header(1, 512, 0, 1, 2, 20, 1)))
        assert c.read_reply_raw() == b"-Couldn't create filter!\r\n"
        assert c.command("EXISTS", "hdr") == 0
        assert c.command("CF.LOADCHUNK", "hdr", "1", header(1, 256, 0, 1, 2, 20, 1)) == b"OK"


def test_insufficient_memory_for_add(proxy):
    p = proxy("--sketch-max-bytes", "100")
    with p.raw() as c:
        assert c.command("CF.RESERVE", "tiny", "64", "BUCKETSIZE", "1", "EXPANSION", "1") == b"OK"
        replies = []
        for i in range(200):
            c.send(cmd("CF.ADD", "tiny", b"x%d" % i))
            replies.append(c.read_reply_raw())
        assert replies[0] == b":1\r\n"
        assert b"-ERR Insufficient memory\r\n" in replies
        assert info(c, "tiny")["Number of filters"] == 1


@pytest.mark.parametrize("mode", ("--cf-mode",))
def test_cf_mode_forward(mode, proxy):
    """cf-mode forward: CF.* go to the upstream as they are (a plain Redis does not know them),
    while BF.* and CMS.* are still answered by the proxy."""
    p = proxy(mode, "forward")
    with p.raw() as c:
        c.send(cmd("CF.ADD", "fw", "a"))
        assert c.read_reply_raw().startswith(b"-ERR unknown command 'CF.ADD'")
        assert c.command("BF.ADD", "fwb", "a") == 1
        c.send(cmd("COMMAND", "INFO", "CF.ADD", "BF.ADD"))
        reply = c.read_reply()
        assert reply[0] is None and reply[1][0] == b"bf.add"


def test_watch_of_a_filter_fires_on_its_writes(proxy):
    """Every CF command that writes writes the name (its counters), as RedisBloom's commands open
    the key for writing: a WATCH of the name fires on CF.ADD, CF.DEL (found or not) and
    CF.LOADCHUNK of another client, and not on their reads."""
    p = proxy()
    with p.raw() as c, p.raw() as other:
        assert c.command("CF.ADD", "w", "a") == 1
        chunk = dump_all(c, "w")
        for write in (("CF.ADD", "w", "b"), ("CF.DEL", "w", "nothing"), ("CF.COMPACT", "w"),
                      ("CF.LOADCHUNK", "w", str(chunk[1][0]), chunk[1][1])):
            assert c.command("WATCH", "w") == b"OK"
            other.send(cmd(*write))
            other.read_reply()
            assert c.command("MULTI") == b"OK"
            assert c.command("CF.EXISTS", "w", "a") == b"QUEUED"
            assert c.command("EXEC") is None, write
        assert c.command("WATCH", "w") == b"OK"
        for read in (("CF.EXISTS", "w", "a"), ("CF.MEXISTS", "w", "a", "b"), ("CF.COUNT", "w", "a"),
                     ("CF.INFO", "w"), ("CF.SCANDUMP", "w", "0")):
            other.send(cmd(*read))
            other.read_reply()
        assert c.command("MULTI") == b"OK"
        assert c.command("CF.COUNT", "w", "a") == b"QUEUED"
        assert c.command("EXEC") == [1]

"""bf-layout rules (Guava layouts): keys whose bits a Java application keeps in a plain Redis
string with Guava 31.1's BloomFilter (or the copied Jedis/Codis "RedisBloomFilter" and
"BloomFilterHelper" classes on Guava's Hashing.murmur3_128()), served by
bloomproxy's BF.* commands. The oracle is the real Guava (guava_oracle.py runs
java/GuavaOracle.java in one JVM), compared bit for bit with what the real bloomproxy reads and
writes on a real redis-server:

- the oracle itself against the spec's maths (an independent Python MurmurHash3), so that each
  layout really is the strategy it claims (guava-mitz32 serialized with strategy ordinal 0;
  guava-mitz32-unrounded is BloomFilterHelper: MITZ_32's loop modulo the unrounded int m);
- Java -> proxy: the oracle's bits written with SETBIT (as the Java application does); BF.EXISTS
  / BF.MEXISTS equal mightContain on members and on many non-members (false positives included),
  BF.CARD approximateElementCount; every layout x funnel;
- proxy -> Java: BF.ADD / BF.MADD / BF.INSERT replies equal put()'s, and the Redis string's bits
  equal Guava's after the same puts (accents, CJK, emoji, the empty item, malformed UTF-8 decoded
  as Java decodes it, int64 extremes and what Long.parseLong accepts or refuses);
- errors and edges: missing keys, BF.INFO, BF.RESERVE, SCANDUMP/LOADCHUNK, WRONGTYPE, TTL kept,
  DEL, keys outside every rule, rule order, glob patterns, config errors, the rule given by flag,
  config file and BLOOMPROXY_BF_LAYOUT;
- two proxies and a Java application adding to one key at once (the union of Guava's bits);
- expanding filters (NAME-0..NAME-c and the cursor) against a model built on Guava's indexes;
- RESP3 replies; a Redis Cluster and twemproxy upstream.
"""

import random
import subprocess
import threading

import pytest

from bf_vectors import WRONGTYPE, info_reply, key_hash_slot, run_commands
from bp_helpers import BLOOMPROXY_BIN, HOST, RawConn, free_port, proxy_env
# The session fixtures `guava` (the oracle JVM) and `guava_classes` come from guava_oracle.py.
from guava_oracle import guava, guava_classes  # noqa: F401
from guava_oracle import (OracleError, bits_of_string, geometry, spec_indexes,
                          string_of_bits)

LAYOUTS = ("guava", "guava-unrounded", "guava-mitz32", "guava-mitz32-unrounded")
UNROUNDED = ("guava-unrounded", "guava-mitz32-unrounded")  # no Guava serialization
FUNNELS = ("utf8", "utf16le", "int64le")
NOT_INTEGER = b"ERR value is not an integer or out of range"
CROSSSLOT = b"CROSSSLOT Keys in request don't hash to the same slot"

# Items that exercise the funnels: accents, scripts, emoji (surrogate pairs in UTF-16), ZWJ
# sequences, flags, NUL, control characters, the empty item, long items, U+FFFF, U+10FFFF.
TEXT_SPECIAL = ["", " ", "a", "A", "café", "Ærøskøbing", "naïve résumé", "Ελληνικά", "русский",
                "漢字テスト", "中文字符", "한국어", "😀", "👩‍💻", "𝄞", "🇯🇵🇫🇷", "a\x00b",
                "tab\tnew\nline", "\r\n", "x" * 300, "é" * 50 + "😀" * 20, "\ufeffbom",
                "\uffff", "\U0010ffff", "a😀b😀c"]
# Not UTF-8: Java's new String(bytes, UTF_8) replaces the malformed sequences (U+FFFD).
MALFORMED_UTF8 = [b"\xff", b"\xfe\xff", b"a\xc3", b"\xc3(", b"\xed\xa0\x80",
                  b"\xed\xa0\xbd\xed\xb8\x80", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe0\x80\xaf",
                  b"\xf8\x88\x80\x80\x80", b"\x80", b"ok\x80ok", b"\xf4\x90\x80\x80",
                  b"\xe2\x82", b"\xe2\x82x\xe2\x82\xac", b"\xf0\x9f\x98\x80\xff"]
INT_SPECIAL = ["0", "1", "-1", "42", "9223372036854775807", "-9223372036854775808",
               "-9223372036854775807", "9223372036854775806", "1000000007", "-123456789012345",
               "4294967296", "-2147483648", "2147483648"]
# Long.parseLong candidates: the oracle says which it accepts (and as what).
INT_SYNTAX = ["+42", "-0", "007", "-007", "٣", "１２", "+", "-", "", " 1", "1 ", "1_000",
              "0x1F", "1e3", "1.0", "9223372036854775808", "-9223372036854775809",
              "99999999999999999999", "--1", "+-1", "abc", "12a"]
DECOR = ["", "é", "漢字", "😀", "Ω", "ß", "🇫🇷", "\u00a0", "𝄞"]


def text_items(prefix, n):
    return [f"{prefix}{i}{DECOR[i % len(DECOR)]}" for i in range(n)]


def int_items(seed, n, exclude=()):
    rng = random.Random(seed)
    out, seen = [], set(int(x) for x in exclude)
    while len(out) < n:
        v = rng.choice((rng.randint(-1000, 1000), rng.randint(-2 ** 63, 2 ** 63 - 1),
                        rng.randint(0, 10 ** 9)))
        if v not in seen:
            seen.add(v)
            out.append(str(v))
    return out


def items_for(funnel, tag, n, exclude=()):
    """n distinct items for `funnel` (none of `exclude`)."""
    if funnel == "int64le":
        return int_items(tag, n, exclude)
    return [x for x in text_items(f"{tag}:", n + len(exclude)) if x not in set(exclude)][:n]


def rule(pattern, layout, capacity, error, funnel=None, expanding=None):
    text = f"{pattern} {layout} {capacity} {error}"
    if funnel:
        text += f" funnel {funnel}"
    if expanding:
        text += f" expanding {expanding}"
    return text


def flags(*rules):
    out = []
    for r in rules:
        out += ["--bf-layout", r]
    return out


def nbytes(m):
    return -(-m // 8)


def first_mismatches(items, got, expected, limit=5):
    bad = [(items[i], g, e) for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    return f"{len(bad)} of {len(items)} differ, e.g. (item, proxy, guava): {bad[:limit]}"


def assert_replies(items, got, expected, what):
    assert isinstance(got, list) and len(got) == len(expected), f"{what}: got {got!r:.300}"
    assert got == expected, f"{what}: " + first_mismatches(items, got, expected)


def assert_bits(data, f, what):
    """The Redis string `data` holds exactly Guava's bits of filter `f`, within ceil(M/8)."""
    assert data is not None, f"{what}: the key does not exist"
    assert len(data) <= nbytes(f.m), f"{what}: {len(data)} bytes, M = {f.m} bits"
    got, want = bits_of_string(data), f.bits()
    assert got == want, (f"{what}: bits differ from Guava's: only in Redis "
                         f"{sorted(set(got) - set(want))[:10]}, only in Guava "
                         f"{sorted(set(want) - set(got))[:10]} ({len(got)} vs {len(want)} set)")


def write_like_java(client, key, bits):
    """The Java application's writes: SETBIT key j 1 for each bit."""
    pipe = client.pipeline(transaction=False)
    for j in bits:
        pipe.setbit(key, j, 1)
    pipe.execute()


def madd(conn, key, items, verb="BF.MADD", opts=()):
    """BF.MADD / BF.INSERT (with `opts` before ITEMS) of `items`; the parsed reply."""
    if verb == "BF.INSERT":
        return conn.command("BF.INSERT", key, *opts, "ITEMS", *items)
    return conn.command(verb, key, *items)


# ---------------------------------------------------------------------------------------------
# The oracle itself


def test_oracle_matches_the_spec_maths(guava):
    """The Java oracle's sizes and bit indexes equal the spec's formulas computed in Python from
    an independent MurmurHash3_x64_128, for every layout and funnel; guava-mitz32 is Guava's
    strategy 0 (MURMUR128_MITZ_32), guava strategy 1; the layouts differ from one another."""
    per_layout = {}
    for layout in LAYOUTS:
        for funnel in FUNNELS:
            items = INT_SPECIAL[:13] if funnel == "int64le" else TEXT_SPECIAL
            for cap, err in ((100, 0.1), (1000, 0.01), (0, 0.5), (7, 0.001), (5000, 0.03)):
                f = guava.new(layout, cap, err, funnel)
                assert (f.k, f.m) == geometry(layout, cap, err), (layout, cap, err)
                got = f.indexes(items)
                want = [spec_indexes(layout, cap, err, funnel, x) for x in items]
                assert got == want, (layout, funnel, cap, err)
                if (cap, err) == (1000, 0.01):
                    per_layout.setdefault(layout, []).append(got)
                if layout not in UNROUNDED:
                    ser = f.serialized()
                    assert ser[0] == (0 if layout == "guava-mitz32" else 1), (layout, ser[:6])
                    assert ser[1] == f.k and int.from_bytes(ser[2:6], "big") * 64 == f.m
                f.free()
    assert len({repr(v) for v in per_layout.values()}) == len(LAYOUTS), \
        "two layouts give the same bits"
    # The unrounded layouts differ from their rounded strategy by the modulus alone: where the
    # int bit count is a multiple of 64 they set the same bits.
    cap = next(c for c in range(100, 2000) if geometry("guava-unrounded", c, 0.05)[1] % 64 == 0)
    items = TEXT_SPECIAL + text_items("m64", 40)
    for rounded, unrounded in (("guava", "guava-unrounded"),
                               ("guava-mitz32", "guava-mitz32-unrounded")):
        a, b = guava.new(rounded, cap, 0.05), guava.new(unrounded, cap, 0.05)
        assert (a.k, a.m) == (b.k, b.m), (cap, rounded)
        assert a.indexes(items) == b.indexes(items), (cap, rounded, unrounded)
        a.free()
        b.free()
    # put/mightContain/BITS/LOAD agree with each other.
    f = guava.new("guava", 50, 0.1)
    items = text_items("o", 120)
    assert sum(f.add(items)) < len(items)  # overfilled: some puts changed nothing
    assert f.has(items) == [1] * len(items)
    assert set(f.bits()) == set().union(*f.indexes(items))
    g = guava.new("guava", 50, 0.1)
    g.load(f.bits())
    assert (g.bits(), g.card(), g.has(items)) == (f.bits(), f.card(), [1] * len(items))
    assert bits_of_string(string_of_bits([0, 7, 8, 100])) == [0, 7, 8, 100]


# ---------------------------------------------------------------------------------------------
# Java writes, the proxy reads


@pytest.mark.parametrize("funnel", FUNNELS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_java_written_filter_read_through_proxy(guava, proxy, redis_instance, layout, funnel):
    cap, err = 100, 0.1
    p = proxy(*flags(rule("j:*", layout, cap, err, funnel)))
    f = guava.new(layout, cap, err, funnel)
    special = INT_SPECIAL if funnel == "int64le" else TEXT_SPECIAL
    added = list(dict.fromkeys(special + items_for(funnel, "in", 230)))
    probes = items_for(funnel, "out", 1500, exclude=added)
    f.add(added)
    direct = redis_instance.client()
    write_like_java(direct, "j:f", f.bits())
    with p.raw(timeout=20) as c:
        assert_replies(added, c.command("BF.MEXISTS", "j:f", *added), [1] * len(added),
                       "BF.MEXISTS of the Java app's items")
        expected = f.has(probes)
        # Overfilled: false positives occur, and true negatives too.
        assert 50 < sum(expected) < len(probes) - 50, sum(expected)
        assert_replies(probes, c.command("BF.MEXISTS", "j:f", *probes), expected,
                       "BF.MEXISTS of items never added")
        sample = added[:20] + probes[:60]
        singles = run_commands(c, [("BF.EXISTS", "j:f", x) for x in sample])
        assert_replies(sample, singles, [b":%d\r\n" % v for v in f.has(sample)], "BF.EXISTS")
        assert c.command("BF.CARD", "j:f") == f.card()
    # The proxy only read: the string is exactly what the Java application wrote.
    assert_bits(direct.get("j:f"), f, "after reads")


# ---------------------------------------------------------------------------------------------
# The proxy writes, Java reads


def proxy_add_everything(c, key, items, f):
    """Adds `items` through BF.ADD, BF.MADD and BF.INSERT (with options), each reply checked
    against the oracle's put() of the same item in the same order."""
    singles, batch, inserted = items[:12], items[12:-40], items[-40:]
    for x in singles:
        got = c.command("BF.ADD", key, x)
        assert got == f.add([x])[0], f"BF.ADD {x!r}: {got!r}"
    batch = batch + singles[:5]  # items added already: :0
    assert_replies(batch, madd(c, key, batch), f.add(batch), "BF.MADD")
    for opts, part in ((("CAPACITY", "5000", "ERROR", "0.5", "EXPANSION", "4"), inserted[:15]),
                       (("NOCREATE",), inserted[15:30]), (("NONSCALING",), inserted[30:]),
                       ((), inserted[:3] + batch[:3])):
        assert_replies(part, madd(c, key, part, "BF.INSERT", opts), f.add(part),
                       f"BF.INSERT {opts}")


@pytest.mark.parametrize("funnel", FUNNELS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_proxy_writes_guava_bits(guava, proxy, redis_instance, layout, funnel):
    cap, err = 100, 0.1
    p = proxy(*flags(rule("w:*", layout, cap, err, funnel)))
    f = guava.new(layout, cap, err, funnel)
    special = INT_SPECIAL if funnel == "int64le" else TEXT_SPECIAL
    items = special + items_for(funnel, "w", 200, exclude=special)
    with p.raw(timeout=20) as c:
        proxy_add_everything(c, "w:f", items, f)
        assert_bits(redis_instance.client().get("w:f"), f, f"{layout}/{funnel}")
        assert c.command("BF.MEXISTS", "w:f", *items) == [1] * len(items)
        assert c.command("BF.CARD", "w:f") == f.card()
        assert c.command("TYPE", "w:f") == b"string"
    assert redis_instance.client().keys("*") == [b"w:f"], "a metadata key was written"
    # Guava's own mightContain on the bits the proxy wrote (LOAD of the Redis string).
    g = guava.new(layout, cap, err, funnel)
    g.load(bits_of_string(redis_instance.client().get("w:f")))
    assert g.has(items) == [1] * len(items)
    assert g.card() == f.card()


@pytest.mark.parametrize("funnel", ("utf8", "utf16le"))
@pytest.mark.parametrize("layout", ("guava", "guava-unrounded", "guava-mitz32-unrounded"))
def test_malformed_utf8_is_read_as_java_reads_it(guava, proxy, redis_instance, layout, funnel):
    """An item that is not UTF-8 hashes as Java's new String(bytes, UTF_8) of it (each malformed
    sequence replaced by U+FFFD): BF.ADD replies, bits and mightContain equal Guava's."""
    cap, err = 1000, 0.001  # few false positives: each malformed item counts
    p = proxy(*flags(rule("m:*", layout, cap, err, funnel)))
    f = guava.new(layout, cap, err, funnel)
    with p.raw() as c:
        for x in MALFORMED_UTF8:
            got = c.command("BF.ADD", "m:f", x)
            assert got == f.add([x])[0], f"BF.ADD {x!r}: {got!r}"
        assert_bits(redis_instance.client().get("m:f"), f, "malformed UTF-8 items")
        # "\ufffd" is what Java made of b"\x80", b"\xff", ...
        probes = ["\ufffd", "\ufffd\ufffd", "ok\ufffdok", "a\ufffd", "\U0001f600\ufffd", "x"]
        assert_replies(probes, c.command("BF.MEXISTS", "m:f", *probes), f.has(probes),
                       "BF.MEXISTS of the replacement strings")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_int64le_accepts_what_long_parselong_accepts(guava, proxy, redis_instance, layout):
    """int64le items: what Long.parseLong accepts is hashed as that long (BF.ADD as put());
    what it refuses gets -ERR value is not an integer or out of range and writes nothing."""
    p = proxy(*flags(rule("i:*", layout, 1000, 0.001, "int64le")))
    f = guava.new(layout, 1000, 0.001, "int64le")
    direct = redis_instance.client()
    wrong = []
    with p.raw() as c:
        assert c.command("BF.ADD", "i:f", "5") == f.add(["5"])[0]
        for x in INT_SYNTAX:
            try:
                want = f.add([x])[0]
            except OracleError:
                want = NOT_INTEGER  # Long.parseLong refuses it
            before = direct.get("i:f")
            got = c.command("BF.ADD", "i:f", x)
            if got != want:
                wrong.append(f"BF.ADD i:f {x!r}: {got!r}, Guava {want!r}")
                continue
            if want != NOT_INTEGER:
                continue
            assert direct.get("i:f") == before, f"BF.ADD {x!r} wrote"
            for args in (("BF.MADD", "i:f", "7", x), ("BF.INSERT", "i:f", "ITEMS", "7", x),
                         ("BF.EXISTS", "i:f", x), ("BF.MEXISTS", "i:f", "5", x),
                         ("BF.ADD", "i:new", x)):
                got = c.command(*args)
                if got != NOT_INTEGER:
                    wrong.append(f"{args}: {got!r}, expected {NOT_INTEGER!r}")
                assert direct.get("i:f") == before, f"{args} wrote"
                assert direct.exists("i:new") == 0, f"{args} created i:new"
    assert not wrong, "int64le items not handled as Long.parseLong:\n" + "\n".join(wrong)
    assert_bits(direct.get("i:f"), f, "after the int64le syntax checks")


# ---------------------------------------------------------------------------------------------
# Errors and edges


EDGE_RULES = (rule("e:*", "guava", 100, 0.1), rule("u:*", "guava-unrounded", 100, 0.1),
              rule("n:*", "guava-mitz32", 100, 0.1, "int64le"),
              rule("v:*", "guava-mitz32-unrounded", 100, 0.1, "utf16le"))
EDGE_FUNNEL = {"e": "utf8", "u": "utf8", "n": "int64le", "v": "utf16le"}


@pytest.fixture
def edge_proxy(proxy):
    return proxy(*flags(*EDGE_RULES))


def test_missing_key(edge_proxy, redis_instance):
    with edge_proxy.raw() as c:
        for key in ("e:none", "u:none", "n:none", "v:none"):
            assert run_commands(c, [("BF.EXISTS", key, "1"), ("BF.MEXISTS", key, "1", "2"),
                                    ("BF.CARD", key), ("BF.INFO", key),
                                    ("BF.INFO", key, "CAPACITY"),
                                    ("BF.INSERT", key, "NOCREATE", "ITEMS", "1", "2")]) == \
                [b":0\r\n", b"*2\r\n:0\r\n:0\r\n", b":0\r\n", b"-ERR not found\r\n",
                 b"-ERR not found\r\n", b"-ERR not found\r\n"], key
    assert redis_instance.client().keys("*") == [], "reads of missing keys wrote something"


@pytest.mark.parametrize("prefix,layout", (("e", "guava"), ("u", "guava-unrounded"),
                                           ("n", "guava-mitz32"),
                                           ("v", "guava-mitz32-unrounded")))
def test_info(guava, edge_proxy, prefix, layout):
    funnel = EDGE_FUNNEL[prefix]
    f = guava.new(layout, 100, 0.1, funnel)
    key = f"{prefix}:info"
    items = items_for(funnel, "info", 70)
    size = nbytes(f.m)
    with edge_proxy.raw() as c:
        assert c.command("BF.MADD", key, *items) == f.add(items)
        n = f.card()
        assert n > 0
        assert run_commands(c, [("BF.INFO", key)]) == [info_reply(100, size, 1, n, None)]
        fields = {"CAPACITY": 100, "size": size, "Filters": 1, "ITEMS": n}
        for field, value in fields.items():
            assert run_commands(c, [("BF.INFO", key, field)]) == [b"*1\r\n:%d\r\n" % value], field
        assert run_commands(c, [("BF.INFO", key, "expansion"), ("BF.INFO", key, "cap"),
                                ("BF.CARD", key)]) == \
            [b"*1\r\n$-1\r\n", b"-Invalid information value\r\n", b":%d\r\n" % n]


def test_reserve(guava, edge_proxy, redis_instance):
    direct = redis_instance.client()
    m_guava = guava.new("guava", 100, 0.1).m
    m_unrounded = guava.new("guava-unrounded", 100, 0.1).m
    m_mitz32_unrounded = guava.new("guava-mitz32-unrounded", 100, 0.1, "utf16le").m
    assert (m_guava, m_unrounded, m_mitz32_unrounded) == (512, 479, 479)
    with edge_proxy.raw() as c:
        assert c.command("BF.RESERVE", "e:r", "0.1", "100") == b"OK"
        assert direct.strlen("e:r") == nbytes(m_guava) and direct.bitcount("e:r") == 0
        assert c.command("BF.RESERVE", "u:r", "0.1", "100", "NONSCALING") == b"OK"
        assert direct.strlen("u:r") == nbytes(m_unrounded) and direct.bitcount("u:r") == 0
        assert c.command("BF.RESERVE", "n:r", "0.10", "100", "EXPANSION", "2") == b"OK"
        assert direct.strlen("n:r") == nbytes(m_guava)
        assert c.command("BF.RESERVE", "v:r", "0.1", "100") == b"OK"
        assert direct.strlen("v:r") == nbytes(m_mitz32_unrounded) and direct.bitcount("v:r") == 0
        assert run_commands(c, [("BF.CARD", "v:r"), ("BF.INFO", "v:r", "SIZE")]) == \
            [b":0\r\n", b"*1\r\n:%d\r\n" % nbytes(m_mitz32_unrounded)]
        assert run_commands(c, [("BF.CARD", "e:r"), ("BF.EXISTS", "e:r", "a"),
                                ("BF.INFO", "e:r", "ITEMS")]) == \
            [b":0\r\n", b":0\r\n", b"*1\r\n:0\r\n"]
        # Exists (also a key the Java application wrote): item exists, nothing changed.
        direct.setbit("e:java", 3, 1)
        for key in ("e:r", "u:r", "v:r", "e:java"):
            before = direct.get(key)
            assert c.command("BF.RESERVE", key, "0.1", "100") == b"ERR item exists", key
            assert direct.get(key) == before
        # Parameters other than the rule's.
        for key, e, n in (("e:x", "0.01", "100"), ("e:x", "0.1", "1000"), ("u:x", "0.2", "100"),
                          ("n:x", "0.1", "99"), ("v:x", "0.1", "101"), ("v:x", "0.09", "100")):
            got = c.command("BF.RESERVE", key, e, n)
            assert isinstance(got, bytes) and got.startswith(b"ERR bloomproxy"), (key, got)
            assert direct.exists(key) == 0
        # RedisBloom's argument errors.
        assert run_commands(c, [("BF.RESERVE", "e:y", "abc", "100"),
                                ("BF.RESERVE", "e:y", "0", "100"),
                                ("BF.RESERVE", "e:y", "0.1", "0"),
                                ("BF.RESERVE", "e:y", "0.1", "abc"),
                                ("BF.RESERVE", "e:y", "0.1"),
                                ("BF.RESERVE", "e:y", "0.1", "100", "EXPANSION", "x"),
                                ("BF.RESERVE", "e:y", "0.1", "100", "NONSCALING", "EXPANSION",
                                 "2")]) == \
            [b"-ERR bad error rate\r\n",
             b"-ERR error rate must be in the range (0.000000, 1.000000)\r\n",
             b"-ERR capacity must be in the range [1, 1073741824]\r\n",
             b"-ERR bad capacity\r\n",
             b"-ERR wrong number of arguments for 'bf.reserve' command\r\n",
             b"-ERR bad expansion\r\n",
             b"-Nonscaling filters cannot expand\r\n"]
        assert direct.exists("e:y") == 0


def test_insert_options_checked_and_ignored(guava, edge_proxy, redis_instance):
    """BF.INSERT's creation options get RedisBloom's argument errors (nothing created); valid
    ones change nothing: the rule's parameters apply."""
    direct = redis_instance.client()
    with edge_proxy.raw() as c:
        assert run_commands(c, [("BF.INSERT", "e:i", "ERROR", "2", "ITEMS", "a"),
                                ("BF.INSERT", "e:i", "CAPACITY", "0", "ITEMS", "a"),
                                ("BF.INSERT", "e:i", "EXPANSION", "0x", "ITEMS", "a"),
                                ("BF.INSERT", "e:i", "BOGUS", "ITEMS", "a"),
                                ("BF.INSERT", "e:i", "ITEMS"),
                                ("BF.INSERT", "e:i", "CAPACITY", "10")]) == \
            [b"-Bad error rate\r\n", b"-Bad capacity\r\n", b"-Bad expansion\r\n",
             b"-Unknown argument received\r\n",
             b"-ERR wrong number of arguments for 'bf.insert' command\r\n",
             b"-ERR wrong number of arguments for 'bf.insert' command\r\n"]
        assert direct.exists("e:i") == 0
        f = guava.new("guava", 100, 0.1)
        items = text_items("ins", 40)
        assert c.command("BF.INSERT", "e:i", "CAPACITY", "100000", "ERROR", "0.0001",
                         "ITEMS", *items) == f.add(items)
        assert run_commands(c, [("BF.INFO", "e:i", "CAPACITY"), ("BF.INFO", "e:i", "SIZE")]) \
            == [b"*1\r\n:100\r\n", b"*1\r\n:64\r\n"]
    assert_bits(direct.get("e:i"), f, "e:i")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_capacity_zero_counts_as_one(guava, proxy, redis_instance, layout):
    p = proxy(*flags(rule("z:*", layout, 0, 0.000001)))
    f = guava.new(layout, 0, 0.000001)
    assert (f.k, f.m) == geometry(layout, 1, 0.000001)
    items = ["z1", "z2"]  # m = 28 unrounded: no more, or every bit is set
    with p.raw() as c:
        assert c.command("BF.MADD", "z:f", *items) == f.add(items)
        assert c.command("BF.INFO", "z:f", "SIZE") == [nbytes(f.m)]
        assert c.command("BF.CARD", "z:f") == f.card()
    assert_bits(redis_instance.client().get("z:f"), f, "capacity 0")


def test_scandump_and_loadchunk_refused(edge_proxy, redis_instance):
    direct = redis_instance.client()
    with edge_proxy.raw() as c:
        assert c.command("BF.ADD", "e:d", "a") == 1
        before = direct.get("e:d")
        for args in (("BF.SCANDUMP", "e:d", "0"), ("BF.LOADCHUNK", "e:d", "1", "x" * 80),
                     ("BF.LOADCHUNK", "e:new", "1", "x" * 80)):
            got = c.command(*args)
            assert isinstance(got, bytes) and got.startswith(b"ERR bloomproxy"), (args, got)
        assert direct.get("e:d") == before and direct.exists("e:new") == 0


def test_wrongtype(edge_proxy, redis_instance):
    direct = redis_instance.client()
    direct.hset("e:h", "f", "v")
    direct.rpush("u:l", "x")
    direct.sadd("v:s", "x")
    with edge_proxy.raw() as c:
        for key in ("e:h", "u:l", "v:s"):
            got = run_commands(c, [("BF.ADD", key, "a"), ("BF.MADD", key, "a", "b"),
                                   ("BF.EXISTS", key, "a"), ("BF.MEXISTS", key, "a", "b"),
                                   ("BF.INSERT", key, "ITEMS", "a"), ("BF.CARD", key),
                                   ("BF.INFO", key), ("BF.RESERVE", key, "0.1", "100")])
            # As RedisBloom answers on a key of another type (tests/fixtures/bf,
            # types_missing_arity): EXISTS and MEXISTS as on a missing key, the rest WRONGTYPE.
            assert got == [WRONGTYPE, WRONGTYPE, b":0\r\n", b"*2\r\n:0\r\n:0\r\n", WRONGTYPE,
                           WRONGTYPE, WRONGTYPE, WRONGTYPE], (key, got)
    assert direct.hgetall("e:h") == {b"f": b"v"} and direct.lrange("u:l", 0, -1) == [b"x"]
    assert direct.smembers("v:s") == {b"x"}


@pytest.mark.parametrize("prefix,layout", (("u", "guava-unrounded"),
                                           ("v", "guava-mitz32-unrounded")))
def test_add_keeps_ttl_and_del(guava, edge_proxy, redis_instance, prefix, layout):
    direct = redis_instance.client()
    f = guava.new(layout, 100, 0.1, EDGE_FUNNEL[prefix])
    t, t2 = f"{prefix}:t", f"{prefix}:t2"
    with edge_proxy.raw() as c:
        assert c.command("BF.ADD", t, "first") == f.add(["first"])[0]
        assert c.command("EXPIRE", t, "1000") == 1
        items = text_items("ttl", 60)
        assert c.command("BF.MADD", t, *items[:30]) == f.add(items[:30])
        for x in items[30:]:
            assert c.command("BF.ADD", t, x) == f.add([x])[0]
        assert c.command("BF.INSERT", t, "ITEMS", "last") == f.add(["last"])
        assert 990 <= c.command("TTL", t) <= 1000
        assert_bits(direct.get(t), f, "with a TTL")
        # A key the Java application wrote with an expiry keeps it too.
        g = guava.new("guava", 100, 0.1)
        g.load([10, 300])
        write_like_java(direct, "e:java", [10, 300])
        direct.pexpire("e:java", 500000)
        assert c.command("BF.MADD", "e:java", *items) == g.add(items)
        assert 490000 < direct.pttl("e:java") <= 500000
        assert_bits(direct.get("e:java"), g, "e:java with a TTL")
        # Key commands act on the string: GET, RENAME, DUMP/RESTORE.
        assert c.command("GET", t) == direct.get(t)
        assert c.command("RENAME", t, t2) == b"OK"
        assert c.command("BF.MEXISTS", t2, *items) == [1] * len(items)
        assert 990 <= c.command("TTL", t2) <= 1000
        dump = c.command("DUMP", t2)
        assert c.command("RESTORE", t, "0", dump) == b"OK"
        assert c.command("BF.MEXISTS", t, *items) == [1] * len(items)
        assert_bits(direct.get(t), f, "restored")
        # DEL acts on the string; the filter is gone.
        assert c.command("DEL", t) == 1
        assert run_commands(c, [("EXISTS", t), ("BF.EXISTS", t, "first"),
                                ("BF.CARD", t), ("BF.INFO", t)]) == \
            [b":0\r\n", b":0\r\n", b":0\r\n", b"-ERR not found\r\n"]


def monitor_lines(redis_port, action):
    """The commands redis-server executed while `action()` ran (MONITOR lines, decoded)."""
    with RawConn(redis_port, timeout=10) as mon:
        assert mon.command("MONITOR") == b"OK"
        action()
        with RawConn(redis_port) as marker:
            assert marker.command("ECHO", "monitor-end") == b"monitor-end"
        lines = []
        while True:
            line = mon.read_reply()
            lines.append(line.decode("utf-8", "replace"))
            if '"ECHO" "monitor-end"' in lines[-1]:
                return lines


def test_writes_are_bit_sets_never_a_rewrite(guava, edge_proxy, redis_instance):
    """BF.ADD / BF.MADD / BF.INSERT set bits with BITFIELD SET u1 and never write the string
    whole (no SET, SETRANGE, GETSET, APPEND, RESTORE, DEL of the key)."""
    f = guava.new("guava", 100, 0.1)
    items = TEXT_SPECIAL + text_items("mon", 50)

    def adds():
        with edge_proxy.raw() as c:
            assert c.command("BF.ADD", "e:m", "first") == f.add(["first"])[0]
            assert c.command("BF.MADD", "e:m", *items) == f.add(items)
            assert c.command("BF.INSERT", "e:m", "ITEMS", "z1", "z2") == f.add(["z1", "z2"])

    lines = monitor_lines(redis_instance.port, adds)
    on_key = [ln for ln in lines if '"e:m"' in ln]
    writes = [ln for ln in on_key if '"BITFIELD"' in ln.upper()]
    assert writes and all('"SET" "U1"' in ln.upper() for ln in writes), \
        on_key[:10]
    bad = [ln for ln in on_key
           for verb in ('"SET"', '"SETRANGE"', '"GETSET"', '"APPEND"', '"RESTORE"', '"DEL"',
                        '"SETEX"', '"PSETEX"', '"UNLINK"', '"SETBIT"', '"BITOP"')
           if f'] {verb} "e:m"'.lower() in ln.lower()]
    assert not bad, bad[:5]
    assert_bits(redis_instance.client().get("e:m"), f, "e:m")


def test_key_outside_every_rule_is_a_bloomproxy_filter(guava, edge_proxy, redis_instance):
    f = guava.new("guava", 100, 0.1)
    with edge_proxy.raw() as c:
        assert c.command("BF.ADD", "other:f", "a") == 1
        assert c.command("BF.ADD", "e:f", "a") == f.add(["a"])[0]
        assert run_commands(c, [("TYPE", "other:f"), ("TYPE", "e:f"),
                                ("BF.INFO", "other:f", "CAPACITY")]) == \
            [b"+MBbloom--\r\n", b"+string\r\n", b"*1\r\n:100\r\n"]
        assert c.command("BF.SCANDUMP", "other:f", "0")[0] != 0  # RedisBloom's dump
    keys = set(redis_instance.client().keys("*"))
    assert b"e:f" in keys and len(keys) > 2, keys  # other:f has its internal keys upstream
    assert_bits(redis_instance.client().get("e:f"), f, "e:f")


def test_rule_order_first_match_wins(guava, proxy, redis_instance):
    # o:c* comes before an o:c* of another layout with the same parameters (and the same
    # modulus): only the bits tell which rule won.
    p = proxy(*flags(rule("o:a*", "guava-mitz32", 100, 0.1),
                     rule("o:c*", "guava-mitz32-unrounded", 200, 0.01, "utf16le"),
                     rule("o:*", "guava-unrounded", 200, 0.01, "utf16le"),
                     rule("o:c*", "guava-unrounded", 200, 0.01, "utf16le"),
                     rule("o:ab*", "guava", 100, 0.1)))
    direct = redis_instance.client()
    expect = {"o:abc": guava.new("guava-mitz32", 100, 0.1),
              "o:cd": guava.new("guava-mitz32-unrounded", 200, 0.01, "utf16le"),
              "o:b": guava.new("guava-unrounded", 200, 0.01, "utf16le"),
              "o:xc": guava.new("guava-unrounded", 200, 0.01, "utf16le")}
    items = TEXT_SPECIAL + text_items("ord", 80)
    with p.raw() as c:
        for key, f in expect.items():
            assert_replies(items, c.command("BF.MADD", key, *items), f.add(items), key)
            assert_bits(direct.get(key), f, key)


def test_glob_patterns(guava, proxy, redis_instance):
    p = proxy(*flags(rule("g:[ab]?x", "guava", 100, 0.1),
                     rule("h:[^a]*", "guava", 100, 0.1),
                     rule("s:\\*", "guava", 100, 0.1),
                     rule("r:[a-c]", "guava", 100, 0.1)))
    matching = ["g:a1x", "g:bzx", "h:b", "h:zzz", "s:*", "r:b"]
    others = ["g:c1x", "g:a12x", "h:a", "h:", "s:x", "r:d"]
    direct = redis_instance.client()
    with p.raw() as c:
        for key in matching + others:
            assert c.command("BF.ADD", key, "item") == 1, key
        types = run_commands(c, [("TYPE", k) for k in matching + others])
    assert types == [b"+string\r\n"] * len(matching) + [b"+MBbloom--\r\n"] * len(others), \
        list(zip(matching + others, types))
    f = guava.new("guava", 100, 0.1)
    f.add(["item"])
    for key in matching:
        assert_bits(direct.get(key), f, key)


def run_bin(*args, env=None):
    return subprocess.run([BLOOMPROXY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=10, env=proxy_env(env), stdin=subprocess.DEVNULL)


# A bad rule, and what the error message must quote.
LAYOUT_LIST = "(guava, guava-unrounded, guava-mitz32, guava-mitz32-unrounded)"
BAD_RULES = [
    ("x:* guava2 100 0.1", f"'guava2' is not a layout {LAYOUT_LIST}"),
    ("x:* guava-mitz32-unrounded2 100 0.1", "'guava-mitz32-unrounded2' is not a layout"),
    ("x:* guava-mitz-32-unrounded 100 0.1", "'guava-mitz-32-unrounded' is not a layout"),
    ("x:* guava-mitz32-unrounded 100 1", "'1'"),
    ("x:* guava-mitz32-unrounded -1 0.1", "'-1'"),
    ("x:* guava-mitz32-unrounded 100 0.1 funnel utf16", "'utf16'"),
    ("x:* guava-mitz32-unrounded 1 0.9", "0 bits"),
    ("x:* guava 100 0", "'0'"),
    ("x:* guava 100 1", "'1'"),
    ("x:* guava 100 1.5", "'1.5'"),
    ("x:* guava-mitz32 100 -0.1", "'-0.1'"),
    ("x:* guava 100 abc", "'abc'"),
    ("x:* guava -5 0.1", "'-5'"),
    ("x:* guava many 0.1", "'many'"),
    ("x:* guava 100 0.1 funnel utf32", "'utf32'"),
    ("x:* guava 100 0.1 funnel", "'funnel'"),
    ("x:* guava 100 0.1 expanding", "'expanding'"),
    ("x:* guava 100 0.1 bogus 1", "'bogus'"),
    ("x:* guava 100", "bf-layout"),
]


def test_config_errors_refuse_to_start(tmp_path):
    base = ["--port", free_port(), "--bind", HOST, "--upstream", "127.0.0.1:1"]
    for layout in UNROUNDED:
        ok = run_bin(*base, "--bf-layout", f"x:* {layout} 0 0.5 funnel int64le expanding %s:c",
                     "--test-conf")
        assert ok.returncode == 0, ok.stdout + ok.stderr
    for text, mention in BAD_RULES:
        for how in ("flag", "file", "env"):
            args, env = list(base), None
            if how == "flag":
                args += ["--bf-layout", text]
            elif how == "file":
                conf = tmp_path / "bad.conf"
                conf.write_text(f"bf-layout {text}\n")
                args += ["--config", conf]
            else:
                env = {"BLOOMPROXY_BF_LAYOUT": text}
            res = run_bin(*args, "--test-conf", env=env)
            out = res.stdout + res.stderr
            assert res.returncode != 0, f"{how} {text!r}: --test-conf accepted it\n{out}"
            assert mention in out, f"{how} {text!r}: the message does not name {mention!r}:\n{out}"
        try:
            res = subprocess.run([BLOOMPROXY_BIN, *map(str, base), "--bf-layout", text],
                                 capture_output=True, text=True, timeout=5, env=proxy_env(),
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{text!r}: bloomproxy started with a bad rule")
        assert res.returncode != 0 and mention in res.stdout + res.stderr, (text, res.stderr)


def test_rule_from_config_file_and_environment(guava, proxy, redis_instance, tmp_path):
    conf = tmp_path / "layouts.conf"
    conf.write_text("# Java filters\n"
                    f"bf-layout {rule('cf:a*', 'guava-mitz32', 100, 0.1)}\n"
                    f"bf-layout {rule('cf:c*', 'guava-mitz32-unrounded', 150, 0.02, 'int64le')}\n"
                    f"bf-layout {rule('cf:*', 'guava', 300, 0.05, 'int64le')}\n")
    env = {"BLOOMPROXY_BF_LAYOUT": rule("env:*", "guava-unrounded", 100, 0.1, "utf16le")}
    direct = redis_instance.client()
    cases = [(proxy("--config", conf), "cf:a1", guava.new("guava-mitz32", 100, 0.1),
              text_items("cf", 100)),
             (proxy("--config", conf), "cf:b", guava.new("guava", 300, 0.05, "int64le"),
              int_items(3, 100)),
             (proxy("--config", conf), "cf:c", guava.new("guava-mitz32-unrounded", 150, 0.02,
                                                         "int64le"),
              INT_SPECIAL + int_items(4, 100, exclude=INT_SPECIAL)),
             (proxy(env=env), "env:x", guava.new("guava-unrounded", 100, 0.1, "utf16le"),
              TEXT_SPECIAL + text_items("env", 60))]
    for p, key, f, items in cases:
        with p.raw() as c:
            assert_replies(items, c.command("BF.MADD", key, *items), f.add(items), key)
            assert c.command("TYPE", key) == b"string"
        assert_bits(direct.get(key), f, key)


# ---------------------------------------------------------------------------------------------
# Concurrency


def test_two_proxies_and_a_java_app_at_once(guava, proxy, redis_instance):
    """Two proxies (two clients each) and a Java application (SETBIT from two threads) add
    different items to one key at once: afterwards every item is present through both proxies
    and the string's bits are exactly the union of Guava's bits (no lost update: the proxy sets
    bits, it never rewrites the string)."""
    layout, cap, err = "guava", 3000, 0.01
    r = rule("c:*", layout, cap, err)
    proxies = [proxy(*flags(r)), proxy(*flags(r))]
    f = guava.new(layout, cap, err)
    per_source = 600
    sources = [text_items(f"src{i}:", per_source) for i in range(6)]
    java_sources = sources[4:]
    java_bits = [f.indexes(items) for items in java_sources]
    problems = []
    barrier = threading.Barrier(6)

    def proxy_client(p, items):
        try:
            with p.raw(timeout=30) as c:
                barrier.wait(10)
                for i in range(0, len(items), 15):
                    part = items[i:i + 15]
                    if i % 2:
                        got = [c.command("BF.ADD", "c:shared", x) for x in part]
                    else:
                        got = c.command("BF.MADD", "c:shared", *part)
                    if not (isinstance(got, list) and set(got) <= {0, 1}):
                        problems.append(f"{part[0]!r}: {got!r:.200}")
                        return
        except Exception as exc:  # noqa: BLE001 - reported below
            problems.append(repr(exc))

    def java_app(bits_per_item):
        try:
            client = redis_instance.client()
            barrier.wait(10)
            for i in range(0, len(bits_per_item), 10):
                write_like_java(client, "c:shared",
                                sorted(set().union(*bits_per_item[i:i + 10])))
        except Exception as exc:  # noqa: BLE001
            problems.append(repr(exc))

    threads = [threading.Thread(target=proxy_client, args=(proxies[i % 2], sources[i]))
               for i in range(4)]
    threads += [threading.Thread(target=java_app, args=(b,)) for b in java_bits]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "clients still running"
    assert not problems, problems[:5]
    everything = [x for s in sources for x in s]
    f.add(everything)
    assert_bits(redis_instance.client().get("c:shared"), f, "after the concurrent adds")
    for p in proxies:
        with p.raw(timeout=20) as c:
            assert c.command("BF.MEXISTS", "c:shared", *everything) == [1] * len(everything)
            assert c.command("BF.CARD", "c:shared") == f.card()


# ---------------------------------------------------------------------------------------------
# Expanding filters


class ExpandingModel:
    """The spec's expanding filters on Guava's per-item bit indexes: data keys NAME-i (sets of
    bits; created = SETBIT M-1 0 at a roll), cursors by cursor key."""

    def __init__(self, m, cursor_of):
        self.m = m
        self.cursor_of = cursor_of  # name -> cursor key
        self.cursors = {}
        self.data = {}
        self.rolled = set()  # data keys created at full size by a roll

    def cursor(self, name):
        return self.cursors.get(self.cursor_of(name), 0)

    def present(self, name, idx):
        return any(idx <= self.data.get(f"{name}-{i}", set())
                   for i in range(self.cursor(name) + 1))

    def add(self, name, idx):
        if self.present(name, idx):
            return 0
        c = self.cursor(name)
        bits = self.data.setdefault(f"{name}-{c}", set())
        bits |= idx
        if len(bits) * 2 > self.m:
            self.cursors[self.cursor_of(name)] = c + 1
            self.data.setdefault(f"{name}-{c + 1}", set())
            self.rolled.add(f"{name}-{c + 1}")
        return 1


def check_expanding(c, direct, guava, model, name, layout, cap, err, funnel, items, probes):
    """Redis and the proxy's answers equal the model's for filter `name`."""
    cur = model.cursor(name)
    cursor_key = model.cursor_of(name)
    raw = direct.get(cursor_key)
    assert int(raw or 0) == cur, f"cursor {cursor_key}: {raw!r}, model {cur}"
    assert direct.exists(f"{name}-{cur + 1}") == 0 and direct.exists(name) == 0
    total = 0
    for i in range(cur + 1):
        key = f"{name}-{i}"
        data = direct.get(key)
        want = sorted(model.data.get(key, ()))
        assert bits_of_string(data) == want, f"{key}: bits differ from the model"
        if key in model.rolled:
            assert len(data) == nbytes(model.m), f"{key}: {len(data)} bytes"
        g = guava.new(layout, cap, err, funnel)
        g.load(want)
        total += g.card()
    present = [1] * len(items)
    assert c.command("BF.MEXISTS", name, *items) == present
    assert_replies(probes, c.command("BF.MEXISTS", name, *probes),
                   [int(model.present(name, i)) for i in guava_idx(guava, layout, cap, err,
                                                                   funnel, probes)],
                   f"BF.MEXISTS {name} of items never added")
    assert c.command("BF.CARD", name) == total
    size = nbytes(model.m) * (cur + 1)
    assert run_commands(c, [("BF.INFO", name)]) == \
        [info_reply(cap * (cur + 1), size, cur + 1, total, 1)]
    return total


_IDX_CACHE = {}


def guava_idx(guava, layout, cap, err, funnel, items):
    key = (layout, cap, err, funnel)
    if key not in _IDX_CACHE:
        _IDX_CACHE[key] = guava.new(layout, cap, err, funnel)
    return _IDX_CACHE[key].indexes(items)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_expanding(guava, proxy, redis_instance, layout):
    cap, err, funnel = 20, 0.1, "utf8"
    p = proxy(*flags(rule("x:*", layout, cap, err, expanding="cur:%s"),
                     rule("y:*", layout, cap, err, expanding="fixedcursor")))
    m = guava.new(layout, cap, err).m
    model = ExpandingModel(m, lambda name: "fixedcursor" if name.startswith("y:") else
                           f"cur:{name}")
    direct = redis_instance.client()
    items = TEXT_SPECIAL[:10] + text_items("exp", 140)
    probes = text_items("never", 400)
    idx = dict(zip(items, guava_idx(guava, layout, cap, err, funnel, items)))
    with p.raw(timeout=20) as c:
        assert run_commands(c, [("BF.EXISTS", "x:f", "a"), ("BF.CARD", "x:f"),
                                ("BF.INFO", "x:f")]) == \
            [b":0\r\n", b":0\r\n", b"-ERR not found\r\n"]
        for x in items[:20]:
            assert c.command("BF.ADD", "x:f", x) == model.add("x:f", idx[x]), x
        for i in range(20, 120, 25):
            part = items[i:i + 25] + items[i - 3:i]  # the last 3 again: present
            assert_replies(part, c.command("BF.MADD", "x:f", *part),
                           [model.add("x:f", idx[x]) for x in part], "BF.MADD")
        part = items[120:]
        assert_replies(part, c.command("BF.INSERT", "x:f", "ITEMS", *part),
                       [model.add("x:f", idx[x]) for x in part], "BF.INSERT")
        assert model.cursor("x:f") >= 2, "the cursor should have rolled several times"
        check_expanding(c, direct, guava, model, "x:f", layout, cap, err, funnel, items,
                        probes)
        # A fixed cursor key is shared: y:b writes to y:b-<cursor y:a moved to>.
        for name, part in (("y:a", items[:70]), ("y:b", items[70:80]), ("y:a", items[80:])):
            assert_replies(part, c.command("BF.MADD", name, *part),
                           [model.add(name, idx[x]) for x in part], f"BF.MADD {name}")
        assert model.cursor("y:a") >= 2
        for name in ("y:a", "y:b"):
            added = items[:70] + items[80:] if name == "y:a" else items[70:80]
            check_expanding(c, direct, guava, model, name, layout, cap, err, funnel, added,
                            probes)
    # Nothing but the data keys and the cursors (no metadata key).
    want = {k for k, bits in model.data.items() if bits or k in model.rolled}
    want |= {k for k, v in model.cursors.items() if v}
    assert set(direct.keys("*")) == {k.encode() for k in want}


# ---------------------------------------------------------------------------------------------
# RESP3


def test_resp3_replies(guava, proxy):
    p = proxy(*flags(rule("r3:*", "guava", 100, 0.1)))
    f = guava.new("guava", 100, 0.1)
    items = text_items("r3", 150)
    with RawConn(p.port) as c:
        assert isinstance(c.command("HELLO", "3"), dict)
        t, fl = b"#t\r\n", b"#f\r\n"
        assert run_commands(c, [("BF.ADD", "r3:f", "a"), ("BF.ADD", "r3:f", "a"),
                                ("BF.EXISTS", "r3:f", "a"), ("BF.EXISTS", "r3:none", "a")]) == \
            [t, fl, t, fl]
        f.add(["a"])
        want = f.add(items)
        assert 0 in want
        assert run_commands(c, [("BF.MADD", "r3:f", *items)]) == \
            [b"*%d\r\n" % len(items) + b"".join(t if v else fl for v in want)]
        probes = text_items("r3no", 50)
        assert run_commands(c, [("BF.MEXISTS", "r3:f", *probes)]) == \
            [b"*%d\r\n" % len(probes) + b"".join(t if v else fl for v in f.has(probes))]
        n = f.card()
        assert run_commands(c, [("BF.INFO", "r3:f"), ("BF.INFO", "r3:f", "expansion"),
                                ("BF.INFO", "r3:f", "ITEMS"), ("BF.CARD", "r3:f")]) == \
            [b"%%5\r\n+Capacity\r\n:100\r\n+Size\r\n:64\r\n+Number of filters\r\n:1\r\n"
             b"+Number of items inserted\r\n:%d\r\n+Expansion rate\r\n_\r\n" % n,
             b"%1\r\n+Expansion rate\r\n_\r\n",
             b"%%1\r\n+Number of items inserted\r\n:%d\r\n" % n, b":%d\r\n" % n]


# ---------------------------------------------------------------------------------------------
# Redis Cluster and a sharding proxy


def cluster_keys(prefix, count):
    """`count` keys of distinct slots."""
    out, slots = [], set()
    i = 0
    while len(out) < count:
        k = f"{prefix}{i}"
        if key_hash_slot(k) not in slots:
            slots.add(key_hash_slot(k))
            out.append(k)
        i += 1
    return out


def on_nodes(clients, key):
    """On how many of the nodes `clients` the key is (KEYS: no redirection)."""
    return sum(key.encode() in set(cl.keys("*")) for cl in clients)


def check_upstream_rule_keys(guava, p, holder_of, all_clients):
    """Rule keys through `p`: replies equal Guava's, the bits on the node `holder_of(key)`,
    nowhere else; an expanding filter with a hash tag works, one without gets CROSSSLOT."""
    keys = cluster_keys("cl:", 6)
    oracles = {}
    with p.raw(timeout=20) as c:
        for n, key in enumerate(keys):
            f = oracles[key] = guava.new("guava", 100, 0.1)
            items = TEXT_SPECIAL + text_items(f"{key}:", 60 + n)
            assert_replies(items, c.command("BF.MADD", key, *items), f.add(items), key)
            assert c.command("BF.ADD", key, "one more") == f.add(["one more"])[0]
            assert c.command("BF.MEXISTS", key, *items) == [1] * len(items)
            probes = text_items("none", 300)
            assert_replies(probes, c.command("BF.MEXISTS", key, *probes), f.has(probes), key)
            assert c.command("BF.CARD", key) == f.card()
        for key in keys:
            holder = holder_of(key)
            assert_bits(holder.get(key), oracles[key], f"{key} on its node")
            assert on_nodes(all_clients, key) == 1, f"{key} on several nodes"
        # Expanding: the name's hash tag puts NAME-i and the cursor in one slot.
        m = guava.new("guava", 20, 0.1).m
        model = ExpandingModel(m, lambda name: f"{name}:cursor")
        items = text_items("cx", 90)
        idx = dict(zip(items, guava_idx(guava, "guava", 20, 0.1, "utf8", items)))
        name = "cx:{tag}f"
        assert_replies(items, c.command("BF.MADD", name, *items),
                       [model.add(name, idx[x]) for x in items], "expanding BF.MADD")
        cur = model.cursor(name)
        assert cur >= 1
        holder = holder_of(name)
        assert int(holder.get(f"{name}:cursor")) == cur
        for i in range(cur + 1):
            assert bits_of_string(holder.get(f"{name}-{i}")) == \
                sorted(model.data.get(f"{name}-{i}", ())), f"{name}-{i}"
        assert c.command("BF.MEXISTS", name, *items) == [1] * len(items)
        plain = "cx:plain"
        assert key_hash_slot(f"{plain}-0") != key_hash_slot(f"{plain}:cursor")
        for args in (("BF.ADD", plain, "a"), ("BF.EXISTS", plain, "a")):
            got = c.command(*args)
            assert isinstance(got, bytes) and got.startswith(CROSSSLOT), (args, got)
    assert on_nodes(all_clients, "cx:plain-0") + on_nodes(all_clients, "cx:plain:cursor") == 0


CLUSTER_RULES = (rule("cl:*", "guava", 100, 0.1), rule("cx:*", "guava", 20, 0.1,
                                                       expanding="%s:cursor"))


def test_redis_cluster(guava, cluster_proxy, redis_cluster):
    redis_cluster.flushall()
    p = cluster_proxy(*flags(*CLUSTER_RULES))
    masters = [m.client() for m in redis_cluster.masters()]
    check_upstream_rule_keys(guava, p, lambda k: redis_cluster.node_for_key(k).client(),
                             masters)
    nodes = {redis_cluster.node_for_key(k).port for k in cluster_keys("cl:", 6)}
    assert len(nodes) >= 2, "the keys should spread over several masters"


def test_sharding_proxy(guava, sharding_proxy, twemproxy):
    twemproxy.flushall()
    p = sharding_proxy(*flags(*CLUSTER_RULES))
    check_upstream_rule_keys(guava, p, lambda k: twemproxy.server_for_key(k).client(),
                             twemproxy.clients())

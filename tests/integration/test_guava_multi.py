"""BF.* inside MULTI/EXEC on keys that bf-layout rules name (filters/guava/multi_guava.cc): each command
is queued as one script, and EXEC's array holds the replies Guava's own answers give (the oracle
of guava_oracle.py: Guava 31.1 on Java 17), with the same bits in Redis as outside a transaction.
Errors are per command, as Redis answers them in EXEC, and WATCH still guards the transaction.
"""

import redis

# The session fixtures `guava` (the oracle JVM) and `guava_classes` come from guava_oracle.py.
from guava_oracle import guava, guava_classes  # noqa: F401
from guava_oracle import bits_of_string

LAYOUTS = ("guava", "guava-unrounded", "guava-mitz32", "guava-mitz32-unrounded")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def rules(*texts):
    out = []
    for t in texts:
        out += ["--bf-layout", t]
    return out


def exec_multi(client, commands):
    """MULTI, the commands, EXEC on one connection; EXEC's replies (errors as exceptions)."""
    pipe = client.pipeline(transaction=True)
    for args in commands:
        pipe.execute_command(*args)
    return pipe.execute(raise_on_error=False)


def test_multi_replies_and_bits_are_guavas(guava, proxy, redis_instance):
    p = proxy(*rules(*(f"{layout}:* {layout} 60 0.1" for layout in LAYOUTS)))
    direct = redis_instance.client()
    client = p.client()
    items = [f"item{i}" for i in range(80)] + ["café", "😀", "", "item3"]
    probes = [f"other{i}" for i in range(400)]
    for layout in LAYOUTS:
        f = guava.new(layout, 60, 0.1)
        key = f"{layout}:k"
        got = exec_multi(client, [("BF.ADD", key, items[0]),
                                  ("BF.MADD", key, *items[1:50]),
                                  ("BF.INSERT", key, "CAPACITY", "5", "ITEMS", *items[50:]),
                                  ("BF.MEXISTS", key, *items, *probes),
                                  ("BF.EXISTS", key, probes[0]),
                                  ("BF.CARD", key),
                                  ("BF.INFO", key, "ITEMS"),
                                  ("BF.RESERVE", key, "0.1", "60")])
        expected_adds = f.add(items)
        assert [got[0]] + got[1] + got[2] == expected_adds, layout
        assert got[3] == f.has(items + probes), layout
        assert 0 < sum(f.has(probes)) < len(probes), "the filter must be overfull enough"
        assert got[4] == f.has(probes[:1])[0]
        assert got[5] == f.card() and got[6] == [f.card()], layout
        assert isinstance(got[7], redis.ResponseError) and str(got[7]) == "item exists"
        assert set(bits_of_string(direct.get(key) or b"")) == set(f.bits()), layout
        f.free()


def test_multi_errors_are_per_command(proxy, redis_instance):
    p = proxy(*rules("g:* guava 100 0.01", "i:* guava 100 0.01 funnel int64le"))
    direct = redis_instance.client()
    direct.hset("g:hash", "f", "v")
    got = exec_multi(p.client(), [("BF.ADD", "g:hash", "a"),
                                  ("BF.EXISTS", "g:hash", "a"),
                                  ("BF.MEXISTS", "g:hash", "a", "b"),
                                  ("BF.ADD", "i:n", "12x"),
                                  ("BF.MADD", "i:n", "1", "nope"),
                                  ("BF.ADD", "i:n", "-7"),
                                  ("BF.INFO", "g:none"),
                                  ("BF.INSERT", "g:none", "NOCREATE", "ITEMS", "a"),
                                  ("BF.SCANDUMP", "i:n", "0"),
                                  ("BF.RESERVE", "g:r", "0.02", "100"),
                                  ("BF.RESERVE", "g:r2", "0.01", "100"),
                                  ("SET", "plain", "1")])
    assert str(got[0]) == WRONGTYPE
    # RedisBloom answers EXISTS on a key of another type as on a missing key.
    assert got[1] == 0 and got[2] == [0, 0]
    assert str(got[3]) == str(got[4]) == "value is not an integer or out of range"
    assert got[5] == 1
    assert str(got[6]) == str(got[7]) == "not found"
    assert str(got[8]).startswith("bloomproxy: a filter of the rule 'bf-layout i:* guava")
    assert str(got[9]).startswith("bloomproxy: this key is a filter of the rule 'bf-layout g:*")
    assert got[10] == b"OK" and direct.strlen("g:r2") == 120  # 960 bits
    assert got[11] is True
    assert direct.exists("g:none", "g:r") == 0
    assert direct.hgetall("g:hash") == {b"f": b"v"}


def test_multi_expanding_rolls_as_outside(proxy, redis_instance):
    """The same adds in one transaction and as plain commands: the same replies, cursor and
    data keys (the script rolls the filter over exactly where the plan does)."""
    p = proxy(*rules("e:{*} guava 20 0.1 expanding %s:cursor",
                     "m:{*} guava-mitz32-unrounded 20 0.1 expanding %s:cursor"))
    direct = redis_instance.client()
    client = p.client()
    batches = [[f"v{i}" for i in range(j, j + 9)] for j in range(0, 90, 9)]
    batches[3] += ["v1", "v2", "v50"]  # some present, some not yet
    for prefix in ("e", "m"):
        plain = [client.execute_command("BF.MADD", prefix + ":{plain}", *b) for b in batches]
        multi = exec_multi(client, [("BF.MADD", prefix + ":{tx}", *b) for b in batches])
        assert multi == plain
        cursor = direct.get(prefix + ":{plain}:cursor")
        assert cursor is not None and int(cursor) >= 2, "the filter must have rolled over"
        assert direct.get(prefix + ":{tx}:cursor") == cursor
        for i in range(int(cursor) + 1):
            assert direct.get(f"{prefix}:{{tx}}-{i}") == direct.get(f"{prefix}:{{plain}}-{i}"), i
        probes = [f"v{i}" for i in range(120)]
        got = exec_multi(client, [("BF.MEXISTS", prefix + ":{tx}", *probes),
                                  ("BF.CARD", prefix + ":{tx}"),
                                  ("BF.INFO", prefix + ":{tx}")])
        assert got[0] == client.execute_command("BF.MEXISTS", prefix + ":{plain}", *probes)
        assert got[1] == client.execute_command("BF.CARD", prefix + ":{plain}")
        assert got[2] == client.execute_command("BF.INFO", prefix + ":{plain}")


def test_watch_guards_a_transaction_on_a_rule_key(proxy, redis_instance):
    p = proxy(*rules("g:* guava 100 0.01"))
    client = p.client()
    other = p.client()
    assert client.execute_command("BF.ADD", "g:w", "first") == 1
    pipe = client.pipeline(transaction=True)
    pipe.watch("g:w")
    assert other.execute_command("BF.ADD", "g:w", "second") == 1  # touches the watched key
    pipe.multi()
    pipe.execute_command("BF.ADD", "g:w", "third")
    try:
        pipe.execute()
        raise AssertionError("EXEC must fail: the watched key changed")
    except redis.WatchError:
        pass
    assert client.execute_command("BF.MEXISTS", "g:w", "first", "second", "third") == [1, 1, 0]

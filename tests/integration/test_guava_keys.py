"""Key commands on the name of an expanding Guava filter (bf-layout ... expanding CURSOR_KEY):
the name is no Redis key, and DEL, UNLINK, EXISTS, TYPE, the EXPIRE family, PERSIST and the TTL
family act on the filter's keys NAME-0 .. NAME-c and its own cursor key (never on a cursor key
shared by every filter of a rule). A plain rule's key is a plain string: Redis's own answers.
"""

RULES = ["--bf-layout", "e:{*} guava 10 0.1 expanding %s:cursor",
         "--bf-layout", "s:{*} guava-unrounded 10 0.1 expanding shared-cursor",
         "--bf-layout", "g:* guava 100 0.01"]


def fill(client, name, n=40):
    client.execute_command("BF.MADD", name, *[f"v{i}" for i in range(n)])


def test_expanding_name_is_the_whole_filter(proxy, redis_instance):
    p = proxy(*RULES)
    client = p.client()
    direct = redis_instance.client()
    fill(client, "e:{a}")
    cursor = int(direct.get("e:{a}:cursor"))
    assert cursor >= 1, "the filter must span several data keys"
    keys = {f"e:{{a}}-{i}".encode() for i in range(cursor + 1)} | {b"e:{a}:cursor"}
    assert set(direct.keys("e:*")) == keys
    assert client.exists("e:{a}") == 1 and client.type("e:{a}") == b"string"
    assert client.ttl("e:{a}") == -1 and client.pttl("e:{a}") == -1
    assert client.expire("e:{a}", 100) is True
    for key in keys:
        assert 0 < direct.ttl(key) <= 100, key
    assert 0 < client.ttl("e:{a}") <= 100 and 0 < client.pttl("e:{a}") <= 100000
    assert client.execute_command("EXPIRETIME", "e:{a}") == direct.expiretime("e:{a}-0")
    assert client.expire("e:{a}", 50, gt=True) is False  # each key's own NX/XX/GT/LT answer
    assert client.persist("e:{a}") is True
    assert all(direct.ttl(key) == -1 for key in keys)
    assert client.persist("e:{a}") is False
    assert client.execute_command("BF.EXISTS", "e:{a}", "v1") == 1
    assert client.delete("e:{a}") == 1
    assert direct.keys("e:*") == []
    assert client.exists("e:{a}") == 0 and client.type("e:{a}") == b"none"
    assert client.ttl("e:{a}") == -2
    assert client.execute_command("BF.EXISTS", "e:{a}", "v1") == 0
    assert client.delete("e:{a}") == 0
    assert client.unlink("e:{a}") == 0
    fill(client, "e:{b}", 5)
    assert client.unlink("e:{b}") == 1 and direct.keys("e:*") == []


def test_a_shared_cursor_key_stays(proxy, redis_instance):
    p = proxy(*RULES)
    client = p.client()
    direct = redis_instance.client()
    fill(client, "s:{x}")
    fill(client, "s:{y}", 3)
    assert direct.exists("shared-cursor") == 1
    assert client.delete("s:{x}") == 1
    assert direct.exists("shared-cursor") == 1 and direct.keys("s:{x}*") == []
    assert client.execute_command("BF.EXISTS", "s:{y}", "v1") == 1
    assert client.expire("s:{y}", 100) is True and direct.ttl("shared-cursor") == -1


def test_other_key_commands_and_plain_rules_are_redis_own(proxy, redis_instance):
    p = proxy(*RULES)
    client = p.client()
    direct = redis_instance.client()
    client.execute_command("BF.ADD", "g:k", "a")
    assert client.type("g:k") == b"string" and client.exists("g:k") == 1
    assert client.expire("g:k", 100) is True and direct.ttl("g:k") > 0
    assert client.execute_command("BF.ADD", "g:k", "b") == 1 and direct.ttl("g:k") > 0
    assert client.delete("g:k") == 1 and direct.exists("g:k") == 0
    # Several names in one command, or another command, reach Redis as they are.
    fill(client, "e:{c}", 5)
    assert client.exists("e:{c}", "e:{c}-0") == 1
    assert client.delete("e:{c}", "nothing") == 0
    assert client.execute_command("BF.EXISTS", "e:{c}", "v1") == 1


def test_expanding_name_needs_a_hash_tag_on_a_cluster(cluster_proxy):
    p = cluster_proxy("--bf-layout", "e:* guava 10 0.1 expanding %s:cursor")
    client = p.client()
    for args in (("DEL", "e:untagged"), ("EXPIRE", "e:untagged", "10"), ("TTL", "e:untagged")):
        try:
            client.execute_command(*args)
            raise AssertionError(f"{args} must be refused")
        except Exception as e:  # redis.ResponseError
            assert str(e) == "CROSSSLOT Keys in request don't hash to the same slot", args

"""The leftover sweep (proxy/sketch/sweep.h, docs/leftovers.md): filters and sketches overwritten by
commands the proxy does not look into (SET, SUNIONSTORE, a Lua script through the proxy;
RESTORE REPLACE, RENAME onto them and DEL straight on the upstream), or deleted upstream and created
again, leave internal keys without a TTL; with a short sweep-interval and sweep-grace the sweep
deletes every one of them within its bound, and only them: the structures still alive keep all
their keys and answer as before. On a standalone Redis and on a Redis Cluster; never behind a
sharding proxy, which refuses SCAN.

Which keys are internal is what the proxy hides from KEYS (protocol/internal_keys.h): the
upstream's keys less the ones KEYS through the proxy shows.
"""

import threading
import time

from bf_vectors import has_hash_tag
from bp_helpers import wait_until
from bp_window import HandWindow

SWEEP = ("--sweep-interval", "1", "--sweep-grace", "1", "--loglevel", "verbose")
SHARDED = ("--bf-max-shard-bytes", "64")
# The documented bound with these options is a few seconds (grace + 2 intervals + 4 passes of
# a small keyspace); the deadline leaves room for a slow machine.
DEADLINE = 60
ITEMS = [f"item{i}" for i in range(300)]


def as_bytes(s):
    return s.encode() if isinstance(s, str) else s


def sweep_passes(proxy):
    with open(proxy.log_path, "rb") as f:
        return f.read().count(b"sweep pass ")


def wait_passes(proxy, n):
    """Waits until `n` more passes than now have finished."""
    start = sweep_passes(proxy)
    wait_until(lambda: sweep_passes(proxy) >= start + n, DEADLINE, interval=0.1,
               what=f"{n} sweep passes")


class Upstream:
    """The upstream's keys, straight from its nodes (one node, or every cluster master)."""

    def __init__(self, nodes, proxy_client):
        self.nodes = nodes  # redis-py clients
        self.proxy = proxy_client

    def where(self):
        """{key: the node holding it}."""
        return {k: n for n in self.nodes for k in n.keys("*")}

    def keys(self):
        return set(self.where())

    def node_of(self, key):
        return self.where().get(as_bytes(key))

    def internal(self):
        """Internal keys: what the upstream has and the proxy hides."""
        return self.keys() - set(self.proxy.keys("*"))

    def without_ttl(self, keys):
        where = self.where()
        return {k for k in keys if k in where and where[k].pttl(k) == -1}

    def owned_by(self, names):
        """The internal keys of the live structures `names` (simple names: prefix {name})."""
        owned = set()
        ids = {}
        for name in names:
            name = as_bytes(name)
            node = self.node_of(name)
            assert node is not None, name
            ids[name] = node.hget(name, "id")
            assert ids[name], name
        for k in self.internal():
            for name, fid in ids.items():
                prefix = name if has_hash_tag(name) else b"{" + name + b"}"
                if (b":bf:" + fid + b":" in k or b":cms:" + fid + b":" in k
                        or b":cf:" + fid + b":" in k
                        or k in (prefix + b":bf:m:" + name, prefix + b":cms:m:" + name,
                                 prefix + b":cf:m:" + name)):
                    owned.add(k)
        return owned


def make_live(c):
    """Structures that stay: a scaled sharded filter, a sketch, a filter deleted and created
    again through the proxy. Returns their names."""
    c.execute_command("BF.RESERVE", "live:bf", "0.01", "50")
    for i in range(0, len(ITEMS), 50):
        c.execute_command("BF.MADD", "live:bf", *ITEMS[i:i + 50])
    c.execute_command("CMS.INITBYDIM", "live:cms", "40", "3")
    c.execute_command("CMS.INCRBY", "live:cms", "a", "5", "b", "7")
    # A cuckoo filter grown to several sub-filters, each over several data keys.
    c.execute_command("CF.RESERVE", "live:cf", "64", "EXPANSION", "2")
    c.execute_command("CF.INSERT", "live:cf", "ITEMS", *ITEMS[:200])
    c.execute_command("BF.ADD", "live:again", "x")
    assert c.delete("live:again") == 1
    c.execute_command("BF.RESERVE", "live:again", "0.01", "10")
    c.execute_command("BF.ADD", "live:again", "y")
    return ["live:bf", "live:cms", "live:cf", "live:again"]


def check_live(c):
    assert c.execute_command("BF.MEXISTS", "live:bf", *ITEMS) == [1] * len(ITEMS)
    info = c.execute_command("BF.INFO", "live:bf")
    assert info[info.index(b"Number of filters") + 1] >= 3
    assert c.execute_command("CMS.QUERY", "live:cms", "a", "b", "c") == [5, 7, 0]
    assert c.execute_command("CF.MEXISTS", "live:cf", *ITEMS[:200]) == [1] * 200
    assert c.execute_command("BF.EXISTS", "live:again", "y") == 1
    assert c.execute_command("BF.EXISTS", "live:again", "x") == 0


def filter_with_items(c, name, n=120):
    c.execute_command("BF.RESERVE", name, "0.01", "40")
    c.execute_command("BF.MADD", name, *ITEMS[:n])


def overwrite_all(c, node_of, tag=""):
    """Overwrites and deletes structures in every way that leaves internal keys behind: SET, a
    Lua script and SUNIONSTORE through the proxy; RESTORE REPLACE, RENAME and DEL on the upstream.
    `tag` keeps the names of a multi-key command in one cluster slot. `node_of(key)` is the
    upstream node (redis-py) holding `key`."""
    # SET, a Lua script, RESTORE REPLACE and SUNIONSTORE through the proxy.
    filter_with_items(c, f"v:set{tag}")
    assert c.set(f"v:set{tag}", "plain")
    c.execute_command("CMS.INITBYDIM", f"v:cms{tag}", "30", "2")
    c.execute_command("CMS.INCRBY", f"v:cms{tag}", "a", "1")
    assert c.set(f"v:cms{tag}", "plain")
    c.execute_command("CF.RESERVE", f"v:cf{tag}", "64", "EXPANSION", "2")
    c.execute_command("CF.INSERT", f"v:cf{tag}", "ITEMS", *ITEMS[:200])
    assert c.set(f"v:cf{tag}", "plain")
    filter_with_items(c, f"v:lua{tag}")
    c.eval("return redis.call('SET', KEYS[1], 'x')", 1, f"v:lua{tag}")
    # RESTORE REPLACE straight on the upstream (as a restore tool would run it).
    filter_with_items(c, f"v:restore{tag}")
    assert c.set(f"plain{tag}", "value")
    node = node_of(f"v:restore{tag}")
    node.restore(f"v:restore{tag}", 0, node.dump(f"plain{tag}"), replace=True)
    filter_with_items(c, f"v:union{tag}")
    c.sadd(f"set{tag}", "m")
    c.sunionstore(f"v:union{tag}", [f"set{tag}"])
    # RENAME onto a filter, and DEL, straight on the upstream (the proxy would take the
    # filter's keys along).
    filter_with_items(c, f"v:rename{tag}")
    assert c.set(f"src{tag}", "s")
    node = node_of(f"v:rename{tag}")
    assert node.rename(f"src{tag}", f"v:rename{tag}")
    filter_with_items(c, f"v:del{tag}")
    assert node_of(f"v:del{tag}").delete(f"v:del{tag}") == 1
    # Deleted upstream, then created again through the proxy: the old keys are leftovers.
    filter_with_items(c, f"v:again{tag}")
    assert node_of(f"v:again{tag}").delete(f"v:again{tag}") == 1
    c.execute_command("BF.RESERVE", f"v:again{tag}", "0.01", "10")
    c.execute_command("BF.ADD", f"v:again{tag}", "fresh")
    # And deleted through the proxy, which leaves nothing.
    filter_with_items(c, f"v:proxydel{tag}")
    assert c.delete(f"v:proxydel{tag}") == 1


def check_swept(up, c, live, extra_live=()):
    owned_before = up.owned_by(live)
    assert owned_before, "the live structures have internal keys"
    leftovers = up.without_ttl(up.internal()) - up.owned_by(list(live) + list(extra_live))
    assert len(leftovers) >= 20, sorted(leftovers)  # the overwrites did leave keys behind

    def clean():
        left = up.without_ttl(up.internal()) - up.owned_by(list(live) + list(extra_live))
        return not left

    wait_until(clean, DEADLINE, interval=0.2, what="no leftover internal keys")
    assert not (leftovers & up.keys())
    # The live structures lost nothing.
    assert up.owned_by(live) == owned_before
    check_live(c)
    for name in extra_live:
        assert c.execute_command("BF.EXISTS", name, "fresh") == 1


def test_overwritten_structures_are_swept(proxy, redis_instance):
    p = proxy(*SWEEP, *SHARDED)
    c = p.client()
    r = redis_instance.client()
    up = Upstream([r], c)
    live = make_live(c)
    overwrite_all(c, lambda key: r)
    check_swept(up, c, live, extra_live=["v:again"])
    with open(p.log_path, "rb") as f:
        assert b"orphans deleted" in f.read()
    # The lock that makes one proxy per upstream sweep: held by this proxy, with a TTL.
    assert r.pttl("bloomproxy:sweep-lock") > 0


def test_other_databases_are_swept(proxy, redis_instance):
    p = proxy(*SWEEP, *SHARDED)
    c = p.client(db=3)
    r = redis_instance.client(db=3)
    up = Upstream([r], c)
    c.execute_command("BF.RESERVE", "keep", "0.01", "40")
    c.execute_command("BF.MADD", "keep", *ITEMS[:100])
    filter_with_items(c, "gone")
    assert c.set("gone", "x")
    left = up.without_ttl(up.internal()) - up.owned_by(["keep"])
    assert left
    wait_until(lambda: not (up.without_ttl(up.internal()) - up.owned_by(["keep"])), DEADLINE,
               interval=0.2, what="db 3 swept")
    assert c.execute_command("BF.MEXISTS", "keep", *ITEMS[:100]) == [1] * 100


def test_creation_seen_by_a_pass_is_not_swept(proxy, redis_instance):
    """A filter whose data keys exist before its name (as while BF.RESERVE creates it) is seen
    unowned by a pass; its name then appears. The first sighting deletes nothing, so the
    filter is whole."""
    p = proxy("--sweep-interval", "1", "--sweep-grace", "30", "--loglevel", "verbose",
              *SHARDED)
    c = p.client()
    r = redis_instance.client()
    up = Upstream([r], c)
    filter_with_items(c, "pending", 100)
    keys = up.internal()
    assert len(keys) >= 4
    # The name goes away (its keys are now nobody's, as during a creation) ...
    assert r.rename("pending", "elsewhere")
    wait_passes(p, 2)
    assert all(r.exists(k) for k in keys)
    # ... and is published: every key is there and the filter answers.
    assert r.rename("elsewhere", "pending")
    wait_passes(p, 2)
    assert all(r.exists(k) for k in keys)
    assert c.execute_command("BF.MEXISTS", "pending", *ITEMS[:100]) == [1] * 100


def test_creations_while_sweeping_stay_whole(proxy, redis_instance):
    """Structures created (and scaled: new links) by several clients while passes run all
    the time keep every key: a creation writes its data keys a moment before its name, far
    less than the grace."""
    p = proxy("--sweep-interval", "1", "--sweep-grace", "1", "--sweep-rate", "100000",
              "--loglevel", "verbose", *SHARDED)
    errors = []
    names = []

    def worker(w):
        try:
            c = p.client()
            for i in range(40):
                name = f"w{w}:f{i}"
                c.execute_command("BF.MADD", name, *ITEMS[:60])
                c.execute_command("CMS.INITBYDIM", f"w{w}:s{i}", "20", "2")
                c.execute_command("CMS.INCRBY", f"w{w}:s{i}", "k", str(i + 1))
                names.append((name, f"w{w}:s{i}", i + 1))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    wait_passes(p, 1)
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    wait_passes(p, 3)  # well past the grace: anything wrongly taken for a leftover is gone
    c = p.client()
    r = redis_instance.client()
    up = Upstream([r], c)
    for bf, cms, n in names:
        assert c.execute_command("BF.MEXISTS", bf, *ITEMS[:60]) == [1] * 60, bf
        assert c.execute_command("CMS.QUERY", cms, "k") == [n], cms
    assert up.internal() == up.owned_by([n for bf, cms, _ in names for n in (bf, cms)])


def test_cluster_overwrites_are_swept(cluster_proxy, redis_cluster):
    redis_cluster.flushall()
    p = cluster_proxy(*SWEEP, *SHARDED)
    c = p.client()
    masters = [m.client() for m in redis_cluster.masters()]
    up = Upstream(masters, c)
    live = make_live(c)
    overwrite_all(c, lambda key: redis_cluster.client_for_key(key), tag="{c}")
    # Keys on every master.
    where = up.where()
    assert len({id(where[k]) for k in up.internal()}) >= 2
    check_swept(up, c, live, extra_live=["v:again{c}"])
    redis_cluster.flushall()


def test_not_behind_a_sharding_proxy(sharding_proxy, twemproxy):
    """twemproxy refuses SCAN: the sweep does not run (no lock is ever taken, no pass)."""
    p = sharding_proxy(*SWEEP)
    c = p.client()
    c.execute_command("BF.ADD", "{t}f", "a")
    time.sleep(3)  # three intervals: a sweep would have tried by now
    with open(p.log_path, "rb") as f:
        log = f.read()
    # (The command line at the top names the options.)
    for line in log.splitlines()[1:]:
        assert b"sweep" not in line, line
    assert not any(b.exists("bloomproxy:sweep-lock") for b in twemproxy.clients())


def test_windowed_filters_slots_are_kept_while_their_filter_lives(proxy, redis_instance):
    """A windowed filter's slots (built by hand: bp_window) carry a TTL of their own, but are
    owned by their filter: passes well past the grace delete none of them. Once the filter's
    name is deleted behind the proxy's back, its marker and slots are leftovers: the slots'
    names go first, their data keys once their slot is gone (docs/leftovers.md)."""
    p = proxy(*SWEEP)
    c = p.client()
    r = redis_instance.client()
    up = Upstream([r], c)
    live = HandWindow(r, "win:live")
    gone = HandWindow(r, "win:gone")
    # A plain filter named after a slot's filter, of the slot's id but no window: not an owner.
    fake = HandWindow(r, "win:fake")
    r.hdel("win:fake", "window", "slots")
    r.hset("win:fake", "l0", "64 512 10 7 0 0000000000000000 0000000000000000")
    everything = live.keys() | gone.keys() | fake.keys()
    assert up.internal() == everything - {b"win:live", b"win:gone", b"win:fake"}
    # And a slot the proxy's plan made.
    HandWindow(r, "win:plan", skip=range(10))
    assert c.execute_command("BF.MADD", "win:plan", *ITEMS[:50]) == [1] * 50
    planned = up.keys() - everything - {b"win:plan", b"bloomproxy:sweep-lock"}
    assert len(planned) >= 4, planned  # the name's marker, a slot's hash, bits and count
    wait_passes(p, 3)  # every key seen, and seen again past the grace
    assert up.keys() >= live.keys() | gone.keys() | planned
    assert c.execute_command("BF.MEXISTS", "win:plan", *ITEMS[:50]) == [1] * 50
    assert all(r.pttl(k) > 0 for k in live.slot_keys())
    # The fake's "slots" are nobody's.
    wait_until(lambda: not (fake.slot_keys() & up.keys()), DEADLINE, interval=0.2,
               what="slots of no windowed filter swept")
    assert up.keys() >= live.keys() | gone.keys()
    assert r.delete("win:gone") == 1
    wait_until(lambda: not (gone.keys() & up.keys()), DEADLINE, interval=0.2,
               what="the deleted windowed filter's keys swept")
    assert up.keys() >= live.keys()
    assert c.type("win:live") == b"MBbloom--"

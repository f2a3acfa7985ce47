"""Several stateless bloomproxies serving the same filters at once: concurrent BF.ADD/BF.MADD
through three proxies into one scaling filter must lose no item, count every successful add once,
and create each sub-filter exactly once, never overfilled; sequential use through several
proxies gives exactly RedisBloom's replies."""

import random
import threading

from bf_vectors import (ModelFilter, chain_links, filters_needed, info_size, parse_dump_header,
                        parse_info, run_commands, scandump_all)
from bp_helpers import RawConn, encode_command as cmd, parse_resp

ERROR, CAPACITY, EXPANSION = 0.01, 1000, 2


def run_threads(target, n, timeout=90):
    errors = []
    barrier = threading.Barrier(n)

    def wrapper(tid):
        try:
            barrier.wait(10)
            target(tid)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"thread {tid}: {exc!r}")

    threads = [threading.Thread(target=wrapper, args=(t,)) for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), f"threads still running after {timeout} s"
    assert not errors, "\n".join(errors[:20])


def pipelined_adds(conn, key, items):
    """BF.ADD of each item, sent in one pipeline; the replies, each 0 or 1."""
    conn.send(b"".join(cmd("BF.ADD", key, it) for it in items))
    got = [conn.read_reply() for _ in items]
    assert all(v in (0, 1) for v in got), f"BF.ADD replies {got!r}"
    return got


def check_filter_consistent(proxies, key, all_items, ones, capacity, expansion, error):
    """Every item found through every proxy (no false negatives), counts equal to the adds that
    replied 1, the same metadata and bits through every proxy, and a chain that scaled as the
    issue requires of concurrent writers: each sub-filter created once, with the chain's own
    parameters, no sub-filter ever holding more than its capacity (so the chain keeps its error
    bound), and a new one started only when the previous one was (nearly) full. Concurrent
    writers reserve places in the newest sub-filter before they write; places reserved for
    items that turn out not to be new are given back after a successor may already exist, so a
    full sub-filter can end a few items short of its capacity, never over it."""
    n_min = filters_needed(ones, capacity, expansion)
    dumps = []
    for p in proxies:
        with p.raw(timeout=30) as c:
            for i in range(0, len(all_items), 500):
                batch = all_items[i:i + 500]
                got = c.command("BF.MEXISTS", key, *batch)
                missing = [batch[j] for j, v in enumerate(got) if v != 1]
                assert not missing, (f"proxy {p.port}: {len(missing)} added items not found "
                                     f"(false negatives), e.g. {missing[:5]}")
            assert c.command("BF.CARD", key) == ones, f"proxy {p.port}: BF.CARD"
            dump = [raw for _, raw, _ in scandump_all(c, key)]
            header = parse_dump_header(parse_resp(dump[0])[0][1])
            n = len(header["links"])
            per_link = [(link["capacity"], link["items"]) for link in header["links"]]
            info = parse_info(c.command("BF.INFO", key))
            assert info == {"Capacity": sum(capacity * expansion ** i for i in range(n)),
                            "Size": info_size(chain_links(error, capacity, expansion, n=n)),
                            "Number of filters": n, "Number of items inserted": ones,
                            "Expansion rate": expansion}, \
                f"proxy {p.port}: BF.INFO {info}; (capacity, items) per sub-filter: {per_link}"
            dumps.append(dump)
    assert all(d == dumps[0] for d in dumps[1:]), "SCANDUMP differs between proxies"
    header = parse_dump_header(parse_resp(dumps[0][0])[0][1])
    links = header["links"]
    per_link = [(link["capacity"], link["items"]) for link in links]
    assert header["total"] == ones
    assert n_min <= len(links) <= n_min + 1, f"{len(links)} sub-filters for {ones}: {per_link}"
    for i, link in enumerate(links):
        assert link["capacity"] == capacity * expansion ** i
        assert link["items"] <= link["capacity"], f"sub-filter {i} overfilled: {per_link}"
        if i < len(links) - 1:
            assert link["items"] >= 0.9 * link["capacity"], \
                f"sub-filter {i} left far from full before its successor: {per_link}"
        else:
            assert 1 <= link["items"], f"last sub-filter: {per_link}"


def test_sequential_adds_alternating_between_proxies(proxy):
    """No concurrency at all: batches added one after the other, alternately through two
    proxies, give exactly RedisBloom's replies, counts and bits (nothing cached per proxy)."""
    a, b = proxy(), proxy()
    model = ModelFilter(0.01, 200)
    items = [f"alt:{i}".encode() for i in range(1500)]
    with a.raw() as ca, b.raw() as cb:
        assert ca.command("BF.RESERVE", "alt", "0.01", "200") == b"OK"
        for n, i in enumerate(range(0, 1500, 150)):
            conn, via = (ca, "A") if n % 2 == 0 else (cb, "B")
            batch = items[i:i + 150]
            expected = [model.add(x) for x in batch]
            got = conn.command("BF.MADD", "alt", *batch)
            if got != expected:
                header = parse_dump_header(ca.command("BF.SCANDUMP", "alt", "0")[1])
                diffs = [j for j, (g, e) in enumerate(zip(got, expected)) if g != e]
                raise AssertionError(
                    f"batch {n} (items {i}..{i + 149}) through proxy {via}: {len(diffs)} replies "
                    f"differ from RedisBloom's, first at {diffs[:5]}; (capacity, items) per "
                    f"sub-filter: proxy {[(k['capacity'], k['items']) for k in header['links']]}"
                    f", RedisBloom {[(k.capacity, k.items) for k in model.links]}")
        for conn in (ca, cb):
            assert run_commands(conn, [("BF.INFO", "alt"), ("BF.CARD", "alt")]) == \
                [model.info_reply(), b":%d\r\n" % model.total]
            assert [raw for _, raw, _ in scandump_all(conn, "alt")] == model.scandump_replies()


def test_three_proxies_three_writers_one_scaling_filter(proxy):
    proxies = [proxy() for _ in range(3)]
    key = "conc:bf"
    with proxies[0].raw() as c:
        assert c.command("BF.RESERVE", key, str(ERROR), str(CAPACITY)) == b"OK"

    # 3 x 3000 items over a universe of 6000: each writer shares 1000 items with the next one.
    universe = [f"conc-item-{j}".encode() for j in range(6000)]
    per_writer = [[universe[(2000 * t + j) % 6000] for j in range(3000)] for t in range(3)]
    replies = [dict() for _ in range(3)]  # writer -> {item: [replies]}

    def writer(tid):
        items = list(per_writer[tid])
        random.Random(tid).shuffle(items)
        got = replies[tid]
        with RawConn(proxies[tid].port, timeout=60) as c:
            for i in range(0, len(items), 100):
                batch = items[i:i + 100]
                madd, singles = batch[:60], batch[60:]
                res = c.command("BF.MADD", key, *madd)
                assert isinstance(res, list) and len(res) == len(madd), f"MADD reply {res!r}"
                for it, v in zip(madd, res):
                    assert v in (0, 1), f"MADD element {v!r}"
                    got.setdefault(it, []).append(v)
                # Single adds, pipelined 10 at a time.
                for j in range(0, len(singles), 10):
                    part = singles[j:j + 10]
                    for it, v in zip(part, pipelined_adds(c, key, part)):
                        got.setdefault(it, []).append(v)

    run_threads(writer, 3)

    ones = sum(v for r in replies for vs in r.values() for v in vs)
    # An item is new only once: of the writers sharing an item at most one may get 1 for it.
    per_item = {}
    for r in replies:
        for it, vs in r.items():
            per_item[it] = per_item.get(it, 0) + sum(vs)
    twice = [it for it, n in per_item.items() if n > 1]
    assert not twice, f"{len(twice)} items reported as newly added more than once: {twice[:5]}"
    check_filter_consistent(proxies, key, universe, ones, CAPACITY, EXPANSION, ERROR)
    # 6000 distinct items into 1000 + 2000 + 4000 sub-filters at error <= 0.005: only a few
    # false positives.
    assert 5800 <= ones <= 6000, ones
    assert filters_needed(ones, CAPACITY, EXPANSION) == 3


def test_same_items_through_three_proxies_while_scaling(proxy):
    """Three proxies add the same items, each in its own order, to filters that start small and
    scale many times: at every scale-up some item is in flight through two proxies at once,
    one writing the old newest link and one the new link. Of all the adds of one item exactly
    one answers 1, and BF.CARD counts each item once."""
    proxies = [proxy() for _ in range(3)]
    keys = [f"conc:same:{n}" for n in range(6)]
    with proxies[0].raw() as c:
        for key in keys:
            assert c.command("BF.RESERVE", key, "0.01", "10", "EXPANSION", "2") == b"OK"
    items = [f"same-{j}".encode() for j in range(2000)]
    replies = [{key: {} for key in keys} for _ in range(3)]

    def writer(tid):
        with RawConn(proxies[tid].port, timeout=60) as c:
            for n, key in enumerate(keys):
                order = list(items)
                random.Random(100 * n + tid).shuffle(order)
                for i in range(0, len(order), 20):
                    part = order[i:i + 20]
                    replies[tid][key].update(zip(part, pipelined_adds(c, key, part)))

    run_threads(writer, 3)
    for key in keys:
        per_item = {it: sum(r[key][it] for r in replies) for it in items}
        twice = [it for it, n in per_item.items() if n > 1]
        assert not twice, \
            f"{key}: {len(twice)} items reported as newly added more than once: {twice[:5]}"
        ones = sum(per_item.values())
        check_filter_consistent(proxies, key, items, ones, 10, 2, 0.01)
        assert 1900 <= ones <= 2000, (key, ones)


def test_concurrent_auto_create_and_reserve(proxy):
    """Three proxies race to create the same filters: one BF.RESERVE wins, the others get
    'item exists'; adds to a missing key through all three end in one default filter."""
    proxies = [proxy() for _ in range(3)]
    results = [None] * 3

    def reserver(tid):
        out = []
        with proxies[tid].raw() as c:
            for k in range(30):
                c.send(cmd("BF.RESERVE", f"race:{k}", "0.01", "100"))
                out.append(c.read_reply_raw())
        results[tid] = out

    run_threads(reserver, 3)
    for k in range(30):
        got = sorted(results[t][k] for t in range(3))
        assert got == [b"+OK\r\n", b"-ERR item exists\r\n", b"-ERR item exists\r\n"], (k, got)

    items = [[f"auto-{t}-{i}".encode() for i in range(400)] for t in range(3)]
    ones = [0, 0, 0]

    def adder(tid):
        with proxies[tid].raw(timeout=30) as c:
            for i in range(0, 400, 20):
                batch = items[tid][i:i + 20]
                if (i // 20) % 2:
                    res = c.command("BF.MADD", "race:auto", *batch)
                else:
                    c.send(b"".join(cmd("BF.ADD", "race:auto", it) for it in batch))
                    res = [c.read_reply() for _ in batch]
                assert all(v in (0, 1) for v in res), res
                ones[tid] += sum(res)

    run_threads(adder, 3)
    total = sum(ones)
    all_items = [it for part in items for it in part]
    # Default filter: error 0.01, capacity 100, expansion 2.
    check_filter_consistent(proxies, "race:auto", all_items, total, 100, 2, 0.01)


def test_three_clients_one_proxy_one_scaling_filter(bp):
    """The same through a single proxy: concurrent clients of one proxy must not overfill a
    sub-filter either."""
    key = "conc:one"
    with bp.raw() as c:
        assert c.command("BF.RESERVE", key, "0.01", "100") == b"OK"
    items = [[f"one-{t}-{i}".encode() for i in range(600)] for t in range(3)]
    ones = [0, 0, 0]

    def writer(tid):
        with bp.raw(timeout=30) as c:
            for i in range(0, 600, 30):
                res = c.command("BF.MADD", key, *items[tid][i:i + 30])
                assert all(v in (0, 1) for v in res), res
                ones[tid] += sum(res)

    run_threads(writer, 3)
    check_filter_consistent([bp], key, [x for part in items for x in part], sum(ones), 100, 2,
                            0.01)

"""The report of bench/cpu_cost.sh: CPU time per request per process, ceilings and budgets.

    cpu_cost_report.py CSV NCPU CLK_TCK

Reads the runs (one row each: req/s, redis-benchmark's CPU ticks, and /proc tick counters before
and after: the machine's total and busy time, redis-server's and the middle's utime and stime,
the softirq threads' time) and prints two markdown tables: the median cost per request of each target, and for each
of the issue's ratios the measured value, the ratio of the two ceilings, and the middle's budget.
"""

import csv
import statistics
import sys
from collections import defaultdict

CASES = {
    "1": "GET c50 P1",
    "2": "GET c50 P16",
    "3": "GET c1 P1",
    "4": "BF.ADD c50 P16",
    "5": "BF.ADD c50 P1",
}
# (case, numerator, denominator, the target; None: the target is another ratio)
RATIOS = [
    ("1", "proxy", "direct", 0.95),
    ("1", "twemproxy", "direct", None),
    ("2", "proxy", "direct", 0.6),
    ("2", "proxy", "twemproxy", 1.5),
    ("3", "proxy", "direct", None),
    ("3", "twemproxy", "direct", None),
    ("4", "proxy", "floor", 1.0),
    ("5", "proxy", "floor", 0.8),
]
MIDDLES = ("proxy", "twemproxy")


def per_request(row, tck):
    """The run's cost in µs of CPU per request, by process, and how busy the machine was."""
    n = int(row["requests"])

    def us(ticks):
        return ticks * 1e6 / tck / n

    def delta(name):
        return int(row[name + "1"]) - int(row[name + "0"])

    cost = {
        "redis": us(delta("redis_u") + delta("redis_s")),
        "mid_user": us(delta("mid_u")),
        "mid_sys": us(delta("mid_s")),
        "bench": us(int(row["bench_ticks"])),
        "ksoftirqd": us(delta("ksoftirqd")),
    }
    cost["mid"] = cost["mid_user"] + cost["mid_sys"]
    cost["all"] = cost["redis"] + cost["mid"] + cost["bench"] + cost["ksoftirqd"]
    total = max(1, delta("total"))
    cost["busy_pct"] = 100 * delta("busy") / total
    # The machine's busy time not spent by the four: other processes (noise).
    cost["other_pct"] = max(0.0, 100 * (delta("busy") - cost["all"] * n * tck / 1e6) / total)
    return cost


def ceiling(cost, ncpu):
    """Req/s at which the CPUs are full, or a single-threaded process uses a whole core."""
    limits = [ncpu * 1e6 / cost["all"]]
    limits += [1e6 / cost[p] for p in ("redis", "mid", "bench") if cost[p] > 0]
    return min(limits)


def main():
    path, ncpu, tck = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runs = defaultdict(list)  # (case, target) -> [(rps, cost)]
    with open(path) as f:
        for row in csv.DictReader(f):
            runs[(row["case"], row["target"])].append(
                (float(row["rps"]), per_request(row, tck)))

    med = {}
    for key, rs in runs.items():
        cost = {k: statistics.median(c[k] for _, c in rs) for k in rs[0][1]}
        med[key] = (statistics.median(r for r, _ in rs), cost, len(rs))

    print("Median per target: req/s, and CPU per request in µs: each process's user + system "
          "time (softirq work done in its context included), the kernel's softirq threads, and "
          "all of them. Machine busy: how busy the CPUs were; other: the share of the CPUs "
          "other processes used (noise). Ceiling: the req/s at which the "
          f"{ncpu} CPUs would be full at that cost, or one single-threaded process would use a "
          "whole core.")
    print()
    print("| case | target | runs | req/s | redis-server | middle (user / sys) | "
          "redis-benchmark | ksoftirqd | all | machine busy (other) | ceiling req/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (case, target), (rps, c, n) in sorted(med.items()):
        mid = (f"{c['mid']:.1f} ({c['mid_user']:.1f} / {c['mid_sys']:.1f})"
               if target in MIDDLES else "")
        print(f"| {case}. {CASES[case]} | {target} | {n} | {rps:,.0f} | {c['redis']:.1f} | {mid} "
              f"| {c['bench']:.1f} | {c['ksoftirqd']:.1f} | {c['all']:.1f} "
              f"| {c['busy_pct']:.0f} % ({c['other_pct']:.0f} %) | {ceiling(c, ncpu):,.0f} |")
    print()
    print("Ratios: measured (of the median req/s), and of the two ceilings (what the measured "
          "ratio tends to when both sides use the machine alike). Middle's budget: the CPU per "
          "request the middle could spend if the target ratio were met, with every other cost "
          "per request as measured and the CPUs 100 % busy (negative: out of reach even with a "
          "middle that costs nothing; n/a: the case is latency-bound, the machine mostly idle).")
    print()
    print("| case | ratio | measured | of the ceilings | issue's target | middle's budget µs "
          "| middle spends µs |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for case, a, b, goal in RATIOS:
        if (case, a) not in med or (case, b) not in med:
            continue
        (ra, ca, _), (rb, cb, _) = med[(case, a)], med[(case, b)]
        budget = "n/a"
        if goal is not None and ca["busy_pct"] - ca["other_pct"] > 60:
            need = goal * rb
            budget = f"{ncpu * 1e6 / need - (ca['all'] - ca['mid']):.1f}"
            if ca["redis"] * need > 1e6:
                budget += " (Redis would need more than a core)"
        print(f"| {case}. {CASES[case]} | {a} / {b} | {ra / rb:.2f} "
              f"| {ceiling(ca, ncpu) / ceiling(cb, ncpu):.2f} "
              f"| {'' if goal is None else goal} | {budget if goal is not None else ''} "
              f"| {ca['mid']:.1f} |")


if __name__ == "__main__":
    main()

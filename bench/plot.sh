#!/usr/bin/env bash
# Charts (gnuplot, PNG) of the results of compare.sh and scaling.sh. See bench/README.md.
#
# Usage: bench/plot.sh [--publish] [--scaling] [CSV]
#   CSV          a bench/results/compare-*.csv or scaling-*.csv (default: the latest compare-*.csv,
#                with --scaling the latest scaling-*.csv)
#   --scaling    default to the latest scaling-*.csv instead
#   --publish    also copy the chart to docs/img/compare.png (docs/img/scaling.png)
#
# The chart goes next to the CSV, same name with .png. compare.sh and scaling.sh run this at
# their end. compare chart: grouped bars of the medians per case and test (direct / bloomproxy /
# twemproxy), and the BF cases (bloomproxy vs. the BITFIELD floor), with the min-max of the
# rounds as error bars. scaling chart: req/s vs. clients, one panel per pipeline depth.
#
# Environment: PLOT_WIDTH, PLOT_HEIGHT (pixels; default 1400 x 620, scaling 1400 x 760), PLOT_TERM (pngcairo, or
# png if gnuplot lacks cairo).
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

PUBLISH=0 KIND=compare CSV=""
while (($#)); do
  case "$1" in
    --publish) PUBLISH=1; shift ;;
    --scaling) KIND=scaling; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage; die "unknown argument: $1" ;;
    *) [[ -z "$CSV" ]] || die "more than one CSV given"; CSV="$1"; shift ;;
  esac
done

command -v gnuplot >/dev/null || die "gnuplot not found (apt-get install gnuplot-nox, or scripts/deps.sh --bench)"
if [[ -z "$CSV" ]]; then
  # Timestamps in the names sort chronologically. (bf-compare-* does not match compare-*.)
  CSV="$(find "$BENCH_DIR/results" -maxdepth 1 -name "$KIND-*.csv" 2>/dev/null | sort | tail -n 1)"
  [[ -n "$CSV" ]] || die "no bench/results/$KIND-*.csv yet: run bench/$KIND.sh first"
fi
[[ -f "$CSV" ]] || die "no such file: $CSV"
case "$(basename "$CSV")" in
  compare-*) KIND=compare ;;
  scaling-*) KIND=scaling ;;
  *) die "cannot tell the chart kind from the name $(basename "$CSV") (want compare-* or scaling-*)" ;;
esac
PNG="${CSV%.csv}.png"
MD="${CSV%.csv}.md"

TERM_NAME="$(gnuplot_term)"

bench_init
# The Python part writes the data blocks and the gnuplot script; gnuplot draws.
"$BENCH_PY" - "$KIND" "$CSV" "$MD" "$PNG" "$TERM_NAME" "${PLOT_WIDTH:-1400}" "${PLOT_HEIGHT:-}" \
  >"$BENCH_TMP/plot.gp" <<'EOF'
import csv, os, re, statistics, sys
from collections import OrderedDict, defaultdict

kind, path, md, png, term, width, height = sys.argv[1:8]
width, height = int(width), int(height or (620 if kind == "compare" else 760))
rows = list(csv.DictReader(open(path)))
if not rows:
    sys.exit(f"{path}: no results")
stamp = re.sub(r"^(compare|scaling)-", "", os.path.basename(path)[:-4])
rounds = len({r["round"] for r in rows})

# Machine / versions from the first lines of the markdown table written next to the CSV.
setup = []
if os.path.exists(md):
    head = open(md).read(2000)
    for pat in (r"redis-server [0-9.]+", r"\d+ CPU\(s\)"):
        m = re.search(pat, head)
        if m:
            setup.append(m.group(0))
setup = ", ".join(setup)

def esc(s):
    return s.replace("\\", "\\\\").replace('"', '\\"')

def kfmt(v):
    return f"{v / 1e6:.2f}M" if v >= 995000 else f"{v / 1e3:.0f}k" if v >= 10000 else f"{v / 1e3:.1f}k"

if term == "pngcairo":
    print(f'set terminal pngcairo size {width},{height} font "DejaVu Sans,10" noenhanced')
else:
    print(f'set terminal png size {width},{height} font "DejaVuSans,9" noenhanced')
print(f'set output "{esc(png)}"')
print("set datafile separator whitespace")
print("set grid ytics lc rgb '#dddddd'")
print("set border 3; set tics nomirror")
print("set format y '%g'")   # the data are in thousands

COLORS = {"direct": "#4c72b0", "proxy": "#dd8452", "twemproxy": "#8c8c8c", "floor": "#55a868",
          "GET direct": "#4c72b0", "GET proxy": "#dd8452", "BF.ADD proxy": "#c44e52"}
NAMES = {"direct": "direct Redis", "proxy": "bloomproxy", "twemproxy": "twemproxy",
         "floor": "floor: BITFIELD(_RO) → Redis, 8 fixed offsets"}

if kind == "compare":
    vals = defaultdict(list)
    groups = OrderedDict()  # (case, test) in first-seen order
    for r in rows:
        groups[(r["case"], r["test"])] = None
        vals[(r["case"], r["test"], r["target"])].append(float(r["rps"]))
    pass_groups = [g for g in groups if not g[1].startswith("BF.")]
    bf_groups = [g for g in groups if g[1].startswith("BF.")]
    pass_series = [t for t in ("direct", "proxy", "twemproxy") if any(vals[g + (t,)] for g in pass_groups)]
    bf_series = [t for t in ("proxy", "floor") if any(vals[g + (t,)] for g in bf_groups)]
    ymax = max(max(v) for v in vals.values() if v) * 1.14

    def med(g, t):
        v = vals[g + (t,)]
        return statistics.median(v) if v else None

    def ratio_line(g, a, b, name):
        ma, mb = med(g, a), med(g, b)
        return "\\n" + esc(f"{name} {ma / mb:.2f}") if ma and mb else ""

    def panel(glist, series, title, ratios):
        """Write one data block per series; return the plot command."""
        n = len(series)
        w = 0.8 / n
        tics = []
        for gi, g in enumerate(glist):
            lab = esc(f"{g[1]}  {g[0]}") + "".join(ratio_line(g, *x) for x in ratios)
            tics.append(f'"{lab}" {gi}')
        parts = []
        for si, t in enumerate(series):
            name = f"$d_{kind}_{len(blocks)}_{si}"
            lines = []
            for gi, g in enumerate(glist):
                v = vals[g + (t,)]
                if not v:
                    continue
                x = gi - 0.4 + w * (si + 0.5)
                m = statistics.median(v)
                lines.append(f"{x:.4f} {m / 1e3:.3f} {min(v) / 1e3:.3f} {max(v) / 1e3:.3f} {kfmt(m)}")
            blocks.append(f"{name} << EOD\n" + "\n".join(lines) + "\nEOD")
            c = COLORS[t]
            parts.append(f"{name} using 1:2 with boxes fs solid 0.85 noborder lc rgb '{c}' title '{esc(NAMES[t])}'")
            # min-max of the rounds: a plain vertical line (yerrorbars would draw a point too)
            parts.append(f"{name} using 1:3:(0):($4-$3) with vectors nohead lc rgb '#333333' lw 1 notitle")
            parts.append(f"{name} using 1:4:5 with labels offset 0,0.7 font ',8' notitle")
        head = [f"set title \"{esc(title)}\"",
                f"set xtics ({', '.join(tics)}) scale 0",
                f"set xrange [-0.6:{len(glist) - 0.4}]",
                f"set boxwidth {w * 0.92:.4f} absolute"]
        return "\n".join(head) + "\nplot " + ", \\\n  ".join(parts)

    blocks = []
    panels = []
    if pass_groups:
        panels.append(("pass", panel(pass_groups, pass_series,
                       "pass-through: redis-benchmark -t set,get (-r 100000 -d 3)",
                       [("proxy", "direct", "proxy/direct"), ("proxy", "twemproxy", "proxy/twem")]), len(pass_groups)))
    if bf_groups:
        panels.append(("bf", panel(bf_groups, bf_series,
                       "BF.* (-r 100000000): bloomproxy vs. floor",
                       [("proxy", "floor", "bloomproxy/floor")]), len(bf_groups) + 1.2))
    print("\n".join(blocks))
    print(f"set yrange [0:{ymax / 1e3:.0f}]")
    print("set ylabel 'thousand requests/s (median; bars: min-max of the rounds)'")
    print("set key top left horizontal font ',9' samplen 1.5")
    print("set bmargin 5.5; set tmargin 4.5")
    print("set multiplot")
    print(f"set label 100 \"bloomproxy vs. direct Redis vs. twemproxy: median of {rounds} interleaved round(s)"
          f" ({stamp}{', ' + setup if setup else ''})\" at screen 0.5, screen 0.97 center font ',12'")
    total = sum(p[2] for p in panels)
    left, right = 0.07, 0.99
    x0 = left
    for i, (_, cmd, weight) in enumerate(panels):
        wdt = (right - left) * weight / total
        print(f"set lmargin at screen {x0:.4f}; set rmargin at screen {x0 + wdt - 0.015:.4f}")
        if i > 0:
            print("unset ylabel; unset label 100")
        print(cmd)
        x0 += wdt
    print("unset multiplot")

else:  # scaling: top row req/s vs. clients per pipeline depth, bottom row GET proxy/direct
    vals = defaultdict(list)
    by_round = defaultdict(dict)
    for r in rows:
        k = (int(r["pipeline"]), r["test"] + " " + r["target"], int(r["clients"]))
        vals[k].append(float(r["rps"]))
        by_round[k][r["round"]] = float(r["rps"])
    pipes = sorted({k[0] for k in vals})
    series = [s for s in ("GET direct", "GET proxy", "BF.ADD proxy") if any(k[1] == s for k in vals)]
    clients = sorted({k[2] for k in vals})
    label = {"GET direct": "GET, direct Redis", "GET proxy": "GET through bloomproxy",
             "BF.ADD proxy": "BF.ADD through bloomproxy"}
    blocks = []
    print("set logscale x")
    print(f"set xtics ({', '.join(str(c) for c in clients)})")
    print(f"set xrange [{min(clients) * 0.75}:{max(clients) * 1.35}]")
    print("set multiplot")
    print(f"set label 100 \"throughput vs. clients and pipeline depth: median of {rounds} interleaved round(s)"
          f" ({stamp}{', ' + setup if setup else ''})\" at screen 0.5, screen 0.975 center font ',12'")
    left, right = 0.07, 0.99
    wdt = (right - left) / len(pipes)
    for pi, p in enumerate(pipes):
        parts = []
        for si, s in enumerate(series):
            name = f"$s_{p}_{si}"
            lines = []
            for c in clients:
                v = vals.get((p, s, c))
                if v:
                    lines.append(f"{c} {statistics.median(v) / 1e3:.3f} {min(v) / 1e3:.3f} {max(v) / 1e3:.3f}")
            blocks.append(f"{name} << EOD\n" + "\n".join(lines) + "\nEOD")
            col = COLORS[s]
            parts.append(f"{name} using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '{col}' "
                         f"title '{label[s] if pi == 0 else ''}'")
        # GET proxy/direct: ratio of the medians, and the per-round ratios as small dots
        name = f"$r_{p}"
        lines, dots = [], []
        for c in clients:
            d, x = vals.get((p, "GET direct", c)), vals.get((p, "GET proxy", c))
            if d and x:
                lines.append(f"{c} {statistics.median(x) / statistics.median(d):.4f}")
                rd, rx = by_round[(p, "GET direct", c)], by_round[(p, "GET proxy", c)]
                dots += [f"{c} {rx[r] / rd[r]:.4f}" for r in rx if rd.get(r)]
        blocks.append(f"{name} << EOD\n" + "\n".join(lines) + "\nEOD")
        blocks.append(f"{name}d << EOD\n" + "\n".join(dots) + "\nEOD")
        print("\n".join(blocks[-len(series) - 2:]))
        lm, rm = left + pi * wdt, left + (pi + 1) * wdt - 0.025
        # top row
        print(f"set lmargin at screen {lm:.4f}; set rmargin at screen {rm:.4f}")
        print("set tmargin at screen 0.88; set bmargin at screen 0.36")
        print(f"set title 'pipeline {p} (-P {p})'")
        print("set format x ''; unset xlabel")
        print("set yrange [0:*]; set format y '%g'")
        print("set key top left font ',9'")
        if pi == 0:
            print("set ylabel 'thousand requests/s (median; bars: min-max of rounds)'")
        else:
            print("unset ylabel; unset label 100")
        print("plot " + ", \\\n  ".join(parts))
        # bottom row
        print("set tmargin at screen 0.31; set bmargin at screen 0.09")
        print("unset title; set format x '%g'; set xlabel 'clients (redis-benchmark -c)'")
        rmax = max([1.25] + [float(x.split()[1]) * 1.1 for x in lines + dots])
        print(f"set yrange [0:{rmax:.2f}]; set ytics 0, 0.25; set format y '%.2f'")
        print("unset key" if pi else "set key bottom right font ',8'")
        print("unset ylabel" if pi else "set ylabel 'GET proxy / direct'")
        print(f"plot 1 with lines lc rgb '#999999' dt 2 notitle, "
              f"{name}d using 1:2 with points pt 7 ps 0.4 lc rgb '#dd8452' title 'per round', "
              f"{name} using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#dd8452' title 'ratio of medians'")
        print("set ytics autofreq")
    print("unset multiplot")
EOF
gnuplot "$BENCH_TMP/plot.gp" 2>"$BENCH_TMP/gnuplot.err" || { _show_log "$BENCH_TMP/gnuplot.err"; die "gnuplot failed"; }
# gnuplot reports some problems (bad data lines, ...) only as warnings
if [[ -s "$BENCH_TMP/gnuplot.err" ]]; then
  log "gnuplot said:"; sed 's/^/    /' "$BENCH_TMP/gnuplot.err" >&2 || true
fi
[[ -s "$PNG" ]] || die "gnuplot wrote no $PNG"
log "chart: ${PNG#"$REPO_ROOT"/}"
if ((PUBLISH)); then
  mkdir -p "$REPO_ROOT/docs/img"
  cp -- "$PNG" "$REPO_ROOT/docs/img/$KIND.png"
  log "published: docs/img/$KIND.png"
fi

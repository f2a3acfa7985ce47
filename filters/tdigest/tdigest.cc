#include "filters/tdigest/tdigest.h"

#include <cmath>
#include <cstdio>
#include <utility>

#if defined(__FAST_MATH__)
#error "t-digest replies must be bit-exact: build filters/tdigest without -ffast-math"
#endif

namespace bloomproxy::filters {
namespace {

// The library's M_PI.
constexpr double kPi = 3.14159265358979323846;

// t-digest-c's quicksort of nodes[lo..hi] by mean (Lomuto partition, middle pivot, not stable;
// a NaN mean compares false). Weights move with their means.
void SortNodes(std::vector<TdigestNode>* nodes, int64_t lo, int64_t hi) {
  std::vector<TdigestNode>& n = *nodes;
  while (lo < hi) {
    if (hi - lo == 1) {
      if (n[lo].mean > n[hi].mean) std::swap(n[lo], n[hi]);
      return;
    }
    const int64_t p = (lo + hi) / 2;
    const double pv = n[p].mean;
    std::swap(n[p], n[hi]);
    int64_t i = lo - 1;
    for (int64_t j = lo; j < hi; ++j) {
      if (n[j].mean < pv) {
        ++i;
        std::swap(n[i], n[j]);
      }
    }
    std::swap(n[i + 1], n[hi]);
    const int64_t q = i + 1;
    if (q > lo) SortNodes(nodes, lo, q - 1);
    lo = q + 1;  // the library's second recursive call, as a loop
  }
}

// The library's weighted_average: never outside [x1, x2].
double WeightedAverageSorted(double x1, double w1, double x2, double w2) {
  const double x = (x1 * w1 + x2 * w2) / (w1 + w2);
  const double m = x < x2 ? x : x2;
  return x1 > m ? x1 : m;
}

double WeightedAverage(double x1, double w1, double x2, double w2) {
  if (x1 <= x2) return WeightedAverageSorted(x1, w1, x2, w2);
  return WeightedAverageSorted(x2, w2, x1, w1);
}

double Weight(const Tdigest& t, size_t i) { return static_cast<double>(t.nodes[i].weight); }

// td_quantile's walk over the centroids for an index in [0, merged weight] (M >= 2).
double QuantileAt(const Tdigest& t, double index) {
  const size_t n = t.merged;
  const double mwd = static_cast<double>(t.merged_weight);
  const double w0 = Weight(t, 0);
  const double wl = Weight(t, n - 1);
  const double ml = t.nodes[n - 1].mean;
  if (w0 > 1 && index < w0 / 2) {
    return t.min + ((index - 1) / (w0 / 2 - 1)) * (t.nodes[0].mean - t.min);
  }
  // MW - 1 as x86-64 computes it: INT64_MIN - 1 wraps to INT64_MAX.
  const auto below = static_cast<int64_t>(static_cast<uint64_t>(t.merged_weight) - 1);
  if (index > static_cast<double>(below)) return t.max;
  if (wl > 1 && mwd - index <= wl / 2)
    return t.max - ((mwd - index - 1) / (wl / 2 - 1)) * (t.max - ml);
  double wsf = w0 / 2;
  for (size_t i = 0; i + 1 < n; ++i) {
    const double a = Weight(t, i);
    const double b = Weight(t, i + 1);
    const double dw = (a + b) / 2;
    if (wsf + dw > index) {
      double lu = 0;
      if (a == 1) {
        if (index - wsf < 0.5) return t.nodes[i].mean;
        lu = 0.5;
      }
      double ru = 0;
      if (b == 1) {
        if (wsf + dw - index <= 0.5) return t.nodes[i + 1].mean;
        ru = 0.5;
      }
      const double z1 = index - wsf - lu;
      const double z2 = wsf + dw - index - ru;
      return WeightedAverage(t.nodes[i].mean, z2, t.nodes[i + 1].mean, z1);
    }
    wsf += dw;
  }
  const double z1 = index - mwd - wl / 2;
  const double z2 = wl / 2 - z1;
  return WeightedAverage(ml, z1, t.max, z2);
}

// rm_tdigest.c's halfRoundDown.
double HalfRoundDown(double f) {
  double int_part;
  const double frac_part = std::modf(f, &int_part);
  if (std::fabs(frac_part) <= 0.5) return int_part;
  return int_part >= 0.0 ? int_part + 1.0 : int_part - 1.0;
}

double MaxOf(double a, double b) { return a > b ? a : b; }
double MinOf(double a, double b) { return a < b ? a : b; }

}  // namespace

int64_t TdigestCapacity(int64_t compression) { return 6 * compression + 10; }

int64_t TdigestMemoryUsage(int64_t compression) { return 80 + 16 * TdigestCapacity(compression); }

Tdigest NewTdigest(int64_t compression) {
  Tdigest t;
  t.compression = compression;
  return t;
}

void TdigestReset(Tdigest* t) { *t = NewTdigest(t->compression); }

int64_t TdigestSize(const Tdigest& t) { return t.merged_weight + t.unmerged_weight; }

size_t TdigestUnmergedNodes(const Tdigest& t) { return t.nodes.size() - t.merged; }

void TdigestCompress(Tdigest* t) {
  if (t->nodes.size() == t->merged) return;
  const size_t n = t->nodes.size();
  SortNodes(&t->nodes, 0, static_cast<int64_t>(n) - 1);
  const double total =
      static_cast<double>(t->merged_weight) + static_cast<double>(t->unmerged_weight);
  if (total <= 1) return;  // one observation: sorted, never merged, not counted
  const double normalizer =
      static_cast<double>(t->compression) / ((2 * kPi) * total * std::log(total));
  std::vector<TdigestNode>& nodes = t->nodes;
  size_t cur = 0;
  double wsf = 0.0;
  for (size_t i = 1; i < n; ++i) {
    const double proposed =
        static_cast<double>(nodes[cur].weight) + static_cast<double>(nodes[i].weight);
    const double z = proposed * normalizer;
    const double q0 = wsf / total;
    const double q2 = (wsf + proposed) / total;
    if (z <= q0 * (1 - q0) && z <= q2 * (1 - q2)) {
      nodes[cur].weight += nodes[i].weight;
      const double delta = nodes[i].mean - nodes[cur].mean;
      nodes[cur].mean +=
          (delta * static_cast<double>(nodes[i].weight)) / static_cast<double>(nodes[cur].weight);
    } else {
      wsf += static_cast<double>(nodes[cur].weight);
      ++cur;
      nodes[cur] = nodes[i];
    }
  }
  nodes.resize(cur + 1);
  t->merged = cur + 1;
  t->merged_weight = TdigestToInt64(total);  // truncation of the double sum (2^63: INT64_MIN)
  t->unmerged_weight = 0;
  ++t->total_compressions;
}

bool TdigestAddNode(Tdigest* t, double mean, int64_t weight) {
  if (static_cast<int64_t>(t->nodes.size()) >= TdigestCapacity(t->compression) - 1) {
    TdigestCompress(t);
  }
  // A compression that merged nothing leaves the slots full (huge weights with C = 1 do it).
  if (static_cast<int64_t>(t->nodes.size()) >= TdigestCapacity(t->compression)) return false;
  int64_t unmerged = 0;
  int64_t total = 0;
  if (__builtin_add_overflow(t->unmerged_weight, weight, &unmerged) ||
      __builtin_add_overflow(unmerged, t->merged_weight, &total)) {
    return false;
  }
  if (mean < t->min) t->min = mean;
  if (mean > t->max) t->max = mean;
  t->nodes.push_back(TdigestNode{mean, weight});
  t->unmerged_weight = unmerged;
  return true;
}

bool TdigestMergeInto(Tdigest* into, Tdigest* from) {
  TdigestCompress(into);
  TdigestCompress(from);
  // `from` cannot be `into` (MERGE always builds a new digest), so its nodes stay put.
  for (size_t i = 0; i < from->nodes.size(); ++i) {
    const TdigestNode node = from->nodes[i];
    if (!TdigestAddNode(into, node.mean, node.weight)) return false;
  }
  return true;
}

double TdigestMin(const Tdigest& t) { return TdigestSize(t) > 0 ? t.min : NAN; }

double TdigestMax(const Tdigest& t) { return TdigestSize(t) > 0 ? t.max : NAN; }

std::vector<double> TdigestQuantiles(Tdigest* t, const std::vector<double>& qs) {
  TdigestCompress(t);
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) {
    if (t->merged == 0) {
      out.push_back(NAN);
    } else if (t->merged == 1) {
      out.push_back(t->nodes[0].mean);
    } else {
      out.push_back(QuantileAt(*t, q * static_cast<double>(t->merged_weight)));
    }
  }
  return out;
}

double TdigestQuantile(Tdigest* t, double p) {
  TdigestCompress(t);
  if (p < 0 || p > 1 || t->merged == 0) return NAN;
  if (t->merged == 1) return t->nodes[0].mean;
  const double index = p * static_cast<double>(t->merged_weight);
  if (index < 1) return t->min;
  return QuantileAt(*t, index);
}

double TdigestCdf(Tdigest* t, double x) {
  TdigestCompress(t);
  const size_t n = t->merged;
  if (n == 0) return NAN;
  if (x < t->min) return 0;
  if (x > t->max) return 1;
  if (n == 1) {
    const double width = t->max - t->min;
    if (x - t->min <= width) return 0.5;
    return (x - t->min) / width;
  }
  const double mwd = static_cast<double>(t->merged_weight);
  const double m0 = t->nodes[0].mean;
  if (x < m0) {
    const double width = m0 - t->min;
    if (width > 0) {
      if (x == t->min) return 0.5 / mwd;
      return (1 + ((x - t->min) / width) * (Weight(*t, 0) / 2 - 1)) / mwd;
    }
    return 0;
  }
  const double ml = t->nodes[n - 1].mean;
  if (x > ml) {
    const double width = t->max - ml;
    if (width > 0) {
      if (x == t->max) return 1 - 0.5 / mwd;
      return 1 - (1 + ((t->max - x) / width) * (Weight(*t, n - 1) / 2 - 1)) / mwd;
    }
    return 1;
  }
  double wsf = 0;
  for (size_t it = 0; it + 1 < n; ++it) {
    const double ma = t->nodes[it].mean;
    const double mb = t->nodes[it + 1].mean;
    if (ma == x) {
      double dw = 0;
      for (size_t j = it; j < n && t->nodes[j].mean == x; ++j) dw += Weight(*t, j);
      return (wsf + dw / 2) / mwd;
    }
    const double a = Weight(*t, it);
    const double b = Weight(*t, it + 1);
    if (ma <= x && x < mb) {
      if (mb - ma > 0) {
        double le = 0;
        double re = 0;
        if (a == 1) {
          if (b == 1) return (wsf + 1) / mwd;
          le = 0.5;
        } else if (b == 1) {
          re = 0.5;
        }
        const double dw = (a + b) / 2;
        const double dw_no_singleton = dw - le - re;
        const double base = wsf + a / 2 + le;
        return (base + (dw_no_singleton * (x - ma)) / (mb - ma)) / mwd;
      }
      return (wsf + (a + b) / 2) / mwd;
    }
    wsf += a;
  }
  return 1 - 0.5 / mwd;
}

double TdigestTrimmedMean(Tdigest* t, double lo, double hi) {
  TdigestCompress(t);
  if (t->merged == 0) return NAN;
  if (t->merged == 1) return t->nodes[0].mean;
  const double mwd = static_cast<double>(t->merged_weight);
  const double lw = std::floor(mwd * lo);
  const double hw = std::ceil(mwd * hi);
  double done = 0;
  double sum = 0;
  double count = 0;
  for (size_t i = 0; i < t->merged; ++i) {
    const double a = Weight(*t, i);
    double add = a;
    add -= MinOf(MaxOf(0, lw - done), add);
    add = MinOf(MaxOf(0, hw - done), add);
    done += a;
    sum += t->nodes[i].mean * add;
    count += add;
    if (done >= hw) break;
  }
  return sum / count;
}

std::vector<int64_t> TdigestRanks(Tdigest* t, const std::vector<double>& values, bool reverse) {
  const double size = static_cast<double>(TdigestSize(*t));
  const double min = t->min;
  const double max = t->max;
  std::vector<int64_t> out;
  out.reserve(values.size());
  for (double v : values) {
    double rank;
    if (size == 0) {
      rank = -2;
    } else if (v < min) {
      rank = reverse ? size : -1;
    } else if (v > max) {
      rank = reverse ? -1 : size;
    } else {
      const double p = TdigestCdf(t, v) * size;
      rank = reverse ? std::round(size - std::round(p)) : HalfRoundDown(p);
    }
    out.push_back(TdigestToInt64(rank));
  }
  return out;
}

std::vector<double> TdigestByRanks(Tdigest* t, const std::vector<int64_t>& ranks, bool reverse) {
  const double size = static_cast<double>(TdigestSize(*t));
  const double min = t->min;
  const double max = t->max;
  std::vector<double> out;
  out.reserve(ranks.size());
  for (int64_t r : ranks) {
    const double rd = static_cast<double>(r);
    if (size == 0) {
      out.push_back(NAN);
    } else if (rd == 0) {
      out.push_back(reverse ? max : min);
    } else if (rd >= size) {
      out.push_back(reverse ? -INFINITY : INFINITY);
    } else {
      out.push_back(TdigestQuantile(t, reverse ? ((size - rd) - 1) / size : rd / size));
    }
  }
  return out;
}

int64_t TdigestToInt64(double d) {
  if (std::isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(d);
}

std::string TdigestFormatDouble(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", d);
  return std::string(buf, static_cast<size_t>(n));
}

std::string TdigestDoubleReply(double d, bool resp3) {
  const std::string s = TdigestFormatDouble(d);
  if (resp3) return "," + s + "\r\n";
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

}  // namespace bloomproxy::filters

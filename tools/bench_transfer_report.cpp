// The table and the --json of `bench transfer`. Every figure is a median over the
// interleaved runs; ratios are medians of the per-run ratios (BENCHMARKS.md).
#include <cstdio>
#include <functional>
#include <tuple>

#include "tools/bench_transfer.hpp"
#include "tools/bench_util.hpp"

namespace spillway::bench {
namespace {

// What a row shows, computed once for the table and the json.
struct case_figures {
  double naive_s, watermark_s, naive_gbps, watermark_gbps, limit_gbps;
  double speedup, watermark_over_limit;
  double speedup_low, speedup_high;  // the median's 95 % confidence interval
  double first_us_naive, first_us_watermark, first_ratio;
  double slicer_ns_naive, slicer_ns_watermark;
};

double median_of(const std::vector<contender_run>& runs,
                 const std::function<double(const contender_run&)>& field) {
  std::vector<double> xs;
  for (const auto& r : runs) xs.push_back(field(r));
  return median(xs);
}

// numerator(run) / denominator(run), run by run.
std::vector<double> ratios(std::size_t runs, const std::function<double(std::size_t)>& numerator,
                           const std::function<double(std::size_t)>& denominator) {
  std::vector<double> xs;
  for (std::size_t i = 0; i < runs; ++i) xs.push_back(numerator(i) / denominator(i));
  return xs;
}

case_figures figures_of(const case_result& c) {
  const auto gb = static_cast<double>(c.shape.total()) / 1e9;
  const auto n = c.naive.size();
  const auto& nv = c.naive;
  const auto& wm = c.watermark;
  case_figures f{};
  f.naive_s = median_of(nv, [](auto& r) { return r.seconds; });
  f.watermark_s = median_of(wm, [](auto& r) { return r.seconds; });
  f.naive_gbps = gb / f.naive_s;
  f.watermark_gbps = gb / f.watermark_s;
  f.limit_gbps = gb / median(c.limit_seconds);
  const auto speedups = ratios(n, [&](auto i) { return nv[i].seconds; },
                               [&](auto i) { return wm[i].seconds; });
  f.speedup = median(speedups);
  std::tie(f.speedup_low, f.speedup_high) = median_interval(speedups);
  f.watermark_over_limit = median(ratios(n, [&](auto i) { return c.limit_seconds[i]; },
                                         [&](auto i) { return wm[i].seconds; }));
  f.first_us_naive = median_of(nv, [](auto& r) { return r.first_slice_us; });
  f.first_us_watermark = median_of(wm, [](auto& r) { return r.first_slice_us; });
  f.first_ratio = median(ratios(n, [&](auto i) { return nv[i].first_slice_us; },
                                [&](auto i) { return wm[i].first_slice_us; }));
  f.slicer_ns_naive = median_of(nv, [](auto& r) { return r.slicer_ns_per_slice; });
  f.slicer_ns_watermark = median_of(wm, [](auto& r) { return r.slicer_ns_per_slice; });
  return f;
}

}  // namespace

void print_transfer_table(std::ostream& out, const std::vector<case_result>& results) {
  char line[400];
  std::snprintf(line, sizeof line,
                "%-9s %-12s %8s %8s %8s %8s %7s %11s %8s %7s %9s %9s %7s %7s %7s\n",
                "transport", "case", "naive_s", "naive", "wmark_s", "wmark", "speedup",
                "95%_conf", "limit",
                "wm/lim", "1st_us_nv", "1st_us_wm", "nv/wm", "ns_nv", "ns_wm");
  out << line;
  for (const auto& c : results) {
    const auto f = figures_of(c);
    std::snprintf(line, sizeof line,
                  "%-9s %-12s %8.4f %8.2f %8.4f %8.2f %7.3f %5.3f-%5.3f %8.2f %7.3f %9.0f %9.1f "
                  "%7.1f %7.1f %7.1f\n",
                  c.transport.c_str(), c.shape.name().c_str(), f.naive_s, f.naive_gbps,
                  f.watermark_s, f.watermark_gbps, f.speedup, f.speedup_low, f.speedup_high,
                  f.limit_gbps,
                  f.watermark_over_limit, f.first_us_naive, f.first_us_watermark,
                  f.first_ratio, f.slicer_ns_naive, f.slicer_ns_watermark);
    out << line;
  }
  out << "rates in GB/s (10^9 B/s); speedup: naive time / watermark time, the median of the "
         "runs' ratios,\n95%_conf: the interval that holds the true median with 95 % confidence "
         "(of the runs' order statistics);\nlimit: memcpy (local) or one plain TCP stream (tcp); "
         "ns: slicer ns per slice\n";
}

std::string transfer_json(const std::vector<case_result>& results, unsigned runs) {
  std::string json = "{\"runs\": " + std::to_string(runs) + ", \"cases\": [";
  char item[800];
  for (const auto& c : results) {
    const auto f = figures_of(c);
    std::snprintf(item, sizeof item,
                  "%s{\"case\": \"%s\", \"transport\": \"%s\", \"naive_gbps\": %.4f, "
                  "\"watermark_gbps\": %.4f, \"speedup\": %.4f, \"speedup_ci95_low\": %.4f, "
                  "\"speedup_ci95_high\": %.4f, \"limit_gbps\": %.4f, "
                  "\"watermark_over_limit\": %.4f, \"first_slice_us_naive\": %.1f, "
                  "\"first_slice_us_watermark\": %.1f, \"first_slice_naive_over_watermark\": "
                  "%.2f, \"slicer_ns_per_slice\": %.2f, \"slicer_ns_per_slice_naive\": %.2f}",
                  &c == &results.front() ? "" : ", ", c.shape.name().c_str(),
                  c.transport.c_str(), f.naive_gbps, f.watermark_gbps, f.speedup, f.speedup_low,
                  f.speedup_high, f.limit_gbps,
                  f.watermark_over_limit, f.first_us_naive, f.first_us_watermark, f.first_ratio,
                  f.slicer_ns_watermark, f.slicer_ns_naive);
    json += item;
  }
  return json + "]}\n";
}

}  // namespace spillway::bench

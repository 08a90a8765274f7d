#include "runtime/metrics.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

namespace spillway {
namespace {

using labels = std::vector<std::pair<std::string_view, std::string>>;

// One metric family at a time: its HELP and TYPE lines, then a sample per label set.
class exposition {
public:
  exposition& family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    text_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    text_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
    return *this;
  }

  exposition& sample(double value, const labels& with = {}) { return sample_of(name_, value, with); }

  // A sample named other than its family: a histogram's _bucket, _sum and _count.
  exposition& sample_of(std::string_view name, double value, const labels& with = {}) {
    text_.append(name);
    if (!with.empty()) {
      text_ += '{';
      for (std::size_t i = 0; i < with.size(); ++i) {
        if (i > 0) text_ += ',';
        text_.append(with[i].first).append("=\"").append(escaped(with[i].second)).append("\"");
      }
      text_ += '}';
    }
    text_.append(" ").append(number(value)).append("\n");
    return *this;
  }

  // A family of one sample, without labels.
  void gauge(std::string_view name, std::string_view help, double value) {
    family(name, "gauge", help).sample(value);
  }
  void counter(std::string_view name, std::string_view help, double value) {
    family(name, "counter", help).sample(value);
  }

  std::string take() { return std::move(text_); }

  // Prometheus values are floats: integers print as integers, the rest to 15 digits.
  static std::string number(double value) {
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%.15g", value);
    return text.data();
  }

private:
  // Label values escape backslash, quote and newline (the format's rule).
  static std::string escaped(std::string_view value) {
    std::string out;
    for (const char c : value) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') out += "\\n";
      else out += c;
    }
    return out;
  }

  std::string text_;
  std::string_view name_;
};

constexpr double ns_per_s = 1e9;

// A family with one sample per reader, labelled by its index.
template <class Figure>
void per_reader(exposition& out, const node_stats& node, std::string_view name,
                std::string_view type, std::string_view help, Figure figure) {
  out.family(name, type, help);
  for (const auto& r : node.readers)
    out.sample(static_cast<double>(figure(r)), {{"reader", std::to_string(r.index)}});
}

void reader_metrics(exposition& out, const node_stats& node) {
  out.family("spillway_reader_reads_total", "counter", "Reads each reader completed, by buffer kind");
  for (const auto& r : node.readers) {
    const auto index = std::to_string(r.index);
    out.sample(static_cast<double>(r.reads_fixed), {{"reader", index}, {"buffer", "fixed"}});
    out.sample(static_cast<double>(r.reads_plain), {{"reader", index}, {"buffer", "plain"}});
  }
  per_reader(out, node, "spillway_reader_busy_seconds_total", "counter",
             "Time each reader had at least one read in flight",
             [](const reader_stats& r) { return static_cast<double>(r.busy_ns) / ns_per_s; });
  per_reader(out, node, "spillway_reader_in_flight_seconds_total", "counter",
             "Reads in flight integrated over time; its rate over busy_seconds' is the mean window",
             [](const reader_stats& r) { return static_cast<double>(r.in_flight_ns) / ns_per_s; });
  per_reader(out, node, "spillway_reader_window_occupancy", "gauge",
             "Mean reads in flight while busy, since the reader started",
             [](const reader_stats& r) {
               return r.busy_ns == 0 ? 0.0 : static_cast<double>(r.in_flight_ns) / r.busy_ns;
             });
  per_reader(out, node, "spillway_reader_registered_buffers", "gauge",
             "Buffers each reader reads into with read_fixed: arena chunks, caller memory",
             [](const reader_stats& r) { return r.registered_buffers; });
  per_reader(out, node, "spillway_reader_registration_errno", "gauge",
             "Why registering the arena failed for a reader (0: it did not)",
             [](const reader_stats& r) { return r.registration_errno; });
  per_reader(out, node, "spillway_reader_ring_resets_total", "counter",
             "Ring failures each reader recovered from",
             [](const reader_stats& r) { return r.ring_resets; });
  out.family("spillway_reader_engine", "gauge",
             "1 for the engine each reader runs: io_uring, or posix (the fallback)");
  for (const auto& r : node.readers)
    out.sample(1, {{"reader", std::to_string(r.index)}, {"engine", r.engine}});
  out.counter("spillway_reader_restarts_total", "Readers replaced after they died",
              node.reader_restarts);
}

void store_metrics(exposition& out, const catalog_stats& s) {
  out.gauge("spillway_store_keys", "Keys stored", s.keys);
  out.gauge("spillway_store_live_bytes", "Value bytes of the keys stored", s.live_bytes);
  out.gauge("spillway_store_buckets", "Sealed bucket files", s.buckets);
  out.gauge("spillway_store_open_buckets",
            "Buckets being written, their committed records served from the .tmp file",
            s.open_buckets);
  out.gauge("spillway_store_open_files",
            "Bucket files held open (storage.max_open_files, past the buckets a batch reads)",
            s.open_files);
  out.counter("spillway_store_commits_total",
              "Groups of puts made durable (one fdatasync) and published before their seal",
              s.commits);
  out.gauge("spillway_store_file_bytes", "Bytes of the bucket files on disk", s.file_bytes);
  out.gauge("spillway_store_garbage_bytes",
            "Value bytes overwritten or removed, not yet evicted", s.garbage_bytes);
  out.gauge("spillway_store_quota_bytes", "storage.max_total_size, resolved", s.quota_bytes);
  out.counter("spillway_store_evicted_buckets_total", "Buckets evicted", s.evicted_buckets);
  out.counter("spillway_store_evicted_keys_total", "Keys evicted with their buckets",
              s.evicted_keys);
  out.counter("spillway_store_forget_entries_total",
              "Forget-log entries made durable (a key removed or evicted) since start",
              s.forget_entries_written);
  out.gauge("spillway_store_forget_dropped_records",
            "Records recovery dropped at start: removed, or older than an evicted newest",
            s.forget_records_dropped);
  out.gauge("spillway_store_reads_buffered",
            "1 once O_DIRECT was refused and reads go through the page cache (a fallback)",
            s.reads_buffered ? 1 : 0);
}

void arena_metrics(exposition& out, const arena_stats& a) {
  out.gauge("spillway_arena_size_bytes", "read.arena_size", a.size);
  out.gauge("spillway_arena_ready_bytes", "Arena bytes populated and lendable", a.ready_bytes);
  out.gauge("spillway_arena_used_bytes", "Arena bytes lent out", a.ready_bytes - a.free_bytes);
  out.gauge("spillway_arena_huge_bytes", "Arena bytes backed by huge pages", a.huge_bytes);
  out.gauge("spillway_arena_leases", "Leases outstanding", a.leases);
  out.gauge("spillway_arena_waiting_allocs", "Batches waiting for arena space", a.waiting);
  out.counter("spillway_arena_expired_leases_total",
              "Leases of holders in other processes reclaimed after read.lease_ms", a.expired);
  out.counter("spillway_arena_abandoned_leases_total",
              "Leases reclaimed because their holder went away", a.abandoned);
  out.family("spillway_arena_pages", "gauge", "1 for the page kind backing the arena")
    .sample(1, {{"kind", a.pages}});
}

// Prometheus histograms are cumulative: each bucket counts everything up to its bound.
void histogram(exposition& out, std::string_view name, std::string_view help,
               const latency_histogram& h) {
  out.family(name, "histogram", help);
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t below = 0;
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    below += h.counts[i];
    const auto bound = i < latency_bounds_s.size() ? exposition::number(latency_bounds_s[i]) : "+Inf";
    out.sample_of(bucket, static_cast<double>(below), {{"le", bound}});
  }
  out.sample_of(std::string(name) + "_sum", static_cast<double>(h.sum_ns) / ns_per_s);
  out.sample_of(std::string(name) + "_count", static_cast<double>(below));
}

// Per-key outcomes by status, and the bytes and latencies of gets and puts.
void io_metrics(exposition& out, const io_stats& io) {
  auto by_status = [&out](std::string_view name, std::string_view help,
                          const std::vector<std::uint64_t>& keys) {
    out.family(name, "counter", help);
    for (std::size_t e = 0; e < keys.size(); ++e)
      out.sample(static_cast<double>(keys[e]), {{"status", name_of(static_cast<key_error>(e))}});
  };
  by_status("spillway_read_keys_total", "Keys asked for in batch gets, by what became of them",
            io.read_keys);
  out.counter("spillway_read_bytes_total", "Value bytes handed out by batch gets, checked",
              static_cast<double>(io.read_bytes));
  out.family("spillway_read_value_bytes_total", "counter",
             "Value bytes got into memory the caller owns, by path: in_place (the disk read "
             "them there), bounced (read into the arena first, whole pages), copied (memcpy "
             "out of the arena)");
  out.sample(static_cast<double>(io.read_in_place_bytes), {{"path", "in_place"}});
  out.sample(static_cast<double>(io.read_bounced_bytes), {{"path", "bounced"}});
  out.sample(static_cast<double>(io.read_copied_bytes), {{"path", "copied"}});
  histogram(out, "spillway_get_batch_seconds", "Time from a batch get to its answer",
            io.get_latency);
  by_status("spillway_written_keys_total", "Keys put, by what became of them", io.written_keys);
  out.counter("spillway_written_bytes_total", "Value bytes of puts committed and published",
              static_cast<double>(io.written_bytes));
  histogram(out, "spillway_put_seconds", "Time from a put to its answer (committed and published)",
            io.put_latency);
  out.family("spillway_written_value_bytes_total", "counter",
             "Value bytes put, by how they reached the disk: in_place (from caller memory) or "
             "copied (through staging)");
  out.sample(static_cast<double>(io.written_in_place_bytes), {{"path", "in_place"}});
  out.sample(static_cast<double>(io.written_copied_bytes), {{"path", "copied"}});
}

// A family with one sample per transfer_error, labelled by its name.
void by_transfer_error(exposition& out, std::string_view name, std::string_view label,
                       std::string_view help, const std::vector<std::uint64_t>& counts) {
  out.family(name, "counter", help);
  for (std::size_t e = 0; e < counts.size(); ++e)
    out.sample(static_cast<double>(counts[e]),
               {{label, name_of(static_cast<transfer_error>(e))}});
}

void transfer_metrics(exposition& out, const transfer_stats& t) {
  out.family("spillway_transfer_bytes_total", "counter",
             "Bytes moved by slices that succeeded, by direction (write: to the peer)")
    .sample(static_cast<double>(t.bytes_written), {{"direction", "write"}})
    .sample(static_cast<double>(t.bytes_read), {{"direction", "read"}});
  out.counter("spillway_transfer_slices_total", "Slices cut from requests that passed the checks",
              static_cast<double>(t.slices));
  out.counter("spillway_transfer_slice_retries_total",
              "Slices sent again on another lane after one failed them",
              static_cast<double>(t.slices_retried));
  by_transfer_error(out, "spillway_transfer_requests_total", "status",
                    "Transfer requests answered, by status", t.requests);
  by_transfer_error(out, "spillway_transfer_slice_failures_total", "error",
                    "Slices a lane gave back failed, by error, retried or not", t.slice_failures);
  out.counter("spillway_transfer_lanes_lost_total",
              "Lanes that died or failed a post; their groups went to the others",
              static_cast<double>(t.lanes_lost));
  out.family("spillway_transfer_refused_connections_total", "counter",
             "Connections to the tcp server refused or dropped, by reason")
    .sample(static_cast<double>(t.refused_frames), {{"reason", "bad_request"}})
    .sample(static_cast<double>(t.accept_failures), {{"reason", "accept_failed"}})
    .sample(static_cast<double>(t.dropped_lanes), {{"reason", "fault"}})
    .sample(static_cast<double>(t.refused_lanes), {{"reason", "not_admitted"}})
    .sample(static_cast<double>(t.capped_lanes), {{"reason", "lane_cap"}})
    .sample(static_cast<double>(t.timed_out_lanes), {{"reason", "timeout"}});
}

}  // namespace

std::string prometheus_text(const metric_sources& sources) {
  exposition out;
  reader_metrics(out, sources.node);
  store_metrics(out, sources.store);
  arena_metrics(out, sources.arena);
  io_metrics(out, sources.io);
  transfer_metrics(out, sources.transfer);
  return out.take();
}

}  // namespace spillway

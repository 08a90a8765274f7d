// The node's whole configuration: one struct, validated once, read by everything else.
//
// Only config.cpp reads TOML. Every key has a default, so an empty file is a valid
// node; the defaults live in the member initialisers below and nowhere else.
// Sizes are bytes, times carry their unit in the name (lease_ms).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spillway {

struct node_section {
  std::uint64_t id = 1;                     // part of every bucket id: unique per cluster
  std::string listen = "127.0.0.1:7400";    // host:port the node actor is published on; "" = not
  std::string metrics_listen;               // host:port serving /metrics over HTTP; "" = not
  std::string log_level = "info";           // trace | debug | info | warn | error | off
  std::string log_format = "text";          // text | json (one object a line, for shippers)
  std::uint64_t scheduler_threads = 0;      // CAF workers; 0 = one per core
  std::uint64_t stop_timeout_ms = 30000;    // serve: a stop drains this long, then forces

  bool operator==(const node_section&) const = default;
};

struct storage_section {
  std::string data_dir = "/var/lib/spillway";
  std::uint64_t bucket_size_limit = 256ull << 20;  // seal a bucket file at this size
  std::uint64_t bucket_keys_limit = 500;           // ... or at this many keys
  std::uint64_t max_total_size = 0;                // 0 = 90 % of the data dir's filesystem
  std::string eviction = "fifo";                   // fifo | lru
  std::uint64_t seal_after_ms = 1000;              // ... or when it has been open this long
  bool quarantine = true;                          // damaged files go to quarantine/, not unlink
  std::uint64_t file_mode = 0600;                  // of its files; the dir: 0700
  std::uint64_t max_open_files = 4096;             // bucket files held open at once

  bool operator==(const storage_section&) const = default;

  // What the bucket files may take: max_total_size, or 90 % of a filesystem of
  // `filesystem_bytes` when it is 0.
  std::uint64_t quota(std::uint64_t filesystem_bytes) const {
    return max_total_size != 0 ? max_total_size : filesystem_bytes / 10 * 9;
  }
};

struct read_section {
  std::string engine = "uring";     // uring | posix (uring falls back to posix when unusable)
  std::string mode = "window";      // window (sliding window) | group (the RFC's baseline)
  std::uint64_t readers = 0;        // reader actors; resolved to min(cores, 8) when absent
  std::uint64_t window = 32;        // reads in flight per reader (companions aside: read_ring.hpp)
  std::uint64_t window_bytes = 8ull << 20;  // per reader: no read starts past this in flight
  std::uint64_t queue_depth = 32;   // group mode: reads per group
  std::uint64_t arena_size = 1ull << 30;
  std::uint64_t arena_chunk = 1ull << 30;  // the kernel rejects a registered iovec > 1 GiB
  std::string arena_pages = "auto";        // auto | hugetlb | thp | plain
  std::uint64_t memory_slots = 64;         // registered buffers for node::register_memory
  std::uint64_t lease_ms = 5000;
  std::uint64_t timeout_ms = 30000;        // a batch's keys fail with `timeout` after this

  bool operator==(const read_section&) const = default;
};

struct transfer_section {
  std::string transport = "tcp";           // local | tcp | rdma
  std::string listen = "127.0.0.1:7401";   // tcp transport's data port
  std::uint64_t control_port = 0;          // transfer host, on listen's host; 0 = a free one
  std::string slicing = "watermark";       // watermark | naive
  std::uint64_t slicers = 0;               // resolved to min(cores, 4) when absent
  std::uint64_t slice_size = 64ull << 10;
  std::uint64_t fragment_limit = 16ull << 10;  // a tail this short joins the slice before it
  std::uint64_t watermark = 512;           // slices handed to transports in groups of this many
  std::uint64_t retries = 8;
  std::uint64_t slice_timeout_ms = 5000;
  std::uint64_t tcp_lanes = 4;
  std::uint64_t rdma_qps = 4;              // RC queue pairs per peer, spread over the devices
  std::vector<std::string> rdma_devices;   // empty = every device found
  std::uint64_t rdma_port = 1;             // the HCA port, on every device
  std::int64_t rdma_gid_index = -1;        // the port's GID to send from; -1 = chosen by rule
  std::uint64_t max_lanes = 256;           // tcp lanes served at once, from all peers
  std::uint64_t max_lanes_per_peer = 64;   // of them from one peer address
  std::uint64_t lane_idle_timeout_ms = 30000;  // a lane with no frame this long is closed
  std::uint64_t frame_timeout_ms = 5000;   // a frame begun must be in within this

  bool operator==(const transfer_section&) const = default;
};

struct cluster_section {
  std::vector<std::string> nodes;          // host:port of every node, this one included
  std::uint64_t replicas = 1;              // a client puts each key on this many nodes
  std::uint64_t request_timeout_ms = 10000;

  bool operator==(const cluster_section&) const = default;
};

// Who may reach the node's listeners. With certificate, key and ca_file (all three or
// none) the control channel (node.listen, the transfer host) speaks TLS and admits only
// peers whose certificate the CA signed; without, a listener off loopback is refused
// unless allow_insecure, since anyone who reaches it can store, read and delete keys.
struct security_section {
  bool allow_insecure = false;  // let node.listen and transfer.listen leave loopback
  std::string certificate;      // PEM: this node's certificate (chain); "" = no TLS
  std::string key;              // PEM: its private key
  std::string ca_file;          // PEM: the CA(s) a peer's certificate must chain to
  std::string passphrase;       // of an encrypted key; never printed

  bool operator==(const security_section&) const = default;

  bool tls() const { return !certificate.empty(); }  // the loader made it all three or none
};

// Fault injection for tests; every key but `enabled` is refused unless enabled = true.
struct fault_section {
  bool enabled = false;
  std::uint64_t seed = 1;
  double read_error_rate = 0;              // reads that complete with EIO
  double short_read_rate = 0;              // reads that complete short
  double corrupt_rate = 0;                 // reads whose data gets one byte flipped
  double ring_submit_failure_rate = 0;     // io_uring_submit calls that fail
  double ring_submit_refusal_rate = 0;     // io_uring_submit calls refused with EAGAIN
  bool fail_ring_reopen = false;           // setting a ring up again after a reset fails
  std::uint64_t reader_throw_after_reads = 0;  // a reader's ring loop throws once it has taken
                                              // this many reads; 0 = never
  bool fail_registration = false;          // buffer registration answers ENOMEM
  bool refuse_o_direct = false;            // opens with O_DIRECT answer EINVAL
  bool refuse_o_direct_reads = false;      // reads of O_DIRECT bucket files answer EINVAL
  std::vector<std::string> read_error_keys;  // these keys' reads complete with EIO
  std::vector<std::string> short_read_keys;  // these keys' reads complete short
  std::uint64_t tcp_drop_lane_after_slices = 0;  // tcp server: shut the lane serving it; 0 = off
  std::uint64_t tcp_kill_after_slices = 0;       // tcp server: SIGKILL the process; 0 = off
  std::string kill_at = "none";    // SIGKILL the process at this step (runtime/storage/crash_point)
  std::uint64_t kill_at_hit = 1;   // ... the nth time it is reached

  bool operator==(const fault_section&) const = default;
};

struct node_config {
  node_section node;
  storage_section storage;
  read_section read;
  transfer_section transfer;
  cluster_section cluster;
  security_section security;
  fault_section fault;

  bool operator==(const node_config&) const = default;
};

// Thrown by the loaders; what() holds one line per problem, each naming
// file:line:column and the key, and saying what is allowed.
class config_error : public std::runtime_error {
public:
  explicit config_error(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

private:
  std::vector<std::string> problems_;
};

// Reads and validates a file. A missing or unreadable file is a config_error.
node_config load_config_file(const std::filesystem::path& path);

// Same for TOML text; `source_name` stands in for the file name in messages.
node_config load_config_text(std::string_view toml, std::string_view source_name);

// The effective configuration as TOML, every key written out; loads back equal.
std::string to_toml(const node_config& config);

// `text` as a double-quoted string that TOML and JSON both read back as `text`: quote,
// backslash and control bytes escaped (\uXXXX), so that no byte of it can end its line
// or its string. The JSON log lines use it too (runtime/log.cpp).
std::string quote_string(std::string_view text);

}  // namespace spillway

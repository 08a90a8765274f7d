// The node's TOML schema and its loader. One table, `schema` below, lists every key once with
// its kind, bounds and one line of documentation; parsing, unknown-key detection and to_toml
// all walk that table, so a key cannot be accepted without being documented, nor written out
// without being accepted. The loader is strict and patient: it collects every problem (each
// naming file:line:column, the dotted key, and what is allowed) and throws them together, so
// an operator fixes a file in one pass rather than one restart per typo.
#include "config/config.hpp"

#include "config/endpoint.hpp"
#include "config/size.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <variant>

namespace spillway {
namespace {

constexpr std::uint64_t KiB = std::uint64_t{1} << 10;
constexpr std::uint64_t MiB = KiB << 10;
constexpr std::uint64_t GiB = MiB << 10;
constexpr std::uint64_t TiB = GiB << 10;
constexpr std::uint64_t hugepage = 2 * MiB;
constexpr std::uint64_t toml_int_max = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t no_limit = std::numeric_limits<std::uint64_t>::max();

using u64_ref = std::uint64_t& (*)(node_config&);
using i64_ref = std::int64_t& (*)(node_config&);
using bool_ref = bool& (*)(node_config&);
using text_ref = std::string& (*)(node_config&);
using ratio_ref = double& (*)(node_config&);
using list_ref = std::vector<std::string>& (*)(node_config&);
using field = std::variant<u64_ref, i64_ref, bool_ref, text_ref, ratio_ref, list_ref>;

enum class kind {
  integer,
  signed_integer,
  size,
  boolean,
  text,
  choice,
  endpoint,
  ratio,
  list,
  endpoint_list,
  octal_mode
};

struct key_spec {
  std::string_view section;
  std::string_view name;
  kind type;
  field ref;
  // integer, size, ratio: the range; endpoints: the port range; signed_integer: the range
  // as int64 values in two's complement, read back with signed_bound()
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  std::string_view choices;     // choice: the allowed values, '|'-separated
  std::string_view doc;
  bool may_be_empty = false;    // endpoint, text: "" is allowed too
  bool secret = false;          // text: to_toml says whether it is set, never what it is
  std::uint64_t multiple = 1;   // size: must be a multiple of this
  std::uint64_t cores_cap = 0;  // nonzero: an absent key becomes min(cores, cores_cap)

  constexpr key_spec multiple_of(std::uint64_t m) const {
    key_spec k = *this;
    k.multiple = m;
    return k;
  }
  constexpr key_spec one_per_core_up_to(std::uint64_t cap) const {
    key_spec k = *this;
    k.cores_cap = cap;
    return k;
  }
};

using sv = std::string_view;
using u64 = std::uint64_t;

constexpr key_spec integer(sv s, sv n, u64_ref r, u64 lo, u64 hi, sv doc) {
  return {s, n, kind::integer, r, lo, hi, {}, doc};
}
constexpr key_spec signed_integer(sv s, sv n, i64_ref r, std::int64_t lo, std::int64_t hi,
                                  sv doc) {
  return {s, n, kind::signed_integer, r, static_cast<u64>(lo), static_cast<u64>(hi), {}, doc};
}
constexpr key_spec size(sv s, sv n, u64_ref r, u64 lo, u64 hi, sv doc) {
  return {s, n, kind::size, r, lo, hi, {}, doc};
}
constexpr key_spec boolean(sv s, sv n, bool_ref r, sv doc) {
  return {s, n, kind::boolean, r, 0, 0, {}, doc};
}
constexpr key_spec text(sv s, sv n, text_ref r, sv doc) {
  return {s, n, kind::text, r, 0, 0, {}, doc};
}
// A string that may be "" (a path left unset).
constexpr key_spec optional_text(sv s, sv n, text_ref r, sv doc) {
  return {s, n, kind::text, r, 0, 0, {}, doc, true};
}
constexpr key_spec secret_text(sv s, sv n, text_ref r, sv doc) {
  key_spec k = optional_text(s, n, r, doc);
  k.secret = true;
  return k;
}
constexpr key_spec choice(sv s, sv n, text_ref r, sv choices, sv doc) {
  return {s, n, kind::choice, r, 0, 0, choices, doc};
}
constexpr key_spec host_port(sv s, sv n, text_ref r, u64 lo, u64 hi, bool may_be_empty, sv doc) {
  return {s, n, kind::endpoint, r, lo, hi, {}, doc, may_be_empty};
}
constexpr key_spec ratio(sv s, sv n, ratio_ref r, u64 lo, u64 hi, sv doc) {
  return {s, n, kind::ratio, r, lo, hi, {}, doc};
}
constexpr key_spec list(sv s, sv n, list_ref r, sv doc) {
  return {s, n, kind::list, r, 0, 0, {}, doc};
}
constexpr key_spec octal_mode(sv s, sv n, u64_ref r, sv doc) {
  return {s, n, kind::octal_mode, r, 0, 0, {}, doc};
}
constexpr key_spec host_ports(sv s, sv n, list_ref r, u64 lo, u64 hi, sv doc) {
  return {s, n, kind::endpoint_list, r, lo, hi, {}, doc};
}

// Spells a key's TOML name and its accessor from one pair of tokens, so the TOML key is the
// member name by construction and the two cannot drift apart.
#define SPILLWAY_KEY(section, member) \
  #section, #member, [](node_config& c) -> auto& { return c.section.member; }

// Every key of the file, in the order to_toml writes them. Bounds live here and only here.
constexpr std::array schema = {
    integer(SPILLWAY_KEY(node, id), 1, 65535, "part of every bucket id: unique per cluster"),
    host_port(SPILLWAY_KEY(node, listen), 0, 65535, true,
             "where the node actor is published; \"\" = not published"),
    host_port(SPILLWAY_KEY(node, metrics_listen), 0, 65535, true,
              "where Prometheus text is served at /metrics over HTTP; \"\" = not served"),
    choice(SPILLWAY_KEY(node, log_level), "trace|debug|info|warn|error|off", "log threshold"),
    choice(SPILLWAY_KEY(node, log_format), "text|json",
           "log lines as text, or one JSON object a line for log shippers"),
    integer(SPILLWAY_KEY(node, scheduler_threads), 0, 256, "CAF workers; 0 = one per core"),
    integer(SPILLWAY_KEY(node, stop_timeout_ms), 1, 3600000,
            "serve: on SIGTERM, how long the requests in flight may take before the stop is "
            "forced (exit 1)"),

    text(SPILLWAY_KEY(storage, data_dir), "directory holding the bucket files"),
    size(SPILLWAY_KEY(storage, bucket_size_limit), 64 * KiB, 16 * GiB,
         "seal a bucket file at this size"),
    integer(SPILLWAY_KEY(storage, bucket_keys_limit), 1, 1000000,
            "... or at this many keys"),
    integer(SPILLWAY_KEY(storage, seal_after_ms), 1, 3600000,
            "... or when it has been open this long (puts are answered at commit, not seal)"),
    size(SPILLWAY_KEY(storage, max_total_size), 0, no_limit,
         "evict beyond this; 0 = 90 % of the data dir's filesystem"),
    choice(SPILLWAY_KEY(storage, eviction), "fifo|lru", "which bucket goes first when full"),
    boolean(SPILLWAY_KEY(storage, quarantine), "damaged files go to quarantine/, not unlink"),
    integer(SPILLWAY_KEY(storage, max_open_files), 16, 1000000,
            "bucket files held open at once, the least recently read closed first (a batch "
            "keeps its own open)"),
    octal_mode(SPILLWAY_KEY(storage, file_mode),
               "permissions of the files the node creates (the owner reads and writes them, "
               "nobody else writes); its dir adds x where r is set"),

    choice(SPILLWAY_KEY(read, engine), "uring|posix",
           "uring falls back to posix when unusable"),
    choice(SPILLWAY_KEY(read, mode), "window|group",
           "window = sliding window; group = the RFC's baseline"),
    integer(SPILLWAY_KEY(read, readers), 1, 64, "reader actors").one_per_core_up_to(8),
    integer(SPILLWAY_KEY(read, window), 1, 4096, "reads in flight per reader"),
    size(SPILLWAY_KEY(read, window_bytes), 4 * KiB, 64 * GiB,
         "no read of a reader starts while this much is in flight (one always may): large "
         "values need only a few in flight to keep a disk busy"),
    integer(SPILLWAY_KEY(read, queue_depth), 1, 4096, "group mode: reads per group"),
    size(SPILLWAY_KEY(read, arena_size), 2 * MiB, TiB,
         "registered read buffer, in hugepages").multiple_of(hugepage),
    // The kernel rejects a registered iovec over 1 GiB; chunks start on hugepage boundaries.
    size(SPILLWAY_KEY(read, arena_chunk), 2 * MiB, GiB,
         "the arena is registered in chunks of this size; left out, the smaller of 1GiB and "
         "arena_size").multiple_of(hugepage),
    choice(SPILLWAY_KEY(read, arena_pages), "auto|hugetlb|thp|plain",
           "how the arena is backed; auto tries hugetlb, then thp, then plain"),
    integer(SPILLWAY_KEY(read, memory_slots), 0, 4096,
            "registered buffers kept for caller memory (node::register_memory); a region "
            "takes one per GiB started"),
    integer(SPILLWAY_KEY(read, lease_ms), 1, 3600000,
            "a lease held by a caller in another process expires after this"),
    integer(SPILLWAY_KEY(read, timeout_ms), 1, 3600000,
            "a batch's keys fail with `timeout` after this"),

    choice(SPILLWAY_KEY(transfer, transport), "local|tcp|rdma", "how slices leave the node"),
    host_port(SPILLWAY_KEY(transfer, listen), 0, 65535, false, "tcp transport's data port"),
    integer(SPILLWAY_KEY(transfer, control_port), 0, 65535,
            "where peers connect_peer() to this node's transfer host, on listen's host; "
            "0 = a free port, chosen at start"),
    choice(SPILLWAY_KEY(transfer, slicing), "watermark|naive", "how reads are cut into slices"),
    integer(SPILLWAY_KEY(transfer, slicers), 1, 4, "slicer actors").one_per_core_up_to(4),
    size(SPILLWAY_KEY(transfer, slice_size), 4 * KiB, 64 * MiB, "bytes per slice"),
    size(SPILLWAY_KEY(transfer, fragment_limit), 0, 64 * MiB,
         "a tail this short joins the slice before it"),
    integer(SPILLWAY_KEY(transfer, watermark), 1, 65536,
            "slices handed to transports in groups of this many"),
    integer(SPILLWAY_KEY(transfer, retries), 0, 64, "resends of a failed slice"),
    integer(SPILLWAY_KEY(transfer, slice_timeout_ms), 1, 600000,
            "a slice not acknowledged by then is resent"),
    integer(SPILLWAY_KEY(transfer, tcp_lanes), 1, 64, "tcp connections per peer"),
    integer(SPILLWAY_KEY(transfer, rdma_qps), 1, 64,
            "RDMA queue pairs per peer, spread over the devices"),
    list(SPILLWAY_KEY(transfer, rdma_devices), "RDMA devices to use; empty = every device found"),
    // ibv_qp_attr holds the port and the source GID index in 8 bits each.
    integer(SPILLWAY_KEY(transfer, rdma_port), 1, 255, "the HCA port used on every RDMA device"),
    signed_integer(SPILLWAY_KEY(transfer, rdma_gid_index), -1, 255,
                   "the port's GID that queue pairs send from; -1 = its first RoCE v2 GID with "
                   "an IPv4 address, else its first GID (InfiniBand: the LID alone, no GRH)"),
    integer(SPILLWAY_KEY(transfer, max_lanes), 1, 65536,
            "tcp lanes the data port serves at once; more are refused at accept"),
    integer(SPILLWAY_KEY(transfer, max_lanes_per_peer), 1, 65536,
            "tcp lanes served at once from one peer address"),
    integer(SPILLWAY_KEY(transfer, lane_idle_timeout_ms), 1, 86400000,
            "a tcp lane with no frame for this long is closed"),
    integer(SPILLWAY_KEY(transfer, frame_timeout_ms), 1, 600000,
            "a tcp frame begun (hello, header, payload) must be in within this, or the lane "
            "is closed"),

    host_ports(SPILLWAY_KEY(cluster, nodes), 1, 65535,
               "host:port of every node, this one included"),
    integer(SPILLWAY_KEY(cluster, replicas), 1, 16,
            "a client puts each key on this many nodes, the first live ones by rendezvous "
            "hashing (at most the number of nodes)"),
    integer(SPILLWAY_KEY(cluster, request_timeout_ms), 1, 600000,
            "a request to another node fails after this"),

    boolean(SPILLWAY_KEY(security, allow_insecure),
            "let node.listen and transfer.listen take an address off loopback without TLS: "
            "anyone who reaches them can store, read and delete keys"),
    optional_text(SPILLWAY_KEY(security, certificate),
                  "PEM file of this node's certificate (chain): with key and ca_file, the "
                  "control channel speaks TLS and admits only peers the CA signed; "
                  "\"\" = no TLS"),
    optional_text(SPILLWAY_KEY(security, key), "PEM file of the certificate's private key"),
    optional_text(SPILLWAY_KEY(security, ca_file),
                  "PEM file of the CA(s) a peer's certificate must chain to"),
    secret_text(SPILLWAY_KEY(security, passphrase),
                "the private key's passphrase, if it is encrypted (never printed)"),

    boolean(SPILLWAY_KEY(fault, enabled), "must be true for any other [fault] key"),
    integer(SPILLWAY_KEY(fault, seed), 0, toml_int_max, "seeds the fault dice"),
    ratio(SPILLWAY_KEY(fault, read_error_rate), 0, 1, "reads that complete with EIO"),
    ratio(SPILLWAY_KEY(fault, short_read_rate), 0, 1, "reads that complete short"),
    ratio(SPILLWAY_KEY(fault, corrupt_rate), 0, 1, "reads whose data gets one byte flipped"),
    ratio(SPILLWAY_KEY(fault, ring_submit_failure_rate), 0, 1, "io_uring_submit calls that fail"),
    ratio(SPILLWAY_KEY(fault, ring_submit_refusal_rate), 0, 1,
          "io_uring_submit calls refused with EAGAIN"),
    boolean(SPILLWAY_KEY(fault, fail_ring_reopen),
            "setting a ring up again after a reset answers ENOMEM"),
    integer(SPILLWAY_KEY(fault, reader_throw_after_reads), 0, toml_int_max,
            "a reader's ring loop throws once it has taken this many reads; 0 = never"),
    boolean(SPILLWAY_KEY(fault, fail_registration), "buffer registration answers ENOMEM"),
    boolean(SPILLWAY_KEY(fault, refuse_o_direct), "opens with O_DIRECT answer EINVAL"),
    boolean(SPILLWAY_KEY(fault, refuse_o_direct_reads),
            "reads of O_DIRECT bucket files answer EINVAL"),
    list(SPILLWAY_KEY(fault, read_error_keys), "these keys' reads complete with EIO"),
    list(SPILLWAY_KEY(fault, short_read_keys), "these keys' reads complete short"),
    integer(SPILLWAY_KEY(fault, tcp_drop_lane_after_slices), 0, toml_int_max,
            "the tcp server shuts the lane serving this slice, counted over all lanes; 0 = never"),
    integer(SPILLWAY_KEY(fault, tcp_kill_after_slices), 0, toml_int_max,
            "the process SIGKILLs itself after its tcp server served this many slices; 0 = never"),
    choice(SPILLWAY_KEY(fault, kill_at),
           "none|commit.written|commit.synced|commit.published|seal.written|seal.synced|"
           "seal.renamed|seal.dir_synced|seal.published|recovery.renamed|recovery.set_aside|"
           "forget.written|forget.synced|forget.compacted|forget.renamed",
           "the process SIGKILLs itself at this step of a commit, a seal, a forget-log write "
           "or recovery"),
    integer(SPILLWAY_KEY(fault, kill_at_hit), 1, toml_int_max,
            "... the nth time it reaches the step"),
};

#undef SPILLWAY_KEY

struct section_spec {
  std::string_view name;
  std::string_view doc;
  std::string_view gate;     // a boolean key that must be true before the others are accepted
  std::string_view purpose;  // what the gate guards, for the refusal message
};

constexpr std::array<section_spec, 7> sections = {{
    {"node", "This node's identity and runtime.", {}, {}},
    {"storage", "Bucket files on the SSD.", {}, {}},
    {"read", "Reading buckets back into registered memory.", {}, {}},
    {"transfer", "Moving read data to the requester.", {}, {}},
    {"cluster", "The other nodes.", {}, {}},
    {"security", "Who may reach the node's listeners.", {}, {}},
    {"fault", "Fault injection for tests.", "enabled", "fault injection"},
}};

// Pairs whose values depend on each other: `lesser` must stay below (strict) or at `greater`.
struct relation {
  std::string_view lesser;
  std::string_view greater;
  bool strict;
};

constexpr std::array<relation, 2> relations = {{
    {"read.arena_chunk", "read.arena_size", false},            // chunks are cut from the arena
    {"transfer.fragment_limit", "transfer.slice_size", true},  // a fragment is a short slice
}};

constexpr std::size_t key_count = schema.size();

constexpr std::optional<std::size_t> find_key(std::string_view section, std::string_view name) {
  for (std::size_t i = 0; i < key_count; ++i) {
    if (schema[i].section == section && schema[i].name == name) return i;
  }
  return std::nullopt;
}

constexpr std::size_t key_index(std::string_view dotted) {
  const std::size_t dot = dotted.find('.');
  return find_key(dotted.substr(0, dot), dotted.substr(dot + 1)).value_or(key_count);
}

constexpr bool is_size_key(std::string_view dotted) {
  const std::size_t index = key_index(dotted);
  return index < key_count && schema[index].type == kind::size;
}

// Mistakes in the tables above that would otherwise surface only at run time, if ever.
constexpr bool tables_consistent() {
  const bool relations_ok = std::all_of(relations.begin(), relations.end(), [](relation r) {
    return is_size_key(r.lesser) && is_size_key(r.greater);
  });
  const bool gates_ok = std::all_of(sections.begin(), sections.end(), [](section_spec s) {
    const auto gate = find_key(s.name, s.gate);
    return s.gate.empty() || (gate && schema[*gate].type == kind::boolean);
  });
  const bool keys_ok = std::all_of(schema.begin(), schema.end(), [](const key_spec& k) {
    const bool listed = std::any_of(sections.begin(), sections.end(),
                                    [&k](section_spec s) { return s.name == k.section; });
    return listed && k.multiple > 0 && (k.cores_cap == 0 || k.cores_cap <= k.max);
  });
  return relations_ok && gates_ok && keys_ok;
}
static_assert(tables_consistent(), "the schema, section and relation tables disagree");

const section_spec* find_section(std::string_view name) {
  for (const section_spec& s : sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string dotted(const key_spec& key) {
  return std::string(key.section) + "." + std::string(key.name);
}

// Shortest text that reads back as the same double; toml++ prints 17 digits (0.10000000000000001).
std::string format_double(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string out(buffer.data(), result.ptr);
  if (out.find_first_of(".eni") == std::string::npos) out += ".0";  // else TOML reads an int
  return out;
}

// A value as the file spelled it, for "got ..." in messages.
std::string render(const toml::node& node) {
  if (const auto* s = node.as_string()) return quote_string(s->get());
  if (const auto* f = node.as_floating_point()) return format_double(f->get());
  if (node.is_table()) return "a table";
  std::ostringstream out;
  node.visit([&out](const auto& n) { out << n; });
  return out.str();
}

std::string render_typed(const toml::node& node) {
  if (node.is_table()) return "a table";
  std::ostringstream out;
  out << node.type() << " " << render(node);
  return out.str();
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::vector<std::string> split_choices(std::string_view choices) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= choices.size()) {
    const std::size_t bar = std::min(choices.find('|', start), choices.size());
    out.emplace_back(choices.substr(start, bar - start));
    start = bar + 1;
  }
  return out;
}

std::string known_keys(std::string_view section) {
  std::vector<std::string> names;
  for (const key_spec& key : schema) {
    if (key.section == section) names.emplace_back(key.name);
  }
  return join(names, ", ");
}

std::string known_sections() {
  std::vector<std::string> names;
  for (const section_spec& s : sections) names.emplace_back(s.name);
  return join(names, ", ");
}

constexpr std::int64_t signed_bound(std::uint64_t stored) {
  return static_cast<std::int64_t>(stored);
}

std::string port_range(const key_spec& key) {
  return "a port from " + std::to_string(key.min) + " to " + std::to_string(key.max);
}

// What one item of a list key may be; for an endpoint key, the endpoint itself.
std::string allowed_item(const key_spec& key) {
  if (key.type == kind::list) return "a non-empty string";
  return "\"host:port\" with " + port_range(key);
}

// What a key may be, phrased to follow "must be".
std::string allowed(const key_spec& key) {
  switch (key.type) {
    case kind::integer:
      return "an integer from " + std::to_string(key.min) + " to " + std::to_string(key.max);
    case kind::signed_integer:
      return "an integer from " + std::to_string(signed_bound(key.min)) + " to " +
             std::to_string(signed_bound(key.max));
    case kind::size: {
      std::string range = "a size";
      if (key.min != 0 || key.max != no_limit) {
        range += " from " + format_size(key.min) + " to " + format_size(key.max);
      }
      if (key.multiple > 1) range += ", a multiple of " + format_size(key.multiple);
      return range;
    }
    case kind::boolean: return "true or false";
    case kind::text: return key.may_be_empty ? "a string" : "a non-empty string";
    case kind::choice: {
      std::vector<std::string> quoted;
      for (const std::string& c : split_choices(key.choices)) quoted.push_back(quote_string(c));
      return "one of " + join(quoted, ", ");
    }
    case kind::endpoint:
      return (key.may_be_empty ? "\"\" or " : "") + allowed_item(key);
    case kind::ratio:
      return "a number from " + std::to_string(key.min) + ".0 to " + std::to_string(key.max) +
             ".0";
    case kind::list: return "an array of non-empty strings";
    case kind::endpoint_list:
      return "an array of distinct \"host:port\" strings, each with " + port_range(key);
    case kind::octal_mode:
      return "octal permissions in a string: \"0600\", \"0640\", \"0604\" or \"0644\"";
  }
  return {};
}

// The port range is the key's own; parse_endpoint allows any port up to 65535.
bool is_endpoint(std::string_view text, std::uint64_t lowest, std::uint64_t highest) {
  const std::optional<endpoint> parsed = parse_endpoint(text);
  return parsed && parsed->port >= lowest && parsed->port <= highest;
}

struct problem {
  toml::source_position at;
  std::string text;
};

std::string located(std::string_view source, toml::source_position at) {
  return std::string(source) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
         ": ";
}

// One load: walks the file against the schema, filling a node_config and a problem list.
class loader {
public:
  explicit loader(std::string_view source) : source_(source) {}
  node_config load(const toml::table& root);

private:
  void read_section(const section_spec& section, const toml::table& table);
  void read_key(std::size_t index, const toml::node& node);
  bool read_integer(const key_spec& key, const toml::node& node);
  bool read_size(const key_spec& key, const toml::node& node);
  bool read_boolean(const key_spec& key, const toml::node& node);
  bool read_text(const key_spec& key, const toml::node& node);
  bool read_ratio(const key_spec& key, const toml::node& node);
  bool read_list(const key_spec& key, const toml::node& node);
  bool read_mode(const key_spec& key, const toml::node& node);
  bool read_item(const key_spec& key, const toml::node& item, std::size_t at,
                 std::vector<std::string>& seen);
  void follow_defaults();
  void check_relations();
  void check_chunk_count();
  void check_tls_files();
  const toml::node* set_later(std::size_t a, std::size_t b) const;
  void resolve_per_core();
  bool fail(toml::source_position at, std::string text);
  bool fail(const toml::node& at, std::string text);
  bool wrong_type(const key_spec& key, const toml::node& node);
  bool out_of_range(const key_spec& key, const toml::node& node);

  std::string_view source_;
  node_config config_;
  std::vector<problem> problems_;
  std::array<const toml::node*, key_count> found_{};  // the file's node for each key, if any
  std::array<bool, key_count> valid_{};
};

// Always false, so a reader can `return fail(...)`.
bool loader::fail(toml::source_position at, std::string text) {
  problems_.push_back({at, std::move(text)});
  return false;
}

bool loader::fail(const toml::node& at, std::string text) {
  return fail(at.source().begin, std::move(text));
}

bool loader::wrong_type(const key_spec& key, const toml::node& node) {
  const char* hint = key.type == kind::size ? " (bytes, or a string such as \"64KiB\")" : "";
  return fail(node, dotted(key) + ": must be " + allowed(key) + hint + ", got " +
                        render_typed(node));
}

bool loader::out_of_range(const key_spec& key, const toml::node& node) {
  return fail(node, dotted(key) + ": must be " + allowed(key) + ", got " + render(node));
}

node_config loader::load(const toml::table& root) {
  for (const auto& [name, node] : root) {
    const section_spec* section = find_section(name.str());
    const toml::table* table = node.as_table();
    if (section && table) {
      read_section(*section, *table);
    } else if (section) {
      fail(node, std::string(name.str()) + ": must be a table (the [" +
                     std::string(name.str()) + "] section), got " + render_typed(node));
    } else {
      const char* what = table ? "unknown section '" : "unknown top-level key '";
      fail(name.source().begin,
           what + std::string(name.str()) + "' (known sections: " + known_sections() + ")");
    }
  }
  follow_defaults();
  check_relations();
  check_chunk_count();
  check_tls_files();
  resolve_per_core();
  if (problems_.empty()) return config_;
  std::stable_sort(problems_.begin(), problems_.end(), [](const problem& a, const problem& b) {
    return std::pair(a.at.line, a.at.column) < std::pair(b.at.line, b.at.column);
  });
  std::vector<std::string> lines;
  for (const problem& p : problems_) lines.push_back(located(source_, p.at) + p.text);
  throw config_error(std::move(lines));
}

void loader::read_section(const section_spec& section, const toml::table& table) {
  // A gate left out or false closes the section; a gate of the wrong type is reported on its
  // own, and refusing every other key as well would only bury that message.
  const toml::node* gate = section.gate.empty() ? nullptr : table.get(section.gate);
  const bool closed = !section.gate.empty() && (!gate || gate->value<bool>() == false);
  for (const auto& [name, node] : table) {
    const std::optional<std::size_t> index = find_key(section.name, name.str());
    const std::string key = std::string(section.name) + "." + std::string(name.str());
    if (!index) {
      fail(name.source().begin, "unknown key '" + key + "' (known keys in [" +
                                    std::string(section.name) + "]: " +
                                    known_keys(section.name) + ")");
    } else if (closed && name.str() != section.gate) {
      const std::string gate_key = std::string(section.name) + "." + std::string(section.gate);
      fail(name.source().begin, key + ": refused while " + gate_key + " is not true (set " +
                                    gate_key + " = true to use " +
                                    std::string(section.purpose) + ")");
    } else {
      read_key(*index, node);
    }
  }
}

void loader::read_key(std::size_t index, const toml::node& node) {
  const key_spec& key = schema[index];
  found_[index] = &node;
  switch (key.type) {
    case kind::integer:
    case kind::signed_integer: valid_[index] = read_integer(key, node); break;
    case kind::size: valid_[index] = read_size(key, node); break;
    case kind::boolean: valid_[index] = read_boolean(key, node); break;
    case kind::text:
    case kind::choice:
    case kind::endpoint: valid_[index] = read_text(key, node); break;
    case kind::ratio: valid_[index] = read_ratio(key, node); break;
    case kind::list:
    case kind::endpoint_list: valid_[index] = read_list(key, node); break;
    case kind::octal_mode: valid_[index] = read_mode(key, node); break;
  }
}

// Checks the node's type first: value<int64_t>() on a float is nullopt, not an error.
bool loader::read_integer(const key_spec& key, const toml::node& node) {
  const auto* value = node.as_integer();
  if (!value) return wrong_type(key, node);
  const std::int64_t number = value->get();
  if (key.type == kind::signed_integer) {
    if (number < signed_bound(key.min) || number > signed_bound(key.max))
      return out_of_range(key, node);
    std::get<i64_ref>(key.ref)(config_) = number;
    return true;
  }
  if (number < 0) return out_of_range(key, node);
  const auto unsigned_number = static_cast<std::uint64_t>(number);
  if (unsigned_number < key.min || unsigned_number > key.max) return out_of_range(key, node);
  std::get<u64_ref>(key.ref)(config_) = unsigned_number;
  return true;
}

bool loader::read_size(const key_spec& key, const toml::node& node) {
  std::optional<std::uint64_t> bytes;
  if (const auto* number = node.as_integer()) {
    if (number->get() < 0) return out_of_range(key, node);
    bytes = static_cast<std::uint64_t>(number->get());
  } else if (const auto* spelled = node.as_string()) {
    bytes = parse_size(spelled->get());
    if (!bytes) {
      return fail(node, dotted(key) + ": " + quote_string(spelled->get()) +
                            " is not a size (use bytes, or a number with B, KiB, MiB, GiB or TiB)");
    }
  } else {
    return wrong_type(key, node);
  }
  if (*bytes < key.min || *bytes > key.max || *bytes % key.multiple != 0) {
    return out_of_range(key, node);
  }
  std::get<u64_ref>(key.ref)(config_) = *bytes;
  return true;
}

bool loader::read_boolean(const key_spec& key, const toml::node& node) {
  const auto* value = node.as_boolean();
  if (!value) return wrong_type(key, node);
  std::get<bool_ref>(key.ref)(config_) = value->get();
  return true;
}

// text, choice and endpoint: a string, then the kind's own rule.
bool loader::read_text(const key_spec& key, const toml::node& node) {
  const auto* value = node.as_string();
  if (!value) return wrong_type(key, node);
  const std::string& text = value->get();
  bool ok = !text.empty() || (key.type == kind::text && key.may_be_empty);
  if (key.type == kind::choice) {
    const std::vector<std::string> choices = split_choices(key.choices);
    ok = std::find(choices.begin(), choices.end(), text) != choices.end();
  } else if (key.type == kind::endpoint) {
    ok = (text.empty() && key.may_be_empty) || is_endpoint(text, key.min, key.max);
  }
  if (!ok) return out_of_range(key, node);
  std::get<text_ref>(key.ref)(config_) = text;
  return true;
}

// An integer is fine here (corrupt_rate = 1); toml++ converts it exactly.
bool loader::read_ratio(const key_spec& key, const toml::node& node) {
  if (!node.is_floating_point() && !node.is_integer()) return wrong_type(key, node);
  const double value = node.value<double>().value_or(0.0);
  const auto lowest = static_cast<double>(key.min);
  const auto highest = static_cast<double>(key.max);
  if (!(value >= lowest && value <= highest)) return out_of_range(key, node);  // NaN fails too
  std::get<ratio_ref>(key.ref)(config_) = value;
  return true;
}

bool loader::read_list(const key_spec& key, const toml::node& node) {
  const auto* array = node.as_array();
  if (!array) return wrong_type(key, node);
  std::vector<std::string> items;
  bool ok = true;
  for (std::size_t i = 0; i < array->size(); ++i) {
    ok = read_item(key, *array->get(i), i, items) && ok;
  }
  if (ok) std::get<list_ref>(key.ref)(config_) = std::move(items);
  return ok;
}

// Octal digits in a string, as chmod takes them; the owner must keep read and write (the
// node's own files) and nobody gets execute, nor write unless the owner.
bool loader::read_mode(const key_spec& key, const toml::node& node) {
  const auto* value = node.as_string();
  if (!value) return wrong_type(key, node);
  const std::string& text = value->get();
  std::uint64_t mode = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mode, 8);
  const bool octal = !text.empty() && text.size() <= 4 && ec == std::errc{} &&
                     end == text.data() + text.size();
  if (!octal || mode > 0777 || (mode & 0600) != 0600 || (mode & 0133) != 0)
    return out_of_range(key, node);
  std::get<u64_ref>(key.ref)(config_) = mode;
  return true;
}

// Appends a valid item to `seen`; endpoint lists also refuse a repeat.
bool loader::read_item(const key_spec& key, const toml::node& item, std::size_t at,
                       std::vector<std::string>& seen) {
  const std::string where = dotted(key) + "[" + std::to_string(at) + "]";
  const auto* value = item.as_string();
  const bool ok = value && !value->get().empty() &&
                  (key.type != kind::endpoint_list || is_endpoint(value->get(), key.min, key.max));
  if (!ok) {
    return fail(item, where + ": must be " + allowed_item(key) + ", got " + render_typed(item));
  }
  const auto earlier = std::find(seen.begin(), seen.end(), value->get());
  if (key.type == kind::endpoint_list && earlier != seen.end()) {
    const auto first = std::to_string(earlier - seen.begin());
    return fail(item, where + ": " + render(item) + " is listed twice (first as " +
                          dotted(key) + "[" + first + "]); each node must appear once");
  }
  seen.push_back(value->get());
  return true;
}

// A default that would break a relation with a key the file sets follows that key
// instead: `arena_size = "64MiB"` alone makes 64 MiB chunks, not a 1 GiB chunk refused.
void loader::follow_defaults() {
  const std::size_t size = key_index("read.arena_size");
  const std::size_t chunk = key_index("read.arena_chunk");
  if (!found_[chunk] && (!found_[size] || valid_[size]))
    config_.read.arena_chunk = std::min(config_.read.arena_chunk, config_.read.arena_size);
}

// Reported at whichever of the two keys the file sets later: that is the one that broke it.
void loader::check_relations() {
  for (const relation& r : relations) {
    const std::size_t a = key_index(r.lesser);
    const std::size_t b = key_index(r.greater);
    if ((found_[a] && !valid_[a]) || (found_[b] && !valid_[b])) continue;
    const std::uint64_t lesser = std::get<u64_ref>(schema[a].ref)(config_);
    const std::uint64_t greater = std::get<u64_ref>(schema[b].ref)(config_);
    if (r.strict ? lesser < greater : lesser <= greater) continue;
    const toml::node* at = set_later(a, b);
    if (!at) continue;  // both defaults: the defaults are consistent
    fail(*at, std::string(r.lesser) + " (" + format_size(lesser) + ") must be " +
                  (r.strict ? "smaller than " : "at most ") + std::string(r.greater) + " (" +
                  format_size(greater) + ")");
  }
}

// Of two keys, the node of the one the file sets later; null when it sets neither.
const toml::node* loader::set_later(std::size_t a, std::size_t b) const {
  const toml::node* at = found_[a];
  if (!at || (found_[b] && at->source().begin < found_[b]->source().begin)) at = found_[b];
  return at;
}

// Every chunk, and every slot kept for caller memory, is a registered buffer of every
// reader's ring, and io_uring takes at most IORING_MAX_REG_BUFFERS of them: past that,
// every read would go unregistered.
void loader::check_chunk_count() {
  const std::uint64_t registered_buffers_max = 16384 - config_.read.memory_slots;
  const std::size_t size = key_index("read.arena_size");
  const std::size_t chunk = key_index("read.arena_chunk");
  if ((found_[size] && !valid_[size]) || (found_[chunk] && !valid_[chunk])) return;
  const auto& read = config_.read;
  const std::uint64_t chunks = (read.arena_size + read.arena_chunk - 1) / read.arena_chunk;
  if (chunks <= registered_buffers_max) return;
  const std::uint64_t least = (read.arena_size + registered_buffers_max - 1) /
                              registered_buffers_max;
  const toml::node* at = set_later(size, chunk);
  if (!at) return;  // the defaults make one chunk
  fail(*at, "read.arena_size (" + format_size(read.arena_size) + ") in read.arena_chunk (" +
                format_size(read.arena_chunk) + ") pieces is " + std::to_string(chunks) +
                " chunks, more than the " + std::to_string(registered_buffers_max) +
                " buffers io_uring registers beside read.memory_slots: make read.arena_chunk "
                "at least " +
                format_size((least + hugepage - 1) / hugepage * hugepage));
}

// TLS takes a certificate, its key and the CA that signs the peers' together: one or two
// of them is a mistake that would otherwise start a node without TLS, or fail at the
// first handshake. Reported at the first of them the file sets, naming those missing.
void loader::check_tls_files() {
  constexpr std::array<std::string_view, 3> names = {"security.certificate", "security.key",
                                                     "security.ca_file"};
  std::vector<std::string> set, missing;
  const toml::node* first = nullptr;
  for (const auto name : names) {
    const std::size_t index = key_index(name);
    if (found_[index] && !valid_[index]) return;  // reported already
    if (std::get<text_ref>(schema[index].ref)(config_).empty()) {
      missing.emplace_back(name);
      continue;
    }
    set.emplace_back(name);
    if (found_[index] && (!first || found_[index]->source().begin < first->source().begin))
      first = found_[index];
  }
  if (set.empty() || missing.empty() || !first) return;
  fail(*first, join(missing, " and ") + (missing.size() == 1 ? " is" : " are") +
                   " missing: TLS needs security.certificate, security.key and "
                   "security.ca_file together (" + join(set, " and ") + " set here)");
}

void loader::resolve_per_core() {
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 0; i < key_count; ++i) {
    if (schema[i].cores_cap == 0 || found_[i]) continue;
    std::get<u64_ref>(schema[i].ref)(config_) = std::min(cores, schema[i].cores_cap);
  }
}

// A section's gate value in `config`, or true when the section has no gate.
bool gate_open(const section_spec& section, node_config& config) {
  if (section.gate.empty()) return true;
  const std::optional<std::size_t> index = find_key(section.name, section.gate);
  return index && std::get<bool_ref>(schema[*index].ref)(config);
}

std::string value_text(const key_spec& key, node_config& config) {
  switch (key.type) {
    case kind::integer: return std::to_string(std::get<u64_ref>(key.ref)(config));
    case kind::signed_integer: return std::to_string(std::get<i64_ref>(key.ref)(config));
    case kind::size: return quote_string(format_size(std::get<u64_ref>(key.ref)(config)));
    case kind::boolean: return std::get<bool_ref>(key.ref)(config) ? "true" : "false";
    case kind::text:
    case kind::choice:
    case kind::endpoint: return quote_string(std::get<text_ref>(key.ref)(config));
    case kind::ratio: return format_double(std::get<ratio_ref>(key.ref)(config));
    case kind::octal_mode: {
      std::array<char, 8> octal{};
      std::snprintf(octal.data(), octal.size(), "%04llo",
                    static_cast<unsigned long long>(std::get<u64_ref>(key.ref)(config)));
      return quote_string(octal.data());
    }
    case kind::list:
    case kind::endpoint_list: {
      std::vector<std::string> quoted;
      for (const std::string& item : std::get<list_ref>(key.ref)(config)) {
        quoted.push_back(quote_string(item));
      }
      return "[" + join(quoted, ", ") + "]";
    }
  }
  return {};
}

// One key as to_toml writes it: its doc, then the line, commented out where loading it back
// would be refused (behind a closed gate) or would pin a per-core default that was never set.
std::string key_text(const key_spec& key, const section_spec& section, node_config& config) {
  std::string doc = "# " + std::string(key.doc) + " (" + allowed(key);
  if (key.cores_cap != 0) doc += "; absent = cores, at most " + std::to_string(key.cores_cap);
  doc += ")\n";
  const bool unresolved = key.cores_cap != 0 && std::get<u64_ref>(key.ref)(config) == 0;
  const bool gated = key.name != section.gate && !gate_open(section, config);
  std::string value = unresolved ? std::to_string(key.cores_cap) : value_text(key, config);
  if (key.secret && !std::get<text_ref>(key.ref)(config).empty())
    return doc + "# " + std::string(key.name) + " = \"<set>\" (set, not printed)\n";
  return doc + (unresolved || gated ? "# " : "") + std::string(key.name) + " = " + value + "\n";
}

// A node's file is a few KiB; the bound ends `-c /dev/zero`, which would be read for ever.
constexpr std::size_t config_bytes_max = MiB;

// Reads `path` into `out`; returns an empty string, or why it cannot.
std::string read_whole_file(const std::filesystem::path& path, std::string& out) {
  struct closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  const std::unique_ptr<std::FILE, closer> file(std::fopen(path.c_str(), "rb"));
  if (!file) return std::strerror(errno);
  std::array<char, 65536> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
    out.append(buffer.data(), got);
    if (out.size() > config_bytes_max)
      return "larger than " + format_size(config_bytes_max) + ", so not a node's config";
  }
  // fread on a directory fails with EISDIR, and only ferror says so
  return std::ferror(file.get()) != 0 ? std::strerror(errno) : std::string{};
}

}  // namespace

config_error::config_error(std::vector<std::string> problems)
    : std::runtime_error(join(problems, "\n")), problems_(std::move(problems)) {}

node_config load_config_file(const std::filesystem::path& path) {
  std::string text;
  if (const auto problem = read_whole_file(path, text); !problem.empty())
    throw config_error({path.string() + ": cannot read config file: " + problem});
  return load_config_text(text, path.string());
}

node_config load_config_text(std::string_view toml, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(toml, source_name);
  } catch (const toml::parse_error& e) {
    throw config_error({located(source_name, e.source().begin) + std::string(e.description())});
  }
  return loader(source_name).load(root);
}

std::string to_toml(const node_config& config) {
  node_config copy = config;  // the schema's accessors hand out mutable references
  std::string out =
      "# spillway node configuration: every key, with its value.\n"
      "# Sizes are bytes, or strings with B, KiB, MiB, GiB or TiB (\"64KiB\", \"1 GiB\").\n";
  for (const section_spec& section : sections) {
    out += "\n# " + std::string(section.doc);
    if (!section.gate.empty()) {
      out += " Every key but " + std::string(section.gate) + " is refused unless " +
             std::string(section.gate) + " = true.";
    }
    out += "\n[" + std::string(section.name) + "]\n";
    for (const key_spec& key : schema) {
      if (key.section == section.name) out += key_text(key, section, copy);
    }
  }
  return out;
}

// Written here because toml++ switches to """ for a newline.
std::string quote_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      std::array<char, 8> escape{};
      std::snprintf(escape.data(), escape.size(), "\\u%04x", byte);
      out += escape.data();
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace spillway

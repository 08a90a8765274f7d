#include "tools/soak_runner.hpp"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "tools/generated_value.hpp"

namespace spillway::soak {
namespace {

constexpr std::size_t registered_bytes = 4 << 20;  // 8 values of the largest size
constexpr std::size_t clean_batch_keys = 16;
// A bound for the arena to hear of the last release (an asynchronous message).
constexpr auto release_limit = std::chrono::seconds(10);

// Small on purpose: buckets of 8 keys and a quota of a few buckets, so eviction runs
// all the time, also while batches read.
node_config soak_config(const std::filesystem::path& data_dir, const std::string& log_level,
                        const epoch_dice& dice) {
  auto config = load_config_text("", "soak");
  config.storage.data_dir = data_dir.string();
  config.node.listen = "";
  config.node.log_level = log_level;
  config.storage.bucket_keys_limit = 8;
  config.storage.bucket_size_limit = 1 << 20;
  config.storage.max_total_size = 8 << 20;
  config.storage.seal_after_ms = 100;
  config.read.readers = 2;
  config.read.arena_size = 64 << 20;
  config.read.arena_chunk = 32 << 20;
  config.transfer.listen = "127.0.0.1:0";
  config.fault.enabled = true;
  config.fault.seed = dice.seed;
  config.fault.ring_submit_failure_rate = dice.ring_submit_failure_rate;
  config.fault.reader_throw_after_reads = dice.reader_throw_after_reads;
  config.fault.fail_registration = dice.fail_registration;
  config.fault.read_error_rate = dice.read_error_rate;
  config.fault.corrupt_rate = dice.corrupt_rate;
  return config;
}

std::vector<std::string> names(const std::vector<std::uint32_t>& keys) {
  std::vector<std::string> out;
  for (const auto k : keys) out.push_back(key_name(k));
  return out;
}

std::string text_of(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

void tally::add(node& n) {
  const auto nodes = n.stats();
  reader_restarts += nodes.reader_restarts;
  for (const auto& r : nodes.readers) {
    ring_resets += r.ring_resets;
    registration_failures += r.registration_errno != 0;
  }
  const auto store = n.store_stats();
  evicted_keys += store.evicted_keys;
  forget_entries += store.forget_entries_written;
  forget_records_dropped += store.forget_records_dropped;
  o_direct_refusals += store.o_direct_refusals;
  const auto moved = n.transfers();
  lanes_lost += moved.lanes_lost;
  slices_retried += moved.slices_retried;
}

runner::runner(std::filesystem::path work_dir, std::filesystem::path data_dir,
               faultfs::mount* fs, std::string log_level)
    : work_dir_(std::move(work_dir)),
      data_dir_(std::move(data_dir)),
      log_level_(std::move(log_level)),
      fs_(fs),
      registered_(registered_bytes) {}

runner::~runner() {
  held_.clear();
  node_.reset();
}

void runner::start(const epoch_dice& dice) {
  faults_.dice = dice;
  node_ = std::make_unique<node>(soak_config(data_dir_, log_level_, dice));
  node_->on_evicted([this](std::vector<std::string> keys) { model_.evicted(keys); });
  node_->register_memory(registered_.data(), registered_.size());
  if (!peer_) return;
  // The peer exports its segment to one transfer identity, and a restarted node has a
  // new one: the peer starts again with the same faults, exporting to this node.
  stop_peer();
  start_peer(peer_faults_);
}

void runner::stop() {
  while (!held_.empty()) release_view();
  clear_fs_faults();
  tally_.add(*node_);
  node_.reset();
  model_.restarted();
}

std::vector<std::string> runner::run(const op& o) {
  findings_.clear();
  try {
    switch (o.kind) {
      case op_kind::start: start(o.dice); start_peer(o.peer); break;
      case op_kind::restart: stop(); start(o.dice); break;
      case op_kind::put: put(o, false); break;
      case op_kind::put_from: put(o, true); break;
      case op_kind::get_view: get_view(o.keys); break;
      case op_kind::get_into_registered: get_into(o.keys, true); break;
      case op_kind::get_into_plain: get_into(o.keys, false); break;
      case op_kind::hold_view: hold_view(o.keys); break;
      case op_kind::release_view: release_view(); break;
      case op_kind::get_during_put: get_during_put(o); break;
      case op_kind::remove: remove(o.keys); break;
      case op_kind::flush: flush(); break;
      case op_kind::fs_fault: set_fs_fault(o); break;
      case op_kind::fs_clear: clear_fs_faults(); clean_batch(); break;
      case op_kind::transfer: transfer(o); break;
      case op_kind::peer_restart: stop_peer(); start_peer(o.peer); break;
    }
  } catch (const std::exception& e) {
    finding(std::string{"threw: "} + e.what());
  }
  return findings_;
}

// Puts never fail unless a write fault is active; a failed one may still show up whole.
void runner::settle_put(const op& o, const std::vector<key_status>& statuses) {
  for (std::size_t i = 0; i < o.keys.size(); ++i) {
    const version v{o.index, o.sizes[i]};
    if (statuses[i].ok()) {
      model_.put_acked(o.keys[i], v);
      continue;
    }
    model_.put_failed(o.keys[i], v);
    if (!faults_.explains_write(statuses[i]))
      finding(key_name(o.keys[i]) + ": put failed " + to_string(statuses[i]) +
              " with no fault to explain it (" + faults_.describe() + ")");
  }
}

void runner::put(const op& o, bool from_caller_memory) {
  const auto keys = names(o.keys);
  if (!from_caller_memory) {
    std::vector<std::string> values;
    for (std::size_t i = 0; i < keys.size(); ++i)
      values.push_back(value_of(o.keys[i], {o.index, o.sizes[i]}));
    return settle_put(o, node_->put(keys, std::move(values)).get());
  }
  // Each value on pages of its own, so whole pages can go to disk straight from here.
  std::size_t bytes = 0;
  for (const auto s : o.sizes) bytes += whole_pages(s);
  mapped_memory memory{bytes};
  std::vector<std::span<const std::byte>> spans;
  std::byte* at = memory.data();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    fill_generated_value({at, o.sizes[i]}, o.index, keys[i]);
    spans.emplace_back(at, o.sizes[i]);
    at += whole_pages(o.sizes[i]);
  }
  settle_put(o, node_->put_from(keys, spans).get());
}

void runner::check_values(const std::vector<std::uint32_t>& keys, const batch_values& got) {
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const auto& v = got.values()[k];
    if (auto bad = model_.check(keys[k], v.status, v.bytes, faults_); !bad.empty()) finding(bad);
  }
}

batch_values runner::get_view(const std::vector<std::uint32_t>& keys) {
  auto got = node_->get_batch(names(keys));
  check_values(keys, got);
  return got;
}

void runner::hold_view(const std::vector<std::uint32_t>& keys) {
  held_view view{keys, get_view(keys), {}};
  for (const auto& v : view.values.values()) view.bytes.push_back(text_of(v.bytes));
  held_.push_back(std::move(view));
}

// A view lent from the arena holds its bytes however long it is kept.
void runner::release_view() {
  if (held_.empty()) return;  // its hold_view threw
  auto view = std::move(held_.front());
  held_.pop_front();
  for (std::size_t k = 0; k < view.keys.size(); ++k)
    if (text_of(view.values.values()[k].bytes) != view.bytes[k])
      finding(key_name(view.keys[k]) + ": a held view's bytes changed while it was lent");
  view.values.release();
}

// Each key a buffer of whole pages, a page more than its largest value: the canary
// after the value shows a read that wrote past it.
void runner::get_into(const std::vector<std::uint32_t>& keys, bool registered) {
  std::vector<std::size_t> lengths;
  std::size_t total = 0;
  for (const auto k : keys)
    total += lengths.emplace_back(whole_pages(model_.size_max(k)) + page_bytes);
  std::unique_ptr<mapped_memory> own;
  if (!registered || total > registered_.size()) own = std::make_unique<mapped_memory>(total);
  auto& memory = own ? *own : registered_;
  memory.fill_canary();
  std::vector<std::span<std::byte>> buffers;
  std::byte* at = memory.data();
  for (const auto length : lengths) {
    buffers.emplace_back(at, length);
    at += length;
  }
  std::vector<std::size_t> sizes;
  const auto statuses = node_->get_batch_into(names(keys), buffers, sizes);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const auto size = statuses[k].ok() ? sizes[k] : 0;
    if (auto bad = model_.check(keys[k], statuses[k], buffers[k].first(size), faults_);
        !bad.empty())
      finding(bad);
    else if (statuses[k].ok() && !mapped_memory::untouched(buffers[k].subspan(size)))
      finding(key_name(keys[k]) + ": get_batch_into wrote past its value");
  }
}

// Batches read while a put of about 2 MiB pushes buckets out: their reads pin buckets
// that eviction takes from the catalog meanwhile.
void runner::get_during_put(const op& o) {
  auto reading = std::async(std::launch::async,
                            [this, keys = names(o.read_keys)] { return node_->get_batch(keys); });
  std::exception_ptr put_failed;
  try {
    put(o, false);
  } catch (...) {
    put_failed = std::current_exception();
  }
  auto got = reading.get();
  check_values(o.read_keys, got);
  if (put_failed) std::rethrow_exception(put_failed);
}

// A remove fails only when its forget-log entries could not be made durable: a write
// fault; the keys stay, though a restart may find them removed.
void runner::remove(const std::vector<std::uint32_t>& keys) {
  std::uint64_t removed = 0;
  try {
    removed = node_->remove(names(keys));
  } catch (const std::runtime_error& e) {
    for (const auto k : keys) model_.remove_failed(k);
    if (!faults_.any_write())
      finding(std::string{"remove failed with no fault to explain it: "} + e.what());
    return;
  }
  if (removed > keys.size())
    finding("remove of " + std::to_string(keys.size()) + " keys removed " +
            std::to_string(removed));
  for (const auto k : keys) model_.removed(k);
}

// A seal that fails answers its own puts; flush itself fails only if the writer is gone.
// One bucket at most is open: the writer's (a bucket it gave up on no longer is).
void runner::flush() {
  node_->flush();
  if (const auto open = node_->store_stats().open_buckets; open > 1)
    finding("after a flush " + std::to_string(open) + " buckets are open, never to be sealed");
}

void runner::set_fs_fault(const op& o) {
  if (!fs_) return;
  rules_.push_back(fs_->add(o.rule));
  faults_.fs.insert(o.family);
}

void runner::clear_fs_faults() {
  if (!fs_) return;
  for (const auto rule : rules_) tally_.fs_injected += fs_->injected(rule);
  rules_.clear();
  fs_->clear();
  faults_.fs.clear();
}

// Right after the faults went: every key the model is sure of reads back exactly.
void runner::clean_batch() {
  auto keys = model_.certain_keys();
  if (keys.size() > clean_batch_keys) keys.resize(clean_batch_keys);
  check_values(keys, node_->get_batch(names(keys)));
}

void runner::start_peer(const peer_dice& dice) {
  peer_faults_ = dice;
  const auto config = work_dir_ / "peer.toml";
  std::ofstream{config} << "[fault]\nenabled = true\ntcp_drop_lane_after_slices = "
                        << dice.drop_lane_after_slices
                        << "\ntcp_kill_after_slices = " << dice.kill_after_slices << "\n";
  peer_ = std::make_unique<bench::transfer_peer_process>(
    std::to_string(peer_segment_bytes), config.string(),
    std::vector<std::string>{node_->transfer_identity()});
  connect_peer();
}

void runner::stop_peer() {
  tally_.peer_kills += peer_->stop() == 128 + SIGKILL;
  route_.reset();
}

// A peer that killed itself refuses the connection: the route stays down until the next.
void runner::connect_peer() {
  try {
    route_ = node_->connect_peer("127.0.0.1", peer_->control_port);
    lanes_lost_before_ = node_->transfers().lanes_lost;
  } catch (const std::exception&) {
    route_.reset();
    if (peer_faults_.kill_after_slices == 0) throw;
  }
}

// A request fails only when the peer may have killed itself, or when every lane to it
// was lost (dropped lanes are retried on the others, and come back).
bool runner::explains(const transfer_status& status) {
  if (peer_faults_.kill_after_slices > 0) return true;
  const auto lost = node_->transfers().lanes_lost - lanes_lost_before_;
  return peer_faults_.drop_lane_after_slices > 0 &&
         status.error == transfer_error::unavailable && lost >= node_->config().transfer.tcp_lanes;
}

// Bytes written to the peer's segment and read back: the same, or a named error that
// the peer's faults explain.
void runner::transfer(const op& o) {
  if (!route_) return;
  const auto length = o.sizes[0];
  auto source = generated_value(length, o.index, "transfer");
  std::string back(length, '\0');
  const auto segment = peer_->segment;
  for (auto [direction, local] : {std::pair{transfer_op::write, source.data()},
                                  std::pair{transfer_op::read, back.data()}}) {
    const auto status =
      node_->transfer(*route_, {{direction, local, segment, o.offset, length}}).get().at(0);
    if (status.ok()) continue;
    if (!explains(status))
      finding("transfer of " + std::to_string(length) + " bytes: " + to_string(status) +
              " with no fault of the peer to explain it");
    return;
  }
  if (back != source) finding("transfer: the bytes read back are not those written");
}

std::vector<std::string> runner::finish() {
  findings_.clear();
  if (!node_) return findings_;
  while (!held_.empty()) release_view();
  const auto deadline = std::chrono::steady_clock::now() + release_limit;
  arena_stats arena = node_->read_stats();
  while ((arena.leases != 0 || arena.free_bytes != arena.ready_bytes) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    arena = node_->read_stats();
  }
  if (arena.leases != 0 || arena.free_bytes != arena.ready_bytes)
    finding("the arena has " + std::to_string(arena.leases) + " leases out and " +
            std::to_string(arena.ready_bytes - arena.free_bytes) + " bytes lent at the end");
  stop();
  if (peer_) stop_peer();
  return findings_;
}

}  // namespace spillway::soak

// The chaos soak's runner: one in-process node over a data dir (inside the fault
// filesystem when it mounted), each scheduled operation done on it and every answer
// checked against the model (soak_model.hpp). A restart stops the node gracefully and
// opens a new one on the same data dir with the next epoch's [fault] dice. Transfers go
// over tcp to a `spillway transfer-peer` child whose [fault] drops lanes or kills it.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/node.hpp"
#include "tools/faultfs/mount.hpp"
#include "tools/soak_memory.hpp"
#include "tools/soak_model.hpp"
#include "tools/soak_schedule.hpp"
#include "tools/transfer_peer_process.hpp"

namespace spillway::soak {

// What the faults did, summed over the nodes: the proof that they happened.
struct tally {
  std::uint64_t evicted_keys = 0;
  std::uint64_t forget_entries = 0;          // removes and evictions made durable
  std::uint64_t forget_records_dropped = 0;  // records recoveries found dead
  std::uint64_t reader_restarts = 0;        // readers killed and replaced
  std::uint64_t ring_resets = 0;            // ring failures recovered from
  std::uint64_t registration_failures = 0;  // readers left on plain reads
  std::uint64_t o_direct_refusals = 0;
  std::uint64_t fs_injected = 0;            // by the fault filesystem's rules
  std::uint64_t lanes_lost = 0;             // tcp lanes to the transfer-peer that died
  std::uint64_t slices_retried = 0;         // on another lane
  std::uint64_t peer_kills = 0;             // transfer-peers that SIGKILLed themselves

  void add(node& n);  // a node's figures, before it stops
};

class runner {
public:
  // `work_dir`: for the transfer-peer's config; `fs`: the mount the data dir lies in, or
  // null (the fs_* operations then do nothing); `log_level`: the node's.
  runner(std::filesystem::path work_dir, std::filesystem::path data_dir, faultfs::mount* fs,
         std::string log_level);
  ~runner();
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  // Does `o`; the findings it made (none: an empty vector).
  std::vector<std::string> run(const op& o);
  // Releases what is held, checks the arena lent nothing it did not get back, stops the
  // node; the findings.
  std::vector<std::string> finish();

  const tally& faults_seen() const { return tally_; }

private:
  struct held_view {
    std::vector<std::uint32_t> keys;
    batch_values values;
    std::vector<std::string> bytes;  // what each value held when it was checked
  };

  void start(const epoch_dice& dice);
  void stop();
  void put(const op& o, bool from_caller_memory);
  void settle_put(const op& o, const std::vector<key_status>& statuses);
  batch_values get_view(const std::vector<std::uint32_t>& keys);
  void hold_view(const std::vector<std::uint32_t>& keys);
  void get_into(const std::vector<std::uint32_t>& keys, bool registered);
  void get_during_put(const op& o);
  void release_view();
  void remove(const std::vector<std::uint32_t>& keys);
  void flush();
  void set_fs_fault(const op& o);
  void clear_fs_faults();
  void clean_batch();
  void start_peer(const peer_dice& dice);
  void stop_peer();
  void connect_peer();
  void transfer(const op& o);
  bool explains(const transfer_status& status);
  void check_values(const std::vector<std::uint32_t>& keys, const batch_values& got);
  void finding(const std::string& what) { findings_.push_back(what); }

  std::filesystem::path work_dir_;
  std::filesystem::path data_dir_;
  std::string log_level_;
  faultfs::mount* fs_;
  mapped_memory registered_;  // given to register_memory at each start
  model model_;
  active_faults faults_;
  std::vector<std::uint64_t> rules_;  // the fault filesystem's rules now set
  std::deque<held_view> held_;
  std::unique_ptr<node> node_;
  std::unique_ptr<bench::transfer_peer_process> peer_;
  peer_dice peer_faults_;
  std::optional<transfer_peer> route_;  // none while the peer is down
  std::uint64_t lanes_lost_before_ = 0;  // the node's count when the route opened
  std::vector<std::string> findings_;
  tally tally_;
};

}  // namespace spillway::soak

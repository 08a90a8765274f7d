// The chaos soak's model of what the store must hold: per key, the values a read may
// return and whether it may be absent, kept from what the node acknowledged, and the
// faults active at each moment, which alone may explain an error. Every answer is
// checked here: a value returned ok with wrong bytes is a finding, and so is an error,
// or an acknowledged key missing, that no active fault and no eviction explains.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/storage/key_status.hpp"
#include "tools/soak_schedule.hpp"

namespace spillway::soak {

// A value put: the bytes are generated_value(size, op, key), so the model keeps no bytes.
struct version {
  std::uint64_t op = 0;
  std::uint32_t size = 0;
  bool operator==(const version&) const = default;
};

std::string value_of(std::uint32_t key, const version& v);

// What is failing now: the fault filesystem's rules and the node's dice.
struct active_faults {
  std::set<fs_family> fs;
  epoch_dice dice;

  bool explains_read(const key_status& status) const;
  bool explains_write(const key_status& status) const;
  bool any_write() const;
  std::string describe() const;
};

class model {
public:
  // `eviction_report_limit`: how long a key that must be present but is not_found is
  // waited for in the eviction reports.
  explicit model(std::chrono::milliseconds eviction_report_limit = std::chrono::seconds(10))
      : eviction_report_limit_(eviction_report_limit) {}

  void put_acked(std::uint32_t key, version v);
  // A put that failed was never published, but its record may have reached the
  // bucket's .tmp whole, and a restart serves what the .tmp holds whole.
  void put_failed(std::uint32_t key, version v);
  // An acknowledged remove kills every record of the key put before it, failed or not.
  void removed(std::uint32_t key);
  // A remove that failed (its forget-log entry not made durable): the key stays, but a
  // restart may find the entry on disk after all.
  void remove_failed(std::uint32_t key);
  // What a restart may serve: the newest acknowledged value, and the values of puts that
  // failed after it; absent too where the key was removed or evicted (or never
  // acknowledged). Never an older value: the forget log says which records are dead.
  void restarted();
  // node::on_evicted's keys, from its own thread.
  void evicted(const std::vector<std::string>& keys);

  // "" when `status` (with `bytes` when ok) is an answer the store may give for `key`
  // under `faults`, else the finding. A key that must be present but is not_found is
  // waited for, a bounded while, in the eviction reports (they come on their own thread).
  std::string check(std::uint32_t key, const key_status& status, std::span<const std::byte> bytes,
                    const active_faults& faults);
  // The largest value a read of `key` may return.
  std::uint32_t size_max(std::uint32_t key) const;
  // Keys a read must find (acknowledged, not removed, not seen evicted).
  std::vector<std::uint32_t> certain_keys() const;

private:
  struct key_state {
    std::vector<version> candidates;  // what a read may return
    bool may_be_absent = true;        // never acknowledged, removed or evicted
    std::optional<version> acked;     // the newest acknowledged put, unless removed since
    std::vector<version> failed_after;  // puts that failed since it (or since the remove)
    bool maybe_removed = false;       // a remove failed since: a restart may find it done
  };
  bool seen_evicted(std::uint32_t key);  // waits a bounded while for its report

  std::chrono::milliseconds eviction_report_limit_;
  key_state keys_[keyspace];
  std::mutex evicted_mutex_;
  std::unordered_set<std::string> evicted_;  // reported and not put again since
};

}  // namespace spillway::soak

#include "tools/soak_model.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "tools/generated_value.hpp"

namespace spillway::soak {
namespace {

bool read_fault(const std::set<fs_family>& fs) {
  return fs.count(fs_family::read_eio) || fs.count(fs_family::read_short);
}

}  // namespace

std::string value_of(std::uint32_t key, const version& v) {
  return generated_value(v.size, v.op, key_name(key));
}

bool active_faults::explains_read(const key_status& s) const {
  const bool dice_fail = dice.read_error_rate > 0;
  switch (s.error) {
    case key_error::io_error: return read_fault(fs) || dice_fail;
    case key_error::corrupt: return fs.count(fs_family::read_short) || dice.corrupt_rate > 0;
    // A batch whose every reader died (killed at one count, they die together) has no
    // reader left to hand their reads to: it fails them rather than wait for the new ones.
    case key_error::unavailable: return dice.reader_throw_after_reads > 0;
    default: return false;
  }
}

bool active_faults::explains_write(const key_status& s) const {
  switch (s.error) {
    case key_error::no_space: return fs.count(fs_family::write_enospc) > 0;
    case key_error::io_error:
      return s.sys_errno == ENOSPC ? fs.count(fs_family::write_enospc) > 0
                                   : fs.count(fs_family::sync_eio) > 0;
    default: return false;
  }
}

bool active_faults::any_write() const {
  return fs.count(fs_family::write_enospc) || fs.count(fs_family::sync_eio);
}

std::string active_faults::describe() const {
  std::string out = "fs:";
  for (const auto f : fs) out += std::string{" "} + name_of(f);
  if (fs.empty()) out += " none";
  out += "; dice: read_error_rate=" + std::to_string(dice.read_error_rate) +
         " corrupt_rate=" + std::to_string(dice.corrupt_rate) +
         " reader_throw_after_reads=" + std::to_string(dice.reader_throw_after_reads);
  return out;
}

void model::put_acked(std::uint32_t key, version v) {
  auto& k = keys_[key];
  k.candidates = {v};
  k.may_be_absent = false;
  k.acked = v;
  k.failed_after.clear();
  k.maybe_removed = false;
  std::lock_guard lock{evicted_mutex_};
  evicted_.erase(key_name(key));
}

void model::put_failed(std::uint32_t key, version v) {
  keys_[key].candidates.push_back(v);
  keys_[key].failed_after.push_back(v);
}

void model::removed(std::uint32_t key) {
  auto& k = keys_[key];
  k.candidates.clear();
  k.may_be_absent = true;
  k.acked.reset();
  k.failed_after.clear();
}

void model::remove_failed(std::uint32_t key) { keys_[key].maybe_removed = true; }

void model::restarted() {
  std::lock_guard lock{evicted_mutex_};
  for (std::uint32_t key = 0; key < keyspace; ++key) {
    auto& k = keys_[key];
    k.candidates = k.failed_after;
    if (k.acked) k.candidates.insert(k.candidates.begin(), *k.acked);
    k.may_be_absent =
      k.may_be_absent || !k.acked || k.maybe_removed || evicted_.count(key_name(key)) > 0;
  }
}

void model::evicted(const std::vector<std::string>& keys) {
  std::lock_guard lock{evicted_mutex_};
  evicted_.insert(keys.begin(), keys.end());
}

bool model::seen_evicted(std::uint32_t key) {
  const auto name = key_name(key);
  const auto deadline = std::chrono::steady_clock::now() + eviction_report_limit_;
  for (;;) {
    {
      std::lock_guard lock{evicted_mutex_};
      if (evicted_.count(name)) return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
}

std::string model::check(std::uint32_t key, const key_status& status,
                         std::span<const std::byte> bytes, const active_faults& faults) {
  auto& k = keys_[key];
  const auto name = key_name(key);
  if (status.ok()) {
    for (const auto& v : k.candidates) {
      if (v.size != bytes.size() || value_of(key, v) != std::string_view{
            reinterpret_cast<const char*>(bytes.data()), bytes.size()})
        continue;
      return "";
    }
    return name + ": wrong bytes: " + std::to_string(bytes.size()) + " bytes returned ok, " +
           "matching none of its " + std::to_string(k.candidates.size()) + " possible values";
  }
  if (status.error == key_error::not_found) {
    if (k.may_be_absent) return "";
    if (seen_evicted(key)) {
      k.may_be_absent = true;
      return "";
    }
    return name + ": not_found, but its put of op " + std::to_string(k.candidates.back().op) +
           " was acknowledged and no eviction reported it";
  }
  if (faults.explains_read(status)) return "";
  return name + ": " + to_string(status) + " with no fault to explain it (" + faults.describe() +
         ")";
}

std::uint32_t model::size_max(std::uint32_t key) const {
  std::uint32_t most = 1;
  for (const auto& v : keys_[key].candidates) most = std::max(most, v.size);
  return most;
}

std::vector<std::uint32_t> model::certain_keys() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t key = 0; key < keyspace; ++key)
    if (!keys_[key].may_be_absent) out.push_back(key);
  return out;
}

}  // namespace spillway::soak

#include "runtime/storage/crash_point.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>

namespace spillway {
namespace {

constexpr std::array<std::string_view, crash_point_count> names = {
  "commit.written", "commit.synced",    "commit.published", "seal.written",
  "seal.synced",    "seal.renamed",     "seal.dir_synced",  "seal.published",
  "recovery.renamed", "recovery.set_aside", "forget.written", "forget.synced",
  "forget.compacted", "forget.renamed",
};

constexpr int unarmed = -1;
std::atomic<int> armed{unarmed};
std::atomic<std::uint64_t> hits_left{0};

}  // namespace

std::string_view name_of(crash_point point) { return names[static_cast<std::size_t>(point)]; }

std::optional<crash_point> crash_point_named(std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<crash_point>(i);
  return std::nullopt;
}

void arm_crash_point(crash_point point, std::uint64_t hit) {
  hits_left.store(hit);
  armed.store(static_cast<int>(point));
}

void reach(crash_point point) {
  if (armed.load(std::memory_order_relaxed) != static_cast<int>(point)) return;
  if (hits_left.fetch_sub(1) == 1) ::kill(::getpid(), SIGKILL);
}

}  // namespace spillway

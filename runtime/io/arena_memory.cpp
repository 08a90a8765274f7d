#include "runtime/io/arena_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/io/kernel_probe.hpp"

namespace spillway {
namespace {

void* map_anonymous(std::uint64_t size, int extra_flags) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// How long the arena waits for hugetlb pages that a process gone just before us still
// holds: its rings' teardown is asynchronous and keeps registered pages pinned for a
// while (BENCHMARKS.md). Hugepages double the read rate, so a short wait at start is
// worth it; past it the arena settles for THP and says why.
constexpr auto pool_wait = std::chrono::seconds(2);
constexpr auto pool_poll = std::chrono::milliseconds(20);

// A hugetlb mapping takes its pages from the pool at fault time; MAP_NORESERVE is left
// out so that a pool too small fails here, not with SIGBUS on first touch. ENOMEM from a
// pool big enough in total means its pages are held: wait for them, a bounded while.
void* map_hugetlb(std::uint64_t size) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) return p;
    const int err = errno;
    const auto pool = probe_hugepages();
    const auto waited = std::chrono::steady_clock::now() - start;
    if (err != ENOMEM || pool.hugetlb_page_size * pool.hugetlb_total < size ||
        waited >= pool_wait) {
      if (err == ENOMEM && waited >= pool_wait)
        spdlog::warn("arena: the hugetlb pool's pages stayed held by others for {} s",
                     std::chrono::duration_cast<std::chrono::seconds>(waited).count());
      errno = err;
      return nullptr;
    }
    std::this_thread::sleep_for(pool_poll);
  }
}

}  // namespace

const char* to_string(arena_pages pages) {
  switch (pages) {
    case arena_pages::hugetlb: return "hugetlb";
    case arena_pages::thp: return "thp";
    case arena_pages::plain: return "plain";
  }
  return "?";
}

arena_memory::arena_memory(std::uint64_t size, std::uint64_t chunk_size, const std::string& wanted)
    : size_(size), chunk_size_(chunk_size) {
  void* p = nullptr;
  if (wanted == "auto" || wanted == "hugetlb") {
    p = map_hugetlb(size);
    pages_ = arena_pages::hugetlb;
    if (!p && wanted == "hugetlb")
      throw std::runtime_error("read.arena_pages = \"hugetlb\", but the hugetlb pool cannot hold " +
                               std::to_string(size >> 20) + " MiB: " + std::strerror(errno));
  }
  if (!p) {
    p = map_anonymous(size, 0);
    if (!p) throw std::runtime_error(std::string{"arena mmap: "} + std::strerror(errno));
    const bool thp = wanted != "plain" && ::madvise(p, size, MADV_HUGEPAGE) == 0;
    pages_ = thp ? arena_pages::thp : arena_pages::plain;
    if (!thp && wanted == "thp")
      throw std::runtime_error("read.arena_pages = \"thp\", but madvise(MADV_HUGEPAGE) failed");
  }
  base_ = static_cast<std::byte*>(p);
  for (std::uint64_t at = 0; at < size; at += chunk_size)
    chunk_sizes_.push_back(std::min(chunk_size, size - at));
  populated_.assign(chunk_sizes_.size(), 0);
}

arena_memory::~arena_memory() { ::munmap(base_, size_); }

std::pair<std::uint64_t, std::uint64_t> arena_memory::populate(std::size_t chunk,
                                                               std::uint64_t step) {
  auto& done = populated_[chunk];
  const auto offset = done;
  const auto n = std::min(step, chunk_sizes_[chunk] - done);
  std::byte* at = chunk_base(chunk) + done;
  // MADV_POPULATE_WRITE (5.14+) faults pages in without writing them; else touch them.
  if (::madvise(at, n, MADV_POPULATE_WRITE) != 0) std::memset(at, 0, n);
  done += n;
  return {offset, n};
}

std::uint64_t arena_memory::huge_bytes() const {
  if (pages_ == arena_pages::hugetlb) return size_;
  std::ifstream smaps{"/proc/self/smaps"};
  const auto begin = reinterpret_cast<std::uintptr_t>(base_);
  bool inside = false;
  std::uint64_t huge = 0;  // summed: madvise may have split the mapping in several
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range{line};
    if (range >> std::hex >> from >> dash >> to && dash == '-')
      inside = from >= begin && to <= begin + size_;
    else if (inside && line.rfind("AnonHugePages:", 0) == 0)
      huge += std::stoull(line.substr(14)) * 1024;
  }
  return huge;
}

}  // namespace spillway

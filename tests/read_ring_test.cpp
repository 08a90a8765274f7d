// The reader's ring alone, on this thread: a real io_uring reading a real file with
// O_DIRECT. Every read completes exactly once with the right bytes, faults included,
// and the window allocates nothing per read.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <memory>

#include "runtime/io/kernel_probe.hpp"
#include "runtime/io/read_ring.hpp"
#include "tests/allocation_counter.hpp"
#include "tests/skip.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

constexpr std::size_t file_size = 8 << 20;
constexpr std::size_t read_size = 16 << 10;

struct ring_fixture {
  test::temp_dir dir;
  int fd = -1;
  int wakeup = ::eventfd(0, EFD_CLOEXEC);
  std::unique_ptr<std::byte, decltype(&std::free)> target{
    static_cast<std::byte*>(std::aligned_alloc(4096, file_size)), &std::free};
  std::vector<std::pair<std::uint32_t, int>> done;  // tag, result
  std::uint64_t window_bytes = file_size;  // never reached, but where a test lowers it

  ring_fixture() {
    const auto path = dir.path() / "data";
    const int w = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    std::vector<unsigned char> bytes(file_size);
    for (std::size_t i = 0; i < file_size; ++i)
      bytes[i] = static_cast<unsigned char>(i * 13 + i / 4096);
    REQUIRE(::pwrite(w, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(file_size));
    ::close(w);
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
    REQUIRE(fd >= 0);
    done.reserve(4096);
  }
  ~ring_fixture() {
    ::close(fd);
    ::close(wakeup);
  }

  std::unique_ptr<read_ring> make(read_fault_rates faults = {}) {
    auto ring = std::make_unique<read_ring>(8, window_bytes, wakeup, faults,
                                            [this](std::uint32_t, std::uint32_t tag, int result) {
                                              done.emplace_back(tag, result);
                                            });
    REQUIRE(ring->open() == 0);
    return ring;
  }

  // Reads the whole file in read_size pieces; returns when every piece is back.
  void read_all(read_ring& ring, read_fault fault_every_7th = no_fault) {
    done.clear();
    const auto count = file_size / read_size;
    for (std::uint32_t i = 0; i < count; ++i) {
      read_item item{i, fd, i * read_size, read_size,
                     reinterpret_cast<std::uint64_t>(target.get()) + i * read_size, 0,
                     i % 7 == 0 ? fault_every_7th : no_fault};
      ring.enqueue(item, 0);
    }
    while (done.size() < count) ring.run_once();
  }

  // Every piece came back exactly once, whole.
  void check_each_read_once() const {
    std::vector<int> seen(file_size / read_size, 0);
    for (auto [tag, result] : done) {
      CHECK(result == static_cast<int>(read_size));
      ++seen[tag];
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }

  bool piece_ok(std::uint32_t tag) const {
    for (std::size_t i = tag * read_size; i < (tag + 1) * read_size; ++i)
      if (target.get()[i] != std::byte(static_cast<unsigned char>(i * 13 + i / 4096)))
        return false;
    return true;
  }
};

// Runs `body` on a thread of its own: a ring that waits forever fails the test instead
// of holding the suite until ctest's timeout. A stuck thread cannot be stopped, so the
// process ends, before doctest could report: the failure is written here.
template <class Body>
void within(std::chrono::seconds limit, Body body) {
  auto finished = std::async(std::launch::async, std::move(body));
  if (finished.wait_for(limit) == std::future_status::timeout) {
    std::cerr << "FAILED: the ring is still waiting after " << limit.count() << " s\n";
    std::_Exit(EXIT_FAILURE);
  }
  finished.get();
}

TEST_SUITE("read_ring") {

TEST_CASE_FIXTURE(ring_fixture, "every read completes once with its bytes") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  auto ring = make();
  read_all(*ring);
  check_each_read_once();
  for (const auto& piece : done) CHECK(piece_ok(piece.first));
}

TEST_CASE_FIXTURE(ring_fixture, "the sliding window allocates nothing per read") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  if (!test::allocation_counter::available()) {
    return test::skip_test("AddressSanitizer owns operator new in this build");
  }
  auto ring = make();
  read_all(*ring);  // warm: the queue reaches its size once
  std::size_t allocations = 0;
  {
    test::allocation_counter counter;
    read_all(*ring);
    allocations = counter.count();
  }
  MESSAGE((file_size / read_size) << " reads, " << allocations << " allocations");
  CHECK(allocations == 0);
}

TEST_CASE_FIXTURE(ring_fixture, "a short read is finished by its retry and EIO is its own") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  auto ring = make();
  read_all(*ring, come_back_short);
  for (auto [tag, result] : done) {
    CHECK(result == static_cast<int>(read_size));
    CHECK(piece_ok(tag));
  }
  read_all(*ring, fail_with_eio);
  for (auto [tag, result] : done)
    CHECK(result == (tag % 7 == 0 ? -EIO : static_cast<int>(read_size)));
}

TEST_CASE_FIXTURE(ring_fixture, "failed submits reset the ring and every read completes once") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  auto ring = make({.submit_failure = 0.4, .seed = 7});
  read_all(*ring);
  CHECK(ring->resets() > 0);
  check_each_read_once();
}

// A refused submit leaves its SQEs in the SQ: a reset that waited for them as if the
// kernel had them would wait forever.
TEST_CASE_FIXTURE(ring_fixture, "a reset after a refused submit waits only for what the kernel took") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  within(std::chrono::seconds(60), [this] {
    auto ring = make({.submit_failure = 0.3, .submit_refusal = 0.3, .seed = 11});
    read_all(*ring);
    CHECK(ring->refused_submits() > 0);
    CHECK(ring->resets() > 0);
    check_each_read_once();
  });
}

// Reads of an empty pipe wait until its writer closes, so the window stays as full as the
// ring filled it: 8 reads and their 8 companions (the last pages of values read in
// place) go in at once; the 9th read waits. Without companions the window held 8.
TEST_CASE_FIXTURE(ring_fixture, "a companion read rides outside the window") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  within(std::chrono::seconds(60), [this] {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    auto ring = make();  // a window of 8
    std::byte sink[16];
    const auto address = reinterpret_cast<std::uint64_t>(sink);
    for (std::uint32_t i = 0; i < 24; ++i)
      ring->enqueue({i, pipe_fds[0], 0, sizeof sink, address, no_slot, no_fault, i % 2 == 1}, 0);
    const std::uint64_t one = 1;
    REQUIRE(::write(wakeup, &one, sizeof one) == sizeof one);
    CHECK(ring->run_once());  // woken with the reads still waiting on the pipe
    CHECK(ring->in_flight() == 16);
    ::close(pipe_fds[1]);  // every read ends: end of file, then its retry, then EIO
    while (done.size() < 24) ring->run_once();
    ::close(pipe_fds[0]);
    CHECK(ring->in_flight() == 0);
  });
}

// A read waits while window_bytes are in flight, with slots free; one longer than
// window_bytes still goes, alone. Pipes hold the reads in flight, as above.
TEST_CASE_FIXTURE(ring_fixture, "a read waits while window_bytes are in flight") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  within(std::chrono::seconds(60), [this] {
    int long_pipe[2], short_pipe[2];
    REQUIRE(::pipe(long_pipe) == 0);
    REQUIRE(::pipe(short_pipe) == 0);
    window_bytes = 40;
    auto ring = make();  // 8 reads, or 40 bytes
    std::byte sink[64];
    const auto address = reinterpret_cast<std::uint64_t>(sink);
    ring->enqueue({0, long_pipe[0], 0, 64, address, no_slot, no_fault, false}, 0);
    for (std::uint32_t i = 1; i <= 6; ++i)
      ring->enqueue({i, short_pipe[0], 0, 16, address, no_slot, no_fault, false}, 0);
    const std::uint64_t one = 1;
    REQUIRE(::write(wakeup, &one, sizeof one) == sizeof one);
    CHECK(ring->run_once());
    CHECK(ring->in_flight() == 1);  // 64 bytes, over the bound, alone
    ::close(long_pipe[1]);          // it ends: end of file, its retry, then EIO
    while (done.empty()) ring->run_once();
    REQUIRE(::write(wakeup, &one, sizeof one) == sizeof one);
    CHECK(ring->run_once());
    CHECK(ring->in_flight() == 3);  // 16 + 16 < 40 lets a third go; 48 holds the rest
    ::close(short_pipe[1]);
    while (done.size() < 7) ring->run_once();
    ::close(long_pipe[0]);
    ::close(short_pipe[0]);
    CHECK(ring->in_flight() == 0);
  });
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

// One reader actor with its real ring on its own thread, reading a pipe that the test
// fills: its reads stay in flight until the test writes, so the test says when the
// kernel is done with them.
#include <doctest/doctest.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/reader.hpp"
#include "actors/registrar.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

constexpr std::size_t piece = 4096;                 // one read's length
constexpr std::chrono::seconds patience{30};        // for what must come
constexpr std::uint32_t reader_index = 7;

struct reader_fixture {
  caf::actor_system_config caf_config;
  caf::actor_system system{configure_actor_system(caf_config)};
  caf::scoped_actor self{system};
  registrar_actor registrar = spawn_registrar(system, 1);
  int pipe_fds[2] = {-1, -1};
  std::vector<char> target = std::vector<char>(16 * piece);
  reader_actor reader;

  reader_fixture() { REQUIRE(::pipe(pipe_fds) == 0); }

  // The pipe's end completes every read still waiting (EOF), so the reader can stop;
  // ~actor_system waits for it.
  ~reader_fixture() {
    ::close(pipe_fds[1]);
    caf::anon_send_exit(reader, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(registrar, caf::exit_reason::user_shutdown);
  }

  void start(std::uint64_t window, fault_section faults = {}) {
    read_section read;
    read.window = window;
    reader = spawn_reader(system, reader_index, read, faults, registrar);
  }

  // Reads `first` to `first + count - 1` of the pipe, one piece each, as a batch asks.
  void send_pipe_reads(std::uint32_t first, std::uint32_t count) {
    std::vector<read_item> items;
    for (std::uint32_t i = first; i < first + count; ++i)
      items.push_back({i, pipe_fds[0], 0, piece,
                       reinterpret_cast<std::uint64_t>(target.data()) + i * piece, 0});
    caf::anon_send(reader, read_atom_v, caf::actor_cast<read_client>(self), std::move(items));
  }

  void fill_pipe(std::size_t pieces) {
    const std::string bytes(pieces * piece, 'p');
    REQUIRE(::write(pipe_fds[1], bytes.data(), bytes.size()) ==
            static_cast<ssize_t>(bytes.size()));
  }

  int bytes_in_pipe() const {
    int n = -1;
    ::ioctl(pipe_fds[0], FIONREAD, &n);
    return n;
  }

  // Answered after everything sent to the reader before it was handled.
  reader_stats stats() {
    reader_stats out;
    self->request(reader, patience, stats_atom_v)
      .receive([&](const reader_stats& r) { out = r; },
               [](caf::error& err) { FAIL("stats: " << to_string(err)); });
    return out;
  }
  void round_trip() { stats(); }

  void wait_for_reads(std::size_t count) {
    for (std::size_t results = 0; results < count;)
      self->receive(
        [&](read_done_atom, const read_results& done) {
          for (const auto& r : done) CHECK(r.result == static_cast<int>(piece));
          results += done.size();
        },
        caf::after(patience) >> [&] { FAIL("only " << results << " of " << count << " reads came back"); });
  }
};

TEST_SUITE("reader") {

TEST_CASE_FIXTURE(reader_fixture, "a fence is answered only once the reads sent before it completed") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  start(2);  // two reads in flight, two queued
  send_pipe_reads(0, 4);
  auto fence = self->request(reader, patience, fence_atom_v);
  round_trip();
  CHECK(self->mailbox().empty());  // had the reader answered the fence, it would be here
  fill_pipe(4);
  wait_for_reads(4);
  fence.receive([](std::uint32_t index) { CHECK(index == reader_index); },
                [](caf::error& err) { FAIL("fence: " << to_string(err)); });
  CHECK(bytes_in_pipe() == 0);
}

// Caller memory leaves the table before unregister_memory returns: the registrar answers
// for a slot it emptied only once the ring let go of it, and a read aimed at the slot
// afterwards goes through a plain buffer.
TEST_CASE_FIXTURE(reader_fixture, "a slot the registrar empties is answered for once the ring let it go") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  start(4);
  caf::anon_send(registrar, caf::add_atom_v, std::uint32_t{0},
                 reinterpret_cast<std::uint64_t>(target.data()), std::uint64_t{target.size()});
  reader_stats now;
  for (int asked = 0; asked < 100000 && now.registered_buffers == 0 && now.registration_errno == 0;
       ++asked)
    now = stats();
  if (now.registration_errno != 0) return test::skip_test("registering buffers fails here");
  REQUIRE(now.registered_buffers == 1);
  fill_pipe(1);
  send_pipe_reads(0, 1);  // into slot 0
  wait_for_reads(1);
  CHECK(stats().reads_fixed == 1);
  self->request(registrar, patience, caf::delete_atom_v, std::uint32_t{0})
    .receive([](caf::ok_atom) {}, [](caf::error& err) { FAIL("delete: " << to_string(err)); });
  now = stats();
  CHECK(now.registered_buffers == 0);
  fill_pipe(1);
  send_pipe_reads(1, 1);
  wait_for_reads(1);
  now = stats();
  CHECK(now.reads_fixed == 1);
  CHECK(now.reads_plain == 1);
  CHECK(bytes_in_pipe() == 0);
}

// Batches hear of a reader's death and send its reads, and their extents, to others:
// a ring still writing into them then would hand out another read's bytes later.
TEST_CASE_FIXTURE(reader_fixture, "a reader that throws goes down only once its reads in flight completed") {
  if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
  fault_section faults;
  faults.enabled = true;
  faults.reader_throw_after_reads = 2;
  start(4, faults);
  self->monitor(reader);
  send_pipe_reads(0, 2);
  // Each question wakes the ring; the first turn after the reads went in flight makes
  // the loop throw, at most a turn of mail later (a reader that served questions for as
  // long as they kept coming never threw here). A reader that then waits for its reads
  // lets the question time out; one that is gone bounces it at once.
  caf::error stopped;
  for (int asked = 0; !stopped && asked < 1000; ++asked)
    self->request(reader, std::chrono::milliseconds(100), stats_atom_v)
      .receive([](const reader_stats&) {}, [&](caf::error& err) { stopped = std::move(err); });
  CHECK_MESSAGE(stopped == caf::sec::request_timeout,
                "the reader went down with its reads in flight: " << to_string(stopped));
  fill_pipe(2);
  self->receive(
    [](caf::down_msg& down) { CHECK(down.reason == caf::exit_reason::unhandled_exception); },
    caf::after(patience) >> [] { FAIL("the reader did not go down"); });
  CHECK(bytes_in_pipe() == 0);  // its reads took their bytes before it was gone
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

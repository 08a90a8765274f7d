// The bucket actor under the deterministic scheduler: deletion waits for pins by
// message, never by a wait loop.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/bucket.hpp"
#include "actors/file_remover.hpp"
#include "tests/det_fixture.hpp"
#include "tests/log_capture.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

struct bucket_fixture : test::det_fixture {
  test::temp_dir dir;
  std::filesystem::path path = dir.path() / "0001000000000007.bucket";
  file_remover_actor remover = spawn_file_remover(system, dir.path(), false);
  bucket_actor bucket;

  bucket_fixture() {
    std::ofstream{path} << std::string(8192, 'b');
    bucket = spawn_bucket(system, {}, remover, 7, path, false);
    sched.run();
  }

  ~bucket_fixture() {
    caf::anon_send_exit(bucket, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(remover, caf::exit_reason::user_shutdown);
    sched.run();
  }

  pinned_file pin(std::uint32_t n) {
    auto handle = self->request(bucket, caf::infinite, pin_atom_v, n);
    sched.run();
    pinned_file file;
    handle.receive([&](pinned_file& f) { file = f; },
                   [&](caf::error& err) { FAIL("pin: " << to_string(err)); });
    return file;
  }
};

TEST_SUITE("bucket") {

TEST_CASE_FIXTURE(bucket_fixture, "pin hands out the open file") {
  const auto file = pin(1);
  CHECK(file.fd >= 0);
  CHECK(file.bucket_id == 7);
  CHECK(file.direct);  // /var/tmp takes O_DIRECT on this machine's filesystems
}

TEST_CASE_FIXTURE(bucket_fixture, "an evicted bucket's file stays until its last pin goes") {
  pin(2);
  caf::anon_send(bucket, evict_atom_v);
  sched.run();
  CHECK(std::filesystem::exists(path));
  self->send(bucket, unpin_atom_v, 1u);
  sched.run();
  CHECK(std::filesystem::exists(path));
  self->send(bucket, unpin_atom_v, 1u);
  sched.run();
  CHECK(!std::filesystem::exists(path));
}

// A batch whose pin request timed out got no file, so it never unpins; when the pin is
// applied late anyway, only the batch going away can give it back.
TEST_CASE_FIXTURE(bucket_fixture, "pins whose holder went away without unpinning are dropped") {
  {
    caf::scoped_actor holder{system, true};
    holder->request(bucket, caf::infinite, pin_atom_v, 3u);
    sched.run();
  }  // gone, its 3 pins never unpinned
  caf::anon_send(bucket, evict_atom_v);
  sched.run();
  CHECK(!std::filesystem::exists(path));
}

TEST_CASE_FIXTURE(bucket_fixture, "a pin of a file that would not open names the errno and takes no pin") {
  auto missing = spawn_bucket(system, {}, remover, 9, dir.path() / "0001000000000009.bucket", false);
  sched.run();
  auto handle = self->request(missing, caf::infinite, pin_atom_v, 1u);
  sched.run();
  handle.receive([&](pinned_file& f) { CHECK(f.fd == -1); CHECK(f.open_errno == ENOENT); },
                 [&](caf::error& err) { FAIL("pin: " << to_string(err)); });
  caf::anon_send_exit(missing, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE_FIXTURE(bucket_fixture, "an unpinned bucket's file goes as soon as it is evicted") {
  pin(1);
  self->send(bucket, unpin_atom_v, 1u);
  caf::anon_send(bucket, evict_atom_v);
  sched.run();
  CHECK(!std::filesystem::exists(path));
}

TEST_CASE_FIXTURE(bucket_fixture, "buffered swaps in a page-cache descriptor and closes the old one after its pins") {
  const auto direct = pin(1);
  REQUIRE(direct.direct);
  auto handle = self->request(bucket, caf::infinite, buffered_atom_v);
  sched.run();
  handle.receive(
    [&](pinned_file& f) {
      CHECK(!f.direct);
      CHECK(f.fd >= 0);
      CHECK(f.fd != direct.fd);
      CHECK((::fcntl(f.fd, F_GETFL) & O_DIRECT) == 0);
    },
    [&](caf::error& err) { FAIL("buffered: " << to_string(err)); });
  CHECK(::fcntl(direct.fd, F_GETFD) >= 0);  // reads in flight still name it
  CHECK(!pin(1).direct);
  self->send(bucket, unpin_atom_v, 2u);
  sched.run();
  CHECK(::fcntl(direct.fd, F_GETFD) == -1);  // no pin is left that could name it
}

// The batch that asked turns open_errno into its keys' errors.
TEST_CASE_FIXTURE(bucket_fixture, "buffered with the file gone from its path stays direct and names the errno") {
  const auto direct = pin(1);
  REQUIRE(direct.direct);
  std::filesystem::remove(path);  // the descriptor still reads it; no open can
  auto handle = self->request(bucket, caf::infinite, buffered_atom_v);
  sched.run();
  handle.receive(
    [&](pinned_file& f) {
      CHECK(f.direct);
      CHECK(f.fd == direct.fd);
      CHECK(f.open_errno == ENOENT);
    },
    [&](caf::error& err) { FAIL("buffered: " << to_string(err)); });
}

TEST_CASE_FIXTURE(bucket_fixture, "refused O_DIRECT falls back to a buffered file") {
  auto buffered = spawn_bucket(system, {}, remover, 8, path, true);
  sched.run();
  auto handle = self->request(buffered, caf::infinite, pin_atom_v, 1u);
  sched.run();
  handle.receive([&](pinned_file& f) { CHECK(!f.direct); CHECK(f.fd >= 0); },
                 [&](caf::error& err) { FAIL("pin: " << to_string(err)); });
  caf::anon_send_exit(buffered, caf::exit_reason::user_shutdown);
  sched.run();
}

// Issue 18, item 6: a FIFO swapped in under a bucket's name after recovery blocked the
// bucket's open, and with it a scheduler thread, until someone opened the FIFO to write.
TEST_CASE_FIXTURE(bucket_fixture, "a FIFO under a bucket's name fails its pins, never blocks") {
  const auto fifo = dir.path() / "0001000000000009.bucket";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  test::log_capture log{"info"};
  auto swapped = spawn_bucket(system, {}, remover, 9, fifo, false);
  auto opening = std::async(std::launch::async, [this] { sched.run(); });
  // A bound for a hung open, not a synchronisation: refusing a FIFO waits for nothing.
  const bool answered = opening.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!answered) {  // a writer lets every blocked open of the FIFO return, so the test ends
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    opening.wait();
    if (writer >= 0) ::close(writer);
  }
  CHECK_MESSAGE(answered, "the bucket's open blocked on a FIFO");
  auto handle = self->request(swapped, caf::infinite, pin_atom_v, 1u);
  sched.run();
  handle.receive(
    [&](pinned_file& f) {
      CHECK_MESSAGE(f.fd == -1, "a FIFO was pinned as a bucket file");
      CHECK(f.open_errno != 0);
    },
    [&](caf::error& err) { FAIL("pin: " << to_string(err)); });
  CHECK(log.count("open " + fifo.string()) == 1);
  caf::anon_send_exit(swapped, caf::exit_reason::user_shutdown);
  sched.run();
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

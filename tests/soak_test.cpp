// The chaos soak (`spillway soak`, tools/soak*.cpp): its model calls what it must a
// finding, one seed gives one schedule however the run went, and its faults happen.
// The soak itself runs 60 s as its own ctest entry (CMakeLists.txt, labels fault, soak).
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tools/faultfs/mount.hpp"
#include "tools/soak_model.hpp"

namespace spillway {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The number after "NAME=" in the soak's output.
std::uint64_t figure(const std::string& out, const std::string& name) {
  const auto at = out.find(" " + name + "=");
  REQUIRE_MESSAGE(at != std::string::npos, name, " not in: ", out);
  return std::stoull(out.substr(at + name.size() + 2));
}

test::process_result soak(const std::string& seed, const std::string& ops,
                          const std::filesystem::path& log) {
  return test::run_spillway({"soak", "--seed", seed, "--ops", ops, "--log", log.string()});
}

constexpr std::uint32_t key = 3;
const soak::version first{10, 5000}, second{20, 7000};

TEST_SUITE("soak") {

TEST_CASE("the soak's model calls wrong bytes and unexplained errors findings") {
  soak::model model{std::chrono::milliseconds{50}};
  const soak::active_faults none;
  model.put_acked(key, first);
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, first)), none).empty());
  auto wrong = soak::value_of(key, first);
  wrong[4000] ^= 1;
  CHECK(model.check(key, {}, bytes_of(wrong), none).find("wrong bytes") != std::string::npos);
  CHECK(model.check(key, {key_error::not_found, 0}, {}, none).find("acknowledged") !=
        std::string::npos);
  const key_status eio{key_error::io_error, EIO};
  CHECK(!model.check(key, eio, {}, none).empty());
  soak::active_faults read_eio;
  read_eio.fs.insert(soak::fs_family::read_eio);
  CHECK(model.check(key, eio, {}, read_eio).empty());
  CHECK(!read_eio.explains_write(eio));  // a read fault explains no failed put
  model.evicted({soak::key_name(key)});
  CHECK(model.check(key, {key_error::not_found, 0}, {}, none).empty());
}

TEST_CASE("the soak's model lets a failed put show but no removed or older value come back") {
  soak::model model{std::chrono::milliseconds{50}};
  const soak::active_faults none;
  const soak::version third{30, 9000};
  model.put_acked(key, first);
  model.put_failed(key, second);
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, second)), none).empty());
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, first)), none).empty());
  model.removed(key);
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, first)), none).find("wrong bytes") !=
        std::string::npos);
  model.restarted();  // the remove killed both records, the failed put's too
  for (const auto& v : {first, second})
    CHECK(model.check(key, {}, bytes_of(soak::value_of(key, v)), none).find("wrong bytes") !=
          std::string::npos);
  CHECK(model.check(key, {key_error::not_found, 0}, {}, none).empty());
  model.put_acked(key, first);
  model.put_acked(key, third);
  model.evicted({soak::key_name(key)});
  model.restarted();  // evicted: its newest value, or nothing; never the older one
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, third)), none).empty());
  CHECK(model.check(key, {key_error::not_found, 0}, {}, none).empty());
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, first)), none).find("wrong bytes") !=
        std::string::npos);
}

TEST_CASE("the soak's model lets a failed remove take effect at a restart only") {
  soak::model model{std::chrono::milliseconds{50}};
  const soak::active_faults none;
  model.put_acked(key, first);
  model.remove_failed(key);
  CHECK(model.check(key, {key_error::not_found, 0}, {}, none).find("acknowledged") !=
        std::string::npos);
  model.restarted();
  CHECK(model.check(key, {key_error::not_found, 0}, {}, none).empty());
  CHECK(model.check(key, {}, bytes_of(soak::value_of(key, first)), none).empty());
}

TEST_CASE("one seed gives one operation log and another seed another") {
  test::temp_dir dir;
  const auto a = soak("7", "300", dir.path() / "a.log");
  const auto b = soak("7", "300", dir.path() / "b.log");
  const auto c = soak("8", "300", dir.path() / "c.log");
  for (const auto* run : {&a, &b, &c}) {
    CHECK_MESSAGE(run->exit_code == 0, run->out, run->err);
    CHECK(run->out.find("soak: 300 operations in") != std::string::npos);
  }
  const auto log = read_file(dir.path() / "a.log");
  CHECK(std::count(log.begin(), log.end(), '\n') == 300);
  CHECK(log == read_file(dir.path() / "b.log"));
  CHECK(log != read_file(dir.path() / "c.log"));
}

TEST_CASE("the soak's faults happen and it names the families it ran without") {
  test::temp_dir dir;
  const auto run = soak("7", "600", dir.path() / "a.log");
  CHECK_MESSAGE(run.exit_code == 0, run.out, run.err);
  CHECK(figure(run.out, "evicted_keys") > 0);
  CHECK(figure(run.out, "ring_resets") + figure(run.out, "reader_restarts") > 0);
  CHECK(figure(run.out, "registration_failures") > 0);
  CHECK(figure(run.out, "slices_retried") > 0);  // lanes dropped under transfers
  CHECK(figure(run.out, "peer_kills") > 0);
  const auto unusable = faultfs::fuse_unusable(SPILLWAY_FAULTFS_BINARY);
  if (unusable.empty()) {
    CHECK(figure(run.out, "fs_injected") > 0);
  } else {
    CHECK(run.out.find("running without the fault filesystem's families") != std::string::npos);
    CHECK(figure(run.out, "fs_injected") == 0);
  }
}

}
}  // namespace
}  // namespace spillway

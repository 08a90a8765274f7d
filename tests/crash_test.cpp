// Crash consistency with real processes: `spillway gen` is killed with SIGKILL at
// seeded random moments; after each kill a node restarts on the same data dir and
// every acknowledged key must read back exactly, no unacknowledged key may be half
// there, and `inspect --verify` must be clean. SPILLWAY_CRASH_SEED replays a run.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "tools/generated_value.hpp"
#include "runtime/node.hpp"
#include "tests/caller_memory.hpp"
#include "tests/node_leaks.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

constexpr int kills = 24;
constexpr std::size_t keys_per_round = 24;
constexpr std::size_t value_size = 2 << 20;  // gen puts 8 of these at a time: acks come in steps

std::uint64_t crash_seed() {
  const char* text = std::getenv("SPILLWAY_CRASH_SEED");
  return text ? std::strtoull(text, nullptr, 10) : std::random_device{}();
}

// The keys a child printed as acknowledged, from whole lines only: the kill may cut
// the last line short.
std::vector<std::string> acked_keys(const std::string& out) {
  std::vector<std::string> keys;
  std::istringstream lines{out.substr(0, out.rfind('\n') + 1)};
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("acked ", 0) == 0) keys.push_back(line.substr(6));
  return keys;
}

// The names of the bucket files recovery set aside in quarantine/. A bucket is published
// by its rename to .bucket, after it was synced: only .tmp files may ever be set aside.
std::string quarantined_buckets(const std::filesystem::path& data_dir) {
  std::string found;
  std::error_code none_yet;
  for (const auto& entry : std::filesystem::directory_iterator{data_dir / "quarantine", none_yet})
    if (entry.path().extension() == ".bucket") found += entry.path().filename().string() + " ";
  return found;
}

TEST_SUITE("crash") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "kill -9 during puts loses no acknowledged key and tears no bucket") {
  const auto seed = crash_seed();
  INFO("replay with SPILLWAY_CRASH_SEED=" << seed);
  std::mt19937_64 random{seed};
  test::temp_dir dir;
  const auto data_dir = (dir.path() / "data").string();
  // Small buckets sealed quickly: a kill lands mid-bucket, mid-seal or between them.
  const auto config_file = (dir.path() / "node.toml").string();
  std::ofstream{config_file} << "[storage]\ndata_dir = \"" << data_dir
                             << "\"\nbucket_keys_limit = 4\nseal_after_ms = 20\n";
  auto config = load_config_file(config_file);
  config.node.listen = "";
  config.node.log_level = "error";
  config.read.readers = 1;

  std::vector<std::pair<std::string, std::uint64_t>> acked;  // key, value seed
  for (int round = 0; round < kills; ++round) {
    const auto round_seed = static_cast<std::uint64_t>(round) + 1;
    const auto prefix = "r" + std::to_string(round) + "-";
    const auto acks_before_kill = random() % 20;  // 0: kill while it starts up
    test::child_process gen{{SPILLWAY_BINARY, "gen", "--count", std::to_string(keys_per_round),
                             "--size", std::to_string(value_size), "--seed",
                             std::to_string(round_seed), "--prefix", prefix, "--log-acked",
                             "-c", config_file}};
    gen.wait_for_stdout("acked ", acks_before_kill, std::chrono::seconds(60));
    gen.send_signal(SIGKILL);
    gen.finish();
    const auto round_acked = acked_keys(gen.out());
    for (const auto& k : round_acked) acked.emplace_back(k, round_seed);
    INFO("round " << round << ": " << round_acked.size() << " acked before the kill");

    node n{config};
    CHECK(quarantined_buckets(data_dir) == "");
    std::vector<std::string> keys;
    for (const auto& [k, s] : acked) keys.push_back(k);
    const auto got = n.read_values(keys);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      REQUIRE_MESSAGE(got[i].status.ok(), keys[i], ": ", to_string(got[i].status));
      REQUIRE_MESSAGE(got[i].value == generated_value(value_size, acked[i].second, keys[i]),
                      keys[i]);
    }
    // And read in place, into the caller's own memory: the same bytes, nothing past them.
    test::caller_memory memory{std::vector<std::size_t>(keys.size(), value_size), 4096, 0};
    std::vector<std::size_t> sizes;
    const auto in_place_before = n.io().read_in_place_bytes;
    const auto statuses = n.get_batch_into(keys, memory.buffers(), sizes);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      REQUIRE_MESSAGE(statuses[i].ok(), keys[i], ": ", to_string(statuses[i]));
      REQUIRE_MESSAGE(memory.holds(i, generated_value(value_size, acked[i].second, keys[i])),
                      keys[i]);
    }
    CHECK(n.io().read_in_place_bytes - in_place_before == keys.size() * (value_size / 4096 * 4096));
    std::vector<std::string> unacked;
    for (std::size_t i = round_acked.size(); i < keys_per_round; ++i)
      unacked.push_back(generated_key(prefix, i));
    const auto maybe = n.read_values(unacked);
    for (std::size_t i = 0; i < unacked.size(); ++i) {
      if (maybe[i].status.error == key_error::not_found) continue;  // never sealed
      REQUIRE_MESSAGE(maybe[i].status.ok(), unacked[i], ": ", to_string(maybe[i].status));
      CHECK_MESSAGE(maybe[i].value == generated_value(value_size, round_seed, unacked[i]),
                    unacked[i]);  // sealed before the kill, answered too late: whole
    }
    check_arena(n);
    n.stop();
    const auto inspect = test::run_spillway({"inspect", "--verify", "--data-dir", data_dir});
    REQUIRE_MESSAGE(inspect.exit_code == 0, inspect.out, inspect.err);
    CHECK(inspect.out.find(" version 1 ") == std::string::npos);  // the v1 fixture test has those
  }
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "kill -9 in the middle of an unsealed bucket loses no acknowledged key") {
  test::temp_dir dir;
  const auto data_dir = dir.path() / "data";
  // The bucket never fills nor times out while gen runs: every ack is a group commit.
  const auto config_file = (dir.path() / "node.toml").string();
  std::ofstream{config_file} << "[storage]\ndata_dir = \"" << data_dir.string()
                             << "\"\nseal_after_ms = 600000\n";
  test::child_process gen{{SPILLWAY_BINARY, "gen", "--count", "64", "--size",
                           std::to_string(value_size), "--seed", "7", "--prefix", "u-",
                           "--log-acked", "-c", config_file}};
  gen.wait_for_stdout("acked ", 20, std::chrono::seconds(60));
  gen.send_signal(SIGKILL);
  gen.finish();
  const auto acked = acked_keys(gen.out());
  REQUIRE(acked.size() >= 20);
  std::size_t tmp = 0, sealed = 0;
  for (const auto& e : std::filesystem::directory_iterator{data_dir}) {
    tmp += e.path().extension() == ".tmp";
    sealed += e.path().extension() == ".bucket";
  }
  REQUIRE(tmp == 1);  // the kill found the bucket unsealed ...
  REQUIRE(sealed == 0);

  auto config = load_config_file(config_file);
  config.node.listen = "";
  config.node.log_level = "error";
  config.read.readers = 1;
  node n{config};
  CHECK(n.store_stats().buckets == 1);  // ... and recovery sealed its whole records
  CHECK(quarantined_buckets(data_dir) == "");
  const auto got = n.read_values(acked);
  for (std::size_t i = 0; i < acked.size(); ++i) {
    REQUIRE_MESSAGE(got[i].status.ok(), acked[i], ": ", to_string(got[i].status));
    REQUIRE_MESSAGE(got[i].value == generated_value(value_size, 7, acked[i]), acked[i]);
  }
  check_arena(n);
  n.stop();
  const auto inspect = test::run_spillway({"inspect", "--verify", "--data-dir", data_dir});
  REQUIRE_MESSAGE(inspect.exit_code == 0, inspect.out, inspect.err);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

// Crash consistency with real processes: `spillway gen` is killed with SIGKILL at
// seeded random moments; after each kill a node restarts on the same data dir and
// every acknowledged key must read back exactly, no unacknowledged key may be half
// there, and `inspect --verify` must be clean. SPILLWAY_CRASH_SEED replays a run.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "runtime/storage/forget_log.hpp"
#include "tools/generated_value.hpp"
#include "runtime/node.hpp"
#include "tests/caller_memory.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"

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

// A key a child was asked to put: its value is generated_value(size, seed, key).
struct put_key {
  std::string key;
  std::uint64_t seed = 0;
  std::size_t size = 0;
};

// After a kill, on the data dir of `config`: nothing torn was published (quarantine/
// holds no .bucket), every acknowledged key reads back exact, every other key is
// exact or absent, no arena extent is left out, and `inspect --verify` is clean.
void check_after_kill(const node_config& config, const std::vector<put_key>& acked,
                      const std::vector<put_key>& unacked) {
  node n{config};
  CHECK(quarantined_buckets(config.storage.data_dir) == "");
  for (const auto* keys : {&acked, &unacked}) {
    std::vector<std::string> names;
    for (const auto& k : *keys) names.push_back(k.key);
    const auto got = n.read_values(names);
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto& k = (*keys)[i];
      if (keys == &unacked && got[i].status.error == key_error::not_found) continue;
      REQUIRE_MESSAGE(got[i].status.ok(), k.key, ": ", to_string(got[i].status));
      REQUIRE_MESSAGE(got[i].value == generated_value(k.size, k.seed, k.key), k.key);
    }
  }
  // Acknowledged keys read in place too, into the caller's own memory: the same bytes,
  // nothing past them.
  std::vector<std::string> names;
  std::vector<std::size_t> sizes;
  std::uint64_t whole_pages = 0;
  for (const auto& k : acked) {
    names.push_back(k.key);
    sizes.push_back(k.size);
    whole_pages += k.size / 4096 * 4096;
  }
  test::caller_memory memory{sizes, 4096, 0};
  const auto in_place_before = n.io().read_in_place_bytes;
  std::vector<std::size_t> got_sizes;
  const auto statuses = n.get_batch_into(names, memory.buffers(), got_sizes);
  for (std::size_t i = 0; i < names.size(); ++i) {
    REQUIRE_MESSAGE(statuses[i].ok(), names[i], ": ", to_string(statuses[i]));
    REQUIRE_MESSAGE(memory.holds(i, generated_value(sizes[i], acked[i].seed, names[i])),
                    names[i]);
  }
  CHECK(n.io().read_in_place_bytes - in_place_before == whole_pages);
  test::node_leaks::check_arena(n);
  n.stop();
  const auto inspect =
    test::run_spillway({"inspect", "--verify", "--data-dir", config.storage.data_dir});
  REQUIRE_MESSAGE(inspect.exit_code == 0, inspect.out, inspect.err);
  CHECK(inspect.out.find(" version 1 ") == std::string::npos);  // the v1 fixture test has those
}

node_config node_on(const std::string& config_file) {
  auto config = load_config_file(config_file);
  config.node.listen = "";
  config.node.log_level = "error";
  config.read.readers = 1;
  return config;
}

TEST_SUITE("crash") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "kill -9 during puts loses no acknowledged key and tears no bucket"
                  * doctest::test_suite("fault")) {
  if (test::thread_sanitizer)
    return test::skip_test("24 rounds of kill -9 and recovery outlast ctest's 300 s under "
                           "ThreadSanitizer; the crash points run its recovery there");
  const auto seed = crash_seed();
  INFO("replay with SPILLWAY_CRASH_SEED=" << seed);
  std::mt19937_64 random{seed};
  test::temp_dir dir;
  const auto data_dir = (dir.path() / "data").string();
  // Small buckets sealed quickly: a kill lands mid-bucket, mid-seal or between them.
  const auto config_file = (dir.path() / "node.toml").string();
  std::ofstream{config_file} << "[storage]\ndata_dir = \"" << data_dir
                             << "\"\nbucket_keys_limit = 4\nseal_after_ms = 20\n"
                             << test::small_arena_toml;
  const auto config = node_on(config_file);

  std::vector<put_key> acked;
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
    for (const auto& k : round_acked) acked.push_back({k, round_seed, value_size});
    INFO("round " << round << ": " << round_acked.size() << " acked before the kill");

    std::vector<put_key> unacked;
    for (std::size_t i = round_acked.size(); i < keys_per_round; ++i)
      unacked.push_back({generated_key(prefix, i), round_seed, value_size});
    check_after_kill(config, acked, unacked);
  }
}

TEST_CASE_FIXTURE(test::node_leaks,
                  "kill -9 in the middle of an unsealed bucket loses no acknowledged key"
                  * doctest::test_suite("fault")) {
  test::temp_dir dir;
  const auto data_dir = dir.path() / "data";
  // The bucket never fills nor times out while gen runs: every ack is a group commit.
  const auto config_file = (dir.path() / "node.toml").string();
  std::ofstream{config_file} << "[storage]\ndata_dir = \"" << data_dir.string()
                             << "\"\nseal_after_ms = 600000\n" << test::small_arena_toml;
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

  const auto config = node_on(config_file);
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

// -- crash points: fault.kill_at stops a `spillway` process at one named step ---------

// A data dir and the keys put into it so far, some acknowledged.
struct crash_site {
  test::temp_dir dir;
  std::string data_dir = (dir.path() / "data").string();
  std::vector<put_key> acked, unacked;

  // A config file: `storage` lines, then [fault] killing at `point` (none: no fault).
  std::string config(const std::string& storage, const std::string& point,
                     std::uint64_t hit) const {
    const auto file = (dir.path() / ("node-" + point + ".toml")).string();
    std::ofstream{file} << "[storage]\ndata_dir = \"" << data_dir << "\"\n" << storage
                        << "[fault]\nenabled = true\nkill_at = \"" << point
                        << "\"\nkill_at_hit = " << hit << "\n" << test::small_arena_toml;
    return file;
  }

  // `spillway gen` of `count` values of `size`, two a put, each put answered before the
  // next (so every put is a commit of its own), which must die by the kill; its acks
  // are noted.
  void gen_killed(const std::string& config_file, std::size_t count, std::size_t size,
                  std::uint64_t seed) {
    const auto prefix = "s" + std::to_string(seed) + "-";
    test::child_process gen{{SPILLWAY_BINARY, "gen", "--count", std::to_string(count), "--size",
                             std::to_string(size), "--seed", std::to_string(seed), "--prefix",
                             prefix, "--log-acked", "--keys-per-put", "2", "--in-flight", "1",
                             "-c", config_file}};
    const int exit_code = gen.finish();
    REQUIRE_MESSAGE(exit_code == 128 + SIGKILL, "gen was not killed at its crash point: exit ",
                    exit_code, "\n", gen.err());
    const auto said = acked_keys(gen.out());
    for (std::size_t i = 0; i < count; ++i) {
      const auto key = generated_key(prefix, i);
      const bool was_acked = std::find(said.begin(), said.end(), key) != said.end();
      (was_acked ? acked : unacked).push_back({key, seed, size});
    }
  }

  void check() const { check_after_kill(node_on(config("", "none", 1)), acked, unacked); }
};

// Each point several times with seeded random sizes, counts and hits: small buckets
// (3 keys) for the seal's steps, buckets that never seal for a commit's. Every run
// reaches its point at least 3 times: 4 commits, or 3 seals (at 3 and 6 keys, and the
// flush's).
void kill_at(const std::string& point) {
  const auto seed = crash_seed();
  INFO("replay with SPILLWAY_CRASH_SEED=" << seed);
  std::mt19937_64 random{seed};
  const bool seal = point.rfind("seal.", 0) == 0;
  const std::string storage =
    seal ? "bucket_keys_limit = 3\n" : "bucket_keys_limit = 100000\nseal_after_ms = 600000\n";
  constexpr std::array<std::size_t, 4> sizes{4096, 100000, 1 << 20, (2 << 20) + 5};
  for (int run = 0; run < 10; ++run) {
    crash_site site;
    const auto size = sizes[random() % sizes.size()];
    const auto count = 7 + random() % 10;  // at least two seals of 3, and the flush's
    site.gen_killed(site.config(storage, point, 1 + random() % 3), count, size, random());
    INFO("run " << run << ": " << site.acked.size() << " of " << count << " acked");
    site.check();
  }
}

// Recovery's steps: a first process leaves a .tmp whose records are committed and
// acknowledged (and, for set_aside, a torn .tmp beside it); a second is killed while
// recovering them; a third recovers for good.
void kill_in_recovery(const std::string& point) {
  crash_site site;
  const std::string storage = "bucket_keys_limit = 100000\nseal_after_ms = 600000\n";
  site.gen_killed(site.config(storage, "commit.published", 4), 12, 1 << 20, 5);
  REQUIRE(site.acked.size() == 6);  // three puts of two
  if (point == "recovery.set_aside")
    std::ofstream{site.data_dir + "/0001000000099999.tmp"} << "torn: no header";
  const auto killed = test::run_spillway(
    {"get", "absent-key", "-c", site.config(storage, point, 1)});
  REQUIRE_MESSAGE(killed.exit_code == 128 + SIGKILL, "not killed in recovery: exit ",
                  killed.exit_code, "\n", killed.err);
  site.check();
}

// Keys put and acknowledged by a node in this process, before a child is killed.
void put_in_process(crash_site& site, const std::string& storage, std::size_t count,
                    std::size_t size) {
  node n{node_on(site.config(storage, "none", 1))};
  std::vector<std::string> keys, values;
  for (std::size_t i = 0; i < count; ++i) {
    keys.push_back(generated_key("p-", i));
    values.push_back(generated_value(size, 9, keys.back()));
  }
  for (const auto& s : n.put(keys, values).get()) REQUIRE(s.ok());
  for (const auto& k : keys) site.acked.push_back({k, 9, size});
}

key_error read_error(const crash_site& site, const std::string& key) {
  node n{node_on(site.config("", "none", 1))};
  return n.read_values({key})[0].status.error;
}

// A remove (`spillway rm`) killed at a step of its forget-log write. Before the
// fdatasync it was not answered: the key is exact or gone. From the fdatasync on it is
// gone for good. Every other key is exact either way, and nothing is torn.
void kill_remove_at(const std::string& point, bool durable) {
  const auto seed = crash_seed();
  INFO("replay with SPILLWAY_CRASH_SEED=" << seed);
  std::mt19937_64 random{seed};
  const std::string storage = "bucket_keys_limit = 4\nseal_after_ms = 600000\n";
  for (int run = 0; run < 4; ++run) {
    crash_site site;
    put_in_process(site, storage, 3 + random() % 6, 4096 + random() % 200000);
    const auto victim = site.acked[random() % site.acked.size()];
    std::erase_if(site.acked, [&](const put_key& k) { return k.key == victim.key; });
    const auto killed =
      test::run_spillway({"rm", victim.key, "-c", site.config(storage, point, 1)});
    REQUIRE_MESSAGE(killed.exit_code == 128 + SIGKILL, "rm was not killed at ", point, ": exit ",
                    killed.exit_code, "\n", killed.err);
    if (!durable) site.unacked.push_back(victim);
    INFO("run " << run << ": removed " << victim.key);
    site.check();
    if (durable) CHECK(read_error(site, victim.key) == key_error::not_found);
  }
}

// The compaction at start killed at each step: the old log or the new one is whole, so
// an acknowledged remove holds either way, and the next start finishes the compaction.
void kill_compaction_at(const std::string& point) {
  crash_site site;
  const std::string storage = "bucket_keys_limit = 4\n";
  put_in_process(site, storage, 6, 100000);
  const auto victim = site.acked.front();
  site.acked.erase(site.acked.begin());
  {
    node n{node_on(site.config(storage, "none", 1))};
    CHECK(n.remove({victim.key}) == 1);
    CHECK(n.remove({"never-put"}) == 0);  // an entry the compaction drops
  }
  REQUIRE(read_forget_log(site.data_dir).entries.size() == 2);
  const auto killed =
    test::run_spillway({"get", victim.key, "-c", site.config(storage, point, 1)});
  REQUIRE_MESSAGE(killed.exit_code == 128 + SIGKILL, "not killed in the compaction: exit ",
                  killed.exit_code, "\n", killed.err);
  site.check();
  CHECK(read_error(site, victim.key) == key_error::not_found);
  const auto log = read_forget_log(site.data_dir);
  CHECK(log.entries.size() == 1);
  CHECK(log.damaged.empty());
  CHECK_FALSE(std::filesystem::exists(site.data_dir + "/" + forget_log_tmp_name));
}

TEST_SUITE("fault") {

TEST_CASE("crash point forget.written: an unanswered remove leaves its key exact or gone") {
  kill_remove_at("forget.written", false);
}
TEST_CASE("crash point forget.synced: a remove made durable stays removed") {
  kill_remove_at("forget.synced", true);
}
TEST_CASE("crash point forget.compacted: the old forget log still holds every remove") {
  kill_compaction_at("forget.compacted");
}
TEST_CASE("crash point forget.renamed: the new forget log holds every remove") {
  kill_compaction_at("forget.renamed");
}
TEST_CASE("crash point commit.written: acknowledged keys survive") { kill_at("commit.written"); }
TEST_CASE("crash point commit.synced: acknowledged keys survive") { kill_at("commit.synced"); }
TEST_CASE("crash point commit.published: acknowledged keys survive") {
  kill_at("commit.published");
}
TEST_CASE("crash point seal.written: acknowledged keys survive") { kill_at("seal.written"); }
TEST_CASE("crash point seal.synced: acknowledged keys survive") { kill_at("seal.synced"); }
TEST_CASE("crash point seal.renamed: acknowledged keys survive") { kill_at("seal.renamed"); }
TEST_CASE("crash point seal.dir_synced: acknowledged keys survive") {
  kill_at("seal.dir_synced");
}
TEST_CASE("crash point seal.published: acknowledged keys survive") {
  kill_at("seal.published");
}
TEST_CASE("crash point recovery.renamed: a second recovery finishes the first") {
  kill_in_recovery("recovery.renamed");
}
TEST_CASE("crash point recovery.set_aside: a second recovery finishes the first") {
  kill_in_recovery("recovery.set_aside");
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

// `spillway bench e2e` runs on a tiny dataset and prints its table, its --json holds
// every contender, and its `spillway serve` children are gone when it ends, also when it
// fails. No speed is asserted: figures belong to the bench, not to tests.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

// Processes whose command line names `path`: the bench's children name their config there.
std::size_t processes_naming(const std::string& path) {
  std::size_t found = 0;
  for (const auto& e : std::filesystem::directory_iterator{"/proc"}) {
    std::ifstream cmdline{e.path() / "cmdline", std::ios::binary};
    std::stringstream text;
    text << cmdline.rdbuf();
    if (text.str().find(path) != std::string::npos) ++found;
  }
  return found;
}

std::vector<std::string> tiny_bench(const test::temp_dir& dir, const std::string& object_size) {
  return {"bench",  "e2e",       "--object-size", object_size, "--dataset", "8MiB",
          "--batch", "2MiB",     "--arena",       "64MiB",     "--runs",    "1",
          "--nodes", "3",        "--dir",         dir.path().string(),
          "--json",  (dir.path() / "e2e.json").string()};
}

TEST_SUITE("bench") {

TEST_CASE("bench e2e on a tiny dataset prints its table and json and leaves no child") {
  test::temp_dir dir;
  const auto r = test::run_spillway(tiny_bench(dir, "128KiB"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  for (const auto* row : {"e2e, 1 node", "e2e, 3 nodes", "read limit", "tcp limit",
                          "e2e / min(read, tcp)", "3 nodes / 1 node"})
    CHECK_MESSAGE(r.out.find(row) != std::string::npos, row, "\n", r.out);
  std::stringstream json;
  json << std::ifstream{dir.path() / "e2e.json"}.rdbuf();
  for (const auto* field : {"\"e2e\"", "\"e2e_3\"", "\"read\"", "\"tcp\"", "\"e2e_over_limit\"",
                            "\"nodes3_over_1\""})
    CHECK_MESSAGE(json.str().find(field) != std::string::npos, field, "\n", json.str());
  CHECK(processes_naming(dir.path().string()) == 0);
}

// A value over what a put message carries (4 MiB) fails the dataset's writing, with the
// three serve children already running.
TEST_CASE("bench e2e that fails names why and kills its serve children") {
  test::temp_dir dir;
  const auto r = test::run_spillway(tiny_bench(dir, "5MiB"));
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.err.find("a put failed: too_large") != std::string::npos, r.err);
  CHECK(processes_naming(dir.path().string()) == 0);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

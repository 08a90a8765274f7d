#include "tests/fault_fs_fixture.hpp"

#include <doctest/doctest.h>

#include <filesystem>

#include "runtime/storage/bucket_file.hpp"
#include "tests/caller_memory.hpp"
#include "tests/node_leaks.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway::test {

node_config config_on(const faultfs_mount& fs) {
  auto config = private_node(fs.mountpoint() / "data");
  config.storage.bucket_keys_limit = 8;
  config.read.readers = 2;
  return config;
}

std::string value_of(const std::string& key) { return generated_value(fault_value_size, 5, key); }

void dataset::write(node& n, std::size_t count, const std::string& prefix) {
  std::vector<std::string> written, values;
  for (std::size_t i = 0; i < count; ++i) {
    written.push_back(generated_key(prefix, i));
    values.push_back(value_of(written.back()));
  }
  auto acked = n.put(written, std::move(values));
  n.flush();
  for (const auto& s : acked.get()) REQUIRE(s.ok());
  keys.insert(keys.end(), written.begin(), written.end());
}

void check_read(node& n, const std::vector<std::string>& keys, const std::string& failed,
                key_status want) {
  const auto got = n.read_values(keys);
  REQUIRE(got.size() == keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] == failed) {
      CHECK_MESSAGE(got[k].status == want, keys[k], ": ", to_string(got[k].status));
      CHECK(got[k].value.empty());
      continue;
    }
    REQUIRE_MESSAGE(got[k].status.ok(), keys[k], ": ", to_string(got[k].status));
    CHECK_MESSAGE(got[k].value == value_of(keys[k]), keys[k]);
  }
}

void check_read_into(node& n, const std::vector<std::string>& keys, const std::string& failed,
                     key_status want) {
  caller_memory memory{std::vector<std::size_t>(keys.size(), fault_value_size), 4096, 0};
  const auto before = n.io().read_in_place_bytes;
  std::vector<std::size_t> sizes;
  const auto statuses = n.get_batch_into(keys, memory.buffers(), sizes);
  std::uint64_t landed = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] == failed) {
      CHECK_MESSAGE(statuses[k] == want, keys[k], ": ", to_string(statuses[k]));
      continue;
    }
    REQUIRE_MESSAGE(statuses[k].ok(), keys[k], ": ", to_string(statuses[k]));
    CHECK_MESSAGE(memory.holds(k, value_of(keys[k])), keys[k]);
    landed += fault_value_size;
  }
  CHECK(n.io().read_in_place_bytes - before == landed);
}

std::string record_spot::rule(const std::string& words) const {
  return words + " path=" + path + " offset=" + std::to_string(offset) + "-" +
         std::to_string(offset + 1);
}

record_spot spot_of(const faultfs_mount& fs, const std::string& key) {
  for (const auto& entry : std::filesystem::directory_iterator(fs.backing() / "data")) {
    if (entry.path().extension() != ".bucket") continue;
    bucket_index index;
    REQUIRE(read_bucket_index(entry.path(), index).empty());
    for (const auto& e : index.entries)
      if (e.key == key)
        return {"/data/" + entry.path().filename().string(), bucket_format::value_offset(e.offset, e.key.size()) + e.value_size / 2};
  }
  FAIL("no bucket holds ", key);
  return {};
}

std::size_t files_ending(const faultfs_mount& fs, const std::string& suffix) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fs.backing() / "data"))
    n += entry.path().filename().string().ends_with(suffix);
  return n;
}

void check_recovered(node& n, faultfs_mount& fs, const std::vector<std::string>& keys) {
  node_leaks::check_arena(n);
  fs.clear();
  check_read(n, keys);
  node_leaks::check_arena(n);
}

}  // namespace spillway::test

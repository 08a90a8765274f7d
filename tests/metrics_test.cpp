// /metrics as Prometheus scrapes it: a node under a batch loop, scraped over real HTTP
// (cpp-httplib's client), each scrape parsed by the real Prometheus parser
// (tests/parse_metrics.py, python3-prometheus-client).
#include <doctest/doctest.h>

#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/net/slicing.hpp"
#include "runtime/node.hpp"
#include "tests/node_leaks.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

struct sample {
  std::string type;  // of its family: counter, gauge, histogram
  double value = 0;
};

using scrape = std::map<std::string, sample>;  // by name{labels}

// One GET /metrics, parsed by the real parser; every sample by its name and labels.
scrape scrape_once(std::uint16_t port, const test::temp_dir& dir) {
  httplib::Client client{"127.0.0.1", port};
  const auto res = client.Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  CHECK(res->get_header_value("Content-Type").starts_with("text/plain; version=0.0.4"));
  const auto text = (dir.path() / "scrape.txt").string();
  std::ofstream{text} << res->body;
  const auto parsed = test::run_command({"/usr/bin/python3",
                                         SPILLWAY_SOURCE_DIR "/tests/parse_metrics.py", text});
  REQUIRE_MESSAGE(parsed.exit_code == 0, parsed.err);
  scrape out;
  std::istringstream lines{parsed.out};
  for (std::string type, name, value; lines >> type >> name >> value;)
    out[name] = {type, std::stod(value)};
  return out;
}

// The metric names README.md's "Monitoring" table lists, each a `spillway_...` cell.
std::set<std::string> readme_metrics() {
  std::ifstream readme{SPILLWAY_SOURCE_DIR "/README.md"};
  std::stringstream text;
  text << readme.rdbuf();
  const auto all = text.str();
  const auto from = all.find("## Monitoring");
  REQUIRE(from != std::string::npos);
  const auto section = all.substr(from, all.find("\n## ", from + 1) - from);
  std::set<std::string> names;
  const std::string cell = "| `spillway_";
  for (auto at = section.find(cell); at != std::string::npos; at = section.find(cell, at + 1)) {
    const auto name = at + cell.size() - std::string_view{"spillway_"}.size();
    names.insert(section.substr(name, section.find('`', name) - name));
  }
  return names;
}

TEST_SUITE("metrics") {

TEST_CASE_FIXTURE(test::node_leaks,
                  "a node under load serves /metrics that Prometheus parses, counters only grow") {
  if (std::system("/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null") != 0)
    return test::skip_test("python3-prometheus-client is not installed");
  test::temp_dir dir;
  auto config = test::private_node(dir.path() / "data");
  config.node.metrics_listen = "127.0.0.1:0";
  config.read.readers = 2;
  node n{config};
  REQUIRE(n.metrics_port() != 0);

  std::vector<std::string> keys, values;
  std::uint64_t written = 0;
  for (int i = 0; i < 12; ++i) {
    keys.push_back(generated_key("metrics-", i));
    values.push_back(generated_value(std::size_t{4096} << (i % 6), 5, keys.back()));
    written += values.back().size();
  }
  auto acked = n.put(keys, values);
  n.flush();
  for (const auto& s : acked.get()) REQUIRE(s.ok());

  std::vector<scrape> scrapes;
  std::uint64_t read = 0;
  for (int round = 0; round < 4; ++round) {
    auto asked = keys;
    asked.push_back("absent-" + std::to_string(round));  // one not_found a round
    const auto got = n.get_batch(asked);
    for (const auto& v : got.values())
      if (v.status.ok()) read += v.bytes.size();
    scrapes.push_back(scrape_once(n.metrics_port(), dir));
  }

  for (std::size_t i = 1; i < scrapes.size(); ++i)
    for (const auto& [name, s] : scrapes[i - 1]) {
      if (s.type == "gauge") continue;  // counters and histograms never go back
      REQUIRE_MESSAGE(scrapes[i].count(name), name);
      CHECK_MESSAGE(scrapes[i].at(name).value >= s.value, name);
    }
  const auto& last = scrapes.back();
  CHECK(last.at("spillway_read_bytes_total{}").value == static_cast<double>(read));
  CHECK(last.at("spillway_read_keys_total{status=\"ok\"}").value == 4.0 * keys.size());
  CHECK(last.at("spillway_read_keys_total{status=\"not_found\"}").value == 4);
  CHECK(last.at("spillway_written_bytes_total{}").value == static_cast<double>(written));
  CHECK(last.at("spillway_get_batch_seconds_count{}").value == 4);
  CHECK(last.at("spillway_put_seconds_count{}").value == 1);

  std::set<std::string> served;
  for (const auto& [name, s] : last) served.insert(name.substr(0, name.find('{')));
  auto present = [&served](const std::string& family) {
    return served.count(family) || served.count(family + "_count");  // a histogram
  };
  const auto listed = readme_metrics();
  CHECK(listed.size() >= 20);
  for (const auto& family : listed) CHECK_MESSAGE(present(family), family, " is in the README");
  check_arena(n);
}

// The posix engine is a fallback an operator should see: each reader says which it runs.
TEST_CASE_FIXTURE(test::node_leaks, "readers on the posix engine show as such in the metrics") {
  test::temp_dir dir;
  auto config = test::private_node(dir.path() / "data");
  config.read.readers = 2;
  config.read.engine = "posix";
  node n{config};
  const auto text = n.metrics();
  for (const char* reader : {"0", "1"}) {
    const auto sample = std::string{"spillway_reader_engine{reader=\""} + reader +
                        "\",engine=\"posix\"} 1\n";
    CHECK_MESSAGE(text.find(sample) != std::string::npos, sample);
  }
  CHECK(text.find("engine=\"io_uring\"") == std::string::npos);
  CHECK(text.find("spillway_store_reads_buffered 0\n") != std::string::npos);
  check_arena(n);
}

// A node that moved bytes to a peer node over tcp on 127.0.0.1 and back shows what it
// moved, as the slicer cut it, over real HTTP.
TEST_CASE_FIXTURE(test::node_leaks,
                  "a node that transferred over tcp serves the bytes and slices it moved") {
  if (std::system("/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null") != 0)
    return test::skip_test("python3-prometheus-client is not installed");
  test::temp_dir dir;
  auto transfer_node = [&dir](const std::string& name) {
    auto config = test::private_node(dir.path() / name);
    config.read.readers = 1;
    config.transfer.transport = "tcp";
    config.transfer.listen = "127.0.0.1:0";
    config.transfer.tcp_lanes = 2;
    return config;
  };
  auto client_config = transfer_node("client");
  client_config.node.metrics_listen = "127.0.0.1:0";
  node owner{transfer_node("owner")}, client{client_config};
  constexpr std::uint64_t chunk = 100000, count = 10;  // a slice and a tail each
  std::vector<std::byte> memory(chunk * count), source(memory.size()), back(memory.size());
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = std::byte(i * 7 + (i >> 9));
  const auto segment =
    owner.register_segment(memory.data(), memory.size(), segment_export::to({client.transfer_identity()}));
  const auto peer = client.connect_peer("127.0.0.1", owner.transfer_port());
  auto run = [&](transfer_op op, std::byte* local) {
    std::vector<transfer_request> requests;
    for (std::uint64_t i = 0; i < count; ++i)
      requests.push_back({op, local + i * chunk, segment.id, i * chunk, chunk});
    return client.transfer(peer, std::move(requests)).get();
  };
  REQUIRE(run(transfer_op::write, source.data()) == std::vector<transfer_status>(count));
  REQUIRE(run(transfer_op::read, back.data()) == std::vector<transfer_status>(count));
  REQUIRE(back == source);

  const auto& t = client_config.transfer;
  const auto slices = slice_count(chunk, {t.slice_size, t.fragment_limit, true});
  const auto last = scrape_once(client.metrics_port(), dir);
  CHECK(last.at("spillway_transfer_bytes_total{direction=\"write\"}").value == chunk * count);
  CHECK(last.at("spillway_transfer_bytes_total{direction=\"read\"}").value == chunk * count);
  CHECK(last.at("spillway_transfer_slices_total{}").value == 2.0 * count * slices);
  CHECK(last.at("spillway_transfer_requests_total{status=\"ok\"}").value == 2.0 * count);
  CHECK(last.at("spillway_transfer_slice_retries_total{}").value == 0);
  CHECK(last.at("spillway_transfer_lanes_lost_total{}").value == 0);
  CHECK(owner.transfers().refused_frames == 0);
  check_arena(owner);
  check_arena(client);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

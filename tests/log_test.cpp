// Log lines: the quoting that keeps a message inside its JSON line, and a real
// `spillway serve` logging in JSON.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway {
namespace {

TEST_SUITE("log") {

TEST_CASE("quote_string leaves no byte that could end a log line or its string") {
  CHECK(quote_string("plain key-1") == "\"plain key-1\"");
  CHECK(quote_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quote_string("forged\n{\"level\":\"error\"}") ==
        "\"forged\\u000a{\\\"level\\\":\\\"error\\\"}\"");
  CHECK(quote_string("\x1b[31mred\x7f") == "\"\\u001b[31mred\\u007f\"");
}

TEST_CASE("node.log_format = json makes every line of serve's log one JSON object") {
  test::temp_dir dir;
  const auto config = (dir.path() / "node.toml").string();
  std::ofstream{config} << "[node]\nlisten = \"127.0.0.1:0\"\nlog_format = \"json\"\n"
                        << "[storage]\ndata_dir = \"" << (dir.path() / "data").string() << "\"\n"
                        << "[read]\nreaders = 2\n";
  test::child_process serve{{SPILLWAY_BINARY, "serve", "-c", config}};
  REQUIRE_MESSAGE(serve.wait_for_stderr("serving", std::chrono::seconds(30)), serve.err());
  serve.send_signal(SIGTERM);
  CHECK(serve.finish() == 0);
  std::istringstream lines{serve.err()};
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    CHECK_MESSAGE(line.starts_with("{\"time\":\""), line);
    CHECK_MESSAGE(line.ends_with("\"}"), line);
    CHECK_MESSAGE(line.find("\",\"level\":\"") != std::string::npos, line);
  }
  CHECK(count >= 2);  // serving, and stopping
  CHECK(serve.err().find("\"level\":\"info\",\"msg\":\"serving; SIGINT or SIGTERM stops the node\"}") !=
        std::string::npos);
}

}  // TEST_SUITE
}  // namespace
}  // namespace spillway

#include "tests/serve_process.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <vector>

#include "tests/test_config.hpp"

namespace spillway::test {

serve_process::serve_process() : data_dir(dir_.path() / "data") {}

void serve_process::start(std::uint16_t port) {
  std::ofstream{config_file()} << "[node]\nlisten = \"127.0.0.1:" << port << "\"\n"
                               << node_keys << "[storage]\ndata_dir = \"" << data_dir.string()
                               << "\"\n"
                               << storage_keys << small_arena_toml << "readers = 1\n"
                               << read_keys << "[transfer]\n"
                               << transfer_keys
                               << (security_keys.empty() ? "" : "[security]\n" + security_keys);
  process_.emplace(std::vector<std::string>{SPILLWAY_BINARY, "serve", "-c", config_file()});
  REQUIRE_MESSAGE(process_->wait_for_stderr("serving", std::chrono::seconds(60)),
                  process_->err());
  const auto& err = process_->err();
  const auto at = err.find("listening on port ");
  REQUIRE(at != std::string::npos);
  port_ = static_cast<std::uint16_t>(std::stoul(err.substr(at + 18)));
}

void serve_process::kill() { CHECK(stop(SIGKILL) == 128 + SIGKILL); }

int serve_process::stop(int signal) {
  process_->send_signal(signal);
  return process_->finish();
}

}  // namespace spillway::test

// The lines the node logs while a log_capture lives, for tests that check what was
// reported. Create it before the node and destroy it after: spdlog's list of sinks is
// not guarded against a logger in use.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "runtime/log.hpp"

namespace spillway::test {

class log_capture {
public:
  // `level` as node.log_level: the node sets it again, so its config must agree.
  explicit log_capture(std::string_view level) {
    configure_logging(level);  // installs the default logger the node will log to
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~log_capture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::find(sinks.begin(), sinks.end(), sink_));
  }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  // How many lines logged so far contain `text`.
  std::size_t count(std::string_view text) const {
    const auto lines = sink_->last_formatted();
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.find(text) != std::string::npos;
    }));
  }

private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
    std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(10000);
};

}  // namespace spillway::test

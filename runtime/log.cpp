#include "runtime/log.hpp"

#include <memory>

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "config/config.hpp"

namespace spillway {
namespace {

// One JSON object a line; spdlog's patterns cannot escape the message.
class json_formatter : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto level = spdlog::level::to_string_view(msg.level);
    const auto line = "{\"time\":\"" + time_text_.format(msg) + "\",\"level\":\"" +
                      std::string(level.data(), level.size()) + "\",\"msg\":" +
                      quote_string({msg.payload.data(), msg.payload.size()}) + "}\n";
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<json_formatter>();
  }

private:
  struct time_text {
    spdlog::pattern_formatter pattern{"%Y-%m-%dT%H:%M:%S.%e%z", spdlog::pattern_time_type::local,
                                      ""};
    std::string format(const spdlog::details::log_msg& msg) {
      spdlog::memory_buf_t out;
      pattern.format(msg, out);
      return {out.data(), out.size()};
    }
  } time_text_;
};

}  // namespace

void configure_logging(std::string_view level, std::string_view format) {
  static const bool installed = [] {
    spdlog::set_default_logger(spdlog::stderr_color_mt("spillway"));
    return true;
  }();
  (void)installed;
  if (format == "json") spdlog::set_formatter(std::make_unique<json_formatter>());
  else spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(std::string{level}));
}

}  // namespace spillway

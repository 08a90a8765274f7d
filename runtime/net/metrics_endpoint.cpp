#include "runtime/net/metrics_endpoint.hpp"

#include <httplib.h>

#include <chrono>
#include <exception>
#include <stdexcept>

namespace spillway {

metrics_endpoint::metrics_endpoint(const std::string& host, std::uint16_t port,
                                   std::function<std::string()> render)
    : server_(std::make_unique<httplib::Server>()) {
  auto& s = *server_;
  s.new_task_queue = [] { return new httplib::ThreadPool(1); };  // a scrape at a time
  s.set_read_timeout(std::chrono::seconds(5));
  s.set_write_timeout(std::chrono::seconds(5));
  s.set_keep_alive_timeout(5);
  s.set_payload_max_length(0);  // a scrape has no body
  s.Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
    } catch (const std::exception& e) {
      res.status = 503;
      res.set_content(std::string{e.what()} + "\n", "text/plain");
    }
  });
  const int bound = port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  if (bound <= 0)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port));
  port_ = static_cast<std::uint16_t>(bound);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() does nothing to a server not yet running: the destructor's would be lost.
  while (!server_->is_running()) std::this_thread::yield();
}

metrics_endpoint::~metrics_endpoint() {
  server_->stop();
  thread_.join();
}

}  // namespace spillway

// An HTTP endpoint that serves GET /metrics with what `render` returns, as Prometheus
// scrapes it (cpp-httplib, from Debian: no HTTP parsing of our own). One worker thread;
// idle or slow clients are cut off after a few seconds, and requests carry no body.
// Stops, and joins its threads, on destruction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace spillway {

class metrics_endpoint {
public:
  // Listens on host:port (0 = a free port). `render` runs on the endpoint's thread, once
  // per scrape; an exception from it is answered 503 with its what(). Throws
  // std::runtime_error naming host:port when it cannot listen.
  metrics_endpoint(const std::string& host, std::uint16_t port, std::function<std::string()> render);
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  std::uint16_t port() const { return port_; }

private:
  std::unique_ptr<httplib::Server> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace spillway

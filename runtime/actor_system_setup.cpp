#include "runtime/actor_system_setup.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "messages/type_ids.hpp"
#include "runtime/tls.hpp"

namespace spillway {

caf::actor_system_config& configure_actor_system(caf::actor_system_config& config,
                                                 std::size_t workers,
                                                 const security_section& security) {
  if (workers == 0) workers = std::max(1u, std::thread::hardware_concurrency());
  config.set("scheduler.max-threads", workers);
  config.set("work-stealing.moderate-poll-attempts", std::size_t{0});
  // A sleeping worker still wakes this often to steal work a busy one queued for
  // itself (those sends signal no one).
  config.set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds{1}});
  config.set("middleman.heartbeat-interval", caf::timespan{middleman_heartbeat_interval});
  config.set("middleman.connection-timeout", caf::timespan{middleman_connection_timeout});
  config.load<caf::io::middleman>();
  configure_tls(config, security);  // after the middleman, which the OpenSSL module needs
  register_message_types(config);
  return config;
}

}  // namespace spillway

#include "runtime/actor_system_setup.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "messages/type_ids.hpp"

namespace spillway {

caf::actor_system_config& configure_actor_system(caf::actor_system_config& config,
                                                 std::size_t workers) {
  if (workers == 0) workers = std::max(1u, std::thread::hardware_concurrency());
  config.set("scheduler.max-threads", workers);
  config.set("work-stealing.moderate-poll-attempts", std::size_t{0});
  // A sleeping worker still wakes this often to steal work a busy one queued for
  // itself (those sends signal no one).
  config.set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds{1}});
  config.load<caf::io::middleman>();
  register_message_types(config);
  return config;
}

}  // namespace spillway

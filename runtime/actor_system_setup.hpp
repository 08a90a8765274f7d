// How every spillway process configures CAF: the middleman (TLS when [security] names
// a certificate), our message types, and a scheduler sized for machines of few cores.
#pragma once

#include <chrono>
#include <cstddef>

#include "config/config.hpp"

namespace caf {
class actor_system_config;
}

namespace spillway {

// `workers` scheduler threads, 0 = one per core (CAF's own default is at least four,
// twice the cores of a small machine). Idle workers sleep on their condition variable,
// which a message from outside the scheduler (a reader, a lane) signals, waking on
// their own once a millisecond to steal work; CAF's default wakes them every 50 us
// for 25 ms after each message: on two cores those wakeups were 80 000 context
// switches a second per process, taken from the threads that move the data.
// The middleman sends a heartbeat on every connection each second and drops one that
// has said nothing for 30 s (CAF's defaults, 0, keep a dead peer's connection and its
// buffers for good). `security`: the control channel's TLS (runtime/tls.hpp).
// Returns `config`.
caf::actor_system_config& configure_actor_system(caf::actor_system_config& config,
                                                 std::size_t workers = 0,
                                                 const security_section& security = {});

// What configure_actor_system gives the middleman (for its test).
inline constexpr std::chrono::seconds middleman_heartbeat_interval{1};
inline constexpr std::chrono::seconds middleman_connection_timeout{30};

}  // namespace spillway

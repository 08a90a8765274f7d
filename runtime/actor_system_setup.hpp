// How every spillway process configures CAF: the middleman, our message types, and a
// scheduler sized for machines of few cores.
#pragma once

#include <cstddef>

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
// Returns `config`.
caf::actor_system_config& configure_actor_system(caf::actor_system_config& config,
                                                 std::size_t workers = 0);

}  // namespace spillway

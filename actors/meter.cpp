#include "actors/meter.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace spillway {
namespace {

struct meter_state {
  io_stats totals;
  static inline const char* name = "meter";
};

meter_actor::behavior_type meter(meter_actor::stateful_pointer<meter_state> self,
                                 io_stats totals) {
  self->state.totals = std::move(totals);
  return {
    [self](const io_report& r) {
      auto& t = self->state.totals;
      auto& keys = r.write ? t.written_keys : t.read_keys;
      for (std::size_t e = 0; e < keys.size() && e < r.keys.size(); ++e) keys[e] += r.keys[e];
      (r.write ? t.written_bytes : t.read_bytes) += r.bytes;
      (r.write ? t.put_latency : t.get_latency).add(r.ns);
      if (r.write) {
        t.written_in_place_bytes += r.in_place_bytes;
        t.written_copied_bytes += r.copied_bytes;
      } else {
        t.read_in_place_bytes += r.in_place_bytes;
        t.read_bounced_bytes += r.bounced_bytes;
        t.read_copied_bytes += r.copied_bytes;
      }
    },
    [self](stats_atom) { return self->state.totals; },
  };
}

}  // namespace

// Spawned with its (zero) totals as an argument: CAF 0.17 dereferences a null argument
// tuple for an actor spawned with none (UBSan, runtime/node.cpp).
meter_actor spawn_meter(caf::actor_system& system) {
  const io_stats zero;
  return system.spawn(meter, zero);
}

}  // namespace spillway

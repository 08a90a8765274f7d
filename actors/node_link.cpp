// State chart:  connecting --connected--> up --down_msg--> waiting --tick--> connecting
//               connecting --refused | timeout--> waiting (backoff doubles)
//               up: requests relayed; connecting, waiting: refused at once
#include "actors/node_link.hpp"

#include <functional>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "runtime/control_channel.hpp"

namespace spillway {
namespace {

constexpr std::chrono::milliseconds first_backoff{20};
constexpr std::chrono::milliseconds max_backoff{1000};

struct link_state {
  node_link_settings settings;  // led by a duration: see actors/service.hpp
  std::string peer;             // host:port, for errors and logs
  remote_node_actor remote;     // null while not connected
  bool connecting = false;
  std::chrono::milliseconds backoff = first_backoff;
  std::uint64_t next_request = 0;
  std::unordered_map<std::uint64_t, std::function<void(const caf::error&)>> in_flight;
  std::vector<caf::typed_response_promise<bool>> until_up;       // connect(true)
  std::vector<caf::typed_response_promise<bool>> until_attempt;  // connect(false)
  static inline const char* name = "node_link";
};

using link_pointer = node_link_actor::stateful_pointer<link_state>;

caf::error unavailable(const link_state& st) {
  return caf::make_error(caf::sec::request_receiver_down, "node " + st.peer + " is unavailable");
}

void retry_later(link_pointer self) {
  auto& st = self->state;
  for (auto& w : std::exchange(st.until_attempt, {})) w.deliver(false);
  self->delayed_send(self, st.backoff, caf::tick_atom_v);
  st.backoff = std::min(st.backoff * 2, max_backoff);
}

void connected(link_pointer self, caf::strong_actor_ptr& ptr, const std::set<std::string>& ifs) {
  auto& st = self->state;
  if (!ptr || !self->home_system().assignable<remote_node_actor>(ifs)) {
    spdlog::warn("{} is not a spillway node (no node service published there)", st.peer);
    return retry_later(self);
  }
  st.remote = caf::actor_cast<remote_node_actor>(std::move(ptr));
  self->monitor(st.remote);
  st.backoff = first_backoff;
  spdlog::debug("connected to node {}", st.peer);
  for (auto& w : std::exchange(st.until_up, {})) w.deliver(true);
  for (auto& w : std::exchange(st.until_attempt, {})) w.deliver(true);
}

void connect(link_pointer self) {
  auto& st = self->state;
  if (st.remote || st.connecting) return;
  st.connecting = true;
  auto mm = control_middleman(self->home_system());  // TLS when the client has it
  self->request(mm, st.settings.timeout, caf::connect_atom_v, st.settings.host, st.settings.port)
    .then(
      [self](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& ifs) {
        self->state.connecting = false;
        connected(self, ptr, ifs);
      },
      [self](caf::error& err) {
        self->state.connecting = false;
        spdlog::debug("node {}: {}", self->state.peer, to_string(err));
        retry_later(self);
      });
}

// Every request in flight fails now: CAF would let each run to its timeout.
void on_down(link_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (!st.remote || msg.source != st.remote.address()) return;
  spdlog::warn("node {} went away ({}): its requests fail as unavailable until it is back",
               st.peer, to_string(msg.reason));
  st.remote = nullptr;
  const auto err = unavailable(st);
  for (auto& [id, fail] : std::exchange(st.in_flight, {})) fail(err);
  retry_later(self);
}

template <class Reply, class... Ts>
caf::result<Reply> relay(link_pointer self, Ts&&... xs) {
  auto& st = self->state;
  if (!st.remote) return unavailable(st);
  auto promise = self->make_response_promise<Reply>();
  const auto id = st.next_request++;
  st.in_flight.emplace(id, [promise](const caf::error& err) mutable {
    if (promise.pending()) promise.deliver(err);
  });
  self->request(st.remote, st.settings.timeout, std::forward<Ts>(xs)...)
    .then(
      [self, promise, id](Reply& reply) mutable {
        self->state.in_flight.erase(id);
        if (promise.pending()) promise.deliver(std::move(reply));
      },
      [self, promise, id](caf::error& err) mutable {
        self->state.in_flight.erase(id);
        if (promise.pending()) promise.deliver(std::move(err));
      });
  return promise;
}

using keys = std::vector<std::string>;

node_link_actor::behavior_type node_link(link_pointer self, node_link_settings settings) {
  auto& st = self->state;
  st.settings = std::move(settings);
  st.peer = st.settings.host + ":" + std::to_string(st.settings.port);
  self->set_down_handler([self](caf::down_msg& msg) { on_down(self, msg); });
  connect(self);
  return {
    [self](caf::put_atom, keys& k, keys& v) {
      return relay<put_reply>(self, caf::put_atom_v, std::move(k), std::move(v));
    },
    [self](values_atom, keys& k) { return relay<values_reply>(self, values_atom_v, std::move(k)); },
    [self](get_into_atom, get_into_request& r) {
      return relay<get_into_reply>(self, get_into_atom_v, std::move(r));
    },
    [self](pull_atom, pull_request& r) {
      return relay<put_reply>(self, pull_atom_v, std::move(r));
    },
    [self](exists_atom, keys& k) { return relay<exists_reply>(self, exists_atom_v, std::move(k)); },
    [self](caf::delete_atom, keys& k) {
      return relay<std::uint64_t>(self, caf::delete_atom_v, std::move(k));
    },
    [self](report_atom) { return relay<node_report>(self, report_atom_v); },
    [self](caf::connect_atom, bool until_up) -> caf::result<bool> {
      auto& st = self->state;
      if (st.remote) return true;
      if (!until_up && !st.connecting) return false;
      auto& list = until_up ? st.until_up : st.until_attempt;
      list.push_back(self->make_response_promise<bool>());
      return list.back();
    },
    [self](caf::tick_atom) { connect(self); },
  };
}

}  // namespace

node_link_actor spawn_node_link(caf::actor_system& system, node_link_settings settings) {
  return system.spawn(node_link, std::move(settings));
}

}  // namespace spillway

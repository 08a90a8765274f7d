// The guard (exit_guard.hpp) is an actor class over a remote interface: one relay per
// message of the interface, built from its signatures, over exit_proof, the enqueue
// that drops exits, which the transfer host also runs on as itself.
#include "actors/exit_guard.hpp"

#include <atomic>
#include <functional>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace spillway {
namespace {

// What stop_exit_guard finds in a guard of any interface.
class guard_control {
public:
  virtual ~guard_control() = default;
  void allow_exit() { stopping_.store(true, std::memory_order_release); }

protected:
  bool exit_allowed() const { return stopping_.load(std::memory_order_acquire); }

private:
  std::atomic<bool> stopping_{false};
};

// One message of the interface: asked of the actor behind, answered by the guard.
template <class Signature>
struct relay;

template <class... In, class... Out>
struct relay<caf::typed_mpi<caf::detail::type_list<In...>, caf::output_tuple<Out...>>> {
  template <class Self, class Inner>
  static auto handler(Self* self, Inner inner) {
    return [self, inner](In&... xs) -> caf::result<Out...> {
      auto promise = self->template make_response_promise<Out...>();
      // No timeout of its own: the caller has one, and the actor behind answers or
      // goes (request_receiver_down).
      self->request(inner, caf::infinite, std::move(xs)...)
        .then([promise](Out&... ys) mutable { promise.deliver(std::move(ys)...); },
              [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    };
  }
};

// What every actor a peer may reach is: it drops exits before CAF's mailbox sees them
// (a kill would end the actor there, whatever its exit handler says), and ignores the
// errors, down messages and unexpected messages a peer can send.
template <class Interface>
class exit_proof : public Interface::base, public guard_control {
public:
  using base = typename Interface::base;

  exit_proof(caf::actor_config& config, std::string name)
    : base(config), name_(std::move(name)) {
    // A peer's error, down message or unexpected message would otherwise stop the actor
    // (errors) or fill stderr (the others).
    this->set_error_handler([this](caf::error& err) {
      spdlog::warn("dropped an error message sent to {}: {}", name_, to_string(err));
    });
    this->set_down_handler([](caf::down_msg&) {});
    this->set_default_handler(caf::drop);
  }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    if (what && what->content().match_elements<caf::exit_msg>() && !exit_allowed()) {
      const auto& exit = what->content().get_as<caf::exit_msg>(0);
      spdlog::warn("dropped an exit message ({}) sent to {}: only its own process stops it",
                   to_string(exit.reason), name_);
      return;
    }
    base::enqueue(std::move(what), host);
  }

private:
  std::string name_;
};

// A guard: relays the interface's requests to the actor behind it.
template <class Interface, class Inner>
class exit_guard final : public exit_proof<Interface> {
public:
  using behavior_type = typename Interface::behavior_type;

  exit_guard(caf::actor_config& config, Inner inner, std::string name)
    : exit_proof<Interface>(config, std::move(name)), inner_(std::move(inner)) {}

  behavior_type make_behavior() override {
    return relays(typename Interface::signatures{});
  }

private:
  template <class... Signatures>
  behavior_type relays(caf::detail::type_list<Signatures...>) {
    return {relay<Signatures>::handler(this, inner_)...};
  }

  Inner inner_;
};

// An actor published as itself, with the behaviour `make` gives it.
template <class Interface>
class exit_proof_actor final : public exit_proof<Interface> {
public:
  using behavior_type = typename Interface::behavior_type;
  using maker = std::function<behavior_type(typename Interface::pointer)>;

  exit_proof_actor(caf::actor_config& config, maker make, std::string name)
    : exit_proof<Interface>(config, std::move(name)), make_(std::move(make)) {}

  behavior_type make_behavior() override { return make_(this); }

private:
  maker make_;
};

}  // namespace

remote_node_actor spawn_exit_guard(caf::actor_system& system, const service_actor& inner,
                                   std::string name) {
  return system.spawn<exit_guard<remote_node_actor, service_actor>>(inner, std::move(name));
}

transfer_host_actor spawn_exit_proof(
  caf::actor_system& system,
  std::function<transfer_host_actor::behavior_type(transfer_host_actor::pointer)> make,
  std::string name) {
  return system.spawn<exit_proof_actor<transfer_host_actor>>(std::move(make), std::move(name));
}

void stop_exit_guard(const caf::actor& guard) {
  if (!guard) return;
  if (auto* control = dynamic_cast<guard_control*>(caf::actor_cast<caf::abstract_actor*>(guard)))
    control->allow_exit();
  caf::anon_send_exit(guard, caf::exit_reason::user_shutdown);
}

}  // namespace spillway

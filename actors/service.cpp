// State chart:  serving --close--> closing --last request answered--> closed
//               any --exit_msg--> gone (linked value fetches go with it)
// Every remote request is checked against the bounds of messages/service.hpp before
// any of its keys is copied; a refused one names the field and the bound. Each one
// taken holds a ticket until it is answered; close drops the state's own, so the last
// ticket to go is the moment nothing is in flight.
#include "actors/service.hpp"

#include <memory>
#include <numeric>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/client_routes.hpp"
#include "actors/get_into.hpp"
#include "actors/value_fetch.hpp"
#include "actors/value_pull.hpp"

namespace spillway {
namespace {

// Shared by the requests in flight; the last one to go answers close.
struct in_flight {
  caf::response_promise closed;
  ~in_flight() {
    if (closed.pending()) closed.deliver(caf::ok_atom_v);
  }
};

// One per request taken, shared by its handlers: the in_flight's use count is then
// the requests in flight, plus the state's own reference.
using ticket = std::shared_ptr<const std::shared_ptr<in_flight>>;

struct service_state {
  service_context context;
  std::shared_ptr<in_flight> serving = std::make_shared<in_flight>();  // null once closing
  client_routes_actor routes;  // spawned by the first get_into or pull: a thread of its own
  static inline const char* name = "service";
};

using service_pointer = service_actor::stateful_pointer<service_state>;

// A ticket for a request, or null once the node is closing.
ticket admit(service_pointer self) {
  const auto& serving = self->state.serving;
  return serving ? std::make_shared<const std::shared_ptr<in_flight>>(serving) : nullptr;
}

caf::error refuse(const std::string& what) {
  return caf::make_error(caf::sec::invalid_argument, what);
}

// A client hears a closing node as it hears one that is gone: its keys are unavailable.
caf::error closing(const char* request) {
  return caf::make_error(caf::sec::request_receiver_down,
                         std::string{request} + ": the node is stopping");
}

// Passes `dest`'s answer on to the caller, the ticket held until then.
template <class Reply, class Dest, class... Ts>
caf::result<Reply> relay(service_pointer self, ticket t, std::chrono::milliseconds timeout,
                         const Dest& dest, Ts&&... xs) {
  auto promise = self->make_response_promise<Reply>();
  self->request(dest, timeout, std::forward<Ts>(xs)...)
    .then([promise, t](Reply& r) mutable { promise.deliver(std::move(r)); },
          [promise, t](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

// The request-wide bound every remote request shares.
caf::error check_count(const char* request, std::size_t keys) {
  if (keys <= service_keys_max) return {};
  return refuse(std::string{request} + ": keys: " + std::to_string(keys) +
                " keys, over the " + std::to_string(service_keys_max) +
                " one request may name");
}

caf::error check_put(const std::vector<std::string>& keys,
                     const std::vector<std::string>& values) {
  if (keys.size() != values.size())
    return refuse("put: " + std::to_string(keys.size()) + " keys but " +
                  std::to_string(values.size()) + " values");
  if (auto err = check_count("put", keys.size())) return err;
  const auto bytes = std::accumulate(values.begin(), values.end(), std::uint64_t{0},
                                     [](std::uint64_t n, const auto& v) { return n + v.size(); });
  if (bytes > inline_bytes_max)
    return refuse("put: values: " + std::to_string(bytes) + " bytes, over the " +
                  std::to_string(inline_bytes_max) + " one message may carry");
  return {};
}

// The request-wide bounds of a get_into or a pull, whose `ranges` (placements,
// sources) are checked per key later.
caf::error check_transfer_request(const char* request, const transfer_address& client,
                                  std::size_t keys, const char* ranges_name,
                                  std::size_t ranges) {
  if (auto err = check_count(request, keys)) return err;
  if (ranges != keys)
    return refuse(std::string{request} + ": " + std::to_string(keys) + " keys but " +
                  std::to_string(ranges) + " " + ranges_name);
  if (client.host.empty() || client.host.size() > transfer_host_max || client.port == 0)
    return refuse(std::string{request} + ": client: not a transfer host (host of 1 to " +
                  std::to_string(transfer_host_max) + " bytes and a port other than 0)");
  return {};
}

client_routes_actor routes_of(service_pointer self) {
  auto& st = self->state;
  if (!st.routes) st.routes = spawn_client_routes(self, st.context.transfer);
  return st.routes;
}

caf::result<get_into_reply> get_into(service_pointer self, get_into_request& request) {
  auto t = admit(self);
  if (!t) return closing("get_into");
  if (auto err = check_transfer_request("get_into", request.client, request.keys.size(),
                                        "placements", request.placements.size()))
    return err;
  const auto& c = self->state.context;
  auto fetch = spawn_get_into(self, {c.ask_timeout, c.read_deadline, c.transfer, c.supervisor,
                                     c.catalog, c.arena, routes_of(self)});
  return relay<get_into_reply>(self, std::move(t), c.read_deadline + c.ask_timeout, fetch,
                               get_into_atom_v, std::move(request));
}

// A put whose values the node reads from the client's memory (actors/value_pull.hpp).
caf::result<put_reply> pull(service_pointer self, pull_request& request) {
  auto t = admit(self);
  if (!t) return closing("pull");
  if (auto err = check_transfer_request("pull", request.client, request.keys.size(), "sources",
                                        request.sources.size()))
    return err;
  const auto& c = self->state.context;
  auto puller = spawn_value_pull(self, {c.ask_timeout, c.put_deadline, c.transfer, c.writer,
                                        c.arena, routes_of(self)});
  return relay<put_reply>(self, std::move(t), c.put_deadline + c.ask_timeout, puller,
                          pull_atom_v, std::move(request));
}

// Values too large to travel inline are refused per key; the writer takes the rest.
caf::result<put_reply> put(service_pointer self, std::vector<std::string>& keys,
                           std::vector<std::string>& values) {
  auto t = admit(self);
  if (!t) return closing("put");
  if (auto err = check_put(keys, values)) return err;
  auto reply = std::make_shared<put_reply>();
  reply->keys.assign(keys.size(), {key_error::none, 0});
  std::vector<std::uint32_t> positions;
  std::vector<std::string> taken_keys, taken_values;
  for (std::uint32_t k = 0; k < keys.size(); ++k) {
    if (values[k].size() > inline_value_max) {
      reply->keys[k] = {key_error::too_large, 0};
      reply->reasons.resize(keys.size());
      reply->reasons[k] = "values[" + std::to_string(k) + "]: " +
                          std::to_string(values[k].size()) + " bytes, over the " +
                          std::to_string(inline_value_max) +
                          " a message carries: put it from registered memory (pull)";
      continue;
    }
    positions.push_back(k);
    taken_keys.push_back(std::move(keys[k]));
    taken_values.push_back(std::move(values[k]));
  }
  if (positions.empty()) return std::move(*reply);
  auto promise = self->make_response_promise<put_reply>();
  const auto& c = self->state.context;
  self->request(c.writer, c.put_deadline, caf::put_atom_v, std::move(taken_keys),
                std::move(taken_values))
    .then(
      [reply, promise, positions, t](put_reply& written) mutable {
        for (std::size_t j = 0; j < positions.size(); ++j)
          reply->keys[positions[j]] = written.keys.at(j);
        promise.deliver(std::move(*reply));
      },
      [promise, t](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

caf::result<exists_reply> exists(service_pointer self, std::vector<std::string>& keys) {
  auto t = admit(self);
  if (!t) return closing("exists");
  if (auto err = check_count("exists", keys.size())) return err;
  auto promise = self->make_response_promise<exists_reply>();
  const auto& c = self->state.context;
  self->request(c.catalog, c.ask_timeout, exists_atom_v, std::move(keys))
    .then(
      [promise, t](std::vector<std::uint8_t>& present) mutable {
        exists_reply reply;
        while (reply.prefix < present.size() && present[reply.prefix]) ++reply.prefix;
        reply.present = std::move(present);
        promise.deliver(std::move(reply));
      },
      [promise, t](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

// Asks the four actors in turn; each answer is small and they are all local.
caf::result<node_report> report(service_pointer self) {
  auto t = admit(self);
  if (!t) return closing("report");
  auto promise = self->make_response_promise<node_report>();
  auto out = std::make_shared<node_report>();
  const auto c = self->state.context;
  // Every step holds `fail`, so the ticket goes with the last one.
  auto fail = [promise, t](caf::error& err) mutable { promise.deliver(std::move(err)); };
  self->request(c.supervisor, c.ask_timeout, stats_atom_v).then([=](node_stats& n) {
    out->node = std::move(n);
    self->request(c.catalog, c.ask_timeout, stats_atom_v).then([=](catalog_stats& s) {
      out->store = std::move(s);
      self->request(c.arena, c.ask_timeout, stats_atom_v).then([=](arena_stats& a) {
        out->arena = std::move(a);
        self->request(c.meter, c.ask_timeout, stats_atom_v).then([=](io_stats& i) mutable {
          out->io = std::move(i);
          promise.deliver(std::move(*out));
        }, fail);
      }, fail);
    }, fail);
  }, fail);
  return promise;
}

// Seals the open bucket, so the puts taken are answered, and answers once the last
// request taken before is. Only this process may close: a peer could otherwise stop it.
caf::result<caf::ok_atom> close(service_pointer self) {
  const auto& sender = self->current_sender();
  if (!sender || sender->node() != self->node())
    return refuse("close: only the node's own process may stop it");
  auto last = std::move(self->state.serving);
  if (!last) return refuse("close: the node is already stopping");
  spdlog::info("stopping: {} requests in flight, new ones refused", last.use_count() - 1);
  auto promise = self->make_response_promise<caf::ok_atom>();
  last->closed = promise;
  self->request(self->state.context.writer, self->state.context.put_deadline, caf::flush_atom_v)
    .then([last](caf::ok_atom) {},
          [self, last](caf::error& err) {
            spdlog::warn("stopping: the open bucket was not sealed: {}", self->system().render(err));
          });
  return promise;
}

service_actor::behavior_type service(service_pointer self, service_context context) {
  self->state.context = std::move(context);
  return {
    [self](stats_atom) { return self->delegate(self->state.context.supervisor, stats_atom_v); },
    // Delegated, so the supervisor sees the caller: it holds the leases.
    [self](caf::get_atom, std::vector<std::string>& keys, std::string& mode, bool waves) {
      return self->delegate(self->state.context.supervisor, caf::get_atom_v, std::move(keys),
                            std::move(mode), waves);
    },
    [self](caf::put_atom, std::vector<std::string>& keys, std::vector<std::string>& values) {
      return put(self, keys, values);
    },
    [self](values_atom, std::vector<std::string>& keys) -> caf::result<values_reply> {
      auto t = admit(self);
      if (!t) return closing("values");
      if (auto err = check_count("values", keys.size())) return err;
      const auto& c = self->state.context;
      auto fetch = spawn_value_fetch(self, {c.ask_timeout, c.read_deadline, c.supervisor,
                                            c.catalog, c.arena});
      return relay<values_reply>(self, std::move(t), c.read_deadline + c.ask_timeout, fetch,
                                 values_atom_v, std::move(keys));
    },
    [self](get_into_atom, get_into_request& request) { return get_into(self, request); },
    [self](pull_atom, pull_request& request) { return pull(self, request); },
    [self](exists_atom, std::vector<std::string>& keys) { return exists(self, keys); },
    [self](caf::delete_atom, std::vector<std::string>& keys) -> caf::result<std::uint64_t> {
      auto t = admit(self);
      if (!t) return closing("remove");
      if (auto err = check_count("remove", keys.size())) return err;
      const auto& c = self->state.context;
      return relay<std::uint64_t>(self, std::move(t), c.ask_timeout, c.writer,
                                  caf::delete_atom_v, std::move(keys));
    },
    [self](report_atom) { return report(self); },
    [self](caf::close_atom) { return close(self); },
  };
}

}  // namespace

service_actor spawn_service(caf::actor_system& system, service_context context) {
  return system.spawn(service, std::move(context));
}

}  // namespace spillway

// State chart:  running --down_msg(reader)--> running (reader replaced)
//               running --get--> a batch actor answers in its place
//               running --exit_msg--> exit sent to every service and reader, then gone
#include "actors/supervisor.hpp"

#include <chrono>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/batch.hpp"

namespace spillway {
namespace {

struct supervisor_state {
  node_config config;
  reader_factory make_reader;
  node_services services;
  std::vector<reader_actor> readers;  // position = reader index
  std::uint64_t reader_restarts = 0;
  static inline const char* name = "supervisor";

  std::vector<caf::actor> service_handles() const {
    std::vector<caf::actor> all;
    for (auto a : {caf::actor_cast<caf::actor>(services.writer),
                   caf::actor_cast<caf::actor>(services.catalog),
                   caf::actor_cast<caf::actor>(services.arena),
                   caf::actor_cast<caf::actor>(services.registrar),
                   caf::actor_cast<caf::actor>(services.meter)})
      if (a) all.push_back(std::move(a));
    return all;
  }
};

using supervisor_pointer = supervisor_actor::stateful_pointer<supervisor_state>;

void start_reader(supervisor_pointer self, std::uint32_t index) {
  auto reader = self->state.make_reader(self->home_system(), index);
  self->monitor(reader);
  self->state.readers[index] = std::move(reader);
}

void on_down(supervisor_pointer self, const caf::down_msg& msg) {
  for (const auto& s : self->state.service_handles())
    if (s.address() == msg.source)  // a bug, not a fault to repair: say it loudly
      spdlog::critical("a node service died ({}): the node no longer stores or serves keys",
                       to_string(msg.reason));
  auto& readers = self->state.readers;
  for (std::uint32_t i = 0; i < readers.size(); ++i) {
    if (readers[i].address() != msg.source) continue;
    spdlog::warn("reader {} died ({}), starting a new one", i, to_string(msg.reason));
    ++self->state.reader_restarts;
    start_reader(self, i);
    return;
  }
}

// Asks every reader at once and answers when the last one has.
caf::typed_response_promise<node_stats> gather_stats(supervisor_pointer self) {
  struct pending {
    caf::typed_response_promise<node_stats> promise;
    node_stats stats;
    std::size_t missing = 0;
  };
  auto p = std::make_shared<pending>();
  p->promise = self->make_response_promise<node_stats>();
  p->stats.reader_restarts = self->state.reader_restarts;
  p->stats.readers.resize(self->state.readers.size());
  p->missing = self->state.readers.size();
  if (p->missing == 0) p->promise.deliver(p->stats);
  const std::chrono::milliseconds timeout{self->state.config.cluster.request_timeout_ms};
  const auto& readers = self->state.readers;
  for (std::size_t index = 0; index < readers.size(); ++index)
    self->request(readers[index], timeout, stats_atom_v)
      .then(
        [p, index](reader_stats& s) {
          p->stats.readers[index] = std::move(s);
          if (--p->missing == 0) p->promise.deliver(std::move(p->stats));
        },
        [p](caf::error& err) {
          if (p->promise.pending()) p->promise.deliver(std::move(err));
        });
  return p->promise;
}

// A batch for one get, with `mode` ("" for read.mode), its wave sink (none: the caller
// holds every value at once) and the caller's read targets (none, or one per key).
batch_actor start_batch(supervisor_pointer self, const std::string& mode,
                        const caf::actor& sink, std::vector<read_target> targets) {
  const auto& st = self->state;
  auto read = st.config.read;
  if (!mode.empty()) read.mode = mode;
  return spawn_batch(self->home_system(),
                     {st.services.catalog, st.services.arena, st.readers, read, st.config.fault,
                      sink, st.services.meter, std::move(targets)});
}

supervisor_actor::behavior_type supervisor(supervisor_pointer self, node_config config,
                                     reader_factory make_reader, node_services services) {
  auto& st = self->state;
  st.config = std::move(config);
  st.make_reader = std::move(make_reader);
  st.services = std::move(services);
  for (const auto& s : st.service_handles()) self->monitor(s);
  st.readers.resize(st.config.read.readers);
  for (std::uint32_t i = 0; i < st.readers.size(); ++i) start_reader(self, i);
  self->set_down_handler([self](caf::down_msg& msg) { on_down(self, msg); });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto all = self->state.service_handles();
    for (const auto& r : self->state.readers) all.push_back(caf::actor_cast<caf::actor>(r));
    for (auto& a : all) {
      self->demonitor(a);
      self->send_exit(a, msg.reason);
    }
    self->quit(msg.reason);
  });
  return {
    [self](stats_atom) { return gather_stats(self); },
    [self](caf::get_atom, std::vector<std::string>& keys, const std::string& mode, bool waves) {
      const auto sink = waves ? caf::actor_cast<caf::actor>(self->current_sender()) : caf::actor{};
      return self->delegate(start_batch(self, mode, sink, {}), caf::get_atom_v, std::move(keys));
    },
    [self](caf::get_atom, std::vector<std::string>& keys, std::vector<read_target>& targets) {
      const auto sink = caf::actor_cast<caf::actor>(self->current_sender());
      return self->delegate(start_batch(self, "", sink, std::move(targets)), caf::get_atom_v,
                            std::move(keys));
    },
  };
}

}  // namespace

supervisor_actor spawn_supervisor(caf::actor_system& system, node_config config,
                                  reader_factory make_reader, node_services services) {
  return system.spawn(supervisor, std::move(config), std::move(make_reader),
                      std::move(services));
}

}  // namespace spillway

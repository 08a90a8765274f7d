// State chart:  asked --get--> reading --wave--> reading (its transfer submitted)
//               reading --get_reply--> draining --last transfer answered--> answered
//               reading --supervisor down (the node stops)--> draining
//               A wave's lease goes back when its transfer is answered; the final
//               reply's leases (they may cover values of earlier waves) go last.
#include "actors/value_push.hpp"

#include <caf/local_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/transfer_engine.hpp"
#include "messages/transfer.hpp"

namespace spillway {
namespace {

struct push_state {
  push_context context;
  caf::typed_response_promise<get_into_reply> promise;
  get_into_reply reply;
  std::vector<value_placement> placements;
  transfer_peer route;
  std::vector<std::uint64_t> final_leases;
  std::size_t transfers = 0;  // submitted, not yet answered
  bool read_done = false;
  static inline const char* name = "value_push";
};

using push_pointer = value_push_actor::stateful_pointer<push_state>;

// A value that did not arrive: the lane's own timeout stays a timeout, the rest
// (lanes lost, the client's host gone, a placement it refused) leave the key unavailable.
key_status delivered(const transfer_status& s) {
  if (s.ok()) return {};
  if (s.error == transfer_error::timeout) return {key_error::timeout, 0};
  return {key_error::unavailable, 0};
}

void release(push_pointer self, const std::vector<std::uint64_t>& leases) {
  for (auto lease : leases) self->send(self->state.context.arena, release_atom_v, lease);
}

void maybe_finish(push_pointer self) {
  auto& st = self->state;
  if (!st.read_done || st.transfers > 0 || !st.promise.pending()) return;
  release(self, st.final_leases);
  st.promise.deliver(std::move(st.reply));
  self->quit();
}

void settle(push_pointer self, const std::vector<std::uint32_t>& moved,
            const std::vector<transfer_status>& statuses, const std::vector<std::uint64_t>& leases) {
  auto& st = self->state;
  std::size_t failed = 0;
  for (std::size_t j = 0; j < moved.size(); ++j) {
    const auto s = j < statuses.size() ? statuses[j] : transfer_status{transfer_error::unavailable, 0};
    st.reply.status[moved[j]] = delivered(s);
    if (!s.ok() && failed++ == 0)
      spdlog::warn("get_into: a value was not written to the client: {}", to_string(s));
  }
  release(self, leases);
  --st.transfers;
  maybe_finish(self);
}

// Records the part's statuses and sends its good values on; `leases` are given back
// once that transfer is answered (at once when nothing needs sending).
void push(push_pointer self, const get_reply& part, std::vector<std::uint64_t> leases) {
  auto& st = self->state;
  transfer_batch batch;
  std::vector<std::uint32_t> moved;
  for (std::size_t j = 0; j < part.items.size(); ++j) {
    const auto k = part.positions.empty() ? static_cast<std::uint32_t>(j) : part.positions[j];
    const auto& item = part.items[j];
    st.reply.status[k] = item.status;
    if (!item.status.ok()) continue;
    // Checked by the batch (length, crc32c, key) before it handed the address out.
    st.reply.sizes[k] = item.size;
    const auto& to = st.placements[k];
    if (item.size > to.capacity) {
      st.reply.status[k] = {key_error::too_large, 0};
      continue;
    }
    st.reply.status[k] = {key_error::timeout, 0};  // until its transfer is answered
    batch.push_back({transfer_op::write, reinterpret_cast<void*>(item.address), to.segment,
                     to.offset, item.size});
    moved.push_back(k);
  }
  if (batch.empty()) return release(self, leases);
  const auto slicer = st.context.engine->slicer_for(st.route);
  ++st.transfers;
  if (!slicer) return settle(self, moved, {}, leases);
  self->request(slicer, caf::infinite, transfer_atom_v, std::move(batch))
    .then(
      [self, moved, leases](transfer_reply& r) { settle(self, moved, r.statuses, leases); },
      [self, moved, leases](caf::error&) { settle(self, moved, {}, leases); });
}

value_push_actor::behavior_type value_push(push_pointer self, push_context context) {
  self->state.context = std::move(context);
  // Its batch goes with the supervisor and would never answer.
  self->monitor(self->state.context.supervisor);
  self->set_down_handler([self](caf::down_msg&) {
    self->state.read_done = true;
    maybe_finish(self);
  });
  return {
    [self](caf::get_atom, std::vector<std::string>& keys, std::vector<value_placement>& where,
           std::uint32_t route) {
      auto& st = self->state;
      st.promise = self->make_response_promise<get_into_reply>();
      st.reply.status.assign(keys.size(), {key_error::timeout, 0});
      st.reply.sizes.assign(keys.size(), 0);
      st.placements = std::move(where);
      st.route.route = route;
      // A plain send: the batch answers this actor, in waves, then with the rest.
      self->send(st.context.supervisor, caf::get_atom_v, std::move(keys), std::string{}, true);
      maybe_finish(self);  // the supervisor went first: nothing will answer
      return st.promise;
    },
    [self](wave_atom, const get_reply& part) { push(self, part, part.leases); },
    [self](const get_reply& rest) {
      auto& st = self->state;
      st.final_leases = rest.leases;
      st.read_done = true;
      push(self, rest, {});
      maybe_finish(self);
    },
  };
}

}  // namespace

value_push_actor spawn_value_push(caf::local_actor* parent, push_context context) {
  return parent->spawn(value_push, std::move(context));
}

}  // namespace spillway

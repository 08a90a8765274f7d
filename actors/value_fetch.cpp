// State chart:  asked --values--> sizing --resolve reply--> reading --get_reply--> answered
//               reading --wave--> reading (values copied, leases given back)
//               sizing | reading --timeout--> answered (the keys not in yet: timeout)
#include "actors/value_fetch.hpp"

#include <caf/local_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "runtime/storage/bucket_format.hpp"

namespace spillway {
namespace {

struct fetch_state {
  fetch_context context;  // led by durations: see service_context
  caf::typed_response_promise<values_reply> promise;
  values_reply reply;
  std::vector<std::uint32_t> read_positions;  // batch key i is reply key read_positions[i]
  static inline const char* name = "value_fetch";
};

using fetch_pointer = value_fetch_actor::stateful_pointer<fetch_state>;

void finish(fetch_pointer self) {
  auto& st = self->state;
  if (st.promise.pending()) st.promise.deliver(std::move(st.reply));
  self->quit();
}

// Decides which keys this reply answers and which of them are read: a value over
// inline_value_max is too_large unread; missing ones are read too, to be named.
std::vector<std::string> plan(fetch_state& st, std::vector<std::string>& keys,
                              const std::vector<std::uint64_t>& sizes) {
  std::uint64_t bytes = 0;
  std::size_t answered = 0;
  for (; answered < keys.size(); ++answered) {
    const auto size = sizes[answered];
    if (size > inline_value_max) continue;
    if (answered > 0 && bytes + size > inline_bytes_max) break;
    bytes += size;
  }
  st.reply.answered = static_cast<std::uint32_t>(answered);
  st.reply.status.assign(answered, {key_error::timeout, 0});
  st.reply.values.resize(answered);
  std::vector<std::string> read;
  for (std::uint32_t k = 0; k < answered; ++k) {
    if (const auto s = check_key(keys[k]); !s.ok()) st.reply.status[k] = s;
    else if (sizes[k] > inline_value_max) st.reply.status[k] = {key_error::too_large, 0};
    else {
      read.push_back(std::move(keys[k]));
      st.read_positions.push_back(k);
    }
  }
  return read;
}

void take(fetch_pointer self, const get_reply& part) {
  auto& st = self->state;
  for (std::size_t j = 0; j < part.items.size(); ++j) {
    const auto& item = part.items[j];
    const auto k = st.read_positions.at(part.positions.empty() ? j : part.positions[j]);
    st.reply.status[k] = item.status;
    // Checked by the batch (length, crc32c, key) before it handed the address out.
    if (item.status.ok())
      st.reply.values[k].assign(reinterpret_cast<const char*>(item.address), item.size);
  }
  for (auto lease : part.leases) self->send(st.context.arena, release_atom_v, lease);
}

value_fetch_actor::behavior_type value_fetch(fetch_pointer self, fetch_context context) {
  self->state.context = std::move(context);
  self->delayed_send(self, self->state.context.read_deadline, caf::timeout_atom_v);
  return {
    [self](values_atom, std::vector<std::string>& keys) {
      auto& st = self->state;
      st.promise = self->make_response_promise<values_reply>();
      self->request(st.context.catalog, st.context.ask_timeout, caf::resolve_atom_v, keys)
        .then(
          [self, keys = std::move(keys)](resolve_reply& where) mutable {
            auto& st = self->state;
            auto read = plan(st, keys, value_sizes(where, keys.size()));
            if (read.empty()) return finish(self);
            // A plain send: the batch answers this actor, in waves, then with the rest.
            self->send(st.context.supervisor, caf::get_atom_v, std::move(read), std::string{},
                       true);
          },
          [self](caf::error& err) {
            self->state.promise.deliver(std::move(err));
            self->quit();
          });
      return self->state.promise;
    },
    [self](wave_atom, const get_reply& part) { take(self, part); },
    [self](const get_reply& rest) {
      take(self, rest);
      finish(self);
    },
    [self](caf::timeout_atom) { finish(self); },
  };
}

}  // namespace

std::vector<std::uint64_t> value_sizes(const resolve_reply& where, std::size_t keys) {
  std::vector<std::uint64_t> sizes(keys, 0);
  for (const auto& bucket : where.buckets)
    for (const auto& r : bucket.records)
      if (r.key_index < keys) sizes[r.key_index] = r.value_size;
  return sizes;
}

key_status check_key(const std::string& key) {
  if (key.empty()) return {key_error::bad_key, 0};
  if (key.size() > bucket_format::max_key_size) return {key_error::too_large, 0};
  return {};
}

value_fetch_actor spawn_value_fetch(caf::local_actor* parent, fetch_context context) {
  return parent->spawn<caf::linked>(value_fetch, std::move(context));
}

}  // namespace spillway

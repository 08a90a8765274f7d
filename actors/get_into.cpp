// State chart:  asked --get_into--> locating (catalog and route asked at once)
//               locating --both answered--> pushing (a value_push per piece)
//               pushing --last piece answered--> answered
//               locating --no route--> answered (every key unavailable)
//               any --timeout--> answered (the keys not in yet: timeout)
#include "actors/get_into.hpp"

#include <optional>
#include <set>

#include <caf/local_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/value_fetch.hpp"
#include "actors/value_push.hpp"

namespace spillway {
namespace {

using positions = std::vector<std::uint32_t>;

struct into_state {
  get_into_context context;  // led by durations: see service_context
  caf::typed_response_promise<get_into_reply> promise;
  get_into_request request;
  get_into_reply reply;
  std::optional<std::vector<std::uint64_t>> sizes;  // the catalog's, by key
  std::optional<std::uint32_t> route;
  std::size_t pieces = 0;  // sent, not yet answered
  static inline const char* name = "get_into";
};

using into_pointer = get_into_actor::stateful_pointer<into_state>;

void finish(into_pointer self) {
  auto& st = self->state;
  if (st.promise.pending()) st.promise.deliver(std::move(st.reply));
  self->quit();
}

void fail_unsettled(into_state& st, key_status why) {
  for (auto& s : st.reply.status)
    if (s.error == key_error::timeout) s = why;
}

// Settles what needs no read; the keys to read, in request order. A key the catalog
// lacks is read too, for the batch to name (not_found, or found since).
positions plan(into_state& st) {
  positions read;
  for (std::uint32_t k = 0; k < st.request.keys.size(); ++k) {
    const auto size = (*st.sizes)[k];
    if (const auto s = check_key(st.request.keys[k]); !s.ok()) {
      st.reply.status[k] = s;
    } else if (size > st.request.placements[k].capacity) {
      st.reply.status[k] = {key_error::too_large, 0};
      st.reply.sizes[k] = size;
    } else {
      read.push_back(k);
    }
  }
  return read;
}

void send_piece(into_pointer self, const positions& piece) {
  auto& st = self->state;
  std::vector<std::string> keys;
  std::vector<value_placement> where;
  for (auto k : piece) {
    keys.push_back(std::move(st.request.keys[k]));
    where.push_back(st.request.placements[k]);
  }
  ++st.pieces;
  auto push = spawn_value_push(self, {st.context.engine, st.context.supervisor, st.context.arena});
  self->request(push, caf::infinite, caf::get_atom_v, std::move(keys), std::move(where), *st.route)
    .then(
      [self, piece](get_into_reply& r) {
        auto& st = self->state;
        for (std::size_t j = 0; j < piece.size(); ++j) {
          st.reply.status[piece[j]] = r.status.at(j);
          st.reply.sizes[piece[j]] = r.sizes.at(j);
        }
        if (--st.pieces == 0) finish(self);
      },
      [self, piece](caf::error&) {
        auto& st = self->state;
        for (auto k : piece) st.reply.status[k] = {key_error::unavailable, 0};
        if (--st.pieces == 0) finish(self);
      });
}

// Once both the sizes and the route are known.
void start_pieces(into_pointer self) {
  auto& st = self->state;
  if (!st.sizes || !st.route) return;
  positions piece;
  std::uint64_t bytes = 0;
  for (auto k : plan(st)) {
    const auto size = (*st.sizes)[k];
    if (!piece.empty() && bytes + size > piece_bytes_max) {
      send_piece(self, piece);
      piece.clear();
      bytes = 0;
    }
    piece.push_back(k);
    bytes += size;
  }
  if (!piece.empty()) send_piece(self, piece);
  if (st.pieces == 0) finish(self);
}

void locate(into_pointer self) {
  auto& st = self->state;
  const auto& c = st.context;
  self->request(c.catalog, c.ask_timeout, caf::resolve_atom_v, st.request.keys)
    .then(
      [self](resolve_reply& where) {
        auto& st = self->state;
        st.sizes = value_sizes(where, st.request.keys.size());
        start_pieces(self);
      },
      [self](caf::error& err) {
        self->state.promise.deliver(std::move(err));
        self->quit();
      });
  std::set<std::uint64_t> segments;
  for (const auto& p : st.request.placements) segments.insert(p.segment);
  self->request(c.routes, c.ask_timeout, caf::connect_atom_v, st.request.client.host,
                st.request.client.port, std::vector<std::uint64_t>(segments.begin(), segments.end()))
    .then(
      [self](std::uint32_t route, std::vector<segment_descriptor>&) {
        self->state.route = route;
        start_pieces(self);
      },
      [self](caf::error&) {  // client_routes logged why
        fail_unsettled(self->state, {key_error::unavailable, 0});
        finish(self);
      });
}

get_into_actor::behavior_type get_into(into_pointer self, get_into_context context) {
  self->state.context = std::move(context);
  self->delayed_send(self, self->state.context.read_deadline, caf::timeout_atom_v);
  return {
    [self](get_into_atom, get_into_request& request) {
      auto& st = self->state;
      st.promise = self->make_response_promise<get_into_reply>();
      st.reply.status.assign(request.keys.size(), {key_error::timeout, 0});
      st.reply.sizes.assign(request.keys.size(), 0);
      st.request = std::move(request);
      locate(self);
      return st.promise;
    },
    [self](caf::timeout_atom) { finish(self); },
  };
}

}  // namespace

get_into_actor spawn_get_into(caf::local_actor* parent, get_into_context context) {
  return parent->spawn<caf::linked>(get_into, std::move(context));
}

}  // namespace spillway

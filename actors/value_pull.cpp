// State chart:  asked --pull--> routing (sources checked alone; the route asked)
//               routing --route--> pulling (sources checked against its segments)
//               routing --no route--> answered (every key unsettled: unavailable)
//   a piece:    alloc --grant--> reading --read--> writing --written--> lease released
//               (two pieces at once; what a grant left out waits for the next piece)
//               pulling --last piece written--> answered
//               any --timeout--> answered (keys not done: timeout); stays until nothing
//               is in flight, giving back each grant or read that comes in after
//               writer down --> its pieces unavailable, their leases released
#include "actors/value_pull.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <utility>

#include <caf/local_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/transfer_engine.hpp"
#include "actors/value_fetch.hpp"
#include "messages/transfer.hpp"
#include "runtime/storage/bucket_format.hpp"

namespace spillway {
namespace {

using positions = std::vector<std::uint32_t>;

// One piece pulled while the writer writes the one before: more would hold more of the
// arena without the disk or the lanes going faster.
constexpr std::size_t pieces_at_once = 2;

struct piece {
  positions keys;                        // granted ones only, once the grant came
  std::uint64_t lease = 0;               // 0: none yet (or an empty grant)
  std::vector<std::uint64_t> addresses;  // in the arena, per key
  bool writing = false;                  // the writer has it, not a lane
};

struct pull_state {
  pull_context context;  // led by durations: see service_context
  caf::typed_response_promise<put_reply> promise;
  pull_request request;
  put_reply reply;                  // a key's status is final once done[k]
  std::vector<std::uint8_t> done;
  transfer_peer route;
  std::deque<std::uint32_t> waiting;  // keys to pull, in request order
  std::map<std::uint64_t, piece> pieces;  // in flight, by id
  std::uint64_t next_piece = 0;
  static inline const char* name = "value_pull";
};

using pull_pointer = value_pull_actor::stateful_pointer<pull_state>;

std::string field(std::uint32_t k, const char* name) {
  return "sources[" + std::to_string(k) + "]" + name;
}

void settle(pull_state& st, std::uint32_t k, key_status s) {
  st.reply.keys[k] = s;
  st.done[k] = 1;
}

void refuse(pull_state& st, std::uint32_t k, key_error error, std::string why) {
  settle(st, k, {error, 0});
  st.reply.reasons[k] = std::move(why);
}

bool settled(const pull_state& st, std::uint32_t k) { return st.done[k] != 0; }

// What a source says about itself: refused here, before any memory is taken for it.
void check_alone(pull_state& st, std::uint32_t k) {
  const auto& s = st.request.sources[k];
  std::uint64_t end = 0;
  if (const auto bad = check_key(st.request.keys[k]); !bad.ok())
    refuse(st, k, bad.error, "keys[" + std::to_string(k) + "]: empty or over " +
                               std::to_string(bucket_format::max_key_size) + " bytes");
  else if (s.size == 0)
    refuse(st, k, key_error::bad_range,
           field(k, ".size") + ": 0 bytes (put an empty value inline)");
  else if (__builtin_add_overflow(s.offset, s.size, &end))
    refuse(st, k, key_error::bad_range, field(k, ".offset") + ": offset + size wraps");
  else if (s.size > bucket_format::max_value_size)
    refuse(st, k, key_error::too_large, field(k, ".size") + ": " + std::to_string(s.size) +
                                          " bytes, over the " +
                                          std::to_string(bucket_format::max_value_size) +
                                          " a value may have");
}

// What the client's transfer host says about it: a range outside its segments.
void check_against_route(pull_state& st, std::uint32_t k) {
  const auto& s = st.request.sources[k];
  const auto* segment = find_segment(st.route.segments, s.segment);
  if (!segment)
    return refuse(st, k, key_error::bad_range,
                  field(k, ".segment") + ": " + std::to_string(s.segment) +
                    " is not a segment the client registered");
  if (check_bounds(segment, s.offset, s.size) != transfer_error::none)
    refuse(st, k, key_error::bad_range,
           field(k, "") + ": bytes [" + std::to_string(s.offset) + ", " +
             std::to_string(s.offset + s.size) + ") run past the end of segment " +
             std::to_string(s.segment) + " (" + std::to_string(segment->length) + " bytes)");
}

void answer(pull_pointer self) {
  auto& st = self->state;
  if (!st.promise.pending()) return;
  const bool any = std::any_of(st.reply.reasons.begin(), st.reply.reasons.end(),
                               [](const std::string& r) { return !r.empty(); });
  auto reply = st.reply;  // a copy: pieces still in flight go on settling keys
  if (!any) reply.reasons.clear();
  st.promise.deliver(std::move(reply));
}

// Answers once every key is settled, and goes once nothing is in flight.
void maybe_done(pull_pointer self) {
  auto& st = self->state;
  if (!st.pieces.empty()) return;
  if (st.waiting.empty() || !st.promise.pending()) {
    answer(self);
    self->quit();
  }
}

void release(pull_pointer self, const piece& p) {
  if (p.lease != 0) self->send(self->state.context.arena, release_atom_v, p.lease);
}

// The piece's keys that are not settled get `why`; its lease goes back.
void drop_piece(pull_pointer self, std::uint64_t id, key_status why) {
  auto& st = self->state;
  const auto it = st.pieces.find(id);
  if (it == st.pieces.end()) return;
  for (auto k : it->second.keys)
    if (!settled(st, k)) settle(st, k, why);
  release(self, it->second);
  st.pieces.erase(it);
}

void start_pieces(pull_pointer self);

void on_written(pull_pointer self, std::uint64_t id, const positions& written,
                const put_reply& r) {
  auto& st = self->state;
  if (!st.pieces.count(id)) return;  // the writer went down first
  for (std::size_t j = 0; j < written.size(); ++j)
    settle(st, written[j], j < r.keys.size() ? r.keys[j] : key_status{key_error::unavailable, 0});
  drop_piece(self, id, {key_error::unavailable, 0});
  start_pieces(self);
  maybe_done(self);
}

// A value the lanes could not bring: a lane's own timeout stays a timeout; a range the
// client's host refused (it changed since the route described it) is the client's;
// the rest (lanes lost, the host gone) leave the key unavailable.
key_status pulled(const transfer_status& s) {
  if (s.ok()) return {};
  switch (s.error) {
    case transfer_error::timeout: return {key_error::timeout, 0};
    case transfer_error::unknown_segment:
    case transfer_error::out_of_bounds:
    case transfer_error::length_overflow: return {key_error::bad_range, 0};
    default: return {key_error::unavailable, 0};
  }
}

// The values are in the piece's extents: the writer puts them from there.
void on_read(pull_pointer self, std::uint64_t id, const std::vector<transfer_status>& statuses) {
  auto& st = self->state;
  const auto it = st.pieces.find(id);
  if (it == st.pieces.end()) return;
  auto& p = it->second;
  if (!st.promise.pending()) {  // answered at the deadline: nobody waits for the write
    drop_piece(self, id, {key_error::timeout, 0});
    return maybe_done(self);
  }
  positions written;
  std::vector<std::string> keys;
  caller_values values;
  std::size_t failed = 0;
  for (std::size_t j = 0; j < p.keys.size(); ++j) {
    const auto k = p.keys[j];
    const auto s =
      j < statuses.size() ? statuses[j] : transfer_status{transfer_error::unavailable, 0};
    if (!s.ok()) {
      settle(st, k, pulled(s));
      if (st.reply.keys[k].error == key_error::bad_range)
        st.reply.reasons[k] = field(k, "") + ": the client's transfer host refused the range (" +
                              to_string(s) + ")";
      if (failed++ == 0)
        spdlog::warn("pull: a value was not read from the client: {}", to_string(s));
      continue;
    }
    written.push_back(k);
    keys.push_back(st.request.keys[k]);
    values.address.push_back(p.addresses[j]);
    values.size.push_back(st.request.sources[k].size);
  }
  if (written.empty()) {
    drop_piece(self, id, {key_error::unavailable, 0});
    start_pieces(self);
    return maybe_done(self);
  }
  // No timeout: the extents are the writer's until it answers (or goes down).
  p.writing = true;
  self->request(st.context.writer, caf::infinite, caf::put_atom_v, std::move(keys),
                std::move(values))
    .then([self, id, written](put_reply& r) { on_written(self, id, written, r); },
          [self, id](caf::error&) {
            drop_piece(self, id, {key_error::unavailable, 0});
            start_pieces(self);
            maybe_done(self);
          });
}

// The keys the grant left out wait for a piece of their own; a first key left out of an
// otherwise empty grant would not fit even an empty arena.
void on_grant(pull_pointer self, std::uint64_t id, const arena_grant& grant) {
  auto& st = self->state;
  auto& p = st.pieces.at(id);
  p.lease = grant.lease;
  if (!st.promise.pending()) {
    drop_piece(self, id, {key_error::timeout, 0});
    return maybe_done(self);
  }
  const auto granted = grant.extents.size();
  for (auto j = p.keys.size(); j > granted; --j) st.waiting.push_front(p.keys[j - 1]);
  if (granted == 0) {
    const auto k = st.waiting.front();
    st.waiting.pop_front();
    refuse(st, k, key_error::too_large,
           field(k, ".size") + ": " + std::to_string(st.request.sources[k].size) +
             " bytes, more than the node's arena can hold at once (read.arena_size, "
             "read.arena_chunk)");
  }
  p.keys.resize(granted);
  transfer_batch batch;
  for (std::size_t j = 0; j < granted; ++j) {
    const auto& e = grant.extents[j];
    const auto& s = st.request.sources[p.keys[j]];
    p.addresses.push_back(grant.chunk_addresses[e.chunk] + e.offset);
    batch.push_back({transfer_op::read, reinterpret_cast<void*>(p.addresses.back()), s.segment,
                     s.offset, s.size});
  }
  const auto slicer = batch.empty() ? slicer_actor{} : st.context.engine->slicer_for(st.route);
  if (!slicer) {
    drop_piece(self, id, {key_error::unavailable, 0});
  } else {
    // No timeout: lanes may be writing into the extents until the slicer answers, which
    // it always does (its lanes time out slices).
    self->request(slicer, caf::infinite, transfer_atom_v, std::move(batch))
      .then([self, id](transfer_reply& r) { on_read(self, id, r.statuses); },
            [self, id](caf::error&) { on_read(self, id, {}); });
  }
  start_pieces(self);
  maybe_done(self);
}

// Takes the next piece's extents: whole, so a value's extent is never split and what
// does not fit now waits in the arena's queue, bounded by the arena, not by the sizes
// the client claims.
void start_pieces(pull_pointer self) {
  auto& st = self->state;
  while (st.promise.pending() && st.pieces.size() < pieces_at_once && !st.waiting.empty()) {
    const auto id = st.next_piece++;
    auto& p = st.pieces[id];
    std::vector<std::uint64_t> sizes;
    std::uint64_t bytes = 0;
    while (!st.waiting.empty()) {
      const auto size = st.request.sources[st.waiting.front()].size;
      if (!p.keys.empty() && bytes + size > pull_piece_bytes) break;
      p.keys.push_back(st.waiting.front());
      st.waiting.pop_front();
      sizes.push_back(size);
      bytes += size;
    }
    // No timeout: a grant must reach us even after the deadline, or its extents would
    // be lost; we give it back then.
    self->request(st.context.arena, caf::infinite, alloc_atom_v, std::move(sizes), true)
      .then([self, id](arena_grant& grant) { on_grant(self, id, grant); },
            [self, id](caf::error&) {
              drop_piece(self, id, {key_error::unavailable, 0});
              maybe_done(self);
            });
  }
}

void on_route(pull_pointer self, std::uint32_t route, std::vector<segment_descriptor>& segments) {
  auto& st = self->state;
  st.route = {route, std::move(segments), {}};  // the route is all a pull needs
  for (std::uint32_t k = 0; k < st.request.keys.size(); ++k) {
    if (settled(st, k)) continue;
    check_against_route(st, k);
    if (!settled(st, k)) st.waiting.push_back(k);
  }
  start_pieces(self);
  maybe_done(self);
}

void route(pull_pointer self) {
  auto& st = self->state;
  std::set<std::uint64_t> segments;
  for (std::uint32_t k = 0; k < st.request.keys.size(); ++k)
    if (!settled(st, k)) segments.insert(st.request.sources[k].segment);
  if (segments.empty()) return maybe_done(self);  // nothing to pull
  const auto& c = st.context;
  self->request(c.routes, c.ask_timeout, caf::connect_atom_v, st.request.client.host,
                st.request.client.port,
                std::vector<std::uint64_t>(segments.begin(), segments.end()))
    .then([self](std::uint32_t r, std::vector<segment_descriptor>& s) { on_route(self, r, s); },
          [self](caf::error&) {  // client_routes logged why
            auto& st = self->state;
            for (std::uint32_t k = 0; k < st.request.keys.size(); ++k)
              if (!settled(st, k)) settle(st, k, {key_error::unavailable, 0});
            maybe_done(self);
          });
}

value_pull_actor::behavior_type value_pull(pull_pointer self, pull_context context) {
  self->state.context = std::move(context);
  // A writer that goes down holding a put answers nothing; it reads no extent any more.
  self->monitor(self->state.context.writer);
  // Pieces still with a lane stay until the slicer answers; their put then fails.
  self->set_down_handler([self](caf::down_msg&) {
    auto& st = self->state;
    std::vector<std::uint64_t> ids;
    for (const auto& [id, p] : st.pieces)
      if (p.writing) ids.push_back(id);
    for (auto id : ids) drop_piece(self, id, {key_error::unavailable, 0});
    for (auto k : std::exchange(st.waiting, {})) settle(st, k, {key_error::unavailable, 0});
    maybe_done(self);
  });
  return {
    [self](pull_atom, pull_request& request) {
      auto& st = self->state;
      st.promise = self->make_response_promise<put_reply>();
      st.reply.keys.assign(request.keys.size(), {key_error::timeout, 0});
      st.reply.reasons.assign(request.keys.size(), std::string{});
      st.done.assign(request.keys.size(), 0);
      st.request = std::move(request);
      self->delayed_send(self, st.context.put_deadline, caf::timeout_atom_v);
      for (std::uint32_t k = 0; k < st.request.keys.size(); ++k) check_alone(st, k);
      route(self);
      return st.promise;
    },
    [self](caf::timeout_atom) {
      answer(self);
      maybe_done(self);
    },
  };
}

}  // namespace

value_pull_actor spawn_value_pull(caf::local_actor* parent, pull_context context) {
  return parent->spawn(value_pull, std::move(context));
}

}  // namespace spillway

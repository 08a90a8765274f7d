// State chart, per batch:  cutting --last slice posted--> in flight --last slice
// done--> answered. The slicer cuts batches in arrival order; in `watermark` mode it
// posts a group the moment `watermark` slices are in it and pauses when its pool is
// lent out, resuming as groups come back. In `naive` mode it allocates every slice on
// its own and cuts the whole batch before posting any (the seed PR's "before").
//
// A group comes back with a status per slice: successes and final errors settle their
// requests; retryable failures stay in the group, which goes again to the next lane.
// The slicer monitors its lanes: when one dies, or answers a post with an error, the
// groups it holds fail over to the others (CAF 0.17 sends nothing for a promise its
// dead holder dropped); with no lane left they settle as `unavailable` at once.
//
// Told to exit (close_route), the slicer stops: what is not cut yet settles as
// `unavailable`, nothing is retried, and it answers each batch and quits only once
// every group is back from its lane. A lane may be writing into the caller's memory
// until then, and the caller may free that memory as soon as it has the answer.
#include "actors/slicer.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace spillway {
namespace {

struct batch_state {
  caf::typed_response_promise<transfer_reply> promise;
  transfer_batch requests;
  transfer_reply reply;
  std::vector<std::uint64_t> slices_left;  // per request; 0 once settled
  std::size_t requests_left = 0;
  std::size_t cut_request = 0;             // the cursor: next byte to cut
  std::uint64_t cut_offset = 0;
  transfer_clock::time_point submitted;
  transfer_clock::time_point first_started = slice_group::not_started;
};

struct slicer_state {
  slicer_options options;
  std::vector<transport_actor> lanes;
  std::vector<segment_descriptor> segments;
  std::shared_ptr<slice_pool> pool;
  std::unordered_map<std::uint64_t, batch_state> batches;
  std::deque<std::uint64_t> cutting;  // batches not fully cut, oldest first
  // Groups lent to a lane: at most pool_groups when pooled, so a scan is cheap.
  std::vector<std::pair<slice_group*, caf::actor_addr>> in_flight;
  std::uint64_t next_batch = 1;
  std::uint32_t next_lane = 0;
  transfer_stats totals;  // since the slicer started, answered to `stats`
  bool pumping = false;
  bool stopping = false;
  static inline const char* name = "slicer";
};

using slicer_pointer = slicer_actor::stateful_pointer<slicer_state>;

std::uint64_t nanoseconds_between(transfer_clock::time_point from,
                                  transfer_clock::time_point to) {
  return static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// Requests are checked when the cursor reaches them, not on arrival: a batch of
// 20 000 must not wait for all of them to be checked before its first slice goes. Nor
// for its per-request accounts to be zeroed: they are reserved (the pages are not
// touched yet) and filled in as the cursor opens each request.
void open_batch(batch_state& b) {
  b.reply.statuses.reserve(b.requests.size());
  b.slices_left.reserve(b.requests.size());
  b.requests_left = b.requests.size();
}

// Checks the request under the cursor against its segment and counts its slices; a
// rejected or empty one is settled at once and never cut.
bool open_request(batch_state& b, slicer_state& st) {
  const auto& q = b.requests[b.cut_request];
  const auto error = check_bounds(find_segment(st.segments, q.segment), q.offset, q.length);
  b.reply.statuses.push_back({error, 0});
  b.slices_left.push_back(error == transfer_error::none ? slice_count(q.length, st.options.rules)
                                                        : 0);
  b.reply.slices += b.slices_left.back();
  st.totals.slices += b.slices_left.back();
  if (b.slices_left.back() == 0) --b.requests_left;
  return b.slices_left.back() != 0;
}

// Moves the cursor to the next byte to cut, opening requests on the way; false once
// the whole batch is cut. An opened request has slices left until its last is cut.
bool more_to_cut(batch_state& b, slicer_state& st) {
  for (; b.cut_request < b.requests.size(); ++b.cut_request) {
    const bool opened = b.cut_request < b.slices_left.size();
    if (opened ? b.cut_offset != 0 || b.slices_left[b.cut_request] != 0 : open_request(b, st))
      return true;
  }
  return false;
}

void cut_one(batch_state& b, const slicing_rules& rules, slice& out) {
  const auto& q = b.requests[b.cut_request];
  const auto length = next_slice_length(q.length - b.cut_offset, rules);
  out.op = q.op;
  out.attempts = 0;
  out.status = {};
  out.length = static_cast<std::uint32_t>(length);
  out.request = static_cast<std::uint32_t>(b.cut_request);
  out.local = static_cast<std::byte*>(q.local) + b.cut_offset;
  out.segment = q.segment;
  out.offset = q.offset + b.cut_offset;
  b.cut_offset += length;
  if (b.cut_offset == q.length) {
    ++b.cut_request;
    b.cut_offset = 0;
  }
}

void settle_slice(batch_state& b, const slice& s, transfer_stats& totals) {
  if (!s.status.ok()) b.reply.statuses[s.request] = s.status;  // the last error wins
  else (s.op == transfer_op::write ? totals.bytes_written : totals.bytes_read) += s.length;
  if (--b.slices_left[s.request] == 0) --b.requests_left;
}

// A stopping slicer cuts the rest of the batch only to settle it: nothing of it is sent.
void abandon_uncut(batch_state& b, slicer_state& st) {
  slice s;
  while (more_to_cut(b, st)) {
    cut_one(b, st.options.rules, s);
    s.status = {transfer_error::unavailable, 0};
    settle_slice(b, s, st.totals);
  }
}

void recycle(slicer_state& st, slice_group* group) {
  if (group->pooled) {
    st.pool->give_back(group);
    return;
  }
  for (auto* s : group->items) delete s;
  delete group;
}

void on_returned(slicer_pointer self, slice_group* group);

// Takes `group`'s entry off the in-flight list; false when `lane` no longer held it
// (its groups already failed over when it died).
bool landed(slicer_state& st, slice_group* group, const caf::actor_addr& lane) {
  const auto at = std::find(st.in_flight.begin(), st.in_flight.end(), std::pair{group, lane});
  if (at == st.in_flight.end()) return false;
  *at = st.in_flight.back();
  st.in_flight.pop_back();
  return true;
}

// Drops `lane` and fails over every group it held, as if its connection dropped. Runs
// for its down message and for each error it answered with; only the first does work.
void on_lane_lost(slicer_pointer self, const caf::actor_addr& lane) {
  auto& st = self->state;
  st.totals.lanes_lost +=
    std::erase_if(st.lanes, [&](const transport_actor& l) { return l.address() == lane; });
  std::vector<slice_group*> held;
  for (const auto& [group, holder] : st.in_flight)
    if (holder == lane) held.push_back(group);
  for (auto* group : held) {
    landed(st, group, lane);
    for (auto* s : group->items) s->status = {transfer_error::unavailable, 0};
    on_returned(self, group);
  }
}

// Hands a group to a lane: the next one in turn, or for a retry the one after the lane
// that failed it. With no lane left, the group comes straight back as unavailable.
void post(slicer_pointer self, slice_group* group, bool retry) {
  auto& st = self->state;
  for (auto* s : group->items) ++s->attempts;
  if (st.lanes.empty()) {
    for (auto* s : group->items) s->status = {transfer_error::unavailable, 0};
    on_returned(self, group);
    return;
  }
  const auto lane_index = (retry ? group->lane + 1 : st.next_lane++) % st.lanes.size();
  group->lane = static_cast<std::uint32_t>(lane_index);
  const auto lane = st.lanes[lane_index].address();
  st.in_flight.emplace_back(group, lane);
  self->request(st.lanes[lane_index], caf::infinite, post_atom_v, slice_group_ref{group, st.pool})
    .then(
      [self, lane](slice_group_ref& ref) {
        if (landed(self->state, ref.group, lane)) on_returned(self, ref.group);
      },
      [self, lane](caf::error&) { on_lane_lost(self, lane); });
}

void finish_if_done(slicer_pointer self, std::uint64_t id) {
  auto& b = self->state.batches.at(id);
  if (b.requests_left != 0) return;
  if (b.first_started != slice_group::not_started)
    b.reply.first_slice_ns = nanoseconds_between(b.submitted, b.first_started);
  for (const auto& status : b.reply.statuses)
    ++self->state.totals.requests[static_cast<std::size_t>(status.error)];
  b.promise.deliver(std::move(b.reply));
  self->state.batches.erase(id);
}

// Every batch answered and every group back: no lane holds a caller's memory any more.
void quit_once_stopped(slicer_pointer self) {
  if (self->state.stopping && self->state.in_flight.empty()) self->quit();
}

void stop(slicer_pointer self) {
  auto& st = self->state;
  st.stopping = true;
  for (const auto id : st.cutting) {
    abandon_uncut(st.batches.at(id), st);
    finish_if_done(self, id);
  }
  st.cutting.clear();
  quit_once_stopped(self);
}

// Cuts groups for the oldest batches while the pool has some; a group goes to a lane
// the moment it holds `watermark` slices (or its batch's last ones).
void pump(slicer_pointer self) {
  auto& st = self->state;
  if (st.pumping) return;  // a group that came straight back re-entered us
  st.pumping = true;
  while (!st.cutting.empty()) {
    auto* group = st.pool->take();
    if (group == nullptr) break;  // resumed by on_returned
    const auto id = st.cutting.front();
    auto& b = st.batches.at(id);
    const auto start = transfer_clock::now();
    group->batch = id;
    while (!group->full() && more_to_cut(b, st)) cut_one(b, st.options.rules, group->append());
    if (!more_to_cut(b, st)) st.cutting.pop_front();
    b.reply.slicing_ns += nanoseconds_between(start, transfer_clock::now());
    if (group->items.empty()) {  // the batch's last requests were all rejected
      recycle(st, group);
      finish_if_done(self, id);
    } else {
      post(self, group, false);  // may settle and erase b when no lane is left
    }
  }
  st.pumping = false;
}

// The naive contender: every slice on its own heap allocation, no tail merge (its
// rules say so), the whole batch cut before the first group is posted.
void cut_naive(slicer_pointer self, std::uint64_t id) {
  auto& st = self->state;
  auto& b = st.batches.at(id);
  const auto start = transfer_clock::now();
  std::vector<slice_group*> groups;
  while (more_to_cut(b, st)) {
    if (groups.empty() || groups.back()->full()) {
      auto* group = new slice_group;
      group->limit = st.options.watermark;
      group->items.reserve(group->limit);
      group->batch = id;
      groups.push_back(group);
    }
    auto* s = new slice;
    cut_one(b, st.options.rules, *s);
    groups.back()->items.push_back(s);
  }
  b.reply.slicing_ns = nanoseconds_between(start, transfer_clock::now());
  if (groups.empty()) finish_if_done(self, id);  // every request was rejected
  for (auto* group : groups) post(self, group, false);
}

// Settles what succeeded or failed for good; what may pass on another lane goes again.
void on_returned(slicer_pointer self, slice_group* group) {
  auto& st = self->state;
  const auto id = group->batch;
  auto& b = st.batches.at(id);
  b.first_started = std::min(b.first_started, group->started);
  std::size_t kept = 0;
  for (auto* s : group->items) {
    if (!s->status.ok()) ++st.totals.slice_failures[static_cast<std::size_t>(s->status.error)];
    if (!s->status.ok() && retryable(s->status.error) && s->attempts <= st.options.retries &&
        !st.lanes.empty() && !st.stopping) {
      s->status = {};
      group->items[kept++] = s;
      continue;
    }
    settle_slice(b, *s, st.totals);
    if (!group->pooled) delete s;
  }
  group->items.resize(kept);  // shrinks: allocates nothing
  b.reply.slices_retried += kept;
  st.totals.slices_retried += kept;
  if (kept > 0)
    post(self, group, true);
  else
    recycle(st, group);
  finish_if_done(self, id);
  pump(self);
  quit_once_stopped(self);
}

caf::typed_response_promise<transfer_reply> start_batch(slicer_pointer self,
                                                        transfer_batch& requests) {
  auto& st = self->state;
  const auto id = st.next_batch++;
  auto& b = st.batches[id];
  b.submitted = transfer_clock::now();
  b.requests = std::move(requests);
  b.promise = self->make_response_promise<transfer_reply>();
  auto answer = b.promise;  // returning it only says "answered later"
  open_batch(b);
  if (b.requests.empty() || st.stopping) {
    abandon_uncut(b, st);
    finish_if_done(self, id);
  } else if (st.options.naive) {
    cut_naive(self, id);
  } else {
    st.cutting.push_back(id);
    pump(self);
  }
  return answer;
}

slicer_actor::behavior_type slicer(slicer_pointer self, slicer_options options,
                                   std::vector<transport_actor> lanes,
                                   std::vector<segment_descriptor> segments) {
  auto& st = self->state;
  st.pool = std::make_shared<slice_pool>(options.pool_groups, options.watermark);
  st.options = options;
  st.lanes = std::move(lanes);
  st.segments = std::move(segments);
  st.in_flight.reserve(options.pool_groups);
  for (const auto& lane : st.lanes) self->monitor(lane);
  self->set_down_handler([self](caf::down_msg& down) { on_lane_lost(self, down.source); });
  self->set_exit_handler([self](caf::exit_msg&) { stop(self); });
  return {
    [self](transfer_atom, transfer_batch& requests) { return start_batch(self, requests); },
    [self](caf::update_atom, std::vector<segment_descriptor>& segments) {
      self->state.segments = std::move(segments);
    },
    [self](stats_atom) { return self->state.totals; },
  };
}

}  // namespace

slicer_options slicer_options_from(const transfer_section& transfer) {
  slicer_options options;
  options.naive = transfer.slicing == "naive";
  options.rules = {transfer.slice_size, transfer.fragment_limit, !options.naive};
  options.watermark = transfer.watermark;
  options.retries = static_cast<std::uint32_t>(transfer.retries);
  return options;
}

slicer_actor spawn_slicer(caf::actor_system& system, slicer_options options,
                          std::vector<transport_actor> lanes,
                          std::vector<segment_descriptor> segments) {
  return system.spawn(slicer, options, std::move(lanes), std::move(segments));
}

}  // namespace spillway

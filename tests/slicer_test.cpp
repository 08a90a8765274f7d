// The slicer under the deterministic scheduler: how requests are cut (exact cover,
// tail merge, segment end), when groups go out (by count, before the batch is cut),
// retries on the next lane, and the local transport end to end.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/local_transport.hpp"
#include "actors/slicer.hpp"
#include "tests/det_fixture.hpp"

namespace spillway {
namespace {

constexpr std::uint64_t slice_size = 4096;
constexpr std::uint64_t fragment_limit = 1024;
constexpr slicing_rules merged{slice_size, fragment_limit, true};
constexpr slicing_rules naive_rules{slice_size, fragment_limit, false};

// What a scripted lane saw, and how many of the groups it gets to fail.
struct lane_script {
  std::vector<std::size_t> group_sizes;
  std::vector<slice> slices;          // copies, in the order they came
  int groups_to_fail = 0;
  transfer_error failure = transfer_error::lane_closed;
  bool stamps_start = false;  // as a transport does once it reached the peer
};

transport_actor::behavior_type scripted_lane(std::shared_ptr<lane_script> script) {
  return {
    [script](post_atom, slice_group_ref& ref) {
      script->group_sizes.push_back(ref.group->items.size());
      const bool fail = script->groups_to_fail > 0;
      script->groups_to_fail -= fail ? 1 : 0;
      if (script->stamps_start) ref.group->started = transfer_clock::now();
      for (auto* s : ref.group->items) {
        s->status = {fail ? script->failure : transfer_error::none, 0};
        script->slices.push_back(*s);
      }
      return std::move(ref);
    },
  };
}

struct slicer_fixture : test::det_fixture {
  std::vector<segment_descriptor> segments{{1, 0x10000, 1 << 20, 0}};

  slicer_options options(std::size_t watermark = 8, std::size_t pool_groups = 16) {
    slicer_options o;
    o.rules = merged;
    o.watermark = watermark;
    o.pool_groups = pool_groups;
    o.retries = 2;
    return o;
  }

  std::shared_ptr<lane_script> add_lane(std::vector<transport_actor>& lanes) {
    auto script = std::make_shared<lane_script>();
    lanes.push_back(system.spawn(scripted_lane, script));
    return script;
  }

  transfer_reply run(const slicer_actor& slicer, transfer_batch batch) {
    auto answer = self->request(slicer, caf::infinite, transfer_atom_v, std::move(batch));
    sched.run();
    transfer_reply reply;
    answer.receive([&](transfer_reply& r) { reply = std::move(r); },
                   [&](caf::error& err) { FAIL(to_string(err)); });
    return reply;
  }
};

// `count` write requests of `length` bytes, back to back in segment 1.
transfer_batch writes(std::size_t count, std::uint64_t length) {
  transfer_batch batch(count);
  for (std::size_t i = 0; i < count; ++i)
    batch[i] = {transfer_op::write, nullptr, 1, i * length, length};
  return batch;
}

TEST_SUITE("slicer") {

TEST_CASE("slices cover every byte once for lengths around each boundary") {
  std::vector<std::uint64_t> lengths;
  for (std::uint64_t base : {slice_size, slice_size + fragment_limit, 2 * slice_size,
                             2 * slice_size + fragment_limit, 7 * slice_size})
    for (std::uint64_t delta : {-1, 0, 1}) lengths.push_back(base + delta);
  lengths.push_back(1);
  for (const auto& rules : {merged, naive_rules})
    for (auto length : lengths) {
      CAPTURE(length);
      std::uint64_t covered = 0, pieces = 0;
      while (covered < length) {
        const auto piece = next_slice_length(length - covered, rules);
        CHECK(piece > 0);
        CHECK(piece <= slice_size + (rules.merge_tail ? fragment_limit : 0));
        covered += piece;  // pieces are consecutive: each starts where the last ended
        ++pieces;
      }
      CHECK(covered == length);
      CHECK(pieces == slice_count(length, rules));
    }
}

TEST_CASE("a tail of at most fragment_limit joins the slice before it") {
  CHECK(next_slice_length(slice_size + fragment_limit, merged) == slice_size + fragment_limit);
  CHECK(next_slice_length(slice_size + fragment_limit + 1, merged) == slice_size);
  CHECK(slice_count(slice_size + fragment_limit, merged) == 1);
  CHECK(slice_count(slice_size + fragment_limit + 1, merged) == 2);
  CHECK(slice_count(slice_size + fragment_limit, naive_rules) == 2);
  CHECK(slice_count(fragment_limit, merged) == 1);  // a short request is its own slice
}

TEST_CASE_FIXTURE(slicer_fixture, "watermark posts groups by count before the batch is cut") {
  std::vector<transport_actor> lanes;
  auto lane = add_lane(lanes);
  auto slicer = spawn_slicer(system, options(8, 2), lanes, segments);
  sched.run();
  auto answer = self->request(slicer, caf::infinite, transfer_atom_v, writes(29, 100));
  sched.run_once();  // the slicer alone: it fills its 2 pooled groups and posts them
  CHECK(lane->group_sizes.empty());
  sched.run();
  CHECK(lane->group_sizes == std::vector<std::size_t>{8, 8, 8, 5});
  answer.receive([](transfer_reply& r) { CHECK(r.slices == 29); },
                 [](caf::error& err) { FAIL(to_string(err)); });
}

TEST_CASE_FIXTURE(slicer_fixture, "watermark fires by count on a warm pool too") {
  std::vector<transport_actor> lanes;
  auto lane = add_lane(lanes);
  auto slicer = spawn_slicer(system, options(8, 4), lanes, segments);
  sched.run();
  for (int round = 0; round < 3; ++round) {
    lane->group_sizes.clear();
    const auto reply = run(slicer, writes(20, 5000));  // 5000 B: 4096 + a merged 904
    CHECK(reply.slices == 20);
    CHECK(lane->group_sizes == std::vector<std::size_t>{8, 8, 4});
  }
}

TEST_CASE_FIXTURE(slicer_fixture, "slices stop at the segment end and past it nothing goes") {
  std::vector<transport_actor> lanes;
  auto lane = add_lane(lanes);
  auto slicer = spawn_slicer(system, options(), lanes, segments);
  sched.run();
  const std::uint64_t end = segments[0].length;
  const std::uint64_t length = slice_size + fragment_limit;
  const auto reply = run(slicer, {{transfer_op::write, nullptr, 1, end - length, length},
                                  {transfer_op::write, nullptr, 1, end - 100, 101},
                                  {transfer_op::read, nullptr, 2, 0, 1},
                                  {transfer_op::read, nullptr, 1, ~0ull - 10, 20}});
  REQUIRE(lane->slices.size() == 1);  // the merged tail: one slice, ending at the end
  CHECK(lane->slices[0].offset + lane->slices[0].length == end);
  CHECK(reply.statuses[0].ok());
  CHECK(reply.statuses[1].error == transfer_error::out_of_bounds);
  CHECK(reply.statuses[2].error == transfer_error::unknown_segment);
  CHECK(reply.statuses[3].error == transfer_error::length_overflow);
}

TEST_CASE_FIXTURE(slicer_fixture, "a failed slice is retried on the next lane") {
  std::vector<transport_actor> lanes;
  auto first = add_lane(lanes);
  auto second = add_lane(lanes);
  first->groups_to_fail = 1;
  auto slicer = spawn_slicer(system, options(), lanes, segments);
  sched.run();
  const auto reply = run(slicer, writes(4, 100));
  CHECK(reply.statuses == std::vector<transfer_status>(4));
  CHECK(first->group_sizes == std::vector<std::size_t>{4});
  CHECK(second->group_sizes == std::vector<std::size_t>{4});
}

TEST_CASE_FIXTURE(slicer_fixture, "a slice out of retries fails its request with the last error") {
  std::vector<transport_actor> lanes;
  auto lane = add_lane(lanes);
  lane->groups_to_fail = 100;
  lane->failure = transfer_error::peer_unreachable;
  auto slicer = spawn_slicer(system, options(), lanes, segments);
  sched.run();
  const auto reply = run(slicer, writes(2, 100));
  CHECK(lane->group_sizes.size() == 3);  // the first send and retries = 2
  for (const auto& s : reply.statuses) CHECK(s.error == transfer_error::peer_unreachable);
}

TEST_CASE_FIXTURE(slicer_fixture, "a final error is not retried") {
  std::vector<transport_actor> lanes;
  auto lane = add_lane(lanes);
  lane->groups_to_fail = 100;
  lane->failure = transfer_error::out_of_bounds;  // the owner's check said no
  auto slicer = spawn_slicer(system, options(), lanes, segments);
  sched.run();
  const auto reply = run(slicer, writes(1, 100));
  CHECK(lane->group_sizes.size() == 1);
  CHECK(reply.statuses[0].error == transfer_error::out_of_bounds);
}

// A pooled group goes back with the start time a lane stamped for an earlier batch;
// a batch whose groups no lane started has no first-slice time, not garbage.
TEST_CASE_FIXTURE(slicer_fixture, "a batch no lane started reports no first-slice time") {
  std::vector<transport_actor> lanes;
  auto lane = add_lane(lanes);
  auto slicer = spawn_slicer(system, options(8, 1), lanes, segments);  // one group, reused
  sched.run();
  lane->stamps_start = true;
  const auto started = run(slicer, writes(4, 100));
  CHECK(started.statuses == std::vector<transfer_status>(4));
  CHECK(started.first_slice_ns > 0);
  lane->stamps_start = false;  // the peer is unreachable: nothing starts
  lane->groups_to_fail = 100;
  lane->failure = transfer_error::peer_unreachable;
  const auto unstarted = run(slicer, writes(4, 100));
  CHECK(unstarted.statuses[0].error == transfer_error::peer_unreachable);
  CHECK(unstarted.first_slice_ns == 0);
}

TEST_CASE_FIXTURE(slicer_fixture, "groups of a dead lane fail over to the others") {
  std::vector<transport_actor> lanes;
  add_lane(lanes);
  auto survivor = add_lane(lanes);
  caf::anon_send_exit(lanes[0], caf::exit_reason::kill);
  sched.run();
  auto slicer = spawn_slicer(system, options(), lanes, segments);
  sched.run();
  const auto reply = run(slicer, writes(20, 100));  // 3 groups: 1 to each lane, then 1
  CHECK(reply.statuses == std::vector<transfer_status>(20));
  CHECK(std::accumulate(survivor->group_sizes.begin(), survivor->group_sizes.end(),
                        std::size_t{0}) == 20);
}

// What /metrics shows of transfers is each slicer's own account (actors/slicer.cpp).
TEST_CASE_FIXTURE(slicer_fixture, "a slicer answers stats with what it moved, retried and lost") {
  std::vector<transport_actor> lanes;
  add_lane(lanes);
  auto flaky = add_lane(lanes);
  add_lane(lanes);
  flaky->groups_to_fail = 1;  // the first group, as the dead lane is gone by then
  caf::anon_send_exit(lanes[0], caf::exit_reason::kill);
  sched.run();
  auto slicer = spawn_slicer(system, options(), lanes, segments);
  sched.run();
  CHECK(run(slicer, writes(4, 100)).statuses == std::vector<transfer_status>(4));
  const auto end = segments[0].length;
  run(slicer, {{transfer_op::read, nullptr, 1, 0, slice_size + 1},
               {transfer_op::write, nullptr, 1, end - 10, 100}});
  auto answer = self->request(slicer, caf::infinite, stats_atom_v);
  sched.run();
  transfer_stats stats;
  answer.receive([&](transfer_stats& s) { stats = std::move(s); },
                 [&](caf::error& err) { FAIL(to_string(err)); });
  CHECK(stats.bytes_written == 400);
  CHECK(stats.bytes_read == slice_size + 1);
  CHECK(stats.slices == 4 + 1);  // the tail of one byte joins its slice
  CHECK(stats.slices_retried == 4);
  CHECK(stats.slice_failures[static_cast<std::size_t>(transfer_error::lane_closed)] == 4);
  CHECK(stats.lanes_lost == 1);
  CHECK(stats.requests[static_cast<std::size_t>(transfer_error::none)] == 5);
  CHECK(stats.requests[static_cast<std::size_t>(transfer_error::out_of_bounds)] == 1);
}

TEST_CASE_FIXTURE(slicer_fixture, "local transport moves the bytes both ways") {
  auto table = std::make_shared<segment_table>();
  std::vector<std::byte> remote(3 * slice_size), source(remote.size()), back(remote.size());
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = std::byte(i * 7 + 1);
  const auto segment = table->add(remote.data(), remote.size());
  auto lane = spawn_local_transport(system, table);
  auto naive = options();
  naive.naive = true;
  naive.rules = naive_rules;
  for (const auto& o : {options(), naive}) {
    std::fill(back.begin(), back.end(), std::byte{0});
    auto slicer = spawn_slicer(system, o, {lane}, {segment});
    sched.run();
    const auto n = remote.size();
    const auto put = run(slicer, {{transfer_op::write, source.data(), segment.id, 0, n}});
    const auto get = run(slicer, {{transfer_op::read, back.data(), segment.id, 0, n}});
    CHECK(put.statuses[0].ok());
    CHECK(get.statuses[0].ok());
    CHECK(std::memcmp(back.data(), source.data(), n) == 0);
  }
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

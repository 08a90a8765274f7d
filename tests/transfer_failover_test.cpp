// Slicers watch their lanes (deterministic, test_coordinator): a lane that dies while
// it holds groups, never answering (CAF 0.17 sends nothing for the promises it drops),
// fails them over to the lanes left; with none left the requests fail at once, named,
// without waiting for any timeout.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/slicer.hpp"
#include "tests/slicer_fixture.hpp"

namespace spillway {
namespace {

using held_groups = std::vector<caf::typed_response_promise<slice_group_ref>>;

// Takes every group and keeps it: a lane stuck mid-transfer until it dies.
transport_actor::behavior_type holding_lane(transport_actor::pointer self,
                                            std::shared_ptr<held_groups> held) {
  return {
    [self, held](post_atom, slice_group_ref&) {
      held->push_back(self->make_response_promise<slice_group_ref>());
      return held->back();
    },
  };
}

// Moves every slice at once and counts them.
transport_actor::behavior_type counting_lane(std::shared_ptr<std::size_t> slices) {
  return {
    [slices](post_atom, slice_group_ref& ref) {
      *slices += ref.group->items.size();
      for (auto* s : ref.group->items) s->status = {};
      return std::move(ref);
    },
  };
}

struct failover_fixture : test::slicer_fixture {
  std::shared_ptr<held_groups> held = std::make_shared<held_groups>();
  std::shared_ptr<std::size_t> moved = std::make_shared<std::size_t>(0);
};

TEST_SUITE("slicer") {

TEST_CASE_FIXTURE(failover_fixture, "a lane that dies holding groups fails them over") {
  auto stuck = system.spawn(holding_lane, held);
  auto slicer_under_test = slicer({stuck, system.spawn(counting_lane, moved)});
  auto answer = submit(slicer_under_test);
  CHECK(held->size() == 1);  // the batch waits on the stuck lane's group
  CHECK(*moved == 8);
  CHECK(self->mailbox().empty());
  caf::anon_send_exit(stuck, caf::exit_reason::kill);
  sched.run();
  CHECK(statuses(answer) == std::vector<transfer_status>(16));
  CHECK(*moved == 16);
}

TEST_CASE_FIXTURE(failover_fixture, "with every lane dead the requests fail as unavailable") {
  auto stuck = system.spawn(holding_lane, held);
  auto slicer_under_test = slicer({stuck});
  auto answer = submit(slicer_under_test);
  CHECK(held->size() == 2);
  caf::anon_send_exit(stuck, caf::exit_reason::kill);
  sched.run();  // no time passes: the down message alone settles the batch
  const std::vector<transfer_status> unavailable(16, {transfer_error::unavailable, 0});
  CHECK(statuses(answer) == unavailable);
  auto later = submit(slicer_under_test);  // and so is every batch after
  CHECK(statuses(later) == unavailable);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

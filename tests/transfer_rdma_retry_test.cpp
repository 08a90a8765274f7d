// An rdma QP's failed completions take the slicer's one retry path, as a tcp lane's
// failures do (deterministic, test_coordinator): a QP whose every work request comes
// back with a status stands in for a real one, which needs a device. A flushed or
// unacknowledged slice, or one whose QP could not arm its CQ, passes on the next QP;
// an access error is final, named.
#include <doctest/doctest.h>

#include <cerrno>
#include <memory>
#include <vector>

#include <caf/typed_event_based_actor.hpp>

#include "runtime/rdma/rdma_completion.hpp"
#include "tests/slicer_fixture.hpp"

namespace spillway {
namespace {

// Ends every slice with `status`, as a QP's completions would, and counts them.
transport_actor::behavior_type completing_qp(transfer_status status,
                                             std::shared_ptr<std::size_t> slices) {
  return {
    [status, slices](post_atom, slice_group_ref& ref) {
      *slices += ref.group->items.size();
      for (auto* s : ref.group->items) s->status = status;
      return std::move(ref);
    },
  };
}

struct qp_fixture : test::slicer_fixture {
  std::shared_ptr<std::size_t> failing = std::make_shared<std::size_t>(0);
  std::shared_ptr<std::size_t> working = std::make_shared<std::size_t>(0);

  // Two QPs: the first fails every slice with `status`, the second completes them.
  std::vector<transfer_status> run_with(transfer_status status) {
    auto s = slicer({system.spawn(completing_qp, status, failing),
                     system.spawn(completing_qp, transfer_status{}, working)});
    auto answer = submit(s);
    return statuses(answer);
  }
};

TEST_SUITE("transfer-rdma") {

TEST_CASE_FIXTURE(qp_fixture, "rdma slices flushed by a broken QP pass on the next QP") {
  CHECK(run_with(completion_status(IBV_WC_WR_FLUSH_ERR)) == std::vector<transfer_status>(16));
  CHECK(*failing == 8);
  CHECK(*working == 16);  // its own group and the failed one, retried
}

TEST_CASE_FIXTURE(qp_fixture, "rdma slices the peer never acknowledged pass on the next QP") {
  CHECK(run_with(completion_status(IBV_WC_RETRY_EXC_ERR)) == std::vector<transfer_status>(16));
  CHECK(*working == 16);
}

TEST_CASE_FIXTURE(qp_fixture, "rdma slices the peer's memory region refused fail for good") {
  std::vector<transfer_status> expected(16);
  for (std::size_t i = 0; i < 8; ++i) expected[i] = {transfer_error::remote_access, 0};
  CHECK(run_with(completion_status(IBV_WC_REM_ACCESS_ERR)) == expected);
  CHECK(*failing == 8);
  CHECK(*working == 8);  // only its own group: nothing was retried
}

TEST_CASE_FIXTURE(qp_fixture, "rdma slices of a QP whose CQ could not be armed pass on the next") {
  const auto unarmed = completion_status(IBV_WC_WR_FLUSH_ERR, notify_failure_status(EIO));
  CHECK(run_with(unarmed) == std::vector<transfer_status>(16));
  CHECK(*failing == 8);
  CHECK(*working == 16);
}

TEST_CASE_FIXTURE(qp_fixture, "rdma slices whose every QP could not arm its CQ end with the errno") {
  const auto unarmed = completion_status(IBV_WC_WR_FLUSH_ERR, notify_failure_status(EIO));
  auto s = slicer({system.spawn(completing_qp, unarmed, failing),
                   system.spawn(completing_qp, unarmed, working)});
  auto answer = submit(s);
  const std::vector<transfer_status> expected(16, {transfer_error::lane_closed, EIO});
  CHECK(statuses(answer) == expected);
  CHECK(*failing + *working == 16 * 9);  // the first send and 8 retries, alternating
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

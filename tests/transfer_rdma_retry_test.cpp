// An rdma QP's failed completions take the slicer's one retry path, as a tcp lane's
// failures do (deterministic, test_coordinator): a QP whose every work request comes
// back with a status stands in for a real one, which needs a device. A flushed or
// unacknowledged slice passes on the next QP; an access error is final, named.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <caf/typed_event_based_actor.hpp>

#include "runtime/rdma_completion.hpp"
#include "tests/slicer_fixture.hpp"

namespace spillway {
namespace {

// Completes every slice with `status`, as a QP's CQ would, and counts them.
transport_actor::behavior_type completing_qp(ibv_wc_status status,
                                             std::shared_ptr<std::size_t> slices) {
  return {
    [status, slices](post_atom, slice_group_ref& ref) {
      *slices += ref.group->items.size();
      for (auto* s : ref.group->items) s->status = completion_status(status);
      return std::move(ref);
    },
  };
}

struct qp_fixture : test::slicer_fixture {
  std::shared_ptr<std::size_t> failing = std::make_shared<std::size_t>(0);
  std::shared_ptr<std::size_t> working = std::make_shared<std::size_t>(0);

  // Two QPs: the first fails every slice with `status`, the second completes them.
  std::vector<transfer_status> run_with(ibv_wc_status status) {
    auto s = slicer({system.spawn(completing_qp, status, failing),
                     system.spawn(completing_qp, IBV_WC_SUCCESS, working)});
    auto answer = submit(s);
    return statuses(answer);
  }
};

TEST_SUITE("transfer-rdma") {

TEST_CASE_FIXTURE(qp_fixture, "rdma slices flushed by a broken QP pass on the next QP") {
  CHECK(run_with(IBV_WC_WR_FLUSH_ERR) == std::vector<transfer_status>(16));
  CHECK(*failing == 8);
  CHECK(*working == 16);  // its own group and the failed one, retried
}

TEST_CASE_FIXTURE(qp_fixture, "rdma slices the peer never acknowledged pass on the next QP") {
  CHECK(run_with(IBV_WC_RETRY_EXC_ERR) == std::vector<transfer_status>(16));
  CHECK(*working == 16);
}

TEST_CASE_FIXTURE(qp_fixture, "rdma slices the peer's memory region refused fail for good") {
  std::vector<transfer_status> expected(16);
  for (std::size_t i = 0; i < 8; ++i) expected[i] = {transfer_error::remote_access, 0};
  CHECK(run_with(IBV_WC_REM_ACCESS_ERR) == expected);
  CHECK(*failing == 8);
  CHECK(*working == 8);  // only its own group: nothing was retried
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

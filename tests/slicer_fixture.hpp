// A slicer on the deterministic scheduler over lanes the test supplies, and the batch
// the lane tests send it: 16 writes of 100 bytes to segment 1, cut into two groups of
// 8 that go to the lanes in turn. Lanes decide each slice's fate; the slicer's
// failover and retry path is what these tests watch.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "actors/slicer.hpp"
#include "tests/det_fixture.hpp"

namespace spillway::test {

struct slicer_fixture : det_fixture {
  slicer_actor slicer(std::vector<transport_actor> lanes) {
    slicer_options options;
    options.rules = {4096, 1024, true};
    options.watermark = 8;
    auto s = spawn_slicer(system, options, std::move(lanes), {{1, 0x10000, 1 << 20, 0}});
    sched.run();
    return s;
  }

  auto submit(const slicer_actor& s) {
    transfer_batch batch(16);
    for (std::uint64_t i = 0; i < batch.size(); ++i)
      batch[i] = {transfer_op::write, nullptr, 1, i * 100, 100};
    auto answer = self->request(s, caf::infinite, transfer_atom_v, std::move(batch));
    sched.run();
    return answer;
  }

  // The reply that sched.run() left in the mailbox (receiving with none would hang).
  std::vector<transfer_status> statuses(auto& answer) {
    REQUIRE_FALSE(self->mailbox().empty());
    std::vector<transfer_status> out;
    answer.receive([&](transfer_reply& r) { out = std::move(r.statuses); },
                   [&](caf::error& err) { FAIL(to_string(err)); });
    return out;
  }
};

}  // namespace spillway::test

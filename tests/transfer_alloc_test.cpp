// No heap allocation per slice: with tests/allocation_counter counting the calls of
// operator new made on this thread, it runs batches of
// 20 000 slices through a slicer and the local transport on the deterministic
// scheduler (all on this thread). The count may grow with groups and batches (CAF
// messages, the batch's own vectors), never with slices; the naive contender, which
// allocates each slice, shows the counter sees per-slice allocation when there is some.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "actors/local_transport.hpp"
#include "actors/slicer.hpp"
#include "tests/allocation_counter.hpp"
#include "tests/det_fixture.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

constexpr std::size_t chunks = 20000;
constexpr std::uint64_t chunk_size = 1000;

struct alloc_fixture : test::det_fixture {
  std::shared_ptr<segment_table> table = std::make_shared<segment_table>();
  std::vector<std::byte> remote = std::vector<std::byte>(chunks * chunk_size);
  std::vector<std::byte> source = std::vector<std::byte>(chunks * chunk_size, std::byte{5});

  // Allocations made while the slicer and the transport handle one batch.
  std::size_t count_batch(bool naive) {
    const auto segment = table->add(remote.data(), remote.size());
    slicer_options options;
    options.naive = naive;
    options.rules = {4096, 1024, !naive};
    auto slicer = spawn_slicer(system, options, {spawn_local_transport(system, table)},
                               {segment});
    sched.run();
    transfer_batch batch(chunks);
    for (std::size_t i = 0; i < chunks; ++i)
      batch[i] = {transfer_op::write, source.data() + i * chunk_size, segment.id,
                  i * chunk_size, chunk_size};
    auto answer = self->request(slicer, caf::infinite, transfer_atom_v, std::move(batch));
    std::size_t allocations = 0;
    {
      test::allocation_counter counter;
      sched.run();
      allocations = counter.count();
    }
    answer.receive([](transfer_reply& r) { CHECK(r.slices == chunks); },
                   [](caf::error& err) { FAIL(to_string(err)); });
    return allocations;
  }
};

TEST_SUITE("slicer") {

TEST_CASE_FIXTURE(alloc_fixture, "watermark slicing allocates per group and never per slice") {
  if (!test::allocation_counter::available()) {
    return test::skip_test("AddressSanitizer owns operator new in this build");
  }
  const auto pooled = count_batch(false);
  const auto naive = count_batch(true);
  MESSAGE("allocations for 20000 slices: watermark " << pooled << ", naive " << naive);
  CHECK(pooled < chunks / 50);  // 40 groups of 512; a handful of allocations each
  CHECK(naive >= chunks);       // one per slice at least: the counter does see them
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

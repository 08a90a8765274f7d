#include "tools/read_limit.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <sys/uio.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/io/arena_memory.hpp"
#include "runtime/io/kernel_probe.hpp"
#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "tools/bench_util.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

// A ring with `buffers` registered, unregistered before the ring goes: a ring torn down
// with hugetlb pages registered keeps them pinned a while (BENCHMARKS.md).
struct bare_ring {
  io_uring ring{};
  bare_ring(unsigned depth, const std::vector<iovec>& buffers) {
    if (io_uring_queue_init(depth, &ring, 0) < 0)
      throw std::runtime_error("read limit: the footprint limit's ring failed");
    if (io_uring_register_buffers(&ring, buffers.data(), static_cast<unsigned>(buffers.size())) < 0) {
      io_uring_queue_exit(&ring);
      throw std::runtime_error("read limit: the footprint limit's buffers did not register");
    }
  }
  bare_ring(const bare_ring&) = delete;
  bare_ring& operator=(const bare_ring&) = delete;
  ~bare_ring() {
    io_uring_unregister_buffers(&ring);
    io_uring_queue_exit(&ring);
  }
};

// The same device with the destination memory of a real batch: a bare io_uring loop
// reading what the node reads for one value, at random offsets of the same files, at the same
// depth into a buffer as big
// as the round's batches, each read to the next place in it. fio reuses iodepth x bs of
// buffer (8 MB at 128 KiB), which this disk's host serves faster than reads that land
// across hundreds of MB, as every batch's values must (such a loop at 128 KiB, QD 64,
// interleaved: 1.68-1.98 GB/s into 8 MB, 1.49-1.69 into 16 MB, 1.59-1.65 into 430 MB);
// this limit pays what we pay.
}  // namespace

double footprint_round(const std::filesystem::path& dir, std::uint64_t object_size,
                       std::uint64_t bytes, unsigned depth, std::mt19937_64& random) {
  // What the node's read of one value takes, in the format it writes.
  const auto block = bucket_format::value_read(bucket_format::version, 0,
                                               generated_key("obj-", 0).size(), object_size)
                       .length;
  std::vector<unique_fd> fds;
  std::vector<std::uint64_t> sizes;
  for (const auto& e : std::filesystem::directory_iterator{dir})
    if (e.path().extension() == ".bucket" && e.file_size() >= block + 4096) {
      fds.emplace_back(::open(e.path().c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
      sizes.push_back(e.file_size());
      if (!fds.back()) throw std::runtime_error("read limit: open " + e.path().string());
    }
  if (fds.empty()) throw std::runtime_error("read limit: no bucket file to read in " + dir.string());
  const std::uint64_t chunk = 1ull << 30;
  // hugetlb when the pool has room beside the node's arena, else THP: huge pages either way.
  const auto mapped = (bytes + chunk - 1) / chunk * chunk;
  arena_memory memory{mapped, chunk,
                      probe_hugepages().hugetlb_free_bytes() >= mapped ? "auto" : "thp"};
  for (std::size_t c = 0; c < memory.chunk_count(); ++c)
    while (memory.populated(c) < memory.chunk_size(c)) memory.populate(c, chunk);
  std::vector<iovec> table;
  for (std::size_t c = 0; c < memory.chunk_count(); ++c)
    table.push_back({memory.chunk_base(c), memory.chunk_size(c)});
  bare_ring owner{depth, table};
  io_uring& ring = owner.ring;
  // Whole records per chunk: a record never straddles two registered buffers.
  const std::uint64_t per_chunk = chunk / block;
  const std::uint64_t reads = std::min(bytes / block, memory.chunk_count() * per_chunk);
  int failed = 0;
  std::uint64_t issued = 0, done = 0, in_flight = 0;
  bench::stopwatch clock;
  while (done < reads && failed == 0) {
    for (; in_flight < depth && issued < reads; ++issued, ++in_flight) {
      const auto file = random() % fds.size();
      const auto offset = random() % ((sizes[file] - block) / 4096) * 4096;
      const auto c = issued / per_chunk;
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_read_fixed(sqe, fds[file].get(), memory.chunk_base(c) + issued % per_chunk * block,
                               static_cast<unsigned>(block), offset, static_cast<int>(c));
    }
    io_uring_submit_and_wait(&ring, 1);
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      if (cqe->res != static_cast<int>(block) && failed == 0) failed = cqe->res;
      ++seen;
    }
    io_uring_cq_advance(&ring, seen);
    in_flight -= seen;
    done += seen;
  }
  const double seconds = clock.seconds();
  while (in_flight > 0) {  // a failure stops the loop; the ring is torn down idle
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0) continue;
    io_uring_cqe_seen(&ring, cqe);
    --in_flight;
  }
  if (failed != 0)
    throw std::runtime_error("read limit: a read of the footprint limit returned " +
                             std::to_string(failed));
  return static_cast<double>(reads * object_size) / seconds / 1e9;
}

}  // namespace spillway

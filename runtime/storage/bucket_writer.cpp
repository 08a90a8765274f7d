// The write loop: fill a staging slot, submit it, move to the next slot (waiting for
// its previous write only if it is still in flight), and check every completion.
#include "runtime/storage/bucket_writer.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/crash_point.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

namespace bf = bucket_format;

// Four slots of 4 MiB: writes big enough to stream, three in flight while one fills.
constexpr std::size_t slot_count = 4;
constexpr std::size_t slot_size = 4u << 20;
// The buffer of records larger than a slot is kept for the next one up to the slots'
// own size; a larger one is unmapped once written, or one huge value would keep its
// size mapped for the writer's life.
constexpr std::size_t large_kept_max = slot_count * slot_size;
// Pieces of one write: a slot of small records from caller memory alternates staged
// heads with values in place; the kernel takes up to IOV_MAX (1024) per write.
constexpr std::size_t max_pieces = 256;

// Page-aligned anonymous memory, hugepage-backed where THP allows, so a write's pages
// are few and contiguous (the disk splits a request at 254 segments).
struct aligned_buffer {
  std::byte* data = nullptr;
  std::size_t size = 0;

  void reserve(std::size_t want) {
    if (want <= size) return;
    release();
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, want, MADV_HUGEPAGE);
    data = static_cast<std::byte*>(p);
    size = want;
  }
  void release() {
    if (data) ::munmap(data, size);
    data = nullptr;
    size = 0;
  }
  ~aligned_buffer() { release(); }
};

// One write of a contiguous range of the file, gathered from the slot's staging buffer
// and, where values are written in place, from the caller's memory.
struct slot {
  aligned_buffer buffer;
  std::size_t staged = 0;        // bytes of `buffer` in use
  std::vector<iovec> pieces;     // the write in file order: runs of buffer, caller memory
  std::size_t first = 0;         // the first piece not written whole yet
  std::size_t used = 0;          // bytes in pieces
  std::size_t written = 0;       // bytes the kernel has confirmed
  std::uint64_t file_offset = 0;
  bool in_flight = false;

  void clear() {
    staged = used = written = first = 0;
    pieces.clear();
  }
};

// Drops the first `n` bytes of pieces[first, ...): what a short write did write.
void consume(std::span<iovec> pieces, std::size_t& first, std::size_t n) {
  for (; n != 0; ++first) {
    auto& p = pieces[first];
    if (n < p.iov_len) {
      p.iov_base = static_cast<std::byte*>(p.iov_base) + n;
      p.iov_len -= n;
      return;
    }
    n -= p.iov_len;
  }
}

}  // namespace

struct bucket_writer::state {
  options opts;
  io_uring ring{};
  bool ring_ok = false;
  std::array<slot, slot_count> slots;
  std::size_t current = 0;
  aligned_buffer large;              // records bigger than a slot, index and footer
  unique_fd fd;
  bool direct = false;  // fd has O_DIRECT: pages written from the caller's memory skip the copy
  std::uint64_t id = 0;
  bf::header header;
  std::filesystem::path tmp_path;
  std::uint64_t size = 0;
  std::vector<bf::index_entry> entries;
  std::optional<io_failure> failed;  // the first failed write of the open bucket
  std::size_t committed_records = 0;  // entries[0, this) are durable in the .tmp
  std::uint64_t committed_bytes = 0;  // where they end

  slot& cur() { return slots[current]; }

  void submit(std::size_t index) {
    slot& s = slots[index];
    assert(s.used % bf::page_size == 0 && !s.in_flight);
    if (!ring_ok) return write_now(s.pieces, s.file_offset);
    s.in_flight = true;
    queue_write(index);
  }

  void queue_write(std::size_t index) {
    slot& s = slots[index];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);  // never full: one entry per slot
    io_uring_prep_writev(sqe, fd.get(), s.pieces.data() + s.first,
                         static_cast<unsigned>(s.pieces.size() - s.first),
                         s.file_offset + s.written);
    io_uring_sqe_set_data64(sqe, index);
    const int rc = io_uring_submit(&ring);
    if (rc < 0) complete(index, rc);
  }

  void complete(std::size_t index, int res) {
    slot& s = slots[index];
    if (res > 0) {
      s.written += static_cast<std::size_t>(res);
      if (s.written < s.used) {  // short: the rest
        consume(s.pieces, s.first, static_cast<std::size_t>(res));
        return queue_write(index);
      }
    }
    s.in_flight = false;
    if (res <= 0 && !failed) failed = make_io_failure(res < 0 ? -res : EIO, "write", tmp_path);
  }

  void wait(std::size_t index) {
    while (slots[index].in_flight) {
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_wait_cqe(&ring, &cqe);
      if (rc == -EINTR) continue;
      assert(rc == 0);  // only fails on a ring we set up wrong
      const auto done = static_cast<std::size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(&ring, cqe);
      complete(done, res);
    }
  }

  void wait_all() {
    for (std::size_t i = 0; i < slot_count; ++i) wait(i);
  }

  // Synchronous pwritev of whole pages, for the posix engine and for large pieces.
  void write_now(std::span<iovec> pieces, std::uint64_t offset) {
    for (std::size_t first = 0; first < pieces.size() && !failed;) {
      const ssize_t w = ::pwritev(fd.get(), pieces.data() + first,
                                  static_cast<int>(pieces.size() - first),
                                  static_cast<off_t>(offset));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) failed = make_io_failure(w < 0 ? errno : EIO, "write", tmp_path);
      else {
        consume(pieces, first, static_cast<std::size_t>(w));
        offset += static_cast<std::uint64_t>(w);
      }
    }
  }

  // -- staging -------------------------------------------------------------------

  // Submits the current slot and makes the next one current, once its write is done.
  void next_slot() {
    submit(current);
    current = (current + 1) % slot_count;
    wait(current);
    cur().clear();
  }

  // Makes room for `n` more bytes of the file in the current slot, starting at the
  // file's end; `staged`: that many of its buffer's bytes too.
  void reserve(std::size_t n, bool staged) {
    const bool full = cur().used + n > slot_size || cur().pieces.size() == max_pieces ||
                      (staged && cur().staged + n > slot_size);
    if (full && cur().used != 0) next_slot();
    if (cur().used == 0) cur().file_offset = size;
    cur().used += n;
    size += n;
  }

  // Room for `n` more bytes in the current slot's buffer, at the file's end.
  std::byte* stage(std::size_t n) {
    reserve(n, true);
    slot& s = cur();
    std::byte* at = s.buffer.data + s.staged;
    s.staged += n;
    if (!s.pieces.empty() && static_cast<std::byte*>(s.pieces.back().iov_base) +
                                   s.pieces.back().iov_len == at)
      s.pieces.back().iov_len += n;  // the buffer's run goes on
    else
      s.pieces.push_back({at, n});
    return at;
  }

  // Writes `pages` (whole pages) from the caller's memory at the file's end, in the
  // same write as what is staged around them.
  void write_in_place(bf::const_bytes pages) {
    reserve(pages.size(), false);
    cur().pieces.push_back({const_cast<std::byte*>(pages.data()), pages.size()});
  }

  // Submits the current slot and waits for every write in flight.
  void write_staged() {
    if (cur().used != 0) submit(current);
    wait_all();
    if (cur().used != 0) {
      current = (current + 1) % slot_count;
      cur().clear();
    }
  }

  // Writes the staged slot, then `n` bytes from `large`, at the file's end.
  void write_large(std::size_t n) {
    write_staged();
    iovec whole{large.data, n};
    write_now({&whole, 1}, size);
    size += n;
    if (large.size > large_kept_max) large.release();
  }

  // -- file ----------------------------------------------------------------------

  int open_tmp() {
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
    if (!opts.refuse_o_direct) {
      fd.reset(::open(tmp_path.c_str(), flags | O_DIRECT, opts.file_mode));
      direct = static_cast<bool>(fd);
      if (fd || errno != EINVAL) return fd ? 0 : errno;
      ::unlink(tmp_path.c_str());
    }
    static bool said = false;  // once per process: it is a property of the filesystem
    if (!said) spdlog::warn("{}: O_DIRECT refused, writing through the page cache",
                            opts.dir.string());
    said = true;
    direct = false;
    fd.reset(::open(tmp_path.c_str(), flags, opts.file_mode));
    return fd ? 0 : errno;
  }

  // Committed records were acknowledged: their .tmp stays for recovery to complete.
  void close_and_remove() {
    if (!fd) return;
    if (ring_ok) wait_all();
    fd.reset();
    if (committed_records == 0) ::unlink(tmp_path.c_str());
    else
      spdlog::error("writer: kept {} for recovery at the next start: {} records in it were "
                    "committed and acknowledged", tmp_path.string(), committed_records);
    entries.clear();
    failed.reset();
  }

  std::optional<io_failure> finish(bucket_index& sealed);
};

bucket_writer::bucket_writer(options opts) : s_(std::make_unique<state>()) {
  s_->opts = std::move(opts);
  for (auto& s : s_->slots) {
    s.buffer.reserve(slot_size);
    s.pieces.reserve(max_pieces);
  }
  if (s_->opts.use_uring) {
    const int rc = io_uring_queue_init(slot_count, &s_->ring, 0);
    s_->ring_ok = rc == 0;
    if (rc < 0)
      spdlog::warn("writer: io_uring unusable ({}), writing with pwrite", strerrorname_np(-rc));
  }
}

bucket_writer::~bucket_writer() {
  abandon();
  if (s_->ring_ok) io_uring_queue_exit(&s_->ring);
}

std::optional<io_failure> bucket_writer::open(std::uint64_t bucket_id) {
  assert(!is_open());
  s_->id = bucket_id;
  s_->tmp_path = s_->opts.dir / bucket_tmp_name(bucket_id);
  if (const int err = s_->open_tmp()) return make_io_failure(err, "create", s_->tmp_path);
  s_->size = 0;
  s_->current = 0;
  s_->cur().clear();
  s_->committed_records = 0;
  s_->committed_bytes = 0;
  const auto created = std::chrono::system_clock::now().time_since_epoch();
  s_->header = {s_->opts.node_id, bucket_id,
                static_cast<std::uint64_t>(
                  std::chrono::duration_cast<std::chrono::nanoseconds>(created).count())};
  bf::encode_header(s_->header, {s_->stage(bf::page_size), bf::page_size});
  return std::nullopt;
}

std::optional<io_failure> bucket_writer::append(std::string_view key,
                                                std::span<const std::byte> value,
                                                bool caller_keeps) {
  assert(is_open() && !key.empty() && key.size() <= bf::max_key_size);
  if (s_->failed) return s_->failed;
  const auto n = bf::record_size(bf::version, key.size(), value.size());
  const auto offset = s_->size;
  const auto bulk = caller_keeps ? in_place_bytes(value) : 0;
  std::uint32_t crc = 0;
  if (bulk != 0) {
    const auto head = bf::record_head_size(key.size());
    crc = bf::encode_record_head(s_->id, key, value, {s_->stage(head), head});
    s_->write_in_place(value.first(bulk));
    if (const auto tail = value.size() - bulk; tail != 0) {
      std::byte* page = s_->stage(bf::page_size);
      std::memcpy(page, value.data() + bulk, tail);
      std::memset(page + tail, 0, bf::page_size - tail);
    }
  } else if (n <= slot_size) {
    crc = bf::encode_record(s_->id, key, value, {s_->stage(n), n});
  } else {
    s_->large.reserve(n);
    crc = bf::encode_record(s_->id, key, value, {s_->large.data, n});
    s_->write_large(n);
  }
  s_->entries.push_back({std::string{key}, static_cast<std::uint32_t>(value.size()), offset, crc});
  return s_->failed;
}

std::optional<io_failure> bucket_writer::state::finish(bucket_index& sealed) {
  const auto tail = bf::tail_size(entries);
  large.reserve(tail);
  const auto footer = bf::encode_tail(entries, size, {large.data, tail});
  write_large(tail);
  if (failed) return failed;
  // Records staged after the last commit and then rewound may lie past the footer.
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
    return make_io_failure(errno, "truncate", tmp_path);
  reach(crash_point::seal_written);
  if (::fdatasync(fd.get()) != 0) return make_io_failure(errno, "fdatasync", tmp_path);
  reach(crash_point::seal_synced);
  const auto path = opts.dir / bucket_file_name(id);
  if (::rename(tmp_path.c_str(), path.c_str()) != 0)
    return make_io_failure(errno, "rename", tmp_path);
  reach(crash_point::seal_renamed);
  if (const int err = fsync_dir(opts.dir); err != 0) {
    // Not durable under its name: it must not be published. Acknowledged records keep
    // it, for recovery at the next start, under the name their reads and eviction use.
    if (committed_records == 0) ::unlink(path.c_str());
    else ::rename(path.c_str(), tmp_path.c_str());
    return make_io_failure(err, "fsync directory", opts.dir);
  }
  reach(crash_point::seal_dir_synced);
  sealed.header = header;
  sealed.footer = footer;
  sealed.entries = std::move(entries);
  sealed.file_size = size;
  return std::nullopt;
}

std::optional<io_failure> bucket_writer::commit() {
  assert(is_open());
  auto& s = *s_;
  s.write_staged();
  if (s.failed) return s.failed;
  reach(crash_point::commit_written);
  if (::fdatasync(s.fd.get()) != 0)
    return s.failed = make_io_failure(errno, "fdatasync", s.tmp_path);
  if (s.committed_records == 0)
    if (const int err = fsync_dir(s.opts.dir); err != 0)
      return s.failed = make_io_failure(err, "fsync directory", s.opts.dir);
  reach(crash_point::commit_synced);
  s.committed_records = s.entries.size();
  s.committed_bytes = s.size;
  return std::nullopt;
}

bool bucket_writer::rewind_to_commit() {
  auto& s = *s_;
  if (!is_open() || s.committed_records == 0) return false;
  if (s.ring_ok) s.wait_all();
  s.entries.resize(s.committed_records);
  s.size = s.committed_bytes;
  s.cur().clear();  // staged, never submitted: dropped
  s.failed.reset();
  return true;
}

std::optional<io_failure> bucket_writer::seal(bucket_index& sealed) {
  assert(is_open());
  auto result = s_->finish(sealed);
  if (!result) {
    s_->fd.reset();  // renamed: nothing to remove
    s_->entries.clear();
  }
  s_->close_and_remove();
  return result;
}

void bucket_writer::abandon() { s_->close_and_remove(); }

bool bucket_writer::is_open() const { return static_cast<bool>(s_->fd); }
std::uint64_t bucket_writer::bucket_id() const { return s_->id; }
std::uint64_t bucket_writer::file_size() const { return s_->size; }
std::size_t bucket_writer::record_count() const { return s_->entries.size(); }
std::span<const bf::index_entry> bucket_writer::committed() const {
  return {s_->entries.data(), s_->committed_records};
}
std::uint64_t bucket_writer::committed_size() const { return s_->committed_bytes; }
std::filesystem::path bucket_writer::tmp_path() const { return s_->tmp_path; }

std::uint64_t bucket_writer::in_place_bytes(std::span<const std::byte> value) const {
  const bool aligned = reinterpret_cast<std::uintptr_t>(value.data()) % bf::page_size == 0;
  return aligned && s_->direct ? value.size() / bf::page_size * bf::page_size : 0;
}

}  // namespace spillway

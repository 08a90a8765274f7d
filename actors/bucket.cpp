// State chart:  serving --evict--> draining (pins > 0) --unpin to 0--> gone
//               serving --evict with no pins--> gone       "gone" = file unlinked, quit
// The file is opened with O_DIRECT where the filesystem takes it. When a read on it is
// refused anyway, the bucket opens it again without; the O_DIRECT descriptor stays open
// until the last pin taken before goes, since reads in flight may still name it.
#include "actors/bucket.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

struct bucket_state {
  std::uint64_t id = 0;
  std::filesystem::path path;
  unique_fd fd;
  unique_fd direct_fd;  // the O_DIRECT descriptor, until no pin can name it (see above)
  int open_errno = 0;   // of the last open of the file; 0 when it worked
  bool direct = false;
  std::uint32_t pins = 0;
  bool evicted = false;
  static inline const char* name = "bucket";

  // Returns whether the filesystem refused O_DIRECT.
  bool open_file(bool buffered) {
    if (!buffered) fd.reset(open_regular_file(path, O_RDONLY | O_CLOEXEC | O_DIRECT));
    const bool refused = !buffered && !fd && errno == EINVAL;
    direct = static_cast<bool>(fd);
    if (!fd) fd.reset(open_regular_file(path, O_RDONLY | O_CLOEXEC));
    open_errno = fd ? 0 : errno;
    return refused;
  }

  void go_buffered() {
    if (!direct) return;
    unique_fd buffered{open_regular_file(path, O_RDONLY | O_CLOEXEC)};
    open_errno = buffered ? 0 : errno;
    if (!buffered) {
      spdlog::error("bucket {}: open {} without O_DIRECT: {}", id, path.string(),
                    std::strerror(open_errno));
      return;
    }
    direct_fd = std::exchange(fd, std::move(buffered));
    direct = false;
    close_direct_if_unused();
  }

  // Reads in flight name the O_DIRECT descriptor only while they hold pins.
  void close_direct_if_unused() {
    if (pins == 0) direct_fd.reset();
  }

  pinned_file file() const { return {fd.get(), direct, id, open_errno}; }
};

using bucket_pointer = bucket_actor::stateful_pointer<bucket_state>;

void remove_if_done(bucket_pointer self) {
  auto& st = self->state;
  if (!st.evicted || st.pins != 0) return;
  if (::unlink(st.path.c_str()) != 0)
    spdlog::error("bucket {}: unlink {}: {}", st.id, st.path.string(), std::strerror(errno));
  self->quit();
}

bucket_actor::behavior_type bucket(bucket_pointer self, catalog_actor catalog, std::uint64_t id,
                                   std::filesystem::path path, bool buffered) {
  self->state.id = id;
  self->state.path = std::move(path);
  if (self->state.open_file(buffered)) self->send(catalog, buffered_atom_v);
  return {
    [self](pin_atom, std::uint32_t n) -> caf::result<pinned_file> {
      auto& st = self->state;
      if (!st.fd)
        return caf::make_error(caf::sec::runtime_error,
                               st.path.string() + ": " + std::strerror(st.open_errno));
      st.pins += n;
      return st.file();
    },
    [self](buffered_atom) {
      self->state.go_buffered();
      return self->state.file();
    },
    [self](unpin_atom, std::uint32_t n) {
      auto& st = self->state;
      if (n > st.pins) {  // a caller's bug; never let the count wrap
        spdlog::error("bucket {}: unpin {} with {} pinned", st.id, n, st.pins);
        n = st.pins;
      }
      st.pins -= n;
      st.close_direct_if_unused();
      remove_if_done(self);
    },
    [self](evict_atom) {
      self->state.evicted = true;
      remove_if_done(self);
    },
  };
}

}  // namespace

bucket_actor spawn_bucket(caf::actor_system& system, const catalog_actor& catalog,
                          std::uint64_t id, std::filesystem::path path, bool buffered) {
  return system.spawn(bucket, catalog, id, std::move(path), buffered);
}

}  // namespace spillway

// State chart:  serving --evict--> draining (pins > 0) --unpin to 0--> gone
//               serving --evict with no pins--> gone       "gone" = file unlinked, quit
// A bucket still being written is served from its .tmp, whose committed records are
// durable; the seal renames it, and `sealed` brings the new name. Until that message
// comes, an open that finds no .tmp tries the sealed name: the rename happened first.
// Pins are counted by the actor that took them, which is watched: one that goes away
// (a batch that gave up waiting for its pin, one that died) drops its pins with it,
// so an evicted file never stays for a pin no one will give back.
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

#include "actors/holder_counts.hpp"
#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/bucket_file.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

struct bucket_state {
  std::uint64_t id = 0;  // first: CAF would construct a handle member first from `self`
  file_remover_actor remover;
  std::filesystem::path path;
  unique_fd fd;
  unique_fd direct_fd;  // the O_DIRECT descriptor, until no pin can name it (see above)
  int open_errno = 0;   // of the last open of the file; 0 when it worked
  bool direct = false;
  holder_counts pinned_by;  // pins (reads in flight), by the actor that took them
  bool evicted = false;
  static inline const char* name = "bucket";

  int open_path(int flags) {
    const int opened = open_regular_file(path, flags);
    if (opened >= 0 || errno != ENOENT || path.extension() != ".tmp") return opened;
    path = path.parent_path() / bucket_file_name(id);
    return open_regular_file(path, flags);
  }

  // Returns whether the filesystem (or the fault standing in for one) refused O_DIRECT.
  bool open_file(bool buffered, bool refuse_o_direct) {
    if (!buffered && refuse_o_direct) errno = EINVAL;
    else if (!buffered) fd.reset(open_path(O_RDONLY | O_CLOEXEC | O_DIRECT));
    const bool refused = !buffered && !fd && errno == EINVAL;
    direct = static_cast<bool>(fd);
    if (!fd) fd.reset(open_path(O_RDONLY | O_CLOEXEC));
    open_errno = fd ? 0 : errno;
    if (!fd)  // its pins answer the errno; the path is said here, once
      spdlog::error("bucket {}: open {}: {}", id, path.string(), open_error_text(open_errno));
    return refused;
  }

  void go_buffered() {
    if (!direct) return;
    unique_fd buffered{open_path(O_RDONLY | O_CLOEXEC)};
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
    if (pinned_by.empty()) direct_fd.reset();
  }

  pinned_file file() const { return {fd.get(), direct, id, open_errno}; }
};

using bucket_pointer = bucket_actor::stateful_pointer<bucket_state>;

// `n` of `holder`'s pins go; a holder with none left is no longer watched.
void drop_pins(bucket_pointer self, const caf::actor_addr& holder, std::uint32_t n) {
  auto& st = self->state;
  const auto held = st.pinned_by.remove(self, holder, n);
  if (n > held)  // a caller's bug; the count did not wrap
    spdlog::error("bucket {}: unpin {} by a holder of {} pins", st.id, n, held);
  st.close_direct_if_unused();
}

void remove_if_done(bucket_pointer self) {
  auto& st = self->state;
  if (!st.evicted || !st.pinned_by.empty()) return;
  st.fd.reset();  // the file's space comes back once the unlink finds it closed
  st.direct_fd.reset();
  self->send(st.remover, caf::delete_atom_v, st.path.string());
  self->quit();
}

bucket_actor::behavior_type bucket(bucket_pointer self, catalog_actor catalog,
                                   file_remover_actor remover, std::uint64_t id,
                                   std::filesystem::path path, bool buffered,
                                   bool refuse_o_direct) {
  self->state.remover = std::move(remover);
  self->state.id = id;
  self->state.path = std::move(path);
  if (self->state.open_file(buffered, refuse_o_direct)) self->send(catalog, buffered_atom_v);
  self->set_down_handler([self](caf::down_msg& msg) {
    drop_pins(self, msg.source, self->state.pinned_by.held(msg.source));
    remove_if_done(self);
  });
  return {
    // A file that would not open answers fd -1 and the open's errno, and takes no pin.
    [self](pin_atom, std::uint32_t n) {
      auto& st = self->state;
      if (!st.fd || n == 0) return st.file();
      st.pinned_by.add(self, caf::actor_cast<caf::actor_addr>(self->current_sender()), n);
      return st.file();
    },
    [self](buffered_atom) {
      self->state.go_buffered();
      return self->state.file();
    },
    [self](unpin_atom, std::uint32_t n) {
      drop_pins(self, caf::actor_cast<caf::actor_addr>(self->current_sender()), n);
      remove_if_done(self);
    },
    [self](evict_atom) {
      self->state.evicted = true;
      remove_if_done(self);
    },
    [self](sealed_atom, std::string& path) { self->state.path = std::move(path); },
  };
}

}  // namespace

bucket_actor spawn_bucket(caf::actor_system& system, const catalog_actor& catalog,
                          const file_remover_actor& remover, std::uint64_t id,
                          std::filesystem::path path, bool buffered, bool refuse_o_direct) {
  return system.spawn(bucket, catalog, remover, id, std::move(path), buffered, refuse_o_direct);
}

}  // namespace spillway

// State chart:  serving --evict--> draining (pins > 0) --unpin to 0--> gone
//               serving --evict with no pins--> gone       "gone" = file unlinked, quit
#include "actors/bucket.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace spillway {
namespace {

struct bucket_state {
  std::uint64_t id = 0;
  std::filesystem::path path;
  int fd = -1;
  int open_errno = 0;
  bool direct = false;
  std::uint32_t pins = 0;
  bool evicted = false;
  static inline const char* name = "bucket";

  ~bucket_state() {
    if (fd >= 0) ::close(fd);
  }

  void open_file(bool refuse_o_direct) {
    if (!refuse_o_direct) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    direct = fd >= 0;
    if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    open_errno = fd < 0 ? errno : 0;
  }
};

using bucket_pointer = bucket_actor::stateful_pointer<bucket_state>;

void remove_if_done(bucket_pointer self) {
  auto& st = self->state;
  if (!st.evicted || st.pins != 0) return;
  if (::unlink(st.path.c_str()) != 0)
    spdlog::error("bucket {}: unlink {}: {}", st.id, st.path.string(), std::strerror(errno));
  self->quit();
}

bucket_actor::behavior_type bucket(bucket_pointer self, std::uint64_t id,
                                   std::filesystem::path path, bool refuse_o_direct) {
  self->state.id = id;
  self->state.path = std::move(path);
  self->state.open_file(refuse_o_direct);
  return {
    [self](pin_atom, std::uint32_t n) -> caf::result<pinned_file> {
      auto& st = self->state;
      if (st.fd < 0)
        return caf::make_error(caf::sec::runtime_error,
                               st.path.string() + ": " + std::strerror(st.open_errno));
      st.pins += n;
      return pinned_file{st.fd, st.direct, st.id};
    },
    [self](unpin_atom, std::uint32_t n) {
      auto& st = self->state;
      if (n > st.pins) {  // a caller's bug; never let the count wrap
        spdlog::error("bucket {}: unpin {} with {} pinned", st.id, n, st.pins);
        n = st.pins;
      }
      st.pins -= n;
      remove_if_done(self);
    },
    [self](evict_atom) {
      self->state.evicted = true;
      remove_if_done(self);
    },
  };
}

}  // namespace

bucket_actor spawn_bucket(caf::actor_system& system, std::uint64_t id,
                          std::filesystem::path path, bool refuse_o_direct) {
  return system.spawn(bucket, id, std::move(path), refuse_o_direct);
}

}  // namespace spillway

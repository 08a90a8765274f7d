// Turns are served in order: a reader gets the table, registers it (or fails, and
// keeps reading through plain buffers), answers, and only then does the next one go.
#include "actors/registrar.hpp"

#include <liburing.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <sys/uio.h>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace spillway {
namespace {

struct registrar_state {
  std::chrono::milliseconds turn_timeout{};
  io_uring ring{};
  bool source_ok = false;       // the registrar's own table exists: readers can clone it
  buffer_table table;
  std::vector<reader_actor> readers;
  std::deque<reader_actor> turns;
  bool busy = false;
  static inline const char* name = "registrar";

  ~registrar_state() {
    if (ring.ring_fd <= 0) return;
    io_uring_unregister_buffers(&ring);  // before exit: teardown would pin pages a while
    io_uring_queue_exit(&ring);
  }

  void open_source(std::uint32_t chunks) {
    table.addresses.assign(chunks, 0);
    table.sizes.assign(chunks, 0);
    if (io_uring_queue_init(1, &ring, 0) < 0) return;
    const int rc = io_uring_register_buffers_sparse(&ring, chunks);
    source_ok = rc == 0;
    if (source_ok) table.source_ring_fd = ring.ring_fd;
    else spdlog::info("registrar: no source table ({}): readers register on their own rings",
                      strerrorname_np(-rc));
  }

  void register_chunk(std::uint32_t chunk, std::uint64_t address, std::uint64_t size) {
    table.addresses[chunk] = address;
    table.sizes[chunk] = size;
    if (!source_ok) return;
    iovec iov{reinterpret_cast<void*>(address), size};
    const __u64 tag = 0;
    const int rc = io_uring_register_buffers_update_tag(&ring, chunk, &iov, &tag, 1);
    if (rc < 0) {
      spdlog::warn("registrar: registering chunk {}: {}; readers register on their own rings",
                   chunk, strerrorname_np(-rc));
      source_ok = false;
      table.source_ring_fd = -1;
    }
  }

  void queue_turn(const reader_actor& reader) {
    if (std::find(turns.begin(), turns.end(), reader) == turns.end()) turns.push_back(reader);
  }
};

using registrar_pointer = registrar_actor::stateful_pointer<registrar_state>;

void next_turn(registrar_pointer self) {
  auto& st = self->state;
  if (st.busy || st.turns.empty()) return;
  auto reader = st.turns.front();
  st.turns.pop_front();
  st.busy = true;
  self->request(reader, st.turn_timeout, adopt_atom_v, st.table)
    .then(
      [self](std::int32_t) {  // a reader says itself whether it failed, once
        self->state.busy = false;
        next_turn(self);
      },
      [self, reader](caf::error& err) {
        auto& st = self->state;
        if (err == caf::sec::request_timeout) {
          // Slow, not gone: it answers when it can, and gets the table as it is then.
          st.queue_turn(reader);
        } else {  // gone (restarted or stopping): forget it
          st.readers.erase(std::remove(st.readers.begin(), st.readers.end(), reader),
                           st.readers.end());
        }
        st.busy = false;
        next_turn(self);
      });
}

// A fence of every reader, answered once each has answered or is gone. No timeout: a
// reader answers when its reads complete, and the kernel completes every read.
caf::result<std::uint32_t> fence_all(registrar_pointer self) {
  const auto& readers = self->state.readers;
  if (readers.empty()) return std::uint32_t{0};
  struct tally {
    caf::typed_response_promise<std::uint32_t> promise;
    std::size_t left;
    std::uint32_t answered = 0;
  };
  auto t = std::make_shared<tally>(tally{self->make_response_promise<std::uint32_t>(),
                                         readers.size()});
  for (const auto& r : readers)
    self->request(r, caf::infinite, fence_atom_v)
      .then(
        [t](std::uint32_t) {
          ++t->answered;
          if (--t->left == 0) t->promise.deliver(t->answered);
        },
        [t](caf::error&) {  // gone: it drained its ring before it went (actors/reader.cpp)
          if (--t->left == 0) t->promise.deliver(t->answered);
        });
  return t->promise;
}

registrar_actor::behavior_type registrar(registrar_pointer self, std::uint32_t chunks,
                                         std::chrono::milliseconds turn_timeout) {
  self->state.turn_timeout = turn_timeout;
  self->state.open_source(chunks);
  return {
    [self](caf::add_atom, std::uint32_t chunk, std::uint64_t address, std::uint64_t size) {
      auto& st = self->state;
      st.register_chunk(chunk, address, size);
      for (const auto& r : st.readers) st.queue_turn(r);
      next_turn(self);
    },
    [self](caf::join_atom, reader_actor reader) {
      auto& st = self->state;
      if (std::find(st.readers.begin(), st.readers.end(), reader) == st.readers.end())
        st.readers.push_back(reader);
      st.queue_turn(reader);
      next_turn(self);
    },
    [self](fence_atom) { return fence_all(self); },
  };
}

}  // namespace

registrar_actor spawn_registrar(caf::actor_system& system, std::uint32_t chunk_count,
                                std::chrono::milliseconds turn_timeout) {
  return system.spawn<caf::detached>(registrar, chunk_count, turn_timeout);
}

}  // namespace spillway

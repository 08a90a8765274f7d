#include "actors/file_remover.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace spillway {
namespace {

file_remover_actor::behavior_type file_remover(file_remover_actor::pointer) {
  return {
    [](caf::delete_atom, const std::string& path) {
      if (::unlink(path.c_str()) != 0)
        spdlog::error("unlink {}: {}", path, std::strerror(errno));
    },
  };
}

}  // namespace

file_remover_actor spawn_file_remover(caf::actor_system& system, bool own_thread) {
  if (own_thread) return system.spawn<caf::detached>(file_remover);
  return system.spawn(file_remover);
}

}  // namespace spillway

#include "actors/file_remover.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace spillway {
namespace {

file_remover_actor::behavior_type file_remover(file_remover_actor::pointer,
                                               std::filesystem::path dir) {
  dir = (dir / "file").parent_path();  // as a file's parent_path() spells it: no trailing '/'
  return {
    [dir](caf::delete_atom, const std::string& path) {
      if (std::filesystem::path{path}.parent_path() != dir) {
        spdlog::error("file remover: {} is not in {}: left alone", path, dir.string());
        return;
      }
      if (::unlink(path.c_str()) != 0)
        spdlog::error("unlink {}: {}", path, std::strerror(errno));
    },
  };
}

}  // namespace

file_remover_actor spawn_file_remover(caf::actor_system& system, std::filesystem::path dir,
                                      bool own_thread) {
  if (own_thread) return system.spawn<caf::detached>(file_remover, std::move(dir));
  return system.spawn(file_remover, std::move(dir));
}

}  // namespace spillway

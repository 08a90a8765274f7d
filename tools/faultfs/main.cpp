// spillway-faultfs: a FUSE passthrough whose faults are set at run time.
//   spillway-faultfs --control SOCKET BACKING_DIR MOUNTPOINT
// Serves in the foreground until unmounted (fusermount3 -u MOUNTPOINT) or sent SIGINT or
// SIGTERM. Prints "spillway-faultfs ready" on stderr once the mount and the control
// socket are live: tests wait for that line.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "tools/faultfs/control.hpp"
#include "tools/faultfs/passthrough.hpp"

namespace {

int usage() {
  std::fprintf(stderr, "usage: spillway-faultfs --control SOCKET BACKING_DIR MOUNTPOINT\n");
  return 2;
}

// Mounts, serves until unmounted, unmounts; the exit code.
int serve(faultfs::filesystem& fs, const char* argv0, const char* mountpoint) {
  char name_option[] = "-ofsname=spillway-faultfs,subtype=spillway-faultfs";
  char* fuse_argv[] = {const_cast<char*>(argv0), name_option};
  fuse_args args = FUSE_ARGS_INIT(2, fuse_argv);
  const auto ops = faultfs::passthrough_operations();
  fuse* f = fuse_new(&args, &ops, sizeof ops, &fs);
  if (f == nullptr) return 1;
  int rc = 1;
  if (fuse_mount(f, mountpoint) == 0) {
    if (fuse_set_signal_handlers(fuse_get_session(f)) == 0) {
      std::fprintf(stderr, "spillway-faultfs ready\n");
      // Frozen operations hold their threads: allow many, so the rest keep being served.
      fuse_loop_config* config = fuse_loop_cfg_create();
      fuse_loop_cfg_set_max_threads(config, 256);
      rc = fuse_loop_mt(f, config) == 0 ? 0 : 1;
      fuse_loop_cfg_destroy(config);
      fuse_remove_signal_handlers(fuse_get_session(f));
    }
    fuse_unmount(f);
  }
  fuse_destroy(f);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || std::strcmp(argv[1], "--control") != 0) return usage();
  faultfs::filesystem fs;
  fs.backing_fd = ::open(argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fs.backing_fd < 0) {
    std::fprintf(stderr, "spillway-faultfs: %s: %s\n", argv[3], std::strerror(errno));
    return 1;
  }
  faultfs::rule_book rules;
  fs.rules = &rules;
  try {
    faultfs::control_server control{argv[2], rules};
    return serve(fs, argv[0], argv[4]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spillway-faultfs: %s\n", e.what());
    return 1;
  }
}

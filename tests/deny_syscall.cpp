// spillway-deny-syscall SYSCALL ERRNO -- COMMAND [ARGS...]: runs COMMAND with one system
// call answered by the kernel with ERRNO (a seccomp filter, libseccomp), so a test sees
// the runtime on a kernel that lacks a feature: io_uring_setup answering ENOSYS is a
// kernel built without io_uring, or one where it is disabled by sysctl or a container's
// seccomp profile. The filter is inherited across execve and cannot be lifted.
#include <seccomp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

int errno_named(std::string_view name) {
  for (int e = 1; e < 200; ++e)
    if (const char* n = strerrorname_np(e); n && name == n) return e;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || std::string_view{argv[3]} != "--") {
    std::fprintf(stderr, "usage: %s SYSCALL ERRNO -- COMMAND [ARGS...]\n", argv[0]);
    return 2;
  }
  const int call = seccomp_syscall_resolve_name(argv[1]);
  const int error = errno_named(argv[2]);
  if (call == __NR_SCMP_ERROR || error < 0) {
    std::fprintf(stderr, "%s: unknown %s\n", argv[0],
                 call == __NR_SCMP_ERROR ? "system call" : "errno name");
    return 2;
  }
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  int rc = filter ? seccomp_rule_add(filter, SCMP_ACT_ERRNO(static_cast<std::uint32_t>(error)),
                                     call, 0)
                  : -ENOMEM;
  if (rc == 0) rc = seccomp_load(filter);
  seccomp_release(filter);
  if (rc < 0) {
    std::fprintf(stderr, "%s: seccomp: %s\n", argv[0], std::strerror(-rc));
    return 3;
  }
  ::execvp(argv[4], argv + 4);
  std::fprintf(stderr, "%s: %s: %s\n", argv[0], argv[4], std::strerror(errno));
  return 127;
}

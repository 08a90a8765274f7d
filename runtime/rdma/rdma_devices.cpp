// Lists the RDMA devices rdma-core can see, by name. A machine without an RDMA stack
// answers NULL with an errno (ENOSYS here) rather than an empty list; both mean "no
// device", and the errno is kept only so that a report can say which case it was.
#include "runtime/rdma/rdma_devices.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <memory>

namespace spillway {

rdma_device_list list_rdma_devices() {
  rdma_device_list list;
  int count = 0;
  errno = 0;
  const std::unique_ptr<ibv_device*[], decltype(&ibv_free_device_list)> devices(
      ibv_get_device_list(&count), &ibv_free_device_list);
  if (!devices) {
    list.list_errno = errno;
    return list;
  }
  for (int i = 0; i < count; ++i) list.names.emplace_back(ibv_get_device_name(devices[i]));
  return list;
}

}  // namespace spillway

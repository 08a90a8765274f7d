// RDMA devices as rdma-core sees them. No device is an answer, not an error.
#pragma once

#include <string>
#include <vector>

namespace spillway {

struct rdma_device_list {
  std::vector<std::string> names;  // ibv_get_device_name of each device
  int list_errno = 0;              // errno when ibv_get_device_list returned NULL
};
rdma_device_list list_rdma_devices();

}  // namespace spillway

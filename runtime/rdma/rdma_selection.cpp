#include "runtime/rdma/rdma_selection.hpp"

#include <algorithm>
#include <cstring>

namespace spillway {

std::vector<std::string> select_rdma_devices(const rdma_device_list& found,
                                             const std::vector<std::string>& wanted) {
  if (found.names.empty())
    throw rdma_setup_error(
      "transfer.transport = \"rdma\", but this machine has no RDMA device "
      "(ibv_get_device_list: " +
      std::string{found.list_errno ? strerrorname_np(found.list_errno) : "no device"} +
      "); set transfer.transport = \"tcp\"");
  if (wanted.empty()) return found.names;
  for (const auto& name : wanted) {
    if (std::find(found.names.begin(), found.names.end(), name) != found.names.end()) continue;
    std::string names;
    for (const auto& n : found.names) names += (names.empty() ? "" : ", ") + n;
    throw rdma_setup_error("transfer.rdma_devices: no RDMA device \"" + name +
                           "\" on this machine (found: " + names + ")");
  }
  return wanted;
}

}  // namespace spillway

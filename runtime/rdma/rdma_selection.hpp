// Which RDMA devices transfer.transport = "rdma" uses: those transfer.rdma_devices
// names, or every device found when it names none. A pure function over device names
// so that its errors are tested on machines with no device; there is never a fake
// device and never a quiet switch to tcp.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/rdma/rdma_devices.hpp"

namespace spillway {

// What() names the config key and the way out.
class rdma_setup_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The devices to open, in the order `wanted` lists them. Throws rdma_setup_error when
// `found` is empty (naming tcp) or `wanted` names a device not found (naming the ones
// that were).
std::vector<std::string> select_rdma_devices(const rdma_device_list& found,
                                             const std::vector<std::string>& wanted);

}  // namespace spillway

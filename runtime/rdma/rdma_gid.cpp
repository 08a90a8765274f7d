#include "runtime/rdma/rdma_gid.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "runtime/rdma/rdma_selection.hpp"

namespace spillway {
namespace {

bool ipv4_mapped(const ibv_gid& gid) {
  return std::all_of(gid.raw, gid.raw + 10, [](std::uint8_t b) { return b == 0; }) &&
         gid.raw[10] == 0xff && gid.raw[11] == 0xff;
}

rdma_gid_choice chosen(const ibv_gid_entry& entry, bool global) {
  return {static_cast<std::uint8_t>(entry.gid_index), entry.gid, global};
}

std::string type_name(std::uint32_t type) {
  switch (type) {
    case IBV_GID_TYPE_IB: return "IB";
    case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
    default: return "type " + std::to_string(type);
  }
}

// "0 (RoCE v1 fe80::1), 1 (RoCE v2 ::ffff:10.0.0.1)": what an operator picks from.
std::string listing(const std::vector<ibv_gid_entry>& table) {
  std::string out;
  for (const auto& e : table) {
    char address[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, e.gid.raw, address, sizeof address);
    out += (out.empty() ? "" : ", ") + std::to_string(e.gid_index) + " (" +
           type_name(e.gid_type) + " " + address + ")";
  }
  return out;
}

}  // namespace

rdma_gid_choice choose_gid(const std::string& port, std::uint8_t link_layer,
                           const std::vector<ibv_gid_entry>& table, std::int64_t wanted) {
  if (table.empty())
    throw rdma_setup_error(port + " has no GID: a RoCE port takes its GIDs from the addresses "
                           "of its net device, which needs one");
  if (wanted >= 0) {
    for (const auto& e : table)
      if (e.gid_index == wanted) return chosen(e, true);
    throw rdma_setup_error("transfer.rdma_gid_index = " + std::to_string(wanted) + ": " + port +
                           " has no GID there (it has " + listing(table) + ")");
  }
  if (link_layer != IBV_LINK_LAYER_ETHERNET) return chosen(table.front(), false);
  for (const auto& e : table)
    if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && ipv4_mapped(e.gid)) return chosen(e, true);
  return chosen(table.front(), true);
}

}  // namespace spillway

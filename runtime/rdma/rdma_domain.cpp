#include "runtime/rdma/rdma_domain.hpp"

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "runtime/rdma/rdma_devices.hpp"
#include "runtime/rdma/rdma_selection.hpp"

namespace spillway {
namespace {

// sgid_index is 8 bits: a GID further down the table cannot be sent from.
constexpr int gid_index_limit = 256;

// The port's valid GIDs in index order; an index in range with no GID answers ENODATA.
std::vector<ibv_gid_entry> gid_table(const rdma_device& d, std::uint8_t port_num, int length) {
  std::vector<ibv_gid_entry> table;
  for (int i = 0; i < std::min(length, gid_index_limit); ++i) {
    ibv_gid_entry entry{};
    const int error = ibv_query_gid_ex(d.context.get(), port_num, static_cast<std::uint32_t>(i),
                                       &entry, 0);
    if (error == ENODATA) continue;
    verbs_check(error, d.name + ": ibv_query_gid_ex");
    table.push_back(entry);
  }
  return table;
}

rdma_device open_device(ibv_device* found, std::uint8_t port_num, std::int64_t gid_index) {
  rdma_device d;
  d.name = ibv_get_device_name(found);
  d.context = verbs_created<rdma_context>(ibv_open_device(found), d.name + ": ibv_open_device");
  d.pd = verbs_created<rdma_pd>(ibv_alloc_pd(d.context.get()), d.name + ": ibv_alloc_pd");
  ibv_device_attr device{};
  verbs_check(ibv_query_device(d.context.get(), &device), d.name + ": ibv_query_device");
  const auto port_name = d.name + " port " + std::to_string(port_num);
  if (port_num > device.phys_port_cnt)
    throw rdma_setup_error("transfer.rdma_port = " + std::to_string(port_num) + ": " + d.name +
                           " has " + std::to_string(device.phys_port_cnt) + " port(s)");
  ibv_port_attr port{};
  verbs_check(ibv_query_port(d.context.get(), port_num, &port), port_name + ": ibv_query_port");
  if (port.state != IBV_PORT_ACTIVE)
    throw rdma_setup_error(port_name + " is not active (" + ibv_port_state_str(port.state) +
                           "); name an active one in transfer.rdma_devices and "
                           "transfer.rdma_port");
  const auto gid = choose_gid(port_name, port.link_layer,
                              gid_table(d, port_num, port.gid_tbl_len), gid_index);
  d.gid = gid.gid;
  d.settings = port_settings_from(device, port, port_num, gid);
  d.lid = port.lid;
  d.max_wr = static_cast<std::uint32_t>(std::max(1, std::min(device.max_qp_wr, device.max_cqe)));
  return d;
}

}  // namespace

rdma_domain::rdma_domain(const rdma_domain_settings& settings) {
  const auto names = select_rdma_devices(list_rdma_devices(), settings.devices);
  int count = 0;
  const std::unique_ptr<ibv_device*[], decltype(&ibv_free_device_list)> found(
    ibv_get_device_list(&count), &ibv_free_device_list);
  for (const auto& name : names)
    for (int i = 0; found && i < count; ++i)
      if (name == ibv_get_device_name(found[i]))
        devices_.push_back(open_device(found[i], settings.port, settings.gid_index));
  if (devices_.size() != names.size())  // unplugged between the two lists
    throw rdma_setup_error("transfer.rdma_devices: a device went away while it was opened");
}

std::uint32_t rdma_domain::register_memory(std::byte* base, std::uint64_t length,
                                           bool remote_write) {
  region r{base, length, {}};
  const int access =
    remote_write ? rdma_access_flags : (rdma_access_flags & ~IBV_ACCESS_REMOTE_WRITE);
  for (const auto& d : devices_) {
    auto* mr = ibv_reg_mr(d.pd.get(), base, length, access);
    r.mrs.push_back(verbs_created<rdma_mr>(mr, d.name + ": ibv_reg_mr"));
  }
  const auto rkey = r.mrs.front()->rkey;
  std::unique_lock lock{mutex_};
  regions_.push_back(std::move(r));
  return rkey;
}

void rdma_domain::deregister_memory(const std::byte* base, std::uint64_t length) {
  std::unique_lock lock{mutex_};
  std::erase_if(regions_, [&](const region& r) { return r.base == base && r.length == length; });
}

std::optional<std::uint32_t> rdma_domain::local_key(std::size_t device, const std::byte* address,
                                                    std::uint64_t length) const {
  // A region is checked as a segment is: the same bounds, the same overflow check.
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::shared_lock lock{mutex_};
  for (const auto& r : regions_) {
    const auto base = reinterpret_cast<std::uintptr_t>(r.base);
    const segment_descriptor bounds{0, base, r.length, 0};
    if (at >= base && check_bounds(&bounds, at - base, length) == transfer_error::none)
      return r.mrs[device]->lkey;
  }
  return std::nullopt;
}

std::vector<segment_descriptor> rdma_domain::on_device(
  std::size_t device, std::vector<segment_descriptor> segments) const {
  std::shared_lock lock{mutex_};
  std::erase_if(segments, [&](segment_descriptor& s) {
    for (const auto& r : regions_)
      if (reinterpret_cast<std::uint64_t>(r.base) == s.base && r.length == s.length) {
        s.rkey = r.mrs[device]->rkey;
        return false;
      }
    return true;
  });
  return segments;
}

}  // namespace spillway

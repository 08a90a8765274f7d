// RDMA setup without a device: which devices transfer.rdma_devices selects and the
// named errors when there are none or a name is not found (device name lists given
// to the pure selection; nothing is opened), which GID of a port's table the queue
// pairs send from (transfer.rdma_gid_index, or the rule), and the QP info a requester
// and an owner exchange, round-tripped through CAF's middleman: straight to an rdma
// host, and through the owner's transfer host (the node's control channel) as a route
// does, a segment registered after one exchange reaching the requester at the next.
#include <doctest/doctest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/exit_guard.hpp"
#include "actors/transfer_engine.hpp"
#include "actors/transport_host.hpp"
#include "messages/transfer.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/rdma/rdma_devices.hpp"
#include "runtime/rdma/rdma_gid.hpp"
#include "runtime/rdma/rdma_selection.hpp"
#include "runtime/rdma/rdma_work_request.hpp"
#include "tests/skip.hpp"

namespace spillway {
namespace {

std::string selection_error(const rdma_device_list& found,
                            const std::vector<std::string>& wanted) {
  try {
    select_rdma_devices(found, wanted);
  } catch (const rdma_setup_error& e) {
    return e.what();
  }
  return {};
}

ibv_gid_entry gid_entry(std::uint32_t index, ibv_gid_type type, const char* address) {
  ibv_gid_entry entry{};
  entry.gid_index = index;
  entry.gid_type = type;
  REQUIRE(inet_pton(AF_INET6, address, entry.gid.raw) == 1);
  return entry;
}

// A RoCE port as mlx5 fills its table: each address once as RoCE v1 and once as v2.
std::vector<ibv_gid_entry> roce_table() {
  return {gid_entry(0, IBV_GID_TYPE_ROCE_V1, "fe80::1"),
          gid_entry(1, IBV_GID_TYPE_ROCE_V2, "fe80::1"),
          gid_entry(2, IBV_GID_TYPE_ROCE_V1, "::ffff:10.0.0.7"),
          gid_entry(3, IBV_GID_TYPE_ROCE_V2, "::ffff:10.0.0.7"),
          gid_entry(4, IBV_GID_TYPE_ROCE_V2, "::ffff:10.0.0.8")};
}

std::string choice_error(const std::vector<ibv_gid_entry>& table, std::int64_t wanted) {
  try {
    choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_ETHERNET, table, wanted);
  } catch (const rdma_setup_error& e) {
    return e.what();
  }
  return {};
}

// Answers every connect with `own` and keeps what the requester sent.
rdma_host_actor::behavior_type qp_owner(rdma_qp_info own,
                                        std::shared_ptr<rdma_qp_info> received) {
  return {
    [own, received](caf::connect_atom, rdma_qp_info& theirs) {
      *received = std::move(theirs);
      return own;
    },
  };
}

// Answers every connect as an rdma host does: with the segments registered by then.
rdma_host_actor::behavior_type live_owner(rdma_qp_info own,
                                          std::shared_ptr<const segment_table> segments) {
  return {
    [own, segments](caf::connect_atom, rdma_qp_info&) {
      auto answer = own;
      answer.segments = segments->list();
      return answer;
    },
  };
}

TEST_SUITE("transfer-rdma") {

TEST_CASE("rdma with no device found is an error that names tcp") {
  const auto message = selection_error({{}, ENOSYS}, {});
  CHECK(message.find("ENOSYS") != std::string::npos);
  CHECK(message.find("transfer.transport = \"tcp\"") != std::string::npos);
  CHECK(selection_error({{}, 0}, {"mlx5_0"}).find("\"tcp\"") != std::string::npos);
}

TEST_CASE("rdma device names not found are a named error") {
  const rdma_device_list found{{"mlx5_0", "mlx5_1"}, 0};
  const auto message = selection_error(found, {"mlx5_1", "mlx5_9"});
  CHECK(message.find("transfer.rdma_devices") != std::string::npos);
  CHECK(message.find("\"mlx5_9\"") != std::string::npos);
  CHECK(message.find("found: mlx5_0, mlx5_1") != std::string::npos);
}

TEST_CASE("rdma devices named are selected in order and none named means all") {
  const rdma_device_list found{{"mlx5_0", "mlx5_1"}, 0};
  CHECK(select_rdma_devices(found, {}) == found.names);
  CHECK(select_rdma_devices(found, {"mlx5_1", "mlx5_0"}) ==
        std::vector<std::string>{"mlx5_1", "mlx5_0"});
}

TEST_CASE("rdma on RoCE sends from the port's first RoCE v2 GID with an IPv4 address") {
  const auto table = roce_table();
  const auto chosen = choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_ETHERNET, table, -1);
  CHECK(chosen.index == 3);
  CHECK(chosen.global);
  CHECK(std::equal(chosen.gid.raw, chosen.gid.raw + 16, table[3].gid.raw));
}

TEST_CASE("rdma on RoCE without an IPv4 RoCE v2 GID sends from the port's first GID") {
  const std::vector<ibv_gid_entry> ipv6_only{gid_entry(0, IBV_GID_TYPE_ROCE_V1, "fe80::1"),
                                             gid_entry(1, IBV_GID_TYPE_ROCE_V2, "fe80::1"),
                                             gid_entry(2, IBV_GID_TYPE_ROCE_V2, "2001:db8::7")};
  auto chosen = choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_ETHERNET, ipv6_only, -1);
  CHECK(chosen.index == 0);
  CHECK(chosen.global);
  // IPv4-mapped, but RoCE v1: not routable, so not preferred.
  const std::vector<ibv_gid_entry> v1_only{gid_entry(5, IBV_GID_TYPE_ROCE_V1, "fe80::1"),
                                           gid_entry(6, IBV_GID_TYPE_ROCE_V1, "::ffff:10.0.0.7")};
  chosen = choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_ETHERNET, v1_only, -1);
  CHECK(chosen.index == 5);
}

TEST_CASE("rdma on InfiniBand addresses by LID unless a GID index is named") {
  const std::vector<ibv_gid_entry> table{gid_entry(0, IBV_GID_TYPE_IB, "fe80::2:c903:a:b0c"),
                                         gid_entry(1, IBV_GID_TYPE_IB, "fec0::2:c903:a:b0c")};
  auto chosen = choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_INFINIBAND, table, -1);
  CHECK(chosen.index == 0);
  CHECK_FALSE(chosen.global);
  CHECK(std::equal(chosen.gid.raw, chosen.gid.raw + 16, table[0].gid.raw));
  chosen = choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_INFINIBAND, table, 1);
  CHECK(chosen.index == 1);
  CHECK(chosen.global);
}

TEST_CASE("rdma GID index named is used as it is") {
  const auto table = roce_table();
  const auto chosen = choose_gid("mlx5_0 port 1", IBV_LINK_LAYER_ETHERNET, table, 1);
  CHECK(chosen.index == 1);
  CHECK(chosen.global);
  CHECK(std::equal(chosen.gid.raw, chosen.gid.raw + 16, table[1].gid.raw));
}

TEST_CASE("rdma GID index the port lacks is a named error listing the ones it has") {
  const auto message = choice_error(roce_table(), 7);
  CHECK(message.find("transfer.rdma_gid_index = 7: mlx5_0 port 1 has no GID there") !=
        std::string::npos);
  CHECK(message.find("0 (RoCE v1 fe80::1), 1 (RoCE v2 fe80::1), 2 (RoCE v1 ::ffff:10.0.0.7)") !=
        std::string::npos);
  CHECK(message.find("4 (RoCE v2 ::ffff:10.0.0.8)") != std::string::npos);
}

TEST_CASE("rdma port without a GID is a named error") {
  for (const std::int64_t wanted : {-1, 0}) {
    const auto message = choice_error({}, wanted);
    CHECK(message.find("mlx5_0 port 1 has no GID") != std::string::npos);
  }
}

// Two actor systems, as two nodes: the owner publishes `host`; the requester connects.
struct two_systems {
  caf::actor_system_config owner_config, requester_config;
  caf::actor_system owner{configure_actor_system(owner_config)};
  caf::actor_system requester{configure_actor_system(requester_config)};

  template <class Handle>
  Handle reach(const Handle& host) {
    auto port = owner.middleman().publish(host, 0, "127.0.0.1");
    REQUIRE(port);
    auto remote = requester.middleman().remote_actor<Handle>("127.0.0.1", *port);
    REQUIRE(remote);
    return *remote;
  }

  // What a peer does before its handshakes: describe, which admits it.
  void describe_first(const transfer_host_actor& remote) {
    caf::scoped_actor self{requester};
    self->request(remote, std::chrono::seconds(30), describe_atom_v)
      .receive([](transfer_peer_info&) {}, [&](caf::error& err) { FAIL(requester.render(err)); });
  }

  // The handshake's answer, or the rendered error.
  template <class Handle>
  std::pair<rdma_qp_info, std::string> connect(const Handle& remote, const rdma_qp_info& mine) {
    caf::scoped_actor self{requester};
    std::pair<rdma_qp_info, std::string> result;
    self->request(remote, std::chrono::seconds(30), caf::connect_atom_v, mine)
      .receive([&](rdma_qp_info& info) { result.first = std::move(info); },
               [&](caf::error& err) { result.second = requester.render(err); });
    return result;
  }
};

const rdma_qp_info mine{0x1234, 0xabcdef, 7, 1, 0xfe80000000000000, 0x0202c9fffe000001,
                        {{1, 0x7f0000000000, 1 << 20, 0x55}}};
const rdma_qp_info theirs{0x99, 0x10, 0, 2, 0xfe80000000000000, 0x2,
                          {{1, 0x7e0000000000, 1 << 21, 0x66}, {2, 0x7e1000000000, 4096, 0x67}}};

TEST_CASE_FIXTURE(two_systems, "rdma QP info goes to the owner and back by message") {
  auto received = std::make_shared<rdma_qp_info>();
  auto host = owner.spawn(qp_owner, theirs, received);
  const auto [answer, error] = connect(reach(host), mine);
  CHECK(error.empty());
  CHECK(answer == theirs);
  CHECK(*received == mine);
  caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(two_systems, "rdma QP info reaches the rdma host through the transfer host") {
  auto received = std::make_shared<rdma_qp_info>();
  auto rdma = owner.spawn(qp_owner, theirs, received);
  auto host = spawn_transport_host(
    owner, {std::make_shared<segment_table>(), std::make_shared<lane_admission>(), 0, rdma});
  const auto remote = reach(host);
  const auto [refused, why] = connect(remote, mine);  // before describe: not admitted
  CHECK(why.find("describe first") != std::string::npos);
  CHECK(received->qp_num == 0);  // never reached the rdma host
  describe_first(remote);
  const auto [answer, error] = connect(remote, mine);
  CHECK(error.empty());
  CHECK(answer == theirs);
  CHECK(*received == mine);
  stop_exit_guard(caf::actor_cast<caf::actor>(host));
  caf::anon_send_exit(rdma, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(two_systems, "rdma segment registered after a handshake is in the next answer") {
  auto segments = std::make_shared<segment_table>();
  std::byte first[64], later[64];
  segments->add(first, sizeof first, {}, 0x11);
  auto rdma = owner.spawn(live_owner, theirs, segments);
  auto host =
    spawn_transport_host(owner, {segments, std::make_shared<lane_admission>(), 0, rdma});
  const auto remote = reach(host);
  describe_first(remote);
  slice_pool pool{1, 2};
  auto& group = *pool.take();
  group.append().segment = 1;
  group.append().segment = 2;  // not registered yet when the QP connects
  const auto [before, error] = connect(remote, mine);
  REQUIRE(error.empty());
  CHECK_FALSE(knows_every_segment(before.segments, group));  // so the QP connects again
  segments->add(later, sizeof later, {}, 0x22);
  const auto [after, again] = connect(remote, mine);
  REQUIRE(again.empty());
  CHECK(knows_every_segment(after.segments, group));
  REQUIRE(find_segment(after.segments, 2) != nullptr);
  CHECK(find_segment(after.segments, 2)->rkey == 0x22);
  CHECK(find_segment(after.segments, 2)->base == reinterpret_cast<std::uint64_t>(later));
  stop_exit_guard(caf::actor_cast<caf::actor>(host));
  caf::anon_send_exit(rdma, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(two_systems, "rdma handshake with a node whose transport is not rdma is named") {
  auto host = spawn_transport_host(
    owner, {std::make_shared<segment_table>(), std::make_shared<lane_admission>(), 0, {}});
  const auto [answer, error] = connect(reach(host), mine);
  CHECK(error.find("transfer.transport is not") != std::string::npos);
  CHECK(answer == rdma_qp_info{});
  stop_exit_guard(caf::actor_cast<caf::actor>(host));
}

TEST_CASE("an rdma transfer engine without a device refuses to start and names tcp") {
  if (!list_rdma_devices().names.empty()) {
    return test::skip_test("this machine has an RDMA device");
  }
  caf::actor_system_config config;
  caf::actor_system system{configure_actor_system(config)};
  transfer_section transfer;
  transfer.transport = "rdma";
  transfer_engine engine{system, transfer, fault_section{}};
  std::byte memory[64];
  std::string message;
  try {
    engine.register_segment(memory, sizeof memory, {});
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message.find("transfer.transport = \"tcp\"") != std::string::npos);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

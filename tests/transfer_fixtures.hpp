// What the tests that transfer to another process share (the tcp transport's and the
// node API's): a `spillway transfer-peer` child, an actor system that can ask it for
// checksums, and bytes worth sending.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "config/config.hpp"
#include "runtime/io/unique_fd.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"

namespace spillway::test {

// The peer child: started with a node config of the test's own (a [fault] section, a
// control port), its ready line parsed for its ports and the segment it owns.
class transfer_peer_child {
public:
  // Writes `config_toml` to a file of its own and passes it with -c; REQUIREs the
  // ready line within a bound for a hung child. Its segments are exported to the
  // transfer identities `export_to` (node::transfer_identity(), transfer_identity()).
  transfer_peer_child(std::string_view config_toml, std::string segment_size,
                      const std::vector<std::string>& export_to);

  std::uint16_t control_port = 0;  // its transfer host: descriptors, checksums
  std::uint16_t data_port = 0;     // its tcp server
  std::uint64_t segment = 0;       // the id of the segment it owns, read-write
  std::uint64_t read_only_segment = 0;  // 64 KiB more, exported read-only

  child_process& process() { return process_; }

private:
  temp_dir dir_;  // holds the config file; declared first, so it outlives the child
  child_process process_;
};

// An actor system that reaches other processes: CAF's middleman loaded and spillway's
// message types registered, like the peer's own.
struct networked_system {
  caf::actor_system_config config;
  caf::actor_system system;

  networked_system();
};

// A node that transfers over `transport` on loopback, its data in `dir`, serving nothing
// else: one reader, one slicer, two tcp lanes.
node_config transfer_node(const temp_dir& dir, const std::string& transport);

// A connection to a tcp server at `port` that opened with a hello carrying the ticket
// (route, secret), as a lane's does; REQUIREs it.
unique_fd admitted_connection(std::uint16_t port, std::uint64_t route, const std::string& secret);
// The hello frame and secret as a lane sends them, for tests that write raw frames.
std::vector<std::byte> hello_bytes(std::uint64_t route, const std::string& secret);

// Bytes that differ from seed to seed, so a transfer that did nothing cannot pass.
std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed);

// A loopback port that nothing listens on at the time of the call, for a config that
// must name one; the caller binds it next.
std::uint16_t unused_port();

}  // namespace spillway::test

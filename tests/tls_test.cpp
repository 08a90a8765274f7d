// The control channel's TLS with mutual authentication (runtime/tls.hpp) and the
// hardening of CAF's middleman (actors/exit_guard.hpp, runtime/control_channel.hpp),
// against real `spillway serve` processes on 127.0.0.1. Certificates are made at test
// time with the openssl command: a cluster CA that signs the nodes' and a client's, and
// a rogue CA that signs one more; a test skips where the command is missing.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config_value.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "messages/service.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/client.hpp"
#include "runtime/control_channel.hpp"
#include "runtime/net/tcp_socket.hpp"
#include "runtime/node.hpp"
#include "tests/caller_memory.hpp"
#include "tests/log_capture.hpp"
#include "tests/node_leaks.hpp"
#include "tests/serve_process.hpp"
#include "tests/skip.hpp"
#include "tests/subprocess.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_config.hpp"
#include "tools/generated_value.hpp"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using keys = std::vector<std::string>;

constexpr auto patience = 30s;  // bounds a peer that hangs; never a synchronisation

// The openssl command, or "" where this machine has none.
std::string openssl_command() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"})
    if (const auto path = std::filesystem::path{dir} / "openssl"; std::filesystem::exists(path))
      return path.string();
  return {};
}

// A cluster CA and a rogue one, and certificates: "node" and "client" signed by the
// cluster CA, "rogue" by the rogue CA. EC P-256 keys: quick to make.
class certificates {
public:
  certificates() : openssl_(openssl_command()) {
    if (openssl_.empty()) return;
    authority("ca");
    authority("rogue-ca");
    issue("node", "ca");
    issue("client", "ca");
    issue("rogue", "rogue-ca");
  }

  bool usable() const { return !openssl_.empty(); }
  const std::string& openssl() const { return openssl_; }

  // The [security] settings of `name`'s certificate, trusting the cluster CA.
  security_section of(const std::string& name) const {
    security_section s;
    s.certificate = pem(name);
    s.key = key(name);
    s.ca_file = pem("ca");
    return s;
  }

  // The same as the lines of a [security] table.
  std::string toml(const std::string& name) const {
    const auto s = of(name);
    return "certificate = \"" + s.certificate + "\"\nkey = \"" + s.key + "\"\nca_file = \"" +
           s.ca_file + "\"\n";
  }

  std::string pem(const std::string& name) const { return (dir_.path() / (name + ".pem")).string(); }
  std::string key(const std::string& name) const { return (dir_.path() / (name + ".key")).string(); }

private:
  void run(std::vector<std::string> args) const {
    args.insert(args.begin(), openssl_);
    const auto done = test::run_command(args);
    REQUIRE_MESSAGE(done.exit_code == 0, done.err);
  }
  void authority(const std::string& name) const {
    run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key(name), "-out", pem(name), "-days", "2", "-subj", "/CN=spillway " + name});
  }
  void issue(const std::string& name, const std::string& ca) const {
    const auto request = (dir_.path() / (name + ".csr")).string();
    run({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
         key(name), "-out", request, "-subj", "/CN=spillway " + name});
    run({"x509", "-req", "-in", request, "-CA", pem(ca), "-CAkey", key(ca), "-CAcreateserial",
         "-out", pem(name), "-days", "2"});
  }

  test::temp_dir dir_;
  std::string openssl_;
};

// An actor system of another process, in this one, with `security`'s certificate (none:
// plain BASP): it reaches a node's service as a peer would, without the client's
// reconnects, so that a connection that dies stays dead.
struct peer {
  caf::actor_system_config config;
  std::optional<caf::actor_system> system;

  explicit peer(const security_section& security = {}) {
    configure_actor_system(config, 2, security);
    system.emplace(config);
  }

  // The node service on 127.0.0.1:port, or why not.
  caf::expected<remote_node_actor> connect(std::uint16_t port) {
    caf::scoped_actor self{*system};
    caf::expected<remote_node_actor> out{caf::make_error(caf::sec::runtime_error)};
    self->request(control_middleman(*system), patience, caf::connect_atom_v,
                  std::string{"127.0.0.1"}, port)
      .receive(
        [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& interface) {
          if (ptr && system->assignable<remote_node_actor>(interface))
            out = caf::actor_cast<remote_node_actor>(std::move(ptr));
          else
            out = caf::make_error(caf::sec::unexpected_actor_messaging_interface);
        },
        [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  // The node's report, asked over `remote`; also checks that the guard answered, not
  // the service behind it (which no peer may learn of).
  node_report report(const remote_node_actor& remote) {
    caf::scoped_actor self{*system};
    node_report out;
    self->request(remote, patience, report_atom_v)
      .receive(
        [&](node_report& r) {
          CHECK(self->current_sender() == caf::actor_cast<caf::strong_actor_ptr>(remote));
          out = std::move(r);
        },
        [&](caf::error& err) { FAIL("report: " << system->render(err)); });
    return out;
  }
};

// Sends `bytes` on a connection of its own; true once the node has closed it.
bool hung_up_after(std::uint16_t port, const std::string& bytes) {
  int error = 0;
  const auto connection = connect_tcp("127.0.0.1", port, error);
  REQUIRE_MESSAGE(connection, std::strerror(error));
  REQUIRE(send_all(connection.get(), bytes.data(), bytes.size()));
  const timeval wait{30, 0};
  ::setsockopt(connection.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char sink[4096];
  for (;;) {  // a TLS alert may come first, then the close
    const auto got = ::recv(connection.get(), sink, sizeof sink, 0);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) return true;
    if (got < 0) return false;
  }
}

// A BASP header (CAF 0.17.6, 32 bytes, big endian) of a direct message whose payload is
// 4 GiB - 1: what makes a plain middleman allocate and zero 4 GiB before it reads on.
std::string oversized_basp_header() {
  std::string h(32, '\0');
  h[0] = 2;                                    // direct_message
  for (int i = 4; i < 8; ++i) h[i] = '\xff';   // payload_len
  h[31] = 1;                                   // dest_actor
  return h;
}

// The peak resident memory of process `pid`, in KiB.
std::size_t peak_rss_kib(pid_t pid) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stoul(line.substr(6));
  return 0;
}

// A node of `certs`' cluster: TLS on its control channel, with the node certificate.
void with_tls(test::serve_process& node, const certificates& certs) {
  node.security_keys = certs.toml("node");
}

TEST_SUITE("tls") {

TEST_CASE("tls: two nodes with the cluster's certificates serve put and get_into to a client "
          "with one") {
  certificates certs;
  if (!certs.usable()) return test::skip_test("no openssl command to make certificates with");
  std::vector<test::serve_process> nodes(2);
  cluster_section cluster;
  for (auto& n : nodes) {
    with_tls(n, certs);
    n.start();
    CHECK(n.process().err().find("(TLS)") != std::string::npos);
    cluster.nodes.push_back(n.address());
  }
  cluster.request_timeout_ms = 20000;
  client c{cluster, client_transfer_defaults(), certs.of("client")};
  REQUIRE(c.await_connected(patience) == nodes.size());
  keys names, values;
  for (std::size_t i = 0; i < 40; ++i) {
    names.push_back(generated_key("tls/", i));
    values.push_back(generated_value(i % 2 ? 70000 : 300000, 18, names.back()));
  }
  for (const auto& s : c.put(names, values)) REQUIRE(s.ok());
  std::vector<std::size_t> sizes;
  for (const auto& v : values) sizes.push_back(v.size());
  test::caller_memory memory{sizes, 0, 0};
  c.register_memory(memory.base(), memory.size());  // the nodes reach it over TLS too
  std::vector<std::size_t> got_sizes;
  const auto got = c.get_into(names, memory.buffers(), got_sizes);
  for (std::size_t k = 0; k < names.size(); ++k) {
    REQUIRE_MESSAGE(got[k].ok(), names[k] << ": " << to_string(got[k]));
    CHECK(memory.holds(k, values[k]));
  }
}

TEST_CASE("tls: a peer without a certificate is refused and named in the node log and a "
          "client connected before keeps being served") {
  certificates certs;
  if (!certs.usable()) return test::skip_test("no openssl command to make certificates with");
  test::serve_process node;
  with_tls(node, certs);
  node.start();
  peer good{certs.of("client")};
  auto before = good.connect(node.port());
  REQUIRE_MESSAGE(before, good.system->render(before.error()));
  good.report(*before);

  // openssl s_client trusts the node but shows no certificate of its own.
  test::run_command({certs.openssl(), "s_client", "-connect", node.address(), "-CAfile",
                     certs.pem("ca")});
  REQUIRE(node.process().wait_for_stderr("TLS: refused peer 127.0.0.1:", patience));
  CHECK(node.process().err().find("peer did not return a certificate") != std::string::npos);

  // The refusal left OpenSSL's error queue of the node's network thread full: without
  // tls.cpp's wrappers, the next read of the connection made before failed with it.
  good.report(*before);
  peer later{certs.of("client")};
  auto after = later.connect(node.port());
  REQUIRE_MESSAGE(after, later.system->render(after.error()));
  later.report(*after);
}

TEST_CASE("tls: a client whose certificate another CA signed is refused and named in the "
          "node log and the node keeps serving") {
  certificates certs;
  if (!certs.usable()) return test::skip_test("no openssl command to make certificates with");
  test::serve_process node;
  with_tls(node, certs);
  node.start();
  auto rogue_settings = certs.of("rogue");  // trusts the node, signed by the rogue CA
  peer rogue{rogue_settings};
  CHECK_FALSE(rogue.connect(node.port()));
  REQUIRE(node.process().wait_for_stderr("TLS: refused peer 127.0.0.1:", patience));
  CHECK(node.process().err().find("unable to get local issuer certificate") !=
        std::string::npos);
  peer good{certs.of("client")};
  auto remote = good.connect(node.port());
  REQUIRE_MESSAGE(remote, good.system->render(remote.error()));
  good.report(*remote);
}

TEST_CASE("tls: garbage and an oversized BASP header on a TLS control port fail the handshake "
          "before any allocation and the node keeps serving") {
  certificates certs;
  if (!certs.usable()) return test::skip_test("no openssl command to make certificates with");
  test::serve_process node;
  with_tls(node, certs);
  node.start();
  const auto peak_before = peak_rss_kib(node.process().pid());
  CHECK(hung_up_after(node.port(), oversized_basp_header() + std::string(64, 'x')));
  CHECK(hung_up_after(node.port(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  REQUIRE(node.process().wait_for_stderr("TLS: refused peer 127.0.0.1:", patience));
  // A plain middleman would have zeroed 4 GiB for the header's payload by now.
  CHECK(peak_rss_kib(node.process().pid()) < peak_before + (256u << 10));
  peer good{certs.of("client")};
  auto remote = good.connect(node.port());
  REQUIRE_MESSAGE(remote, good.system->render(remote.error()));
  good.report(*remote);
}

TEST_CASE("tls: the CLI reaches a TLS node with the certificate of the config it is given and "
          "fails without") {
  certificates certs;
  if (!certs.usable()) return test::skip_test("no openssl command to make certificates with");
  test::serve_process node;
  with_tls(node, certs);
  node.start();
  test::temp_dir dir;
  const auto file = [&](const std::string& name, const std::string& security) {
    const auto path = (dir.path() / name).string();
    std::ofstream{path} << "[cluster]\nnodes = [\"" << node.address()
                        << "\"]\nrequest_timeout_ms = 5000\n"
                        << (security.empty() ? "" : "[security]\n" + security);
    return path;
  };
  const auto with_cert = file("client.toml", certs.toml("client"));
  const auto value = (dir.path() / "value").string();
  std::ofstream{value} << "over TLS";
  CHECK(test::run_spillway({"put", "k", value, "--cluster", with_cert}).exit_code == 0);
  const auto got = test::run_spillway({"get", "k", "--cluster", with_cert});
  CHECK(got.exit_code == 0);
  CHECK(got.out == "over TLS");
  const auto one = test::run_spillway({"get", "k", "--node", node.address(), "-c", with_cert});
  CHECK(one.out == "over TLS");
  // A rogue certificate: the node refuses it, and the key is unavailable.
  auto rogue = certs.toml("rogue");
  const auto refused = test::run_spillway({"get", "k", "--cluster", file("rogue.toml", rogue)});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("unavailable") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("service") {

// A peer may send any message to what a node publishes: the guard takes the remote
// interface's requests and drops the rest, exits above all.
TEST_CASE("an exit or a link's exit or an error sent to the published node service from "
          "another process is dropped and logged and the node keeps serving") {
  test::serve_process node;
  node.start();
  peer attacker;
  auto remote = attacker.connect(node.port());
  REQUIRE_MESSAGE(remote, attacker.system->render(remote.error()));
  attacker.report(*remote);

  caf::anon_send_exit(*remote, caf::exit_reason::kill);
  REQUIRE(node.process().wait_for_stderr(
    "dropped an exit message (exit_reason(kill)) sent to the node service", patience));
  caf::anon_send(caf::actor_cast<caf::actor>(*remote), caf::make_error(caf::sec::runtime_error));
  REQUIRE(node.process().wait_for_stderr("dropped an error message sent to the node service",
                                         patience));
  // A link, then the linked actor ends abnormally: its exit crosses over to the guard.
  attacker.system->spawn(
    [](caf::event_based_actor* self, remote_node_actor target) {
      self->link_to(target);
      self->quit(caf::exit_reason::out_of_workers);
    },
    *remote);
  REQUIRE(node.process().wait_for_stderr("(exit_reason(out_of_workers)) sent to the node service",
                                         patience));

  // The same connection is still served, and so is a client of the cluster.
  attacker.report(*remote);
  cluster_section cluster;
  cluster.nodes = {node.address()};
  client c{cluster};
  REQUIRE(c.put({"k"}, {"v"}).at(0).ok());
  CHECK(c.get({"k"}).at(0).value == "v");
}

TEST_CASE_FIXTURE(test::node_leaks, "an exit sent to a node's transfer host from another "
                                    "process is dropped and it keeps answering") {
  test::log_capture log{"warn"};
  test::temp_dir dir;
  auto config = test::published_node(dir.path());
  config.node.log_level = "warn";
  node n{config};
  peer attacker;
  auto host = connect_transfer_host(*attacker.system, "127.0.0.1", n.transfer_port());
  REQUIRE_MESSAGE(host, attacker.system->render(host.error()));
  caf::anon_send_exit(*host, caf::exit_reason::kill);
  caf::scoped_actor self{*attacker.system};
  bool described = false;
  // In order on one connection: the exit reached the node before this request.
  self->request(*host, patience, describe_atom_v)
    .receive([&](transfer_peer_info&) { described = true; },
             [&](caf::error& err) { FAIL("describe: " << attacker.system->render(err)); });
  CHECK(described);
  CHECK(log.count("dropped an exit message (exit_reason(kill)) sent to the transfer host") == 1);
  check_arena(n);
}

// CAF's default connection timeout (0) keeps such a connection, and what it allocated
// for the payload its header claimed, for good.
TEST_CASE("a peer that sends a BASP header and then nothing is dropped by the middleman's "
          "connection timeout") {
  test::serve_process node;
  node.start();
  int error = 0;
  const auto connection = connect_tcp("127.0.0.1", node.port(), error);
  REQUIRE_MESSAGE(connection, std::strerror(error));
  std::string header = oversized_basp_header();
  header[4] = header[5] = header[6] = 0;  // a payload of 255 bytes, never sent
  REQUIRE(send_all(connection.get(), header.data(), header.size()));
  const auto sent = std::chrono::steady_clock::now();
  const timeval wait{static_cast<time_t>(middleman_connection_timeout.count() + 30), 0};
  ::setsockopt(connection.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char sink[4096];
  ssize_t got = 0;
  while ((got = ::recv(connection.get(), sink, sizeof sink, 0)) > 0) {
  }  // the node's handshake, then the close
  CHECK((got == 0 || errno == ECONNRESET));
  CHECK(std::chrono::steady_clock::now() - sent >= middleman_connection_timeout - 2s);
}

TEST_CASE("CAF's ConfigServ and SpawnServ cannot be reached by name on a node") {
  test::serve_process node;
  node.start();
  peer asker;
  auto remote = asker.connect(node.port());
  REQUIRE_MESSAGE(remote, asker.system->render(remote.error()));
  auto basp = asker.system->middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::scoped_actor self{*asker.system};
  for (const auto name : {"ConfigServ", "SpawnServ"}) {
    // A request to a name the node does not know bounces at once as receiver down;
    // ConfigServ would answer, SpawnServ refuse the message.
    caf::error why;
    self->request(basp, patience, caf::forward_atom_v, remote->node(), caf::atom_from_string(name),
                  caf::make_message(caf::get_atom_v, std::string{"middleman.app-identifier"}))
      .receive([&](std::string&, caf::config_value&) {}, [&](caf::error& err) { why = err; });
    CHECK_MESSAGE(why == caf::sec::request_receiver_down, name << ": " << to_string(why));
  }
  asker.report(*remote);
}

}  // TEST_SUITE

TEST_SUITE("config") {

TEST_CASE("tls: a partial [security] set names the missing keys and the file and line") {
  try {
    load_config_text("[security]\nallow_insecure = true\nkey = \"/k.pem\"\ncertificate = \"/c.pem\"\n",
                     "partial.toml");
    FAIL("loaded");
  } catch (const config_error& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].starts_with("partial.toml:3:7: security.ca_file is missing"));
  }
}

TEST_CASE("tls: a node whose TLS file cannot be read refuses to start naming the key and path") {
  certificates certs;
  if (!certs.usable()) return test::skip_test("no openssl command to make certificates with");
  test::temp_dir dir;
  auto config = test::published_node(dir.path());
  config.security = certs.of("node");
  config.security.ca_file = (dir.path() / "nope.pem").string();
  try {
    node n{config};
    FAIL("started");
  } catch (const startup_error& e) {
    CHECK(std::string{e.what()}.starts_with("security.ca_file = \"" + config.security.ca_file +
                                            "\": cannot read it"));
  }
  config.security = certs.of("node");
  config.security.key = certs.key("client");  // another certificate's key
  CHECK_THROWS_WITH_AS((node{config}), doctest::Contains("not the key of security.certificate"),
                       startup_error);
}

TEST_CASE("tls: config --print says the passphrase is set and never prints it") {
  test::temp_dir dir;
  const auto path = (dir.path() / "node.toml").string();
  std::ofstream{path} << "[security]\ncertificate = \"/c.pem\"\nkey = \"/k.pem\"\n"
                         "ca_file = \"/ca.pem\"\npassphrase = \"hunter2-secret\"\n";
  const auto printed = test::run_spillway({"config", "--print", "-c", path});
  CHECK(printed.exit_code == 0);
  CHECK(printed.out.find("hunter2-secret") == std::string::npos);
  CHECK(printed.out.find("passphrase = \"<set>\"") != std::string::npos);
  CHECK(printed.out.find("certificate = \"/c.pem\"") != std::string::npos);
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

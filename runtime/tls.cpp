// TLS for the control channel (see tls.hpp): the startup check of the files, CAF's OpenSSL
// module, and the wrappers around the TLS calls CAF's module makes.
//
// The wrappers replace SSL_accept, SSL_connect, SSL_read and SSL_write for the whole
// process: libcaf_openssl calls them through the dynamic linker, which finds these
// definitions in the executable before libssl's, and each calls libssl's own (dlsym
// RTLD_NEXT). OpenSSL requires an empty error queue before each of these calls
// (SSL_get_error(3)); CAF 0.17.6 empties it only inside a log statement that Debian's
// build compiles out, so one refused peer made the next read of another connection on
// the same network thread fail as well.
#include "runtime/tls.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include <caf/actor_system_config.hpp>
#include <caf/openssl/manager.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include "runtime/node.hpp"

namespace spillway {
namespace {

std::atomic<std::uint64_t> failed_handshakes{0};

// libssl's definition of `name`: the next one after this executable's in lookup order.
template <class Function>
Function libssl_definition(const char* name) {
  void* found = ::dlsym(RTLD_NEXT, name);
  if (found == nullptr) {
    std::fprintf(stderr, "spillway: %s is not in libssl: %s\n", name, ::dlerror());
    std::abort();
  }
  return std::bit_cast<Function>(found);
}

// "host:port" of the other end of the connection, for the log.
std::string peer_of(const SSL* ssl) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  const int fd = SSL_get_fd(ssl);
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return "an unknown peer";
  char host[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    return std::string{host} + ":" + std::to_string(ntohs(v4->sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    return "[" + std::string{host} + "]:" + std::to_string(ntohs(v6->sin6_port));
  }
  return "an unknown peer";
}

// Why a TLS call failed: OpenSSL's first error, and the verdict on the peer's
// certificate where there is one. The queue is only peeked: CAF's SSL_get_error, after
// this, must still see the failure.
std::string reason_of(const SSL* ssl) {
  std::string why;
  if (const auto code = ERR_peek_error(); code != 0) {
    const char* reason = ERR_reason_error_string(code);
    char text[256] = {};
    ERR_error_string_n(code, text, sizeof text);
    why = reason != nullptr ? reason : text;
  }
  if (const long verdict = SSL_get_verify_result(ssl); verdict != X509_V_OK)
    why += (why.empty() ? "" : " (") + std::string{X509_verify_cert_error_string(verdict)} +
           (why.empty() ? "" : ")");
  return why.empty() ? "the connection ended during the handshake" : why;
}

// An alert the peer sent: it refused us (TLS 1.3 lets a client finish its handshake
// before the server has checked the client's certificate, so a client hears of its
// refusal on its first read).
bool peer_alert(unsigned long code) {
  return code != 0 && ERR_GET_LIB(code) == ERR_LIB_SSL &&
         ERR_GET_REASON(code) >= SSL_AD_REASON_OFFSET;
}

// What the wrappers keep per connection: its peer, read at its first TLS call (once
// the peer has reset the connection, getpeername no longer says), and whether its end
// was logged (CAF calls again after a failure, and that call has nothing new to say).
struct connection_note {
  std::string peer;
  bool logged = false;
};

int note_index() {
  static const int index = SSL_get_ex_new_index(
    0, nullptr, nullptr, nullptr,
    [](void*, void* note, CRYPTO_EX_DATA*, int, long, void*) {
      delete static_cast<connection_note*>(note);
    });
  return index;
}

connection_note& note_of(SSL* ssl) {
  auto* note = static_cast<connection_note*>(SSL_get_ex_data(ssl, note_index()));
  if (note == nullptr) {
    note = new connection_note{peer_of(ssl)};
    SSL_set_ex_data(ssl, note_index(), note);
  }
  return *note;
}

// Logs a call that ended its connection, once: a failed handshake, or an alert from the
// peer. An established connection that ends otherwise (the peer went away) is only debug.
void note(SSL* ssl, int result) {
  if (result > 0) return;
  const int kind = SSL_get_error(ssl, result);
  if (kind != SSL_ERROR_SSL && kind != SSL_ERROR_SYSCALL) return;  // WANT_*, a clean close
  auto& connection = note_of(ssl);
  if (std::exchange(connection.logged, true)) return;
  const bool in_handshake = SSL_is_init_finished(ssl) == 0;
  if (!in_handshake && !peer_alert(ERR_peek_error())) {
    spdlog::debug("TLS: connection with {} ended: {}", connection.peer, reason_of(ssl));
    return;
  }
  failed_handshakes.fetch_add(1, std::memory_order_relaxed);
  if (SSL_is_server(ssl) != 0)
    spdlog::warn("TLS: refused peer {}: {}", connection.peer, reason_of(ssl));
  else
    spdlog::warn("TLS: handshake with {} failed: {}", connection.peer, reason_of(ssl));
}

// OpenSSL's queued errors, as one line, and the queue emptied.
std::string openssl_errors() {
  std::string out;
  while (const auto code = ERR_get_error()) {
    char text[256] = {};
    ERR_error_string_n(code, text, sizeof text);
    out += (out.empty() ? "" : "; ") + std::string{text};
  }
  return out.empty() ? "no reason given" : out;
}

// The key's passphrase, or none at all: OpenSSL's default would ask the terminal.
int passphrase_callback(char* buffer, int size, int, void* passphrase) {
  const auto* text = static_cast<const std::string*>(passphrase);
  if (text == nullptr || size <= 0) return 0;
  const auto n = std::min(text->size(), static_cast<std::size_t>(size - 1));
  std::memcpy(buffer, text->data(), n);
  buffer[n] = '\0';
  return static_cast<int>(n);
}

std::string named(const char* key, const std::string& path) {
  return std::string{"security."} + key + " = \"" + path + "\"";
}

}  // namespace

void check_tls_files(const security_section& security) {
  if (!security.tls()) return;
  for (const auto& [key, path] : {std::pair{"certificate", &security.certificate},
                                  std::pair{"key", &security.key},
                                  std::pair{"ca_file", &security.ca_file}})
    if (::access(path->c_str(), R_OK) != 0)
      throw startup_error(named(key, *path) + ": cannot read it: " + std::strerror(errno));
  const std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context{SSL_CTX_new(TLS_method()),
                                                                   &SSL_CTX_free};
  if (!context) throw startup_error("TLS: cannot create a context: " + openssl_errors());
  auto* ctx = context.get();
  SSL_CTX_set_default_passwd_cb(ctx, passphrase_callback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, const_cast<std::string*>(&security.passphrase));
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, security.certificate.c_str()) != 1)
    throw startup_error(named("certificate", security.certificate) +
                        ": not a PEM certificate: " + openssl_errors());
  if (SSL_CTX_use_PrivateKey_file(ctx, security.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
      throw startup_error(named("key", security.key) +
                          ": not the key of security.certificate (" + openssl_errors() + ")");
    throw startup_error(named("key", security.key) + ": cannot load the private key (" +
                        openssl_errors() + ")" +
                        (security.passphrase.empty()
                           ? "; if it is encrypted, set security.passphrase"
                           : "; is security.passphrase its passphrase?"));
  }
  if (SSL_CTX_check_private_key(ctx) != 1)
    throw startup_error(named("key", security.key) + ": not the key of security.certificate (" +
                        openssl_errors() + ")");
  if (SSL_CTX_load_verify_locations(ctx, security.ca_file.c_str(), nullptr) != 1)
    throw startup_error(named("ca_file", security.ca_file) +
                        ": no PEM CA certificate in it: " + openssl_errors());
}

void configure_tls(caf::actor_system_config& config, const security_section& security) {
  if (!security.tls()) return;
  config.openssl_certificate = security.certificate;
  config.openssl_key = security.key;
  config.openssl_cafile = security.ca_file;
  config.openssl_passphrase = security.passphrase;
  config.load<caf::openssl::manager>();
}

std::uint64_t tls_failed_handshakes() { return failed_handshakes.load(std::memory_order_relaxed); }

}  // namespace spillway

// The wrappers (see the top of this file). Each starts the call on an empty error queue
// and reports what ended a connection.
extern "C" {

__attribute__((visibility("default"))) int SSL_accept(SSL* ssl) {
  static const auto call = spillway::libssl_definition<int (*)(SSL*)>("SSL_accept");
  spillway::note_of(ssl);
  ERR_clear_error();
  const int result = call(ssl);
  spillway::note(ssl, result);
  return result;
}

__attribute__((visibility("default"))) int SSL_connect(SSL* ssl) {
  static const auto call = spillway::libssl_definition<int (*)(SSL*)>("SSL_connect");
  spillway::note_of(ssl);
  ERR_clear_error();
  const int result = call(ssl);
  spillway::note(ssl, result);
  return result;
}

__attribute__((visibility("default"))) int SSL_read(SSL* ssl, void* buffer, int size) {
  static const auto call = spillway::libssl_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  const int result = call(ssl, buffer, size);
  spillway::note(ssl, result);
  return result;
}

__attribute__((visibility("default"))) int SSL_write(SSL* ssl, const void* buffer, int size) {
  static const auto call =
    spillway::libssl_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  const int result = call(ssl, buffer, size);
  spillway::note(ssl, result);
  return result;
}

}  // extern "C"

// TLS with mutual authentication on the control channel (node.listen, the transfer
// hosts): CAF's OpenSSL module, configured from [security]. With a CA file, CAF 0.17.6
// has both ends verify the other (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT), so
// a peer without a certificate the CA signed is refused during the handshake, before a
// byte of CAF's protocol is read.
//
// What the module leaves undone, tls.cpp does: it says nothing when it refuses a peer
// (its log is compiled out), and it leaves OpenSSL's per-thread error queue full after a
// failed handshake, so that the next TLS call on that network thread (another peer's
// read) fails too. tls.cpp wraps the four TLS calls CAF makes: each starts on an empty
// queue, and a failed handshake is logged with the peer's address and OpenSSL's reason.
#pragma once

#include <cstdint>

#include <caf/fwd.hpp>

#include "config/config.hpp"

namespace spillway {

// Loads what TLS would use at the first handshake (certificate, key with its
// passphrase, the CA file), so that a file missing, unreadable or not matching fails
// the start, not a connection later. Throws startup_error naming the key and the path.
// Nothing when `security` names no certificate.
void check_tls_files(const security_section& security);

// Loads CAF's OpenSSL module into `config` with the files of `security` (after the
// middleman, which it needs); nothing when `security` names no certificate.
void configure_tls(caf::actor_system_config& config, const security_section& security);

// Handshakes this process failed (refused peers, and peers that refused it), for tests.
std::uint64_t tls_failed_handshakes();

}  // namespace spillway

// Keys are bytes from clients: printed as they are, a newline in one forges a log line
// and an ANSI escape drives the operator's terminal. Every log line and message that
// shows a key shows printable_key(key).
#pragma once

#include <string>
#include <string_view>

namespace spillway {

// `key` with every byte outside printable ASCII written \xHH and a backslash written
// \\, so the text is one line of plain characters and still tells any two keys apart.
std::string printable_key(std::string_view key);

}  // namespace spillway

#include "runtime/storage/printable_key.hpp"

namespace spillway {

std::string printable_key(std::string_view key) {
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '\\') {
      out += "\\\\";
    } else if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += hex[byte >> 4];
      out += hex[byte & 0xf];
    }
  }
  return out;
}

}  // namespace spillway

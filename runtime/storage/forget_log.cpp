// Encoding and decoding of the forget log (layout in forget_log.hpp). Decoding is over
// bytes, so every torn tail and damaged entry can be tested by cutting and flipping them.
#include "runtime/storage/forget_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "runtime/storage/crc32c.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the format is little-endian and encoded with memcpy");

constexpr char magic[8] = {'S', 'P', 'L', 'W', 'F', 'G', 'T', '1'};
constexpr std::size_t header_crc_at = 12;

template <class T>
void append(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T get(std::span<const std::byte> in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  return value;
}

std::uint32_t crc_of(std::span<const std::byte> bytes) {
  return crc32c(bytes.data(), bytes.size());
}

std::string check_header(std::span<const std::byte> bytes) {
  if (bytes.size() < forget_format::header_size) return "header cut short";
  if (std::memcmp(bytes.data(), magic, sizeof magic) != 0) return "bad magic";
  if (unmask_crc(get<std::uint32_t>(bytes, header_crc_at)) != crc_of(bytes.first(header_crc_at)))
    return "header crc mismatch";
  if (get<std::uint32_t>(bytes, 8) != forget_format::version)
    return "unknown version " + std::to_string(get<std::uint32_t>(bytes, 8));
  return "";
}

enum class verdict { whole, torn, bad };

// The entry at the start of `rest`: whole (its size in `size`), cut short by the end of
// the bytes, or bad.
verdict decode_entry(std::span<const std::byte> rest, forget_entry& out, std::size_t& size) {
  constexpr auto head = forget_format::entry_header_size;
  if (rest.size() < head) return verdict::torn;
  const auto key_size = get<std::uint32_t>(rest, 4);
  if (key_size == 0 || key_size > bucket_format::max_key_size) return verdict::bad;
  size = head + key_size;
  if (rest.size() < size) return verdict::torn;
  if (unmask_crc(get<std::uint32_t>(rest, 0)) != crc_of(rest.subspan(4, size - 4)))
    return verdict::bad;
  out.bound = {get<std::uint64_t>(rest, 8), get<std::uint64_t>(rest, 16)};
  out.key.assign(reinterpret_cast<const char*>(rest.data() + head), key_size);
  return verdict::whole;
}

// The next offset from `from` where a whole entry starts; `bytes.size()` if none does.
std::size_t next_whole(std::span<const std::byte> bytes, std::size_t from) {
  forget_entry ignored;
  std::size_t size = 0;
  for (; from < bytes.size(); ++from)
    if (decode_entry(bytes.subspan(from), ignored, size) == verdict::whole) return from;
  return bytes.size();
}

}  // namespace

void encode_forget_header(std::string& out) {
  const auto start = out.size();
  out.append(magic, sizeof magic);
  append(out, forget_format::version);
  append(out, mask_crc(crc32c(out.data() + start, header_crc_at)));
}

void encode_forget_entry(const forget_entry& entry, std::string& out) {
  const auto start = out.size();
  append(out, std::uint32_t{0});  // the crc, once the rest is there
  append(out, static_cast<std::uint32_t>(entry.key.size()));
  append(out, entry.bound.bucket_id);
  append(out, entry.bound.offset);
  out += entry.key;
  const auto crc = mask_crc(crc32c(out.data() + start + 4, out.size() - start - 4));
  std::memcpy(out.data() + start, &crc, sizeof crc);
}

forget_log_contents decode_forget_log(std::span<const std::byte> bytes) {
  forget_log_contents out;
  out.exists = true;
  out.file_bytes = bytes.size();
  if (auto bad = check_header(bytes); !bad.empty()) {
    // A header cut short with nothing after it: the log's creation was torn.
    if (bytes.size() < forget_format::header_size) {
      out.torn_bytes = bytes.size();
      return out;
    }
    out.damaged.push_back({0, forget_format::header_size, bad});
  }
  std::size_t at = forget_format::header_size;
  out.valid_end = at;
  while (at < bytes.size()) {
    forget_entry entry;
    std::size_t size = 0;
    const auto v = decode_entry(bytes.subspan(at), entry, size);
    if (v == verdict::whole) {
      out.entries.push_back(std::move(entry));
      at += size;
      out.valid_end = at;
      continue;
    }
    const auto next = next_whole(bytes, at + 1);
    if (next == bytes.size()) {  // nothing whole after it: a torn append
      out.torn_bytes = bytes.size() - at;
      break;
    }
    out.damaged.push_back({at, next - at, v == verdict::bad ? "entry fails its crc or length"
                                                            : "entry cut short"});
    at = next;
  }
  return out;
}

forget_log_contents read_forget_log(const std::filesystem::path& dir) {
  forget_log_contents out;
  const auto path = dir / forget_log_name;
  const unique_fd fd{open_regular_file(path, O_RDONLY | O_CLOEXEC)};
  if (!fd) {
    if (errno != ENOENT) out.unreadable = "open " + path.string() + ": " + open_error_text(errno);
    return out;
  }
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const auto n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.exists = true;
      out.unreadable = "read " + path.string() + ": " + std::strerror(errno);
      return out;
    }
    if (n == 0) break;
    bytes.append(chunk, static_cast<std::size_t>(n));
  }
  return decode_forget_log(std::as_bytes(std::span{bytes}));
}

}  // namespace spillway

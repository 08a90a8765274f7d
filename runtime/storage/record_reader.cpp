#include "runtime/storage/record_reader.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace spillway {
namespace {

namespace bf = bucket_format;

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

key_status read_record(int fd, std::uint64_t bucket_id, std::uint32_t format_version,
                       const bf::index_entry& want, std::string& value, std::string& problem) {
  const auto size = bf::record_size(format_version, want.key.size(), want.value_size);
  std::unique_ptr<std::byte, free_deleter> pages{
    static_cast<std::byte*>(std::aligned_alloc(bf::page_size, size))};
  if (!pages) return {key_error::too_large, 0};
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, pages.get() + done, size - done,
                              static_cast<off_t>(want.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problem = std::strerror(errno);
      return {key_error::io_error, errno};
    }
    if (n == 0) {
      problem = "the file ends inside the record";
      return {key_error::corrupt, 0};
    }
    done += static_cast<std::size_t>(n);
  }
  bf::record_view view;
  problem = bf::decode_record(format_version, {pages.get(), size}, bucket_id, want, view);
  if (!problem.empty()) return {key_error::corrupt, 0};
  value.assign(reinterpret_cast<const char*>(view.value.data()), view.value.size());
  return {};
}

}  // namespace spillway

#include "runtime/storage/bucket_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

constexpr std::string_view bucket_suffix = ".bucket";
constexpr std::string_view tmp_suffix = ".tmp";
constexpr std::size_t id_digits = 16;

std::string hex_id(std::uint64_t id) {
  char text[id_digits + 1];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

// A decoder's verdict: an empty string is no problem.
bucket_problem damaged(std::string what) {
  const bool is_damaged = !what.empty();
  return {std::move(what), is_damaged};
}
bucket_problem unreadable(std::string what) { return {std::move(what), false}; }

}  // namespace

bucket_problem read_bucket_bytes(int fd, std::uint64_t offset, std::byte* out, std::size_t size) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unreadable(std::string{"read failed: "} + std::strerror(errno));
    if (n == 0) return unreadable("file ends early");
    done += static_cast<std::size_t>(n);
  }
  return {};
}

std::string bucket_file_name(std::uint64_t bucket_id) {
  return hex_id(bucket_id) + std::string{bucket_suffix};
}

std::string bucket_tmp_name(std::uint64_t bucket_id) {
  return hex_id(bucket_id) + std::string{tmp_suffix};
}

std::optional<std::uint64_t> parse_bucket_file_name(const std::string& name) {
  const std::string_view view{name};
  if (view.size() <= id_digits) return std::nullopt;
  const auto suffix = view.substr(id_digits);
  if (suffix != bucket_suffix && suffix != tmp_suffix) return std::nullopt;
  std::uint64_t id = 0;
  const auto [end, ec] = std::from_chars(view.data(), view.data() + id_digits, id, 16);
  if (ec != std::errc{} || end != view.data() + id_digits) return std::nullopt;
  return id;
}

bucket_problem read_bucket_index(const std::filesystem::path& path, bucket_index& out) {
  using namespace bucket_format;
  const unique_fd file{open_regular_file(path, O_RDONLY | O_CLOEXEC)};
  if (!file) return unreadable("cannot open: " + open_error_text(errno));
  struct stat st{};
  if (::fstat(file.get(), &st) != 0)
    return unreadable(std::string{"cannot stat: "} + std::strerror(errno));
  out.file_size = static_cast<std::uint64_t>(st.st_size);
  if (out.file_size % page_size != 0 || out.file_size < 2 * page_size)
    return damaged("size " + std::to_string(out.file_size) +
                   " is not a whole number of pages, at least 2");

  std::vector<std::byte> page(page_size);
  if (auto e = read_bucket_bytes(file.get(), 0, page.data(), page_size); !e.empty()) return e;
  if (auto e = decode_header(page, out.header); !e.empty()) return damaged(e);
  const auto footer_at = out.file_size - page_size;
  if (auto e = read_bucket_bytes(file.get(), footer_at, page.data(), page_size); !e.empty())
    return e;
  if (auto e = decode_footer(page, out.footer); !e.empty()) return damaged(e);
  if (auto e = check_index_extent(out.footer, out.file_size); !e.empty()) return damaged(e);

  std::vector<std::byte> index(out.footer.index_size);
  if (auto e = read_bucket_bytes(file.get(), out.footer.index_offset, index.data(), index.size());
      !e.empty())
    return e;
  return damaged(decode_index(out.header.format_version, index, out.footer, out.entries));
}

}  // namespace spillway

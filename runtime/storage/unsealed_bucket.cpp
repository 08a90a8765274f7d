#include "runtime/storage/unsealed_bucket.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "runtime/io/unique_fd.hpp"
#include "runtime/storage/regular_file.hpp"

namespace spillway {
namespace {

namespace bf = bucket_format;

bucket_problem io_problem(const char* op, int err) {
  return {std::string{op} + " failed: " + std::strerror(err), false};
}

// The whole records from the first record page on; `out.cut` says why the scan
// stopped short of the file's end.
bucket_problem scan_records(int fd, std::uint64_t file_size, completed_bucket& out) {
  const auto id = out.index.header.bucket_id;
  const auto version = out.index.header.format_version;
  std::vector<std::byte> record(bf::page_size);
  std::uint64_t at = bf::page_size;
  while (at < file_size) {
    const auto head = std::min<std::uint64_t>(bf::page_size, file_size - at);
    if (auto e = read_bucket_bytes(fd, at, record.data(), head); !e.empty()) return e;
    std::uint64_t size = 0;
    out.cut = bf::decode_record_extent(version, {record.data(), head}, id, size);
    if (out.cut.empty() && size > file_size - at) out.cut = "record runs past the file's end";
    if (!out.cut.empty()) break;
    record.resize(size);
    if (auto e = read_bucket_bytes(fd, at, record.data(), size); !e.empty()) return e;
    bf::index_entry entry;
    out.cut = bf::scan_record(version, record, id, at, entry);
    if (!out.cut.empty()) break;
    out.index.entries.push_back(std::move(entry));
    at += size;
  }
  out.cut_bytes = file_size - at;
  out.index.file_size = at;  // the records' end, until the tail is written
  return {};
}

// Index and footer after the records, the rest cut off, synced, renamed, dir synced.
bucket_problem seal(int fd, const std::filesystem::path& tmp, completed_bucket& out) {
  auto& index = out.index;
  std::vector<std::byte> tail(bf::tail_size(index.entries));
  index.footer = bf::encode_tail(index.entries, index.file_size, tail);
  for (std::size_t done = 0; done < tail.size();) {
    const auto n = ::pwrite(fd, tail.data() + done, tail.size() - done,
                            static_cast<off_t>(index.file_size + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_problem("write", n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
  index.file_size += tail.size();
  if (::ftruncate(fd, static_cast<off_t>(index.file_size)) != 0)
    return io_problem("truncate", errno);
  if (::fdatasync(fd) != 0) return io_problem("fdatasync", errno);
  out.path = tmp.parent_path() / bucket_file_name(index.header.bucket_id);
  if (::rename(tmp.c_str(), out.path.c_str()) != 0) return io_problem("rename", errno);
  if (const int err = fsync_dir(tmp.parent_path()); err != 0)
    return io_problem("fsync directory", err);
  return {};
}

}  // namespace

bucket_problem complete_unsealed_bucket(const std::filesystem::path& tmp, std::uint64_t id,
                                        completed_bucket& out) {
  const unique_fd file{open_regular_file(tmp, O_RDWR | O_CLOEXEC)};
  if (!file) return {"cannot open: " + open_error_text(errno), false};
  struct stat st{};
  if (::fstat(file.get(), &st) != 0) return io_problem("stat", errno);
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size < bf::page_size) return {"never sealed (.tmp), no header", true};
  std::vector<std::byte> page(bf::page_size);
  if (auto e = read_bucket_bytes(file.get(), 0, page.data(), page.size()); !e.empty()) return e;
  if (auto e = bf::decode_header(page, out.index.header); !e.empty())
    return {"never sealed (.tmp): " + e, true};
  if (out.index.header.bucket_id != id) return {"header names another bucket id", true};
  if (auto e = scan_records(file.get(), file_size, out); !e.empty()) return e;
  if (out.index.entries.empty())
    return {"never sealed (.tmp), no whole record" + (out.cut.empty() ? "" : ": " + out.cut),
            true};
  return seal(file.get(), tmp, out);
}

}  // namespace spillway

#include "runtime/io/progress.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>

namespace spillway {
namespace {

constexpr std::chrono::milliseconds redraw_every{500};

// One decimal in the largest binary unit that keeps the figure at or above 1.
std::string human_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text.data();
}

}  // namespace

std::string progress_line(std::string_view what, std::string_view unit,
                          const progress_figures& f, double seconds) {
  // append(), not operator+ on temporaries: GCC 12 -O3 warns falsely (-Wrestrict) there.
  std::string line{what};
  line.append(": ").append(std::to_string(f.done));
  if (f.total != 0) line.append("/").append(std::to_string(f.total));
  line.append(" ").append(unit);
  if (f.total != 0) line.append(" (").append(std::to_string(f.done * 100 / f.total)).append("%)");
  const double per_s = seconds > 0 ? 1 / seconds : 0;
  if (f.bytes != 0) {
    line.append(", ").append(human_bytes(static_cast<double>(f.bytes)));
    line.append(", ").append(human_bytes(static_cast<double>(f.bytes) * per_s)).append("/s");
  } else {
    std::array<char, 32> rate{};
    std::snprintf(rate.data(), rate.size(), ", %.1f ", static_cast<double>(f.done) * per_s);
    line.append(rate.data()).append(unit).append("/s");
  }
  return line;
}

progress::progress(std::string what, std::string unit, std::uint64_t total, int fd)
    : what_(std::move(what)), unit_(std::move(unit)), fd_(fd), terminal_(::isatty(fd) == 1) {
  figures_.total = total;
}

void progress::advance(std::uint64_t items, std::uint64_t bytes) {
  figures_.done += items;
  figures_.bytes += bytes;
  if (!terminal_) return;
  const auto now = clock::now();
  if (shown_ && now - last_shown_ < redraw_every) return;
  last_shown_ = now;
  show();
}

void progress::finish() {
  if (!shown_) return;
  show();
  (void)!::write(fd_, "\n", 1);
  shown_ = false;
}

// \r back to the start, the line, then ESC[K: clears what a longer line left behind.
void progress::show() {
  const std::chrono::duration<double> took = clock::now() - start_;
  std::string text{"\r"};
  text.append(progress_line(what_, unit_, figures_, took.count())).append("\x1b[K");
  (void)!::write(fd_, text.data(), text.size());
  shown_ = true;
}

}  // namespace spillway

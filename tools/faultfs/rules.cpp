// Parsing rules and deciding, under one lock: operations arrive on many fuse threads.
#include "tools/faultfs/rules.hpp"

#include <fnmatch.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <sstream>

namespace faultfs {
namespace {

const std::map<std::string, op> op_names{
  {"read", op::read},   {"write", op::write},         {"open", op::open},
  {"fsync", op::fsync}, {"fdatasync", op::fdatasync}, {"fsyncdir", op::fsyncdir}};
const std::map<std::string, fault> fault_names{
  {"eio", fault::eio},         {"enospc", fault::enospc}, {"einval", fault::einval},
  {"short", fault::short_read}, {"delay", fault::delay},  {"freeze", fault::freeze}};

template <class T>
bool number(const std::string& text, T& out) {
  const auto end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && at == end;
}

// Applies one `key=value` word to `r`; false when the key or value is unknown.
bool apply(rule& r, const std::string& key, const std::string& value, std::uint64_t& seed) {
  if (key == "op") {
    const auto it = op_names.find(value);
    return it != op_names.end() && (r.operation = it->second, true);
  }
  if (key == "fault") {
    const auto it = fault_names.find(value);
    return it != fault_names.end() && (r.action = it->second, true);
  }
  if (key == "path") return !value.empty() && (r.path = value, true);
  if (key == "offset") {
    const auto dash = value.find('-');
    return dash != std::string::npos && number(value.substr(0, dash), r.first) &&
           number(value.substr(dash + 1), r.last) && r.first < r.last;
  }
  if (key == "direct") return value == "0" || value == "1" ? (r.direct_only = value == "1", true)
                                                            : false;
  if (key == "delay_ms") return number(value, r.delay_ms);
  if (key == "count") return number(value, r.count);
  if (key == "seed") return number(value, seed);
  if (key == "probability") {
    std::istringstream in{value};
    return in >> r.probability && in.eof() && r.probability >= 0 && r.probability <= 1;
  }
  return false;
}

int error_of(fault f) {
  return f == fault::eio ? -EIO : f == fault::enospc ? -ENOSPC : f == fault::einval ? -EINVAL : 0;
}

}  // namespace

std::uint64_t rule_book::add(const std::string& line, std::string& why) {
  rule r;
  std::uint64_t seed = 0;
  bool has_op = false;
  std::istringstream words{line};
  for (std::string word; words >> word;) {
    const auto eq = word.find('=');
    const auto key = word.substr(0, eq);
    if (eq == std::string::npos || !apply(r, key, word.substr(eq + 1), seed)) {
      why = "bad word '" + word + "'";
      return 0;
    }
    has_op |= key == "op";
  }
  if (!has_op) {
    why = "no op=";
    return 0;
  }
  std::lock_guard lock{mutex_};
  if (seed != 0) dice_.seed(seed);
  r.id = next_id_++;
  rules_.push_back(r);
  return r.id;
}

void rule_book::clear() {
  std::lock_guard lock{mutex_};
  rules_.clear();
  ++release_generation_;
  released_.notify_all();
}

void rule_book::release() {
  std::lock_guard lock{mutex_};
  ++release_generation_;
  released_.notify_all();
}

std::string rule_book::report() {
  std::lock_guard lock{mutex_};
  std::string out;
  for (const auto& r : rules_)
    out += "rule " + std::to_string(r.id) + " injected=" + std::to_string(r.injected) +
           " held=" + std::to_string(r.held) + "\n";
  return out;
}

bool rule_book::fires(rule& r, const access& a) {
  if (r.operation != a.operation || (r.direct_only && !a.direct)) return false;
  if (r.count != 0 && r.injected >= r.count) return false;
  const bool ranged = a.operation == op::read || a.operation == op::write;
  if (ranged && (a.offset >= r.last || a.offset + a.size <= r.first)) return false;
  if (::fnmatch(r.path.c_str(), a.path.c_str(), 0) != 0) return false;
  if (r.probability < 1 && std::uniform_real_distribution<double>{}(dice_) >= r.probability)
    return false;
  ++r.injected;
  return true;
}

verdict rule_book::decide(const access& a) {
  std::unique_lock lock{mutex_};
  for (auto& r : rules_) {
    if (!fires(r, a)) continue;
    if (r.action != fault::freeze)
      return {error_of(r.action), r.action == fault::short_read,
              r.action == fault::delay ? r.delay_ms : 0};
    // The rule may be cleared while we wait: find it again by id afterwards.
    const auto id = r.id;
    const auto generation = release_generation_;
    ++r.held;
    released_.wait(lock, [&] { return release_generation_ != generation; });
    for (auto& q : rules_)
      if (q.id == id) --q.held;
    return {};
  }
  return {};
}

}  // namespace faultfs

// The fault filesystem's rule book on its own (tools/faultfs/rules.hpp): which operation
// a rule hits, how often, and a freeze that holds its caller until released.
#include <doctest/doctest.h>

#include <cerrno>
#include <future>
#include <string>

#include "tests/eventually.hpp"
#include "tools/faultfs/rules.hpp"

namespace spillway {
namespace {

using faultfs::op;

std::uint64_t add(faultfs::rule_book& book, const std::string& line) {
  std::string why;
  const auto id = book.add(line, why);
  REQUIRE_MESSAGE(id != 0, line, ": ", why);
  return id;
}

int error_of(faultfs::rule_book& book, op operation, const std::string& path,
             std::uint64_t offset = 0, std::uint64_t size = 4096, bool direct = false) {
  return book.decide({operation, path, offset, size, direct}).error;
}

TEST_SUITE("rule_book") {

TEST_CASE("a rule with a word it does not know or without op= is refused by name") {
  faultfs::rule_book book;
  std::string why;
  CHECK(book.add("op=read fault=eio colour=red", why) == 0);
  CHECK(why == "bad word 'colour=red'");
  CHECK(book.add("op=rename", why) == 0);
  CHECK(book.add("op=read offset=9-3", why) == 0);
  CHECK(book.add("fault=eio", why) == 0);
  CHECK(why == "no op=");
}

TEST_CASE("a rule hits its operation on its paths and byte range only") {
  faultfs::rule_book book;
  add(book, "op=read path=/d/*.bucket offset=8192-8193 fault=eio");
  CHECK(error_of(book, op::read, "/d/1.bucket", 4096, 4096) == 0);  // ends before
  CHECK(error_of(book, op::read, "/d/1.bucket", 8192, 4096) == -EIO);
  CHECK(error_of(book, op::read, "/d/1.bucket", 0, 8193) == -EIO);
  CHECK(error_of(book, op::read, "/d/1.tmp", 8192, 4096) == 0);
  CHECK(error_of(book, op::write, "/d/1.bucket", 8192, 4096) == 0);
}

TEST_CASE("count bounds a rule and direct=1 spares buffered files") {
  faultfs::rule_book book;
  const auto id = add(book, "op=open direct=1 fault=einval count=2");
  CHECK(error_of(book, op::open, "/a", 0, 0, false) == 0);
  CHECK(error_of(book, op::open, "/a", 0, 0, true) == -EINVAL);
  CHECK(error_of(book, op::open, "/a", 0, 0, true) == -EINVAL);
  CHECK(error_of(book, op::open, "/a", 0, 0, true) == 0);
  CHECK(book.report() == "rule " + std::to_string(id) + " injected=2 held=0\n");
}

TEST_CASE("the same seed gives the same faults") {
  auto run = [] {
    faultfs::rule_book book;
    add(book, "op=write fault=enospc probability=0.5 seed=7");
    std::string hits;
    for (int i = 0; i < 64; ++i) hits += error_of(book, op::write, "/f") != 0 ? '1' : '0';
    return hits;
  };
  const auto first = run();
  CHECK(first == run());
  CHECK(first.find('0') != std::string::npos);
  CHECK(first.find('1') != std::string::npos);
}

TEST_CASE("a freeze holds its operation until released") {
  faultfs::rule_book book;
  const auto id = add(book, "op=fsync fault=freeze");
  auto frozen = std::async(std::launch::async, [&] { return error_of(book, op::fsync, "/f"); });
  const auto held = "rule " + std::to_string(id) + " injected=1 held=1\n";
  REQUIRE(test::eventually([&] { return book.report() == held; }));
  CHECK(frozen.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  book.release();
  CHECK(frozen.get() == 0);
  CHECK(book.report() == "rule " + std::to_string(id) + " injected=1 held=0\n");
}

}  // TEST_SUITE

}  // namespace
}  // namespace spillway

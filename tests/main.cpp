// The test runner. Nothing may print to stdout before doctest does: ctest discovers
// test cases by running `--list-test-cases`, and a stray line becomes a bogus test.
//
// A run that ran no test case fails (a filter that matches nothing must not pass), and
// one whose every test case skipped (tests/skip.hpp) exits with skipped_exit_code.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <string>

#include "tests/skip.hpp"

namespace spillway::test {
namespace {

struct run_tally {
  unsigned ran = 0;
  unsigned skipped = 0;
  std::string current;     // the test case running
  bool skipping = false;   // it called skip_test
};

run_tally tally;

// Counts the test cases run and skipped; reports nothing itself.
class tally_listener : public doctest::IReporter {
public:
  explicit tally_listener(const doctest::ContextOptions&) {}

  void test_case_start(const doctest::TestCaseData& test) override {
    ++tally.ran;
    tally.current = test.m_name;
    tally.skipping = false;
  }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    if (tally.skipping) ++tally.skipped;
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("tally", 1, tally_listener);

}  // namespace

void skip_test(std::string_view why) {
  tally.skipping = true;
  std::cerr << "skipped: " << tally.current << ": " << why << '\n';
}

}  // namespace spillway::test

int main(int argc, char** argv) {
  using spillway::test::tally;
  doctest::Context context;
  context.setOption("order-by", "file");
  context.applyCommandLine(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;  // --list-test-cases must exit 0
  if (tally.ran == 0) {
    std::cerr << "no test case matched the filters\n";
    return 1;
  }
  return tally.skipped == tally.ran ? spillway::test::skipped_exit_code : 0;
}

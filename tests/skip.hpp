// Skipping a test that cannot run on this machine, so that ctest says "Skipped" rather
// than "Passed": the runner (tests/main.cpp) exits with skipped_exit_code when every
// test case it ran skipped, and CMakeLists.txt makes that ctest's SKIP_RETURN_CODE.
//   if (!probe_uring().usable()) return test::skip_test("io_uring is unusable here");
#pragma once

#include <string_view>

namespace spillway::test {

constexpr int skipped_exit_code = 77;

// Marks the running test case skipped and prints why on stderr; the caller returns.
void skip_test(std::string_view why);

// The ThreadSanitizer build (tools/run.sh test --tsan) runs the slower tests about 6 times
// slower than the ASan build does: one whose many rounds would pass ctest's timeout skips.
#ifdef __SANITIZE_THREAD__
constexpr bool thread_sanitizer = true;
#else
constexpr bool thread_sanitizer = false;
#endif

}  // namespace spillway::test

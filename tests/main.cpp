// The test runner. Nothing may print to stdout before doctest does: ctest discovers
// test cases by running `--list-test-cases`, and a stray line becomes a bogus test.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

int main(int argc, char** argv) {
  doctest::Context context;
  context.setOption("order-by", "file");
  context.applyCommandLine(argc, argv);
  return context.run();
}

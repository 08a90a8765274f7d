// The gcc builds' stand-in for libFuzzer's main: runs the target over every file of the
// corpus folders named on the command line, so ctest replays the committed corpus. A
// crash fails the test (under ASan + UBSan, so does any memory or UB error); an empty
// corpus fails it too, since then nothing was checked.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& file : std::filesystem::directory_iterator(argv[i])) {
      if (!file.is_regular_file()) continue;
      std::ifstream in{file.path(), std::ios::binary};
      if (!in) {
        std::cerr << file.path().string() << ": cannot open\n";
        return 1;
      }
      const std::vector<char> bytes{std::istreambuf_iterator<char>{in}, {}};
      // What libFuzzer hands over for an empty input: a valid pointer, size 0.
      static const std::uint8_t none = 0;
      LLVMFuzzerTestOneInput(
        bytes.empty() ? &none : reinterpret_cast<const std::uint8_t*>(bytes.data()),
        bytes.size());
      ++replayed;
    }
  }
  std::cout << "replayed " << replayed << " inputs\n";
  return replayed == 0 ? 1 : 0;
}

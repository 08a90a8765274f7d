// Counts heap allocations made on the calling thread: tests/allocation_counter.cpp
// replaces the test binary's global operator new. Hot paths show with it that they
// allocate per batch or per group, never per read or per slice.
#pragma once

#include <cstddef>

namespace spillway::test {

class allocation_counter {
public:
  // False under AddressSanitizer, which owns operator new: the tests then skip.
  static bool available();

  allocation_counter();   // starts counting on this thread, from zero
  ~allocation_counter();  // stops
  std::size_t count() const;
};

}  // namespace spillway::test

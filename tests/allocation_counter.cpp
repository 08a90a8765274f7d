#include "tests/allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
}  // namespace

// AddressSanitizer replaces operator new itself (and every form of it, new[] and
// aligned new too): replacing only these would mix its allocations with our free().
#ifndef __SANITIZE_ADDRESS__
// noinline: inlined into CAF's code, GCC would pair its `new` with our free() and
// warn (-Wmismatched-new-delete) although the two replacements do match.
__attribute__((noinline)) void* operator new(std::size_t size) {
  if (counting) ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc{};
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace spillway::test {

bool allocation_counter::available() {
#ifdef __SANITIZE_ADDRESS__
  return false;
#else
  return true;
#endif
}

allocation_counter::allocation_counter() {
  allocations = 0;
  counting = true;
}

allocation_counter::~allocation_counter() { counting = false; }

std::size_t allocation_counter::count() const { return allocations; }

}  // namespace spillway::test

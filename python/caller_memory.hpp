// Caller memory named from Python: a (pointer, size) pair, a CPU torch tensor, or any
// C-contiguous buffer-protocol object (numpy, bytearray, memoryview). The spans point
// into the objects themselves, so reads land there and writes come from there with no
// copy on the Python side.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <pybind11/pybind11.h>

namespace spillway::python {

class caller_memory {
public:
  // `items` is a sequence; `argument` names it in the TypeError or ValueError raised
  // for an item that is none of the above (or read-only when `writable`).
  caller_memory(const pybind11::handle& items, bool writable, const char* argument);
  ~caller_memory();  // releases the buffers it holds: needs the GIL
  caller_memory(const caller_memory&) = delete;
  caller_memory& operator=(const caller_memory&) = delete;

  const std::vector<std::span<std::byte>>& spans() const { return spans_; }

private:
  std::vector<std::span<std::byte>> spans_;
  // The exporters stay alive and their memory in place while the GIL is released.
  std::vector<Py_buffer> buffers_;
  std::vector<pybind11::object> tensors_;
};

}  // namespace spillway::python

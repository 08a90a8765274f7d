#include "python/caller_memory.hpp"

#include <cstdint>
#include <string>

namespace py = pybind11;

namespace spillway::python {

namespace {

bool is_torch_tensor(const py::handle& item) {
  return py::hasattr(item, "data_ptr") && py::hasattr(item, "element_size") &&
         py::hasattr(item, "is_contiguous");
}

std::span<std::byte> tensor_memory(const py::handle& t, const std::string& argument) {
  if (t.attr("device").attr("type").cast<std::string>() != "cpu")
    throw py::value_error(argument + ": a tensor on " +
                          py::str(t.attr("device")).cast<std::string>() +
                          ", not in host memory");
  if (!t.attr("is_contiguous")().cast<bool>())
    throw py::value_error(argument + ": a tensor that is not contiguous");
  const auto size = t.attr("numel")().cast<std::size_t>() *
                    t.attr("element_size")().cast<std::size_t>();
  const auto address = t.attr("data_ptr")().cast<std::uintptr_t>();
  return {reinterpret_cast<std::byte*>(address), size};
}

std::span<std::byte> pair_memory(const py::tuple& pair, const std::string& argument) {
  if (pair.size() != 2 || !py::isinstance<py::int_>(pair[0]) ||
      !py::isinstance<py::int_>(pair[1]))
    throw py::type_error(argument + ": a tuple must be (pointer: int, size: int)");
  const auto address = pair[0].cast<std::uintptr_t>();
  const auto size = pair[1].cast<std::int64_t>();
  if (address == 0) throw py::value_error(argument + ": a null pointer");
  if (size < 0) throw py::value_error(argument + ": a negative size");
  return {reinterpret_cast<std::byte*>(address), static_cast<std::size_t>(size)};
}

std::span<std::byte> memory_of(const py::handle& item, bool writable,
                               const std::string& argument, std::vector<Py_buffer>& buffers,
                               std::vector<py::object>& tensors) {
  if (py::isinstance<py::tuple>(item)) return pair_memory(item.cast<py::tuple>(), argument);
  if (is_torch_tensor(item)) {
    tensors.push_back(py::reinterpret_borrow<py::object>(item));
    return tensor_memory(item, argument);
  }
  Py_buffer view;
  const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(item.ptr(), &view, flags) != 0) {
    PyErr_Clear();
    throw py::type_error(argument + ": " + py::str(py::type::of(item)).cast<std::string>() +
                         " is not " + (writable ? "writable " : "") +
                         "contiguous memory: give a (pointer, size) tuple, a CPU tensor or "
                         "a buffer such as a numpy array");
  }
  buffers.push_back(view);
  return {static_cast<std::byte*>(view.buf), static_cast<std::size_t>(view.len)};
}

}  // namespace

caller_memory::caller_memory(const py::handle& items, bool writable, const char* argument) {
  if (!py::isinstance<py::sequence>(items) || py::isinstance<py::str>(items))
    throw py::type_error(std::string(argument) + ": a sequence of memory is needed");
  const auto sequence = items.cast<py::sequence>();
  spans_.reserve(sequence.size());
  try {
    for (std::size_t i = 0; i < sequence.size(); ++i)
      spans_.push_back(memory_of(sequence[i], writable,
                                 std::string(argument) + "[" + std::to_string(i) + "]",
                                 buffers_, tensors_));
  } catch (...) {
    for (auto& view : buffers_) PyBuffer_Release(&view);
    throw;
  }
}

caller_memory::~caller_memory() {
  for (auto& view : buffers_) PyBuffer_Release(&view);
}

}  // namespace spillway::python

// spillway._spillway: Node (an embedded spillway::node) and Client (spillway::client),
// one binding for both (stores.hpp). Arguments are read with the GIL held; the I/O
// runs with it released, so other Python threads run meanwhile, and the calls are
// thread-safe. Per-key results are strings ("ok", "not_found", "io_error(EIO)", ...);
// misuse raises TypeError or ValueError naming the argument.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/caller_memory.hpp"
#include "python/node_config_arg.hpp"
#include "python/stores.hpp"

namespace py = pybind11;
using namespace spillway;
using namespace spillway::python;

namespace {

std::vector<std::string> keys_arg(const py::handle& keys) {
  if (!py::isinstance<py::sequence>(keys) || py::isinstance<py::str>(keys) ||
      py::isinstance<py::bytes>(keys))
    throw py::type_error("keys: a sequence of str or bytes is needed");
  const auto sequence = keys.cast<py::sequence>();
  std::vector<std::string> out;
  out.reserve(sequence.size());
  for (std::size_t i = 0; i < sequence.size(); ++i) {
    const auto key = sequence[i];
    if (!py::isinstance<py::str>(key) && !py::isinstance<py::bytes>(key))
      throw py::type_error("keys[" + std::to_string(i) + "]: str or bytes, not " +
                           py::str(py::type::of(key)).cast<std::string>());
    out.push_back(key.cast<std::string>());
  }
  return out;
}

py::list statuses_of(const std::vector<key_status>& statuses) {
  py::list out(statuses.size());
  for (std::size_t i = 0; i < statuses.size(); ++i) out[i] = to_string(statuses[i]);
  return out;
}

template <class Store>
void bind_store(py::class_<Store>& c) {
  c.def("put",
        [](Store& s, const py::handle& keys, const py::handle& values) {
          auto k = keys_arg(keys);
          caller_memory memory(values, false, "values");
          std::vector<key_status> statuses;
          {
            py::gil_scoped_release released;
            statuses = s.put(k, memory.spans());
          }
          return statuses_of(statuses);
        },
        py::arg("keys"), py::arg("values"),
        "Stores values[i] under keys[i]; returns once each is sealed and synced, one "
        "status per key. A value is bytes, a buffer, a CPU tensor or (pointer, size).")
   .def("get",
        [](Store& s, const py::handle& keys) {
          auto k = keys_arg(keys);
          std::vector<read_value> values;
          {
            py::gil_scoped_release released;
            values = s.get(k);
          }
          py::list statuses(values.size()), out(values.size());
          for (std::size_t i = 0; i < values.size(); ++i) {
            statuses[i] = to_string(values[i].status);
            out[i] = values[i].status.ok() ? py::object(py::bytes(values[i].value)) : py::none();
          }
          return py::make_tuple(statuses, out);
        },
        py::arg("keys"), "(statuses, values): each value bytes, or None unless ok.")
   .def("get_into",
        [](Store& s, const py::handle& keys, const py::handle& targets) {
          auto k = keys_arg(keys);
          caller_memory memory(targets, true, "targets");
          std::vector<key_status> statuses;
          std::vector<std::size_t> sizes;
          {
            py::gil_scoped_release released;
            statuses = s.get_into(k, memory.spans(), sizes);
          }
          return py::make_tuple(statuses_of(statuses), py::cast(sizes));
        },
        py::arg("keys"), py::arg("targets"),
        "Reads keys[i] into targets[i] (writable memory, as for put); (statuses, sizes). "
        "A target smaller than its value gives too_large and the value's size.")
   .def("register_memory",
        [](Store& s, std::uintptr_t pointer, std::uint64_t size) {
          if (pointer == 0) throw py::value_error("pointer: null");
          if (size == 0) throw py::value_error("size: 0");
          py::gil_scoped_release released;
          s.register_memory(reinterpret_cast<void*>(pointer), size);
        },
        py::arg("pointer"), py::arg("size"),
        "Lets values land in [pointer, pointer + size) without a copy (Node: reads in "
        "place; Client: nodes write them there, and get_into then takes targets there "
        "only); the memory must stay valid until close.")
   .def("unregister_memory",
        [](Store& s, std::uintptr_t pointer) {
          py::gil_scoped_release released;
          s.unregister_memory(reinterpret_cast<void*>(pointer));
        },
        py::arg("pointer"))
   .def("exists",
        [](Store& s, const py::handle& keys) {
          auto k = keys_arg(keys);
          std::vector<std::uint8_t> present;
          {
            py::gil_scoped_release released;
            present = s.exists(k);
          }
          py::list out(present.size());
          for (std::size_t i = 0; i < present.size(); ++i) out[i] = py::bool_(present[i] != 0);
          return out;
        },
        py::arg("keys"))
   .def("remove",
        [](Store& s, const py::handle& keys) {
          auto k = keys_arg(keys);
          py::gil_scoped_release released;
          return s.remove(k);
        },
        py::arg("keys"), "Removes the keys; returns how many were present.")
   .def("close", &Store::stop, py::call_guard<py::gil_scoped_release>(),
        "Stops (Node) or disconnects (Client); waits for calls in flight. Idempotent.")
   .def("__enter__", [](py::object self) { return self; })
   .def("__exit__", [](Store& s, py::args) {
     py::gil_scoped_release released;
     s.stop();
   });
}

}  // namespace

PYBIND11_MODULE(_spillway, m) {
  m.doc() = "spillway: the SSD tier of a KV-cache node (runtime/node.hpp, runtime/client.hpp)";

  py::class_<node_store> node(m, "Node",
                              "An embedded node over one data dir (runtime/node.hpp).");
  node.def(py::init([](const py::handle& config) {
             auto c = node_config_arg(config);
             py::gil_scoped_release released;
             return std::make_unique<node_store>(std::move(c));
           }),
           py::arg("config") = py::none(),
           "config: a node.toml path, a dict of its tables, or None for the defaults.")
      .def("metrics", &node_store::metrics, py::call_guard<py::gil_scoped_release>(),
           "The node's figures as Prometheus text.")
      .def("_bench_get_into",
           [](node_store& s, const py::handle& keys, const py::handle& targets) {
             auto k = keys_arg(keys);
             caller_memory memory(targets, true, "targets");
             std::vector<key_status> statuses;
             std::vector<std::size_t> sizes;
             std::chrono::duration<double> took{};
             {
               py::gil_scoped_release released;
               const auto start = std::chrono::steady_clock::now();
               statuses = s.get_into(k, memory.spans(), sizes);
               took = std::chrono::steady_clock::now() - start;
             }
             return py::make_tuple(statuses_of(statuses), py::cast(sizes), took.count());
           },
           py::arg("keys"), py::arg("targets"),
           "get_into timed in C++ around node::get_batch_into alone: (statuses, sizes, "
           "seconds), "
           "the baseline python/bench/bench_hicache.py holds the Python layer against.");
  bind_store(node);

  py::class_<client_store> client(m, "Client",
                                  "A client of running `spillway serve` nodes "
                                  "(runtime/client.hpp); values are at most 4 MiB each.");
  client.def(py::init([](const py::handle& config) {
               auto c = node_config_arg(config);
               if (c.cluster.nodes.empty())
                 throw py::value_error("config: cluster.nodes is empty: name the nodes");
               py::gil_scoped_release released;
               return std::make_unique<client_store>(c);
             }),
             py::arg("config"),
             "config: a TOML path or a dict with a [cluster] table (nodes, replicas, "
             "request_timeout_ms).")
      .def("await_connected",
           [](client_store& s, double seconds) {
             py::gil_scoped_release released;
             return s.await_connected(std::chrono::milliseconds(
                 static_cast<std::int64_t>(seconds * 1000)));
           },
           py::arg("timeout"), "Waits up to `timeout` seconds; returns the nodes connected.");
  bind_store(client);
}

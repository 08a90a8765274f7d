#include "python/node_config_arg.hpp"

#include <sstream>
#include <string>

#include <toml++/toml.h>

namespace py = pybind11;

namespace spillway::python {

namespace {

void append(toml::array& to, const py::handle& value, const std::string& path);
toml::table table_of(const py::dict& dict, const std::string& path);

// bool before int: Python's True is an int too.
template <class Put>
void convert(const py::handle& value, const std::string& path, Put&& put) {
  if (py::isinstance<py::bool_>(value)) put(value.cast<bool>());
  else if (py::isinstance<py::int_>(value)) put(value.cast<std::int64_t>());
  else if (py::isinstance<py::float_>(value)) put(value.cast<double>());
  else if (py::isinstance<py::str>(value)) put(value.cast<std::string>());
  else if (py::hasattr(value, "__fspath__")) put(value.attr("__fspath__")().cast<std::string>());
  else if (py::isinstance<py::dict>(value)) put(table_of(value.cast<py::dict>(), path));
  else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    toml::array array;
    std::size_t i = 0;
    for (auto item : value) append(array, item, path + "[" + std::to_string(i++) + "]");
    put(std::move(array));
  } else {
    throw py::type_error("config" + path + ": " +
                         py::str(py::type::of(value)).cast<std::string>() +
                         " has no TOML form (use str, int, float, bool, list or dict)");
  }
}

void append(toml::array& to, const py::handle& value, const std::string& path) {
  convert(value, path, [&](auto&& x) { to.push_back(std::move(x)); });
}

toml::table table_of(const py::dict& dict, const std::string& path) {
  toml::table table;
  for (auto [k, v] : dict) {
    const auto key = py::str(k).cast<std::string>();
    convert(v, path + "." + key, [&](auto&& x) { table.insert_or_assign(key, std::move(x)); });
  }
  return table;
}

}  // namespace

node_config node_config_arg(const py::handle& config) {
  try {
    if (config.is_none()) return node_config{};
    if (py::isinstance<py::str>(config) || py::hasattr(config, "__fspath__"))
      return load_config_file(py::module_::import("os").attr("fspath")(config).cast<std::string>());
    if (!py::isinstance<py::dict>(config))
      throw py::type_error("config: a node.toml path or a dict is needed, not " +
                           py::str(py::type::of(config)).cast<std::string>());
    std::ostringstream text;
    text << table_of(config.cast<py::dict>(), "");
    return load_config_text(text.str(), "config dict");
  } catch (const config_error& e) {
    throw py::value_error(std::string("config: ") + e.what());
  }
}

}  // namespace spillway::python

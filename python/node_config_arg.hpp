// The `config` argument of spillway.Node and spillway.Client: a node.toml path, or a
// dict of the same tables ({"storage": {"data_dir": ...}}), checked by the one loader
// the C++ side uses (config/config.hpp), so both name a bad key the same way.
#pragma once

#include <pybind11/pybind11.h>

#include "config/config.hpp"

namespace spillway::python {

// None gives the defaults. Raises ValueError for a config the loader refuses (its
// problems, one a line) and TypeError for a value that has no TOML form.
node_config node_config_arg(const pybind11::handle& config);

}  // namespace spillway::python

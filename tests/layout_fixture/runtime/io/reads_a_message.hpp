// A block that breaks the layout rule on purpose: ctest's "layout: a block that
// includes messages/ is refused" runs the include check over this folder and expects
// it to name this file. Never compiled.
#pragma once

#include "messages/read.hpp"
#include "runtime/io/read_item.hpp"

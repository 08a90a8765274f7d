// The fuse operations: every path in the mount is the same path under the backing
// directory, and each operation the rules name asks the rule book first.
#pragma once

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)
#include <fuse3/fuse.h>

#include "tools/faultfs/rules.hpp"

namespace faultfs {

struct filesystem {
  int backing_fd = -1;  // the backing directory, every path opened relative to it
  rule_book* rules = nullptr;
};

// The operations; each finds its `filesystem` in fuse_get_context()->private_data.
fuse_operations passthrough_operations();

}  // namespace faultfs

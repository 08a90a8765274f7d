// A batch actor per get: it finds the keys (catalog), pins their buckets, borrows
// arena extents, spreads the reads over the readers by outstanding bytes, checks every
// value (length, crc32c, key, bucket) as it lands, and answers once, one item per key.
// It watches its readers: the reads of one that dies go to the others. Given targets,
// it reads what it can straight into them (reads in place, see batch.cpp).
#pragma once

#include <caf/actor.hpp>

#include "config/config.hpp"
#include "messages/meter.hpp"
#include "messages/read.hpp"
#include "messages/store.hpp"

namespace spillway {

struct batch_context {
  catalog_actor catalog;
  arena_actor arena;
  std::vector<reader_actor> readers;
  read_section config;
  fault_section faults;
  caf::actor wave_sink;  // set: finished keys may go here early, in waves (see get_reply)
  meter_actor meter;     // hears what the batch did once it answered
  std::vector<read_target> targets;  // none, or where the caller wants each key's value
};

batch_actor spawn_batch(caf::actor_system& system, batch_context context);

}  // namespace spillway

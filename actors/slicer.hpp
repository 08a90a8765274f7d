// The slicer: cuts batches of transfer requests into slices and keeps each request's
// account until every slice of it has succeeded or one has run out of retries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <caf/fwd.hpp>

#include "config/config.hpp"
#include "messages/transfer.hpp"
#include "runtime/net/slicing.hpp"

namespace spillway {

struct slicer_options {
  slicing_rules rules;
  std::size_t watermark = 512;    // slices per group: a full group is posted at once
  std::uint32_t retries = 8;      // resends of a failed slice, each on the next lane
  std::size_t pool_groups = 16;   // 16 x 512 slices: 512 MiB in flight at 64 KiB
  bool naive = false;             // the contender: per-slice new, all cut before any post
};

slicer_options slicer_options_from(const transfer_section& transfer);

// `lanes` are the transports to the peer whose `segments` the requests address.
slicer_actor spawn_slicer(caf::actor_system& system, slicer_options options,
                          std::vector<transport_actor> lanes,
                          std::vector<segment_descriptor> segments);

}  // namespace spillway

// Every atom and message type of spillway, numbered once. Registering this block
// (register_message_types) lets the types cross the network through CAF's middleman;
// local sends would work without it. CAF's own atoms (put, flush, resolve, publish,
// delete, subscribe, ok) are used where their names fit.
#pragma once

#include <string>
#include <vector>

#include <caf/type_id.hpp>

namespace caf {
class actor_system_config;
}

namespace spillway {
struct arena_grant;
struct arena_stats;
struct buffer_table;
struct catalog_stats;
struct get_reply;
struct io_report;
struct io_stats;
struct latency_histogram;
struct key_status;
struct node_report;
struct node_stats;
struct pinned_file;
struct put_reply;
struct read_item;
struct read_result;
struct read_target;
struct reader_stats;
struct resolve_reply;
struct values_reply;
struct exists_reply;
struct get_into_request;
struct get_into_reply;
struct pull_request;
struct value_source;
struct value_placement;
struct bucket_records;
struct caller_values;
struct record_position;
struct forget_entry;
struct rdma_qp_info;
struct segment_descriptor;
struct transfer_peer_info;
struct transfer_stats;
void register_message_types(caf::actor_system_config& config);
}  // namespace spillway

CAF_BEGIN_TYPE_ID_BLOCK(spillway, caf::first_custom_type_id)
  CAF_ADD_ATOM(spillway, spillway, stats_atom, "stats")
  CAF_ADD_ATOM(spillway, spillway, pin_atom, "pin")
  CAF_ADD_ATOM(spillway, spillway, unpin_atom, "unpin")
  CAF_ADD_ATOM(spillway, spillway, buffered_atom, "buffered")
  CAF_ADD_ATOM(spillway, spillway, evict_atom, "evict")
  CAF_ADD_ATOM(spillway, spillway, evicted_atom, "evicted")
  CAF_ADD_ATOM(spillway, spillway, exists_atom, "exists")
  CAF_ADD_ATOM(spillway, spillway, read_atom, "read")
  CAF_ADD_ATOM(spillway, spillway, read_done_atom, "readdone")
  CAF_ADD_ATOM(spillway, spillway, adopt_atom, "adopt")
  CAF_ADD_ATOM(spillway, spillway, fence_atom, "fence")
  CAF_ADD_ATOM(spillway, spillway, alloc_atom, "alloc")
  CAF_ADD_ATOM(spillway, spillway, ready_atom, "ready")
  CAF_ADD_ATOM(spillway, spillway, release_atom, "release")
  CAF_ADD_ATOM(spillway, spillway, wave_atom, "wave")
  CAF_ADD_ATOM(spillway, spillway, transfer_atom, "transfer")
  CAF_ADD_ATOM(spillway, spillway, post_atom, "post")
  CAF_ADD_ATOM(spillway, spillway, describe_atom, "describe")
  CAF_ADD_ATOM(spillway, spillway, checksum_atom, "checksum")
  CAF_ADD_ATOM(spillway, spillway, values_atom, "values")
  CAF_ADD_ATOM(spillway, spillway, report_atom, "report")
  CAF_ADD_ATOM(spillway, spillway, commit_atom, "commit")
  CAF_ADD_ATOM(spillway, spillway, sealed_atom, "sealed")
  CAF_ADD_ATOM(spillway, spillway, get_into_atom, "getinto")
  CAF_ADD_ATOM(spillway, spillway, pull_atom, "pull")
  CAF_ADD_TYPE_ID(spillway, (spillway::reader_stats))
  CAF_ADD_TYPE_ID(spillway, (spillway::node_stats))
  CAF_ADD_TYPE_ID(spillway, (spillway::put_reply))
  CAF_ADD_TYPE_ID(spillway, (spillway::pinned_file))
  CAF_ADD_TYPE_ID(spillway, (spillway::bucket_records))
  CAF_ADD_TYPE_ID(spillway, (spillway::caller_values))
  CAF_ADD_TYPE_ID(spillway, (spillway::resolve_reply))
  CAF_ADD_TYPE_ID(spillway, (spillway::catalog_stats))
  CAF_ADD_TYPE_ID(spillway, (std::vector<std::string>))
  CAF_ADD_TYPE_ID(spillway, (std::vector<std::uint8_t>))
  CAF_ADD_TYPE_ID(spillway, (std::vector<std::uint64_t>))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::read_item>))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::read_result>))
  CAF_ADD_TYPE_ID(spillway, (spillway::buffer_table))
  CAF_ADD_TYPE_ID(spillway, (spillway::arena_grant))
  CAF_ADD_TYPE_ID(spillway, (spillway::arena_stats))
  CAF_ADD_TYPE_ID(spillway, (spillway::latency_histogram))
  CAF_ADD_TYPE_ID(spillway, (spillway::io_report))
  CAF_ADD_TYPE_ID(spillway, (spillway::io_stats))
  CAF_ADD_TYPE_ID(spillway, (spillway::get_reply))
  CAF_ADD_TYPE_ID(spillway, (spillway::segment_descriptor))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::segment_descriptor>))
  CAF_ADD_TYPE_ID(spillway, (spillway::transfer_peer_info))
  CAF_ADD_TYPE_ID(spillway, (spillway::rdma_qp_info))
  CAF_ADD_TYPE_ID(spillway, (spillway::transfer_stats))
  CAF_ADD_TYPE_ID(spillway, (spillway::node_report))
  CAF_ADD_TYPE_ID(spillway, (spillway::values_reply))
  CAF_ADD_TYPE_ID(spillway, (spillway::exists_reply))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::read_target>))
  CAF_ADD_TYPE_ID(spillway, (spillway::get_into_request))
  CAF_ADD_TYPE_ID(spillway, (spillway::get_into_reply))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::value_placement>))
  CAF_ADD_ATOM(spillway, spillway, forget_atom, "forget")
  CAF_ADD_TYPE_ID(spillway, (spillway::record_position))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::forget_entry>))
  CAF_ADD_TYPE_ID(spillway, (spillway::pull_request))
  CAF_ADD_TYPE_ID(spillway, (std::vector<spillway::value_source>))
CAF_END_TYPE_ID_BLOCK(spillway)

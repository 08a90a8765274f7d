// `bench transfer`'s figures and how they are reported: the driver
// (bench_transfer.cpp) fills case results, bench_transfer_report.cpp prints them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace spillway::bench {

// A row of the seed PR's table: `megabytes` (10^6 bytes) in `chunks` equal requests.
struct transfer_case {
  std::uint64_t megabytes = 0;
  std::uint64_t chunks = 0;

  std::uint64_t chunk_bytes() const { return megabytes * 1000000 / chunks; }
  std::uint64_t total() const { return chunk_bytes() * chunks; }
  std::string name() const { return std::to_string(megabytes) + "MB/" + std::to_string(chunks); }
};

struct contender_run {
  double seconds = 0;
  double first_slice_us = 0;       // submit -> a transport starts the first slice
  double slicer_ns_per_slice = 0;  // the slicer's own time (cutting), per slice
};

struct case_result {
  std::string transport;
  transfer_case shape;
  std::vector<contender_run> naive, watermark;  // one per run, in run order
  std::vector<double> limit_seconds;
};

void print_transfer_table(std::ostream& out, const std::vector<case_result>& results);
std::string transfer_json(const std::vector<case_result>& results, unsigned runs);

}  // namespace spillway::bench

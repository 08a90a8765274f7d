// The node's figures in Prometheus' text exposition format (version 0.0.4), as
// `node.metrics_listen` serves them at /metrics and node::metrics() returns them. Every
// figure comes from the stats the actors answer by message; nothing here reads their
// state. Names carry their unit (`_bytes`, `_seconds`), counters end in `_total`.
#pragma once

#include <string>

#include "messages/stats.hpp"

namespace spillway {

// What one scrape shows: each actor's answer to `stats`.
using metric_sources = node_report;

std::string prometheus_text(const metric_sources& sources);

}  // namespace spillway

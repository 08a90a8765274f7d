// The client's rounds: each round sends every node its keys at once (one request per
// node, split only where a message's bounds demand it), then takes the answers; a key
// moves down its rendezvous ranking between rounds until it is settled. The links
// (actors/node_link.cpp) answer at once for a node that is down, so a round never
// waits for a dead node.
#include "runtime/client.hpp"

#include <functional>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/node_link.hpp"
#include "config/endpoint.hpp"
#include "messages/service.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/storage/bucket_format.hpp"

namespace spillway {
namespace {

using positions = std::vector<std::uint32_t>;

// One request of a round: a node and the keys (by position) it is asked about.
struct node_request {
  std::uint32_t node = 0;
  positions keys;
};

// Where a key stands in its walk down the ranking.
struct key_walk {
  std::vector<std::uint32_t> rank;
  std::size_t next = 0;     // rank index to ask next
  std::uint32_t held = 0;   // put: nodes that stored it
  bool done = false;
  bool found = false;
  key_status error{key_error::not_found, 0};  // the first answer that was not found
  bool answered_error = false;
  key_status unreachable{};                   // set when some node was down or late
  bool was_unreachable = false;

  void failed(const key_status& s) {
    if (s.error == key_error::unavailable || s.error == key_error::timeout) {
      unreachable = s;
      was_unreachable = true;
    } else if (!answered_error) {
      error = s;
      answered_error = true;
    }
  }

  // A miss is unavailable when a node that may hold the key could not be asked.
  key_status outcome() const {
    if (found) return {};
    if (was_unreachable && (!answered_error || error.error == key_error::not_found))
      return unreachable;
    return error;
  }
};

// What a failed request means for each of its keys.
key_status status_of(const caf::error& err) {
  if (err == caf::sec::request_timeout) return {key_error::timeout, 0};
  return {key_error::unavailable, 0};
}

// Cuts one node's keys into requests within a message's bounds.
template <class Bytes>
void add_requests(std::vector<node_request>& out, std::uint32_t node, const positions& keys,
                  Bytes bytes_of) {
  node_request current{node, {}};
  std::uint64_t bytes = 0;
  for (auto k : keys) {
    const auto b = bytes_of(k);
    if (!current.keys.empty() &&
        (current.keys.size() == service_keys_max || bytes + b > inline_bytes_max)) {
      out.push_back(std::move(current));
      current = {node, {}};
      bytes = 0;
    }
    current.keys.push_back(k);
    bytes += b;
  }
  if (!current.keys.empty()) out.push_back(std::move(current));
}

std::vector<std::string> pick(const std::vector<std::string>& all, const positions& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (auto k : keys) out.push_back(all[k]);
  return out;
}

// Refused before any node is asked: what no node would take.
key_status local_check(const std::string& key, std::uint64_t value_size) {
  if (key.empty()) return {key_error::bad_key, 0};
  if (key.size() > bucket_format::max_key_size || value_size > inline_value_max)
    return {key_error::too_large, 0};
  return {};
}

}  // namespace

struct client::impl {
  cluster_section cluster;
  placement placed;
  caf::actor_system_config caf_config;  // outlives the system, which keeps a reference
  std::unique_ptr<caf::actor_system> system;
  std::vector<node_link_actor> links;

  explicit impl(const cluster_section& c) : cluster(c), placed(c.nodes) {}

  // A link answers within request_timeout_ms; this only bounds a lost answer.
  std::chrono::milliseconds wait() const {
    return std::chrono::milliseconds{cluster.request_timeout_ms + 1000};
  }

  std::vector<key_walk> walks(const std::vector<std::string>& keys) const {
    std::vector<key_walk> out(keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k) out[k].rank = placed.rank(keys[k]);
    return out;
  }

  // Sends every request at once, then takes each answer: take(request, reply or null, error).
  template <class Reply, class Send, class Take>
  void round(const std::vector<node_request>& requests, Send send, Take take) {
    caf::scoped_actor self{*system};
    std::vector<std::function<void()>> answers;
    for (const auto& r : requests) {
      auto handle = send(self, links[r.node], r.keys);
      answers.push_back([handle, &r, &take]() mutable {
        handle.receive([&](Reply& reply) { take(r, &reply, caf::error{}); },
                       [&](caf::error& err) { take(r, nullptr, err); });
      });
    }
    for (auto& a : answers) a();
  }

  // How many links are connected, once each has ended its attempt (or, until_up, is
  // connected), within `limit` in all.
  std::size_t connected(bool until_up, std::chrono::milliseconds limit);

  // get and exists: each key not yet found is asked of its next node.
  template <class Reply, class Send, class Take>
  void look_up(std::vector<key_walk>& walk, Send send, Take take) {
    for (;;) {
      std::vector<positions> by_node(links.size());
      for (std::uint32_t k = 0; k < walk.size(); ++k) {
        auto& w = walk[k];
        if (w.done) continue;
        if (w.next == w.rank.size()) w.done = true;
        else by_node[w.rank[w.next]].push_back(k);
      }
      std::vector<node_request> requests;
      for (std::uint32_t n = 0; n < by_node.size(); ++n)
        add_requests(requests, n, by_node[n], [](std::uint32_t) { return 0; });
      if (requests.empty()) return;
      round<Reply>(requests, send, take);
    }
  }
};

client::client(const cluster_section& cluster) {
  if (cluster.replicas > cluster.nodes.size())
    throw std::invalid_argument("cluster.replicas = " + std::to_string(cluster.replicas) +
                                " but cluster.nodes lists " +
                                std::to_string(cluster.nodes.size()) + " nodes");
  impl_ = std::make_unique<impl>(cluster);
  auto& i = *impl_;
  configure_actor_system(i.caf_config, 2);
  i.system = std::make_unique<caf::actor_system>(i.caf_config);
  for (const auto& n : cluster.nodes) {
    const auto where = parse_endpoint(n);  // validated by the config loader
    if (!where) throw std::invalid_argument("cluster.nodes: \"" + n + "\" is not host:port");
    i.links.push_back(spawn_node_link(
      *i.system, {std::chrono::milliseconds{cluster.request_timeout_ms}, where->host, where->port}));
  }
  // The first batch finds every node that answers connected, and those that do not
  // already known to be down.
  i.connected(false, std::chrono::milliseconds{cluster.request_timeout_ms});
}

client::~client() {
  auto& i = *impl_;
  for (auto& l : i.links) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  i.links.clear();
  i.system.reset();
}

const placement& client::placed() const { return impl_->placed; }

std::vector<key_status> client::put(const std::vector<std::string>& keys,
                                    const std::vector<std::string>& values) {
  if (keys.size() != values.size())
    throw std::invalid_argument("put: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values");
  auto& i = *impl_;
  auto walk = i.walks(keys);
  for (std::size_t k = 0; k < keys.size(); ++k)
    if (const auto s = local_check(keys[k], values[k].size()); !s.ok()) {
      walk[k].failed(s);
      walk[k].done = true;
    }
  const auto replicas = static_cast<std::uint32_t>(i.cluster.replicas);
  for (;;) {
    std::vector<positions> by_node(i.links.size());
    for (std::uint32_t k = 0; k < walk.size(); ++k) {
      auto& w = walk[k];
      if (w.done) continue;
      for (auto want = replicas - w.held; want > 0 && w.next < w.rank.size(); --want)
        by_node[w.rank[w.next++]].push_back(k);
    }
    std::vector<node_request> requests;
    for (std::uint32_t n = 0; n < by_node.size(); ++n)
      add_requests(requests, n, by_node[n], [&](std::uint32_t k) { return values[k].size(); });
    if (requests.empty()) break;
    i.round<put_reply>(
      requests,
      [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
        return self->request(link, i.wait(), caf::put_atom_v, pick(keys, ks), pick(values, ks));
      },
      [&](const node_request& r, put_reply* reply, const caf::error& err) {
        for (std::size_t j = 0; j < r.keys.size(); ++j) {
          const auto s = reply ? reply->keys.at(j) : status_of(err);
          if (s.ok()) ++walk[r.keys[j]].held;
          else walk[r.keys[j]].failed(s);
        }
      });
    for (auto& w : walk)
      if (w.held == replicas || w.next == w.rank.size()) w.done = true;
  }
  std::vector<key_status> out(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k)
    out[k] = walk[k].held > 0 ? key_status{} : walk[k].outcome();
  return out;
}

std::vector<read_value> client::get(const std::vector<std::string>& keys) {
  auto& i = *impl_;
  auto walk = i.walks(keys);
  std::vector<read_value> out(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k)
    if (const auto s = local_check(keys[k], 0); !s.ok()) {
      walk[k].failed(s);
      walk[k].done = true;
    }
  i.look_up<values_reply>(
    walk,
    [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
      return self->request(link, i.wait(), values_atom_v, pick(keys, ks));
    },
    [&](const node_request& r, values_reply* reply, const caf::error& err) {
      // Keys past `answered` did not fit in the reply: the same node, next round.
      const std::size_t answered = reply ? std::min<std::size_t>(reply->answered, r.keys.size())
                                         : r.keys.size();
      for (std::size_t j = 0; j < answered; ++j) {
        auto& w = walk[r.keys[j]];
        const auto s = reply ? reply->status.at(j) : status_of(err);
        if (s.ok() && reply) {  // ok comes only with a reply; said, for GCC 12's bounds check
          w.found = w.done = true;
          out[r.keys[j]].value = std::move(reply->values.at(j));
          continue;
        }
        w.failed(s);
        ++w.next;
      }
    });
  for (std::size_t k = 0; k < keys.size(); ++k) out[k].status = walk[k].outcome();
  return out;
}

exists_result client::exists(const std::vector<std::string>& keys) {
  auto& i = *impl_;
  auto walk = i.walks(keys);
  i.look_up<exists_reply>(
    walk,
    [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
      return self->request(link, i.wait(), exists_atom_v, pick(keys, ks));
    },
    [&](const node_request& r, exists_reply* reply, const caf::error& err) {
      for (std::size_t j = 0; j < r.keys.size(); ++j) {
        auto& w = walk[r.keys[j]];
        if (reply && reply->present.at(j)) {
          w.found = w.done = true;
          continue;
        }
        w.failed(reply ? key_status{key_error::not_found, 0} : status_of(err));
        ++w.next;
      }
    });
  exists_result out;
  for (const auto& w : walk) out.present.push_back(w.found ? 1 : 0);
  while (out.prefix < out.present.size() && out.present[out.prefix]) ++out.prefix;
  return out;
}

std::uint64_t client::remove(const std::vector<std::string>& keys) {
  auto& i = *impl_;
  std::vector<node_request> requests;
  positions all(keys.size());
  for (std::uint32_t k = 0; k < keys.size(); ++k) all[k] = k;
  for (std::uint32_t n = 0; n < i.links.size(); ++n)
    add_requests(requests, n, all, [](std::uint32_t) { return 0; });
  std::uint64_t removed = 0;
  i.round<std::uint64_t>(
    requests,
    [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
      return self->request(link, i.wait(), caf::delete_atom_v, pick(keys, ks));
    },
    [&](const node_request&, std::uint64_t* count, const caf::error&) {
      if (count) removed += *count;
    });
  return removed;
}

std::vector<node_report_result> client::stats() {
  auto& i = *impl_;
  std::vector<node_report_result> out(i.links.size());
  std::vector<node_request> requests;
  for (std::uint32_t n = 0; n < i.links.size(); ++n) {
    out[n].node = i.cluster.nodes[n];
    requests.push_back({n, {}});
  }
  i.round<node_report>(
    requests,
    [&](caf::scoped_actor& self, const node_link_actor& link, const positions&) {
      return self->request(link, i.wait(), report_atom_v);
    },
    [&](const node_request& r, node_report* report, const caf::error& err) {
      if (report) out[r.node].report = std::move(*report);
      else out[r.node].error = i.system->render(err);
    });
  return out;
}

std::size_t client::await_connected(std::chrono::milliseconds limit) {
  return impl_->connected(true, limit);
}

std::size_t client::impl::connected(bool until_up, std::chrono::milliseconds limit) {
  auto& i = *this;
  caf::scoped_actor self{*i.system};
  std::size_t up = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (const auto& l : i.links)
    self->request(l, std::max(deadline - std::chrono::steady_clock::now(),
                              std::chrono::steady_clock::duration::zero()),
                  caf::connect_atom_v, until_up)
      .receive([&](bool connected) { up += connected ? 1 : 0; }, [](caf::error&) {});
  return up;
}

}  // namespace spillway

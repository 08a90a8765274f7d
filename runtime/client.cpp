// The client's rounds: each round sends every node its keys at once (one request per
// node, split only where a message's bounds demand it), then takes the answers; a key
// moves down its rendezvous ranking between rounds until it is settled. The links
// (actors/node_link.cpp) answer at once for a node that is down, so a round never
// waits for a dead node.
#include "runtime/client.hpp"

#include <algorithm>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/multiplexer.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/node_link.hpp"
#include "actors/transfer_engine.hpp"
#include "config/endpoint.hpp"
#include "messages/service.hpp"
#include "runtime/actor_system_setup.hpp"
#include "runtime/tls.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "runtime/storage/printable_key.hpp"

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

// One node's answer about a key in a look-up: found, or a miss that moves the key on
// to its next owner. Whether it was found.
bool settle(key_walk& w, const key_status& s) {
  if (s.ok()) {
    w.found = w.done = true;
    return true;
  }
  w.failed(s);
  ++w.next;
  return false;
}

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

template <class T>
std::vector<T> pick(const std::vector<T>& all, const positions& keys) {
  std::vector<T> out;
  out.reserve(keys.size());
  for (auto k : keys) out.push_back(all[k]);
  return out;
}

// Refused before any node is asked: what no node would take. A value over
// inline_value_max travels only when the node pulls it (put_from).
key_status local_check(const std::string& key, std::uint64_t inline_size) {
  if (key.empty()) return {key_error::bad_key, 0};
  if (key.size() > bucket_format::max_key_size || inline_size > inline_value_max)
    return {key_error::too_large, 0};
  return {};
}

// What a put sends for each key: its value inline, or (pulled) where in registered
// memory its owners read it from.
struct put_values {
  const std::vector<std::string>& inline_values;  // "" for a pulled key
  std::vector<value_source> sources;              // empty, or per key: size 0 = inline
  transfer_address client;

  bool pulled(std::uint32_t k) const { return !sources.empty() && sources[k].size != 0; }
};

// CAF 0.17 queues a published port's acceptor for its network loop and applies the
// queue after the loop's next wake-up; an unpublish queued before then cancels the add
// in the queue, the acceptor never leaves the loop it never entered, and its socket
// stays open for good (seen: 1 client in 8 that registered and went at once). One
// runnable posted to the loop and run means the add was applied.
void await_network_turn(caf::actor_system& system) {
  std::promise<void> turned;
  system.middleman().backend().post([&turned] { turned.set_value(); });
  turned.get_future().wait();
}

// Memory registered for get_into: a segment of the client's transfer host.
struct registered_memory {
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::uint64_t segment = 0;

  bool holds(std::uint64_t address, std::uint64_t size) const {
    return address >= base && size <= length && address - base <= length - size;
  }
};

}  // namespace

struct client::impl {
  cluster_section cluster;
  transfer_section transfer_settings;
  placement placed;
  caf::actor_system_config caf_config;  // outlives the system, which keeps a reference
  std::unique_ptr<caf::actor_system> system;
  std::vector<node_link_actor> links;
  std::unique_ptr<transfer_engine> transfer;  // the transfer host nodes write values to
  std::mutex memory_lock;                     // callers may register from any thread
  std::vector<registered_memory> memory;
  transfer_address address;  // set by the first register_memory

  impl(const cluster_section& c, transfer_section t)
    : cluster(c), transfer_settings(std::move(t)), placed(c.nodes) {}

  // The registered region holding [at, at + size), or null; caller holds memory_lock.
  const registered_memory* holding(std::uint64_t at, std::uint64_t size) const {
    for (const auto& m : memory)
      if (m.holds(at, size)) return &m;
    return nullptr;
  }

  // Where keys[k]'s buffer lies in the registered memory; caller holds memory_lock.
  value_placement place(const std::string& key, std::span<std::byte> buffer) const {
    const auto at = reinterpret_cast<std::uint64_t>(buffer.data());
    if (const auto* m = holding(at, buffer.size()))
      return {m->segment, at - m->base, buffer.size()};
    throw std::invalid_argument("get_into: key \"" + printable_key(key) + "\": its buffer (" +
                                std::to_string(buffer.size()) +
                                " bytes) is not inside memory registered with register_memory");
  }

  // A link answers within request_timeout_ms; this only bounds a lost answer.
  std::chrono::milliseconds wait() const {
    return std::chrono::milliseconds{cluster.request_timeout_ms + 1000};
  }

  std::vector<key_walk> walks(const std::vector<std::string>& keys) const {
    std::vector<key_walk> out(keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k) out[k].rank = placed.rank(keys[k]);
    return out;
  }

  // A read's walks: keys no node could read are settled here, unasked.
  std::vector<key_walk> read_walks(const std::vector<std::string>& keys) const {
    auto out = walks(keys);
    for (std::size_t k = 0; k < keys.size(); ++k)
      if (const auto s = local_check(keys[k], 0); !s.ok()) {
        out[k].failed(s);
        out[k].done = true;
      }
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

  // Each key goes to its first `replicas` owners that take it (walks settled already
  // stay as they are): ok once one holds it.
  std::vector<key_status> put(const std::vector<std::string>& keys, std::vector<key_walk>& walk,
                              const put_values& values);

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

transfer_section client_transfer_defaults() {
  transfer_section t;
  t.listen = "127.0.0.1:0";
  return t;
}

client::client(const cluster_section& cluster, transfer_section transfer,
               const security_section& security) {
  if (cluster.replicas > cluster.nodes.size())
    throw std::invalid_argument("cluster.replicas = " + std::to_string(cluster.replicas) +
                                " but cluster.nodes lists " +
                                std::to_string(cluster.nodes.size()) + " nodes");
  impl_ = std::make_unique<impl>(cluster, std::move(transfer));
  auto& i = *impl_;
  check_tls_files(security);
  configure_actor_system(i.caf_config, 2, security);
  i.system = std::make_unique<caf::actor_system>(i.caf_config);
  i.transfer = std::make_unique<transfer_engine>(*i.system, i.transfer_settings, fault_section{});
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
  i.transfer.reset();  // its host and server, while the actor system runs
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
  return i.put(keys, walk, {values, {}, {}});
}

std::uint64_t client::inline_value_limit() { return inline_value_max; }

std::vector<key_status> client::put_from(const std::vector<std::string>& keys,
                                         const std::vector<std::span<const std::byte>>& values) {
  if (keys.size() != values.size())
    throw std::invalid_argument("put_from: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(values.size()) + " values");
  auto& i = *impl_;
  auto walk = i.walks(keys);
  std::vector<std::string> inline_values(keys.size());
  put_values plan{inline_values, std::vector<value_source>(keys.size()), {}};
  std::unique_lock lock{i.memory_lock};
  plan.client = i.address;
  for (std::uint32_t k = 0; k < keys.size(); ++k) {
    const auto& v = values[k];
    const auto at = reinterpret_cast<std::uint64_t>(v.data());
    key_status s;
    if (v.size() <= inline_value_max) {
      s = local_check(keys[k], v.size());
      inline_values[k].assign(reinterpret_cast<const char*>(v.data()), v.size());
    } else if (const auto* m = i.holding(at, v.size())) {
      s = local_check(keys[k], 0);
      plan.sources[k] = {m->segment, at - m->base, v.size()};
    } else {
      s = {key_error::bad_range, 0};
    }
    if (!s.ok()) {
      walk[k].failed(s);
      walk[k].done = true;
    }
  }
  lock.unlock();
  return i.put(keys, walk, plan);
}

std::vector<key_status> client::impl::put(const std::vector<std::string>& keys,
                                          std::vector<key_walk>& walk, const put_values& values) {
  auto& i = *this;
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
    for (std::uint32_t n = 0; n < by_node.size(); ++n) {
      positions inline_keys, pulled_keys;  // one kind per request
      for (auto k : by_node[n]) (values.pulled(k) ? pulled_keys : inline_keys).push_back(k);
      add_requests(requests, n, inline_keys,
                   [&](std::uint32_t k) { return values.inline_values[k].size(); });
      add_requests(requests, n, pulled_keys, [](std::uint32_t) { return 0; });
    }
    if (requests.empty()) break;
    i.round<put_reply>(
      requests,
      [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
        if (values.pulled(ks.front()))
          return self->request(
            link, i.wait(), pull_atom_v,
            pull_request{values.client, pick(keys, ks), pick(values.sources, ks)});
        return self->request(link, i.wait(), caf::put_atom_v, pick(keys, ks),
                             pick(values.inline_values, ks));
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
  auto walk = i.read_walks(keys);
  std::vector<read_value> out(keys.size());
  i.look_up<values_reply>(
    walk,
    [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
      return self->request(link, i.wait(), values_atom_v, pick(keys, ks));
    },
    [&](const node_request& r, values_reply* reply, const caf::error& err) {
      // Keys past `answered` did not fit in the reply: the same node, next round.
      const std::size_t answered = reply ? std::min<std::size_t>(reply->answered, r.keys.size())
                                         : r.keys.size();
      for (std::size_t j = 0; j < answered; ++j)
        // ok comes only with a reply; said, for GCC 12's bounds check
        if (settle(walk[r.keys[j]], reply ? reply->status.at(j) : status_of(err)) && reply)
          out[r.keys[j]].value = std::move(reply->values.at(j));
    });
  for (std::size_t k = 0; k < keys.size(); ++k) out[k].status = walk[k].outcome();
  return out;
}

void client::register_memory(void* base, std::uint64_t length) {
  auto& i = *impl_;
  const auto at = reinterpret_cast<std::uint64_t>(base);
  std::uint64_t end = 0;
  if (length == 0 || __builtin_add_overflow(at, length, &end))
    throw std::invalid_argument("register_memory: an empty or wrapping region");
  std::lock_guard lock{i.memory_lock};
  for (const auto& m : i.memory)
    if (at < m.base + m.length && m.base < end)
      throw std::invalid_argument("register_memory: the region overlaps one registered before");
  // The nodes read from it (puts) and write into it (get_into): read-write, for every
  // peer the control channel admitted (with TLS, the cluster's nodes).
  const auto segment =
    i.transfer->register_segment(base, length, segment_export::to_admitted_peers());
  if (i.address.port == 0) {
    await_network_turn(*i.system);
    i.address = {parse_endpoint(i.transfer_settings.listen)->host, i.transfer->control_port()};
  }
  i.memory.push_back({at, length, segment.id});
}

void client::unregister_memory(void* base) {
  auto& i = *impl_;
  std::lock_guard lock{i.memory_lock};
  const auto at = reinterpret_cast<std::uint64_t>(base);
  const auto it = std::find_if(i.memory.begin(), i.memory.end(),
                               [at](const registered_memory& m) { return m.base == at; });
  if (it == i.memory.end())
    throw std::invalid_argument("unregister_memory: no registered region starts there");
  // Withdrawn before it is forgotten: no node reaches it once this returns.
  i.transfer->unregister_segment(it->segment);
  i.memory.erase(it);
}

std::vector<key_status> client::get_into(const std::vector<std::string>& keys,
                                         const std::vector<std::span<std::byte>>& buffers,
                                         std::vector<std::size_t>& sizes) {
  if (keys.size() != buffers.size())
    throw std::invalid_argument("get_into: " + std::to_string(keys.size()) + " keys but " +
                                std::to_string(buffers.size()) + " buffers");
  auto& i = *impl_;
  std::vector<value_placement> where;
  transfer_address address;
  {
    std::lock_guard lock{i.memory_lock};
    for (std::size_t k = 0; k < keys.size(); ++k) where.push_back(i.place(keys[k], buffers[k]));
    address = i.address;
  }
  auto walk = i.read_walks(keys);
  sizes.assign(keys.size(), 0);
  i.look_up<get_into_reply>(
    walk,
    [&](caf::scoped_actor& self, const node_link_actor& link, const positions& ks) {
      return self->request(link, i.wait(), get_into_atom_v,
                           get_into_request{address, pick(keys, ks), pick(where, ks)});
    },
    [&](const node_request& r, get_into_reply* reply, const caf::error& err) {
      for (std::size_t j = 0; j < r.keys.size(); ++j) {
        const auto s = reply ? reply->status.at(j) : status_of(err);
        if (reply && (s.ok() || s.error == key_error::too_large))
          sizes[r.keys[j]] = reply->sizes.at(j);
        settle(walk[r.keys[j]], s);
      }
    });
  std::vector<key_status> out(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) out[k] = walk[k].outcome();
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
      for (std::size_t j = 0; j < r.keys.size(); ++j)
        settle(walk[r.keys[j]], !reply                  ? status_of(err)
                                : reply->present.at(j) ? key_status{}
                                                       : key_status{key_error::not_found, 0});
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

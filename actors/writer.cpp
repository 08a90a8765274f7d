// State chart:  idle --put--> open --limit | flush | tick | exit--> sealing --> idle
//               sealing: seal, then publish to the catalog; the puts whose keys were
//               in the bucket are answered when the catalog has them (or the seal failed).
#include "actors/writer.hpp"

#include <cerrno>
#include <chrono>
#include <memory>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "runtime/storage/bucket_writer.hpp"

namespace spillway {
namespace {

namespace bf = bucket_format;

struct pending_put {
  caf::typed_response_promise<put_reply> promise;
  put_reply reply;
  std::size_t waiting = 0;  // keys neither published nor failed yet
  meter_actor meter;
  std::chrono::steady_clock::time_point asked = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> sizes;  // of the values, for the bytes stored

  void settle(std::uint32_t key, key_status status) {
    reply.keys[key] = status;
    release();
  }

  void release() {
    if (--waiting != 0) return;
    report();
    promise.deliver(std::move(reply));
  }

  // Tells the meter what this put did: keys by status, bytes stored, time taken.
  void report() const {
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - asked);
    io_report r{true, std::vector<std::uint32_t>(key_error_count), 0,
                static_cast<std::uint64_t>(took.count())};
    for (std::size_t k = 0; k < reply.keys.size(); ++k) {
      ++r.keys[static_cast<std::size_t>(reply.keys[k].error)];
      if (reply.keys[k].ok()) r.bytes += sizes[k];
    }
    caf::anon_send(meter, std::move(r));
  }
};

// One key of a put, waiting for the bucket it was written to.
struct member {
  std::shared_ptr<pending_put> put;
  std::uint32_t key = 0;
};

key_status status_of(const io_failure& failure) {
  return {failure.sys_errno == ENOSPC ? key_error::no_space : key_error::io_error,
          failure.sys_errno};
}

void settle_all(std::vector<member>& members, key_status status) {
  for (auto& m : members) m.put->settle(m.key, status);
  members.clear();
}

struct writer_state {
  writer_options options;
  catalog_actor catalog;
  meter_actor meter;
  std::unique_ptr<bucket_writer> file;
  std::uint64_t next_sequence = 1;
  std::vector<member> open_members;  // keys in the open bucket
  static inline const char* name = "writer";
};

using writer_pointer = writer_actor::stateful_pointer<writer_state>;

// Seals the open bucket; on failure its keys are answered with the error.
std::optional<sealed_bucket> seal_file(writer_pointer self, std::vector<member>& members) {
  auto& st = self->state;
  bucket_index sealed;
  if (auto failed = st.file->seal(sealed)) {
    spdlog::error("writer: {}; {} keys not stored", failed->what, members.size());
    settle_all(members, status_of(*failed));
    return std::nullopt;
  }
  const auto id = sealed.header.bucket_id;
  return sealed_bucket{id, (st.options.dir / bucket_file_name(id)).string(), sealed.file_size,
                       std::move(sealed.entries), sealed.header.format_version};
}

// Seals the open bucket and publishes it; `then` runs once the catalog has it (or
// the seal failed), after the bucket's keys are answered.
template <class Then>
void seal_and_publish(writer_pointer self, Then then) {
  auto members = std::exchange(self->state.open_members, {});
  auto bucket = seal_file(self, members);
  if (!bucket) return then();
  // No timeout: the bucket is durable, and a timed-out publish would call stored keys
  // failed. The catalog answers at once unless it is gone.
  self->request(self->state.catalog, caf::infinite, caf::publish_atom_v, std::move(*bucket))
    .then(
      [members, then](caf::ok_atom) mutable {
        settle_all(members, {});
        then();
      },
      [members, then](caf::error&) mutable {
        settle_all(members, {key_error::unavailable, 0});  // the catalog is gone
        then();
      });
}

// Opens a bucket when none is open; seals first when the record would overflow it.
std::optional<io_failure> make_room(writer_pointer self, std::uint64_t record_bytes) {
  auto& st = self->state;
  auto& file = *st.file;
  if (file.is_open() && file.record_count() > 0 &&
      file.file_size() + record_bytes > st.options.bucket_size_limit)
    seal_and_publish(self, [] {});
  if (file.is_open()) return std::nullopt;
  const auto id = make_bucket_id(st.options.node_id, st.next_sequence++);
  if (auto failed = file.open(id)) return failed;
  if (st.options.seal_after_ms != 0)
    self->delayed_send(self, std::chrono::milliseconds{st.options.seal_after_ms},
                       caf::tick_atom_v, id);
  return std::nullopt;
}

key_status check_sizes(const std::string& key, const std::string& value) {
  if (key.empty()) return {key_error::bad_key, 0};
  if (key.size() > bf::max_key_size || value.size() > bf::max_value_size)
    return {key_error::too_large, 0};
  return {};
}

// Appends one key; on a write failure the whole open bucket fails with it.
void append(writer_pointer self, const std::shared_ptr<pending_put>& put, std::uint32_t i,
            const std::string& key, const std::string& value) {
  auto& st = self->state;
  const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(value.data()),
                                         value.size()};
  put->waiting += 1;
  std::optional<io_failure> failed =
    make_room(self, bf::record_size(bf::version, key.size(), value.size()));
  if (!failed) failed = st.file->append(key, bytes);
  if (!failed) {
    st.open_members.push_back({put, i});
  } else {
    spdlog::error("writer: {}", failed->what);
    st.file->abandon();
    settle_all(st.open_members, status_of(*failed));
    put->settle(i, status_of(*failed));
    return;
  }
  if (st.file->record_count() >= st.options.bucket_keys_limit) seal_and_publish(self, [] {});
}

writer_actor::behavior_type writer(writer_pointer self, writer_options options,
                                   catalog_actor catalog, meter_actor meter) {
  auto& st = self->state;
  st.options = std::move(options);
  st.catalog = std::move(catalog);
  st.meter = std::move(meter);
  st.next_sequence = st.options.first_sequence;
  st.file = std::make_unique<bucket_writer>(bucket_writer::options{
    st.options.dir, st.options.node_id, st.options.use_uring, st.options.refuse_o_direct,
    st.options.file_mode});
  // At shutdown the last bucket is sealed, then its puts are answered: the bucket is
  // durable, and recovery publishes it at the next start if the catalog is gone now.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    auto members = std::exchange(st.open_members, {});
    if (st.file->is_open())
      if (auto bucket = seal_file(self, members)) {
        caf::anon_send(st.catalog, caf::publish_atom_v, std::move(*bucket));
        settle_all(members, {});
      }
    self->quit(msg.reason);
  });
  return {
    [self](caf::put_atom, const std::vector<std::string>& keys,
           const std::vector<std::string>& values) -> caf::result<put_reply> {
      if (keys.size() != values.size())
        return caf::make_error(caf::sec::invalid_argument,
                               "put: " + std::to_string(keys.size()) + " keys but " +
                                 std::to_string(values.size()) + " values");
      auto put = std::make_shared<pending_put>();
      put->promise = self->make_response_promise<put_reply>();
      put->reply.keys.resize(keys.size());
      put->meter = self->state.meter;
      for (const auto& v : values) put->sizes.push_back(v.size());
      put->waiting = 1;  // held until every key is handed on, so no early answer
      for (std::uint32_t i = 0; i < keys.size(); ++i) {
        if (auto bad = check_sizes(keys[i], values[i]); !bad.ok()) put->reply.keys[i] = bad;
        else append(self, put, i, keys[i], values[i]);
      }
      put->release();
      return put->promise;
    },
    [self](caf::flush_atom) -> caf::result<caf::ok_atom> {
      if (!self->state.file->is_open()) return caf::ok_atom_v;
      auto promise = self->make_response_promise<caf::ok_atom>();
      seal_and_publish(self, [promise]() mutable { promise.deliver(caf::ok_atom_v); });
      return promise;
    },
    [self](caf::tick_atom, std::uint64_t bucket_id) {
      auto& file = *self->state.file;
      if (file.is_open() && file.bucket_id() == bucket_id) seal_and_publish(self, [] {});
    },
  };
}

}  // namespace

writer_actor spawn_writer(caf::actor_system& system, writer_options options,
                          catalog_actor catalog, meter_actor meter) {
  return system.spawn<caf::detached>(writer, std::move(options), std::move(catalog),
                                     std::move(meter));
}

}  // namespace spillway

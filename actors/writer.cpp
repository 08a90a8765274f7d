// State chart:  idle --put--> open --limit | flush | tick | exit--> sealing --> idle
//               open --commit--> open: the records appended since the last commit are
//                 written and fdatasynced (the first commit of a bucket also syncs the
//                 directory), then published to the catalog as part of the open bucket;
//                 their puts are answered when the catalog has them.
//               sealing: seal, then publish to the catalog; the puts whose keys were
//                 in the bucket and not yet committed are answered when the catalog has
//                 them (or the seal failed).
// Group commit: a put that finds no commit pending sends one to the writer itself. The
// mailbox is FIFO, so every put already queued is appended before that commit runs,
// and one write plus one fdatasync answers them all; puts that arrive during the sync
// wait for the next commit. The bucket still fills and seals as before, so a trickle of
// puts does not make a trickle of tiny buckets.
// A failed write or sync fails the keys not yet committed; the committed ones, already
// answered, are sealed on their own (bucket_writer::rewind_to_commit).
// Removes and evictions join the group commit: their forget-log entries are staged as
// they come and written with one fdatasync after the records' (forget_log.hpp). A remove's
// bound is the append position when it came, so the puts before it die and those after
// it live, and the catalog hears of it after the commit that publishes the puts before
// it (one sender: CAF keeps the order).
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
#include "runtime/storage/crash_point.hpp"
#include "runtime/storage/forget_log_writer.hpp"

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
  std::uint64_t in_place = 0, copied = 0;  // value bytes written from caller memory, copied

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
                static_cast<std::uint64_t>(took.count()), in_place, copied};
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

// A remove whose forget-log entries are staged, waiting for the next commit.
struct pending_remove {
  caf::typed_response_promise<std::uint64_t> promise;
  std::vector<std::string> keys;
  record_position bound;
};

struct writer_state {
  writer_options options;
  catalog_actor catalog;
  meter_actor meter;
  std::unique_ptr<bucket_writer> file;
  std::unique_ptr<forget_log_writer> forget;
  std::vector<pending_remove> removes;  // their entries staged in `forget`
  std::vector<caf::typed_response_promise<caf::ok_atom>> forgets;  // evictions', likewise
  std::uint64_t next_sequence = 1;
  std::vector<member> open_members;  // keys in the open bucket, not yet committed
  std::size_t published = 0;  // records of the open bucket its commits have published
  bool commit_pending = false;
  static inline const char* name = "writer";
};

using writer_pointer = writer_actor::stateful_pointer<writer_state>;

// Seals the open bucket; on failure its keys are answered with the error.
// The records to publish are those no commit published.
std::optional<bucket_records> seal_file(writer_pointer self, std::vector<member>& members) {
  auto& st = self->state;
  bucket_index sealed;
  const auto published = std::exchange(st.published, 0);
  // What the catalog serves from the .tmp, should the seal fail: the file stays for it.
  bucket_records kept{st.file->bucket_id(), st.file->tmp_path().string(),
                      st.file->committed_size(), {}};
  if (auto failed = st.file->seal(sealed)) {
    spdlog::error("writer: {}; {} keys not stored", failed->what, members.size());
    settle_all(members, status_of(*failed));
    // Published as it is, so that it is no longer open: evicted like the others, not
    // held open for good (the writer starts another).
    if (published > 0)
      self->request(st.catalog, caf::infinite, caf::publish_atom_v, std::move(kept))
        .then([](caf::ok_atom) {}, [](caf::error&) {});  // the catalog is gone: so are its keys
    return std::nullopt;
  }
  const auto id = sealed.header.bucket_id;
  sealed.entries.erase(sealed.entries.begin(),
                       sealed.entries.begin() + static_cast<std::ptrdiff_t>(published));
  return bucket_records{id, (st.options.dir / bucket_file_name(id)).string(), sealed.file_size,
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
        reach(crash_point::seal_published);
        settle_all(members, {});
        then();
      },
      [members, then](caf::error&) mutable {
        settle_all(members, {key_error::unavailable, 0});  // the catalog is gone
        then();
      });
}

// A write or sync of the open bucket failed: the keys not yet committed fail with it;
// the committed ones were answered ok, so their records are sealed on their own.
// Their puts are answered after the file's writes are done: a caller's memory is the
// caller's again once its put is answered.
void fail_open_bucket(writer_pointer self, const io_failure& failed) {
  auto& st = self->state;
  spdlog::error("writer: {}", failed.what);
  auto members = std::exchange(st.open_members, {});
  if (st.file->rewind_to_commit()) seal_and_publish(self, [] {});
  else st.file->abandon();
  st.published = 0;
  settle_all(members, status_of(failed));
}

// Makes the keys appended since the last commit durable, then publishes them to the
// catalog with the open bucket; they are answered once it has them.
void commit_records(writer_pointer self) {
  auto& st = self->state;
  if (!st.file->is_open() || st.open_members.empty()) return;
  if (auto failed = st.file->commit()) return fail_open_bucket(self, *failed);
  auto members = std::exchange(st.open_members, {});
  const auto committed = st.file->committed();
  bucket_records records{st.file->bucket_id(), st.file->tmp_path().string(),
                         st.file->committed_size(),
                         {committed.begin() + static_cast<std::ptrdiff_t>(st.published),
                          committed.end()}};
  st.published = committed.size();
  self->request(st.catalog, caf::infinite, commit_atom_v, std::move(records))
    .then(
      [members](caf::ok_atom) mutable {
        reach(crash_point::commit_published);
        settle_all(members, {});
      },
      [members](caf::error&) mutable {
        settle_all(members, {key_error::unavailable, 0});  // the catalog is gone
      });
}

// Makes the staged forget-log entries durable; then the evictions are answered, and the
// removes once the catalog has dropped their keys. `stopping`: the catalog is not asked
// (it goes too), and the removes are answered with an error, durable or not.
void commit_forgets(writer_pointer self, bool stopping) {
  auto& st = self->state;
  if (st.forget->staged() == 0) return;
  auto removes = std::exchange(st.removes, {});
  auto forgets = std::exchange(st.forgets, {});
  auto failed = st.forget->commit();
  if (failed)
    spdlog::error("writer: {}; {} removes and {} evictions not made durable", failed->what,
                  removes.size(), forgets.size());
  for (auto& p : forgets) {
    if (failed) p.deliver(caf::make_error(caf::sec::runtime_error, failed->what));
    else p.deliver(caf::ok_atom_v);
  }
  for (auto& r : removes) {
    if (failed || stopping) {
      r.promise.deliver(caf::make_error(
        caf::sec::runtime_error, failed ? failed->what : std::string{"the node is stopping"}));
      continue;
    }
    self->request(st.catalog, caf::infinite, caf::delete_atom_v, std::move(r.keys), r.bound)
      .then([p = r.promise](std::uint64_t n) mutable { p.deliver(n); },
            [p = r.promise](caf::error& e) mutable { p.deliver(std::move(e)); });
  }
}

// Records first: the catalog must publish the puts before a remove ahead of its delete.
void commit(writer_pointer self) {
  self->state.commit_pending = false;
  commit_records(self);
  commit_forgets(self, false);
}

void request_commit(writer_pointer self) {
  auto& st = self->state;
  if (st.commit_pending) return;
  st.commit_pending = true;
  self->send(self, commit_atom_v);
}

// Where the next record will go: a remove's bound.
record_position append_position(const writer_state& st) {
  if (st.file->is_open()) return {st.file->bucket_id(), st.file->file_size()};
  return {make_bucket_id(st.options.node_id, st.next_sequence), 0};
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

key_status check_sizes(const std::string& key, std::span<const std::byte> value) {
  if (key.empty()) return {key_error::bad_key, 0};
  if (key.size() > bf::max_key_size || value.size() > bf::max_value_size)
    return {key_error::too_large, 0};
  return {};
}

// Appends one key; on a write failure the whole open bucket fails with it.
void append(writer_pointer self, const std::shared_ptr<pending_put>& put, std::uint32_t i,
            const std::string& key, std::span<const std::byte> value, bool caller_keeps) {
  auto& st = self->state;
  put->waiting += 1;
  std::optional<io_failure> failed =
    make_room(self, bf::record_size(bf::version, key.size(), value.size()));
  if (!failed) {
    const auto in_place = caller_keeps ? st.file->in_place_bytes(value) : 0;
    put->in_place += in_place;
    put->copied += value.size() - in_place;
    failed = st.file->append(key, value, caller_keeps);
  }
  if (failed) {
    put->settle(i, status_of(*failed));
    return fail_open_bucket(self, *failed);
  }
  st.open_members.push_back({put, i});
  if (st.file->record_count() >= st.options.bucket_keys_limit) seal_and_publish(self, [] {});
}

// Takes a put: value_of(i) is the value of keys[i], kept by the caller until the put is
// answered when `caller_keeps`, else gone when this returns.
template <class ValueOf>
caf::result<put_reply> accept(writer_pointer self, const std::vector<std::string>& keys,
                              std::size_t values, ValueOf value_of, bool caller_keeps) {
  if (keys.size() != values)
    return caf::make_error(caf::sec::invalid_argument,
                           "put: " + std::to_string(keys.size()) + " keys but " +
                             std::to_string(values) + " values");
  auto put = std::make_shared<pending_put>();
  put->promise = self->make_response_promise<put_reply>();
  put->reply.keys.resize(keys.size());
  put->meter = self->state.meter;
  put->waiting = 1;  // held until every key is handed on, so no early answer
  for (std::uint32_t i = 0; i < keys.size(); ++i) {
    const std::span<const std::byte> value = value_of(i);
    put->sizes.push_back(value.size());
    if (auto bad = check_sizes(keys[i], value); !bad.ok()) put->reply.keys[i] = bad;
    else append(self, put, i, keys[i], value, caller_keeps);
  }
  put->release();
  if (!self->state.open_members.empty()) request_commit(self);
  return put->promise;
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
  st.forget = std::make_unique<forget_log_writer>(st.options.dir, st.options.forget_log_end,
                                                  static_cast<mode_t>(st.options.file_mode));
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
    commit_forgets(self, true);
    self->quit(msg.reason);
  });
  return {
    [self](caf::put_atom, const std::vector<std::string>& keys,
           const std::vector<std::string>& values) {
      return accept(
        self, keys, values.size(),
        [&values](std::size_t i) { return std::as_bytes(std::span{values[i]}); }, false);
    },
    [self](caf::put_atom, const std::vector<std::string>& keys, const caller_values& values) {
      if (values.address.size() != values.size.size())
        return caf::result<put_reply>{caf::make_error(
          caf::sec::invalid_argument, "put: caller_values has " +
                                        std::to_string(values.address.size()) +
                                        " addresses but " + std::to_string(values.size.size()) +
                                        " sizes")};
      return accept(
        self, keys, values.size.size(),
        [&values](std::size_t i) {
          return std::span{reinterpret_cast<const std::byte*>(values.address[i]), values.size[i]};
        },
        true);
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
    [self](commit_atom) { commit(self); },
    [self](caf::delete_atom, std::vector<std::string>& keys) -> caf::result<std::uint64_t> {
      auto& st = self->state;
      // A key the store cannot hold has no records to forget (and no entry could say it).
      std::erase_if(keys, [](const std::string& k) {
        return k.empty() || k.size() > bf::max_key_size;
      });
      if (keys.empty()) return std::uint64_t{0};
      const auto bound = append_position(st);
      for (const auto& k : keys) st.forget->stage({k, bound});
      auto promise = self->make_response_promise<std::uint64_t>();
      st.removes.push_back({promise, std::move(keys), bound});
      request_commit(self);
      return promise;
    },
    [self](forget_atom, const std::vector<forget_entry>& entries) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (entries.empty()) return caf::ok_atom_v;
      for (const auto& e : entries) st.forget->stage(e);
      auto promise = self->make_response_promise<caf::ok_atom>();
      st.forgets.push_back(promise);
      request_commit(self);
      return promise;
    },
  };
}

}  // namespace

writer_actor spawn_writer(caf::actor_system& system, writer_options options,
                          catalog_actor catalog, meter_actor meter, bool own_thread) {
  if (!own_thread) return system.spawn(writer, std::move(options), std::move(catalog),
                                       std::move(meter));
  return system.spawn<caf::detached>(writer, std::move(options), std::move(catalog),
                                     std::move(meter));
}

}  // namespace spillway

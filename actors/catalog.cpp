// Memory is the catalog's budget: about 100 bytes per key plus the key. Each key's
// location lives in one hash-map node, and the keys of a bucket are threaded through
// those nodes as a doubly linked list, so evicting a bucket walks only its own keys
// and no key is stored twice.
// The bucket being written is in the table too, once its first records are committed:
// its keys read from its .tmp until the seal moves them, in place, to the sealed file.
// It is never evicted, and the quota counts it inside the room kept for it.
// Descriptors are bounded too (options.max_open_files): a bucket opens its file when
// it is added while there is room, else at its first pin; each resolve lets the buckets
// it reads open theirs and then closes the least recently read others' until the
// count fits again, so many small buckets never exhaust the process's file limit.
// Evictions are made durable before their files go (runtime/storage/forget_log.hpp): the
// keys leave the table, and are told to the listeners, at once, but the buckets' files
// are unlinked only once the writer has synced a forget-log entry per key. One quota
// check is one batch: one append, one fdatasync, whatever it evicts. Should the log
// fail, the files stay (served again after a restart: newest values, never older ones)
// and their entries go again with the next batch.
#include "actors/catalog.hpp"

#include <algorithm>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/bucket.hpp"
#include "actors/file_remover.hpp"

namespace spillway {
namespace {

struct location;
using key_map = std::unordered_map<std::string, location>;
using key_node = std::pair<const std::string, location>;

struct location {
  std::uint32_t bucket = 0;  // slot in the bucket table
  std::uint32_t value_size = 0;
  std::uint64_t offset = 0;
  std::uint32_t crc = 0;
  key_node* prev = nullptr;  // the bucket's other live keys
  key_node* next = nullptr;
};

struct bucket_slot {
  std::uint64_t id = 0;  // 0: a free slot
  std::filesystem::path path;
  bucket_actor actor;
  std::uint64_t file_size = 0;
  std::uint32_t format_version = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t garbage_bytes = 0;
  std::uint64_t keys = 0;
  std::uint64_t last_read = 0;  // catalog clock tick
  key_node* first = nullptr;
  bool open = false;  // still being written: served from its .tmp, never evicted
  bool holds_fd = false;  // its actor has the file open, or will at its next pin
};

// Buckets evicted by one quota check, waiting for their forget-log entries.
struct eviction_batch {
  std::vector<forget_entry> entries;  // one per key: dead in its bucket and all before
  std::vector<bucket_actor> buckets;  // told to unlink their files once they are durable
  std::vector<std::string> keys;      // told to the listeners at once
};

struct catalog_state {
  catalog_options options;
  file_remover_actor remover;  // linked: it goes with the catalog
  key_map keys;
  std::vector<bucket_slot> buckets;
  std::vector<std::uint32_t> free_slots;
  std::vector<eviction_listener> listeners;
  forget_actor forget;  // the writer, once the node has said so
  std::vector<eviction_batch> unforgotten;  // waiting for it, or for a log that failed
  // Asked of it, by request number: their bucket actors live until the answer.
  std::unordered_map<std::uint64_t, std::vector<eviction_batch>> forgetting;
  std::uint64_t forget_requests = 0;
  // Keys evicted by recovery's quota check, which runs before the node can subscribe
  // any callback: the first listener hears them when it subscribes.
  std::vector<std::string> evicted_at_start;
  bool started = false;  // recovery's quota check is done
  std::uint64_t clock = 0;
  catalog_stats totals;  // keys, buckets, quota_bytes, reads_buffered: derived in stats()
  bool buffered = false;  // O_DIRECT was refused: every bucket reads through the page cache
  std::uint32_t open_slot = no_slot;  // the bucket the writer commits to, if any
  std::uint64_t open_files = 0;  // buckets that hold_fd
  static constexpr std::uint32_t no_slot = UINT32_MAX;
  static inline const char* name = "catalog";

  // -- the per-bucket key lists --------------------------------------------------

  void link(key_node* k) {
    auto& b = buckets[k->second.bucket];
    k->second.prev = nullptr;
    k->second.next = b.first;
    if (b.first) b.first->second.prev = k;
    b.first = k;
    b.keys += 1;
    b.live_bytes += k->second.value_size;
    totals.live_bytes += k->second.value_size;
  }

  // The key's record becomes garbage of its bucket.
  void unlink(key_node* k) {
    auto& loc = k->second;
    auto& b = buckets[loc.bucket];
    (loc.prev ? loc.prev->second.next : b.first) = loc.next;
    if (loc.next) loc.next->second.prev = loc.prev;
    b.keys -= 1;
    b.live_bytes -= loc.value_size;
    b.garbage_bytes += loc.value_size;
    totals.live_bytes -= loc.value_size;
    totals.garbage_bytes += loc.value_size;
  }

  // -- buckets -------------------------------------------------------------------

  // A new slot, or the open bucket's when `records` are more of it (a commit) or its
  // seal. `open`: the records are committed to a bucket still being written.
  std::uint32_t add_bucket(const catalog_actor& self, const bucket_records& records, bool open) {
    const bool known = open_slot != no_slot && buckets[open_slot].id == records.id;
    const auto slot = known ? open_slot : new_slot(self, records);
    auto& b = buckets[slot];
    if (b.path != records.path) {  // the seal renamed the open bucket's file
      b.path = records.path;
      caf::anon_send(b.actor, sealed_atom_v, records.path);
    }
    totals.file_bytes += records.file_size - b.file_size;
    b.file_size = records.file_size;
    b.open = open;
    if (open) open_slot = slot;
    else if (known) open_slot = no_slot;
    for (const auto& e : records.entries) {
      auto [it, fresh] = keys.try_emplace(e.key);
      if (!fresh) unlink(&*it);  // the newer record wins
      it->second.bucket = slot;
      it->second.value_size = e.value_size;
      it->second.offset = e.offset;
      it->second.crc = e.crc;
      link(&*it);
    }
    return slot;
  }

  std::uint32_t new_slot(const catalog_actor& self, const bucket_records& records) {
    std::uint32_t slot = 0;
    if (free_slots.empty()) {
      slot = static_cast<std::uint32_t>(buckets.size());
      buckets.emplace_back();
    } else {
      slot = free_slots.back();
      free_slots.pop_back();
    }
    auto& b = buckets[slot];
    b = bucket_slot{};
    b.id = records.id;
    b.path = records.path;
    b.format_version = records.format_version;
    b.last_read = ++clock;
    b.holds_fd = open_files < options.max_open_files;
    open_files += b.holds_fd;
    b.actor = spawn_bucket(self->home_system(), self, remover, records.id, records.path,
                           buffered, options.refuse_o_direct, b.holds_fd);
    return slot;
  }

  // Drops a bucket and its keys (they are evicted, not garbage) from the table; the
  // batch gets its actor, its keys and their forget-log entries.
  void drop_bucket(std::uint32_t slot, eviction_batch& batch) {
    auto& b = buckets[slot];
    const record_position whole{b.id, forget_format::whole_bucket};
    for (key_node* k = b.first; k != nullptr;) {
      key_node* next = k->second.next;
      totals.live_bytes -= k->second.value_size;
      batch.entries.push_back({k->first, whole});
      batch.keys.push_back(k->first);
      keys.erase(keys.find(k->first));  // by iterator: the key lives in the erased node
      k = next;
    }
    totals.file_bytes -= b.file_size;
    totals.garbage_bytes -= b.garbage_bytes;
    batch.buckets.push_back(std::move(b.actor));
    open_files -= b.holds_fd;
    b = bucket_slot{};
    free_slots.push_back(slot);
  }

  // A bucket with no live key: only garbage, superseded or removed records, which no
  // entry need kill (their newer records, or the removes, have theirs). It goes now.
  void drop_empty_bucket(std::uint32_t slot) {
    eviction_batch none;
    drop_bucket(slot, none);
    caf::anon_send(none.buckets.front(), evict_atom_v);
  }

  std::size_t bucket_count() const { return buckets.size() - free_slots.size(); }

  std::uint64_t open_bytes() const {
    std::uint64_t n = 0;
    for (const auto& b : buckets)
      if (b.open) n += b.file_size;
    return n;
  }

  // The bucket eviction takes next: the oldest, or the least recently read; `keep`
  // when there is none but it and open ones.
  std::uint32_t victim(std::uint32_t keep) const {
    std::uint32_t best = keep;
    for (std::uint32_t i = 0; i < buckets.size(); ++i) {
      const auto& b = buckets[i];
      if (b.id == 0 || b.open || i == keep) continue;
      const auto& c = buckets[best];
      const bool older = options.lru ? std::pair{b.last_read, b.id} < std::pair{c.last_read, c.id}
                                     : b.id < c.id;
      if (best == keep || older) best = i;
    }
    return best;
  }
};

using catalog_pointer = catalog_actor::stateful_pointer<catalog_state>;

void tell_listeners(catalog_pointer self, const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  auto& st = self->state;
  if (!st.started)
    st.evicted_at_start.insert(st.evicted_at_start.end(), keys.begin(), keys.end());
  for (const auto& l : st.listeners) self->send(l, evicted_atom_v, keys);
}

// The batch's entries are durable (or there is no log): its files go.
void unlink_evicted(const eviction_batch& batch) {
  for (const auto& b : batch.buckets) caf::anon_send(b, evict_atom_v);
}

// Sends every batch still waiting to the writer as one; once its entries are durable,
// each batch's files go. Should the log fail, they wait for the next batch.
void forget_evicted(catalog_pointer self) {
  auto& st = self->state;
  if (!st.forget || st.unforgotten.empty()) return;
  std::vector<forget_entry> entries;
  for (const auto& b : st.unforgotten)
    entries.insert(entries.end(), b.entries.begin(), b.entries.end());
  const auto count = entries.size();
  const auto number = ++st.forget_requests;
  st.forgetting.emplace(number, std::exchange(st.unforgotten, {}));
  self->request(st.forget, caf::infinite, forget_atom_v, std::move(entries))
    .then(
      [self, number, count](caf::ok_atom) {
        auto& st = self->state;
        st.totals.forget_entries_written += count;
        const auto batches = std::move(st.forgetting.at(number));
        st.forgetting.erase(number);
        for (const auto& b : batches) unlink_evicted(b);
      },
      [self, number](caf::error& err) {
        auto& st = self->state;
        spdlog::error("evictions not made durable ({}): their files stay until they are",
                      self->home_system().render(err));
        auto batches = std::move(st.forgetting.at(number));
        st.forgetting.erase(number);
        for (auto& b : batches) st.unforgotten.push_back(std::move(b));
      });
}

// Whole buckets go, never the one just written nor an open one, until the files fit
// the quota with room for the bucket being written (which holds the open bucket's
// committed bytes). Buckets left with no live key go at once.
void enforce_quota(catalog_pointer self, std::uint32_t newest) {
  auto& st = self->state;
  for (std::uint32_t i = 0; i < st.buckets.size(); ++i)
    if (st.buckets[i].id != 0 && st.buckets[i].keys == 0 && !st.buckets[i].open && i != newest)
      st.drop_empty_bucket(i);
  eviction_batch batch;
  const auto open = st.open_bytes();
  while (st.totals.file_bytes - open + std::max(open, st.options.reserve_bytes) >
         st.options.quota_bytes) {
    const auto slot = st.victim(newest);
    if (slot == newest) break;
    const auto id = st.buckets[slot].id;
    const auto before = batch.keys.size();
    st.drop_bucket(slot, batch);
    st.totals.evicted_buckets += 1;
    st.totals.evicted_keys += batch.keys.size() - before;
    spdlog::info("evicted bucket {:016x}: {} keys", id, batch.keys.size() - before);
  }
  if (batch.buckets.empty()) return;
  tell_listeners(self, std::exchange(batch.keys, {}));
  if (!st.options.forget_log) return unlink_evicted(batch);
  st.unforgotten.push_back(std::move(batch));
  forget_evicted(self);
}

// Tells the buckets read least recently, none of those read at `now`, to close their
// descriptors until at most max_open_files hold one.
void close_least_read(catalog_state& st, std::uint64_t now) {
  while (st.open_files > st.options.max_open_files) {
    bucket_slot* oldest = nullptr;
    for (auto& b : st.buckets)
      if (b.holds_fd && b.last_read < now && (!oldest || b.last_read < oldest->last_read))
        oldest = &b;
    if (!oldest) return;  // the batch's own buckets: they need their files
    caf::anon_send(oldest->actor, caf::close_atom_v);
    oldest->holds_fd = false;
    st.open_files -= 1;
  }
}

resolve_reply resolve(catalog_state& st, const std::vector<std::string>& wanted) {
  resolve_reply reply;
  std::unordered_map<std::uint32_t, std::size_t> group_of;  // bucket slot -> reply.buckets
  const auto now = ++st.clock;
  for (std::uint32_t i = 0; i < wanted.size(); ++i) {
    const auto it = st.keys.find(wanted[i]);
    if (it == st.keys.end()) {
      reply.missing.push_back(i);
      continue;
    }
    const auto& loc = it->second;
    auto [g, fresh] = group_of.try_emplace(loc.bucket, reply.buckets.size());
    if (fresh) {
      auto& b = st.buckets[loc.bucket];
      b.last_read = now;
      st.open_files += !b.holds_fd;
      b.holds_fd = true;
      reply.buckets.push_back({b.id, b.actor, {}, b.format_version});
    }
    reply.buckets[g->second].records.push_back(
      {i, loc.offset, static_cast<std::uint32_t>(it->first.size()), loc.value_size, loc.crc});
  }
  close_least_read(st, now);
  return reply;
}

catalog_actor::behavior_type catalog(catalog_pointer self, catalog_options options,
                                     recovered_store recovered) {
  auto& st = self->state;
  st.options = options;
  st.totals.forget_records_dropped = recovered.forget.records_dropped;
  st.remover = spawn_file_remover(self->home_system(), options.data_dir);
  self->link_to(st.remover);
  for (auto& r : recovered.buckets)
    st.add_bucket(self,
                  {r.index.header.bucket_id, r.path.string(), r.index.file_size,
                   std::move(r.index.entries), r.index.header.format_version},
                  false);
  if (!st.buckets.empty()) enforce_quota(self, static_cast<std::uint32_t>(st.buckets.size() - 1));
  st.started = true;
  self->set_exit_handler([self](caf::exit_msg& msg) {
    for (auto& b : self->state.buckets)
      if (b.id != 0) self->send_exit(b.actor, msg.reason);
    auto& st = self->state;  // evicted buckets not yet durable: their files stay
    for (auto& batch : st.unforgotten)
      for (auto& b : batch.buckets) self->send_exit(b, msg.reason);
    for (auto& asked : st.forgetting)
      for (auto& batch : asked.second)
        for (auto& b : batch.buckets) self->send_exit(b, msg.reason);
    self->quit(msg.reason);
  });
  return {
    [self](commit_atom, const bucket_records& records) {
      ++self->state.totals.commits;
      enforce_quota(self, self->state.add_bucket(self, records, true));
      return caf::ok_atom_v;
    },
    [self](caf::publish_atom, const bucket_records& sealed) {
      enforce_quota(self, self->state.add_bucket(self, sealed, false));
      return caf::ok_atom_v;
    },
    [self](caf::resolve_atom, const std::vector<std::string>& keys) {
      return resolve(self->state, keys);
    },
    [self](exists_atom, const std::vector<std::string>& keys) {
      std::vector<std::uint8_t> present;
      present.reserve(keys.size());
      for (const auto& k : keys) present.push_back(self->state.keys.count(k) ? 1 : 0);
      return present;
    },
    [self](caf::delete_atom, const std::vector<std::string>& keys, record_position bound) {
      auto& st = self->state;
      st.totals.forget_entries_written += keys.size();
      std::uint64_t removed = 0;
      for (const auto& k : keys) {
        const auto it = st.keys.find(k);
        if (it == st.keys.end()) continue;
        const auto slot = it->second.bucket;
        if (!(record_position{st.buckets[slot].id, it->second.offset} < bound))
          continue;  // put again after the remove
        st.unlink(&*it);
        st.keys.erase(it);
        ++removed;
        // Its space comes back now; an open bucket's when it is sealed.
        if (st.buckets[slot].keys == 0 && !st.buckets[slot].open) st.drop_empty_bucket(slot);
      }
      return removed;
    },
    [self](forget_atom, forget_actor log) {
      self->state.forget = std::move(log);
      forget_evicted(self);
    },
    [self](buffered_atom) {
      auto& st = self->state;
      ++st.totals.o_direct_refusals;
      if (st.buffered) return;
      spdlog::warn("O_DIRECT reads refused on the data dir's filesystem: reading every bucket "
                   "through the page cache from now on");
      st.buffered = true;
      for (const auto& b : st.buckets)
        if (b.id != 0) caf::anon_send(b.actor, buffered_atom_v);
    },
    [self](stats_atom) {
      auto s = self->state.totals;
      s.keys = self->state.keys.size();
      s.open_buckets = 0;
      for (const auto& b : self->state.buckets) s.open_buckets += b.open ? 1 : 0;
      s.buckets = self->state.bucket_count() - s.open_buckets;
      s.quota_bytes = self->state.options.quota_bytes;
      s.reads_buffered = self->state.buffered;
      s.open_files = self->state.open_files;
      return s;
    },
    [self](caf::subscribe_atom, eviction_listener listener) {
      auto& st = self->state;
      if (!st.evicted_at_start.empty())
        self->send(listener, evicted_atom_v, std::exchange(st.evicted_at_start, {}));
      st.listeners.push_back(std::move(listener));
    },
  };
}

}  // namespace

catalog_actor spawn_catalog(caf::actor_system& system, catalog_options options,
                            recovered_store recovered) {
  return system.spawn(catalog, options, std::move(recovered));
}

}  // namespace spillway

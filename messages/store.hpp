// The bucket store's protocols: the writer (puts), the catalog (where each key lives)
// and the bucket actors (one per bucket file, sealed or still being written). Sizes are
// bytes, offsets are from the start of a bucket file. Layout of the files themselves: runtime/storage/bucket_format.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "runtime/storage/key_status.hpp"
#include "messages/stats.hpp"
#include "messages/type_ids.hpp"
#include "runtime/storage/bucket_format.hpp"
#include "runtime/storage/forget_log.hpp"

namespace spillway {

// -- forget log ------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, record_position& x) {
  return f(x.bucket_id, x.offset);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, forget_entry& x) {
  return f(x.key, x.bound);
}

// forget(entries): makes forget-log entries durable (runtime/storage/forget_log.hpp),
// group-committed with the writer's puts; answered ok once they are, else an error.
// The writer is the one that answers it; the catalog asks it for evictions.
using forget_actor = caf::typed_actor<
  caf::replies_to<forget_atom, std::vector<forget_entry>>::with<caf::ok_atom>>;

// -- writer ----------------------------------------------------------------------

// One status per key, in the order of the put. A put is answered once every key of
// it is durable (committed: written and fdatasynced, its bucket's .tmp name synced
// too) and published in the catalog, or has failed. `reasons`, from a node's service
// to a remote client only: empty, or one per key, saying why a key the status alone
// would not explain was refused (the field of the request, and what to do instead).
struct put_reply {
  std::vector<key_status> keys;
  std::vector<std::string> reasons;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_reply& x) {
  return f(x.keys, x.reasons);
}

// Values that stay in their caller's memory, this process's, until their put is
// answered: value i is size[i] bytes at address[i]. The writer writes their whole
// pages from there (runtime/storage/bucket_writer.hpp), so they never leave the process.
struct caller_values {
  std::vector<std::uint64_t> address;
  std::vector<std::uint64_t> size;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, caller_values& x) {
  return f(x.address, x.size);
}

// put(keys, values): values[i] is the value of keys[i]; copied into staging, or,
// given as caller_values, written in place where alignment allows. The writer has
// finished with caller memory once the put is answered, whatever the answer.
// flush: seals the open bucket; answered once it is published.
// tick(bucket id): the writer's own reminder to seal a bucket open too long.
// commit: the writer's own reminder, queued behind the puts that came before it, to
// make them durable and visible together (group commit).
// delete(keys): a remove. Every record of the keys appended before it is dead: their
// forget-log entries are made durable with the next group commit, then the catalog
// drops the keys (those not put again since); answers how many the catalog dropped, or
// an error when the entries could not be made durable (the keys stay).
using writer_actor = caf::typed_actor<
  caf::replies_to<caf::put_atom, std::vector<std::string>, std::vector<std::string>>::with<
    put_reply>,
  caf::replies_to<caf::put_atom, std::vector<std::string>, caller_values>::with<put_reply>,
  caf::replies_to<caf::flush_atom>::with<caf::ok_atom>,
  caf::reacts_to<caf::tick_atom, std::uint64_t>,
  caf::reacts_to<commit_atom>,
  caf::replies_to<caf::delete_atom, std::vector<std::string>>::with<std::uint64_t>,
  caf::replies_to<forget_atom, std::vector<forget_entry>>::with<caf::ok_atom>>;

// -- file remover ----------------------------------------------------------------

// delete(path): unlink the file; a failure is logged, there is no one to tell.
using file_remover_actor = caf::typed_actor<caf::reacts_to<caf::delete_atom, std::string>>;

// -- bucket ----------------------------------------------------------------------

// A bucket's file as its readers may use it while they hold a pin.
struct pinned_file {
  std::int32_t fd = -1;
  bool direct = false;  // opened with O_DIRECT: reads must be page-aligned
  std::uint64_t bucket_id = 0;
  std::int32_t open_errno = 0;  // fd -1, or still direct after buffered: why an open failed
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pinned_file& x) {
  return f(x.fd, x.direct, x.bucket_id, x.open_errno);
}

// pin(n): n more reads in flight, held by the asking actor until it unpins them or
// goes away; a file that would not open answers fd -1 and its open_errno, and takes no
// pin. unpin(n): n of the sender's reads done. evict: the catalog has dropped this
// bucket; its file goes when the last pin does. buffered: O_DIRECT reads
// of the file were refused; answers the file opened for reads through the page cache,
// or still direct, with open_errno, when it could not be opened so. sealed(path): the
// bucket's .tmp was renamed to `path`; what opens or unlinks the file from now on
// uses that name (descriptors already open stay valid). close: the catalog keeps the
// node's open files bounded (storage.max_open_files): the descriptor goes once no pin
// holds it, and the next pin opens the file again.
using bucket_actor = caf::typed_actor<
  caf::replies_to<pin_atom, std::uint32_t>::with<pinned_file>,
  caf::replies_to<buffered_atom>::with<pinned_file>,
  caf::reacts_to<unpin_atom, std::uint32_t>,
  caf::reacts_to<evict_atom>,
  caf::reacts_to<sealed_atom, std::string>,
  caf::reacts_to<caf::close_atom>>;

// -- catalog ---------------------------------------------------------------------

}  // namespace spillway

namespace spillway::bucket_format {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_entry& x) {
  return f(x.key, x.value_size, x.offset, x.crc);
}

}  // namespace spillway::bucket_format

namespace spillway {

// Records the writer has made durable, for the catalog to publish. In a commit, the
// records committed to the open bucket's .tmp (`path`) since its last commit, the
// file's committed bytes in `file_size`; in a publish, the sealed bucket (renamed to
// `path`, synced) and those of its records no commit published.
struct bucket_records {
  std::uint64_t id = 0;
  std::string path;
  std::uint64_t file_size = 0;
  std::vector<bucket_format::index_entry> entries;
  std::uint32_t format_version = bucket_format::version;  // of the file: readers follow it
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bucket_records& x) {
  return f(x.id, x.path, x.file_size, x.entries, x.format_version);
}

// Where one requested key lives; `key_index` is its position in the request.
struct record_location {
  std::uint32_t key_index = 0;
  std::uint64_t offset = 0;
  std::uint32_t key_size = 0;
  std::uint32_t value_size = 0;
  std::uint32_t crc = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, record_location& x) {
  return f(x.key_index, x.offset, x.key_size, x.value_size, x.crc);
}

// The records of one bucket to read. Its format version says what a read of a value
// takes (bucket_format::value_read): a property of the file, so it is sent once per
// bucket, not kept with every key.
struct bucket_reads {
  std::uint64_t bucket_id = 0;
  bucket_actor bucket;
  std::vector<record_location> records;
  std::uint32_t format_version = bucket_format::version;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bucket_reads& x) {
  return f(x.bucket_id, x.bucket, x.records, x.format_version);
}

// The read path's first step: the requested keys grouped by bucket; `missing` holds
// the positions of keys the catalog does not have.
struct resolve_reply {
  std::vector<bucket_reads> buckets;
  std::vector<std::uint32_t> missing;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resolve_reply& x) {
  return f(x.buckets, x.missing);
}

// Told which keys eviction dropped, so a cache node can tell its master.
using eviction_listener =
  caf::typed_actor<caf::reacts_to<evicted_atom, std::vector<std::string>>>;

// commit: the open bucket's newly committed records, readable from its .tmp now; the
// open bucket is never evicted. publish: a sealed bucket; when it is the open one, its
// keys move to the sealed file with no moment at which they are missing.
// exists answers one flag per key (1 = present). delete(keys, bound): the writer's
// remove, made durable; drops each key whose record lies before `bound` (a put after
// the remove stays) and answers how many it dropped. forget(log): where evictions'
// forget-log entries go (the writer); an evicted bucket's file is unlinked once they
// are durable. Until it comes, evicted files wait.
// buffered: O_DIRECT reads were refused on the data dir's filesystem; every bucket,
// present and future, is read through the page cache from then on.
using catalog_actor = caf::typed_actor<
  caf::reacts_to<buffered_atom>,
  caf::replies_to<commit_atom, bucket_records>::with<caf::ok_atom>,
  caf::replies_to<caf::publish_atom, bucket_records>::with<caf::ok_atom>,
  caf::replies_to<caf::resolve_atom, std::vector<std::string>>::with<resolve_reply>,
  caf::replies_to<exists_atom, std::vector<std::string>>::with<std::vector<std::uint8_t>>,
  caf::replies_to<caf::delete_atom, std::vector<std::string>, record_position>::with<
    std::uint64_t>,
  caf::reacts_to<forget_atom, forget_actor>,
  caf::replies_to<stats_atom>::with<catalog_stats>,
  caf::reacts_to<caf::subscribe_atom, eviction_listener>>;

}  // namespace spillway

"""SpillwayStore: an SGLang HiCache L3 storage backend on spillway (README "Use with SGLang").

SGLang builds one per rank as SpillwayStore(storage_config, kwargs), then calls
register_mem_pool_host(host_pool). The v1 calls move pages straight between disk and
the host pool's pages (get_page_buffer_meta's pointers), with nothing copied in Python.

Keys are namespaced so that no run reads another's KV: user tag, model, dtype, host
layout, page size, the tp rank and size for MHA (every MLA rank holds the same KV),
the pp and attention-cp coordinates when they split the model. An MHA page is two
values (K, V), an MLA page one.

extra_config (SGLang's --hicache-storage-backend-extra-config):
  embedded mode (default): a node inside this process, over DATA_DIR/<rank>/.
    config     a node.toml path or a dict of its tables
    data_dir   overrides the config's storage.data_dir
  client mode: `spillway serve` nodes, shared by every rank.
    nodes      ["host:port", ...], or
    cluster    a TOML path (or dict) with the [cluster] table
  tag          optional; part of every key (say, a weights revision)
"""

import copy
import logging
import shutil
import tomllib
from pathlib import Path
from typing import Any, List, Optional
from urllib.parse import quote

import torch

from . import Client, Node

try:
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage
except ImportError:
    from ._hicache_base import HiCacheStorage

logger = logging.getLogger(__name__)

# A value travels to a serve node inside one message: messages/service.hpp's
# inline_value_max. Larger entries (an MLA page of DeepSeek-V3) go as several values.
CLIENT_VALUE_MAX = 4 << 20


def _field(value) -> str:
    # Escaped, so that no user-given text can forge another namespace's separators.
    return quote(str(value), safe="")


def _parts(size: int, limit: Optional[int]):
    """(suffix, offset, length) of the values one entry of `size` bytes is stored as."""
    if limit is None or size <= limit:
        return [("", 0, size)]
    return [(f"#{j}", offset, min(limit, size - offset))
            for j, offset in enumerate(range(0, size, limit))]


def _memory(item, size, argument: str):
    """(pointer, size) of a tensor, or of a pointer and its size."""
    if isinstance(item, int):
        if size is None:
            raise ValueError(f"{argument}: a pointer needs its size in target_sizes")
        return item, int(size)
    if not hasattr(item, "data_ptr"):
        raise TypeError(f"{argument}: a CPU tensor or a pointer, not {type(item).__name__}")
    if item.device.type != "cpu" or not item.is_contiguous():
        raise ValueError(f"{argument}: the tensor must be contiguous host memory")
    return item.data_ptr(), item.numel() * item.element_size()


class SpillwayStore(HiCacheStorage):
    def __init__(self, storage_config, kwargs=None):
        extra = dict(storage_config.extra_config or {})
        self._config = storage_config
        self._tag = extra.get("tag")
        self._mla = bool(storage_config.is_mla_model)
        self._writes = not self._mla or storage_config.tp_rank == 0
        self._client = "nodes" in extra or "cluster" in extra
        self._value_max = CLIENT_VALUE_MAX if self._client else None
        self._pool = None
        self._plan = None
        self._namespace = None
        if self._client:
            self._store = Client(self._cluster_config(extra))
        else:
            if self._mla and storage_config.tp_size > 1:
                raise ValueError(
                    f"SpillwayStore: an MLA model at tp_size {storage_config.tp_size} needs "
                    "client mode: only tp_rank 0 writes and every rank reads, so the ranks "
                    "must share one store; embedded mode gives each rank its own. Set "
                    "extra_config 'nodes' (or 'cluster') to running `spillway serve` nodes.")
            self._node_settings = self._embedded_config(extra)
            self._store = Node(self._node_settings)

    # -- construction ---------------------------------------------------------------

    @staticmethod
    def _cluster_config(extra):
        if "config" in extra or "data_dir" in extra:
            raise ValueError("extra_config: config and data_dir are for embedded mode, "
                             "not with nodes or cluster")
        if "nodes" in extra:
            nodes = extra["nodes"]
            return {"cluster": {"nodes": nodes.split(",") if isinstance(nodes, str) else nodes}}
        cluster = extra["cluster"]
        return {"cluster": cluster} if isinstance(cluster, dict) else cluster

    def _embedded_config(self, extra):
        given = extra.get("config")
        if given is None:
            settings = {}
        elif isinstance(given, dict):
            settings = copy.deepcopy(given)
        else:
            with open(given, "rb") as f:
                settings = tomllib.load(f)
        base = extra.get("data_dir") or settings.get("storage", {}).get("data_dir")
        if not base:
            raise ValueError("extra_config: data_dir (or config's storage.data_dir) is "
                             "needed in embedded mode")
        c = self._config
        rank = (f"tp{c.tp_rank}-pp{c.pp_rank}-cp{getattr(c, 'attn_cp_rank', 0)}"
                f"-dp{getattr(c, 'dp_rank', 0)}")
        # A data dir per rank: ranks never share files (the node locks its own).
        settings.setdefault("storage", {})["data_dir"] = str(Path(base) / rank)
        # Every rank of a host would otherwise bind the same port.
        settings.setdefault("node", {})["listen"] = ""
        return settings

    def register_mem_pool_host(self, mem_pool_host):
        super().register_mem_pool_host(mem_pool_host)
        pool = mem_pool_host
        c = self._config
        layout = getattr(pool, "layout", None) or (
            "page_first" if c.is_page_first_layout else "layer_first")
        fields = [self._tag or "", c.model_name or "", str(pool.dtype).replace("torch.", ""),
                  layout, f"page{pool.page_size}"]
        fields.append("mla" if self._mla else f"tp{c.tp_rank}of{c.tp_size}")
        if c.pp_size > 1:
            fields.append(f"pp{c.pp_rank}of{c.pp_size}")
        cp_size = getattr(c, "attn_cp_size", 1) or 1
        if cp_size > 1:
            fields.append(f"cp{c.attn_cp_rank}of{cp_size}")
        self._namespace = "/".join(_field(f) for f in fields) + "/"
        _, sizes = pool.get_page_buffer_meta(torch.arange(pool.page_size, dtype=torch.int64))
        self._entry_sizes = [int(size) for size in sizes]
        names = [".k", ".v"] if len(self._entry_sizes) == 2 else [""]
        # Per page: (suffix, entry, offset, length) of each value.
        self._plan = [(name + suffix, e, offset, length)
                      for e, (name, size) in enumerate(zip(names, self._entry_sizes))
                      for suffix, offset, length in _parts(size, self._value_max)]
        self._pool = pool
        if not self._client:
            self._register_pool()

    def _register_pool(self):
        buffer = self._pool.kv_buffer
        try:
            self._store.register_memory(buffer.data_ptr(), buffer.numel() * buffer.element_size())
        except (ValueError, RuntimeError) as e:
            logger.warning("spillway: the host pool is not registered with the node (%s); "
                           "reads into it go through the node's arena", e)

    # -- the v1 (zero-copy) path ----------------------------------------------------

    def _require_pool(self):
        # The namespace holds the pool's dtype, layout and page size.
        if self._pool is None:
            raise RuntimeError("SpillwayStore: register_mem_pool_host was not called")

    def _page_values(self, keys, host_indices):
        """The values of each page of `keys`, and where each lies in the host pool."""
        self._require_pool()
        ptrs, sizes = self._pool.get_page_buffer_meta(host_indices)
        per = len(self._entry_sizes)
        if len(ptrs) != per * len(keys):
            raise ValueError(f"host_indices: {len(ptrs) // per} pages for {len(keys)} keys")
        if [int(size) for size in sizes[:per]] != self._entry_sizes:
            raise ValueError(f"host_indices: pages of {list(sizes[:per])} bytes, not "
                             f"{self._entry_sizes} as registered")
        names, memory = [], []
        for i, key in enumerate(keys):
            base = self._namespace + key
            for suffix, e, offset, length in self._plan:
                names.append(base + suffix)
                memory.append((int(ptrs[i * per + e]) + offset, length))
        return names, memory

    def _per_page(self, flags, pages):
        n = len(self._plan)
        return [all(flags[i * n:(i + 1) * n]) for i in range(pages)]

    def batch_get_v1(self, keys: List[str], host_indices, extra_info=None) -> List[bool]:
        names, memory = self._page_values(keys, host_indices)
        statuses, sizes = self._store.get_into(names, memory)
        self._log_failures("get", names, statuses)
        return self._per_page([s == "ok" and size == m[1]
                               for s, size, m in zip(statuses, sizes, memory)], len(keys))

    def batch_set_v1(self, keys: List[str], host_indices, extra_info=None) -> List[bool]:
        if not self._writes:
            return [True] * len(keys)  # MLA: tp_rank 0 writes what every rank reads
        names, memory = self._page_values(keys, host_indices)
        present = self._per_page(self._store.exists(names), len(keys))
        n = len(self._plan)
        todo = [i for i, p in enumerate(present) if not p]
        todo_names = [names[j] for i in todo for j in range(i * n, (i + 1) * n)]
        todo_memory = [memory[j] for i in todo for j in range(i * n, (i + 1) * n)]
        if todo_names:
            statuses = self._store.put(todo_names, todo_memory)
            self._log_failures("set", todo_names, statuses)
            ok = [st == "ok" for st in statuses]
            done = self._per_page(ok, len(todo))
            # A page whose values did not all land is removed whole: a failed set is
            # never visible.
            self._store.remove([todo_names[j] for p, good in enumerate(done) if not good
                                for j in range(p * n, (p + 1) * n) if ok[j]])
            for i, good in zip(todo, done):
                present[i] = good
        return present

    def batch_exists(self, keys: List[str], extra_info=None) -> int:
        self._require_pool()
        names = [self._namespace + key + p[0] for key in keys for p in self._plan]
        pages = self._per_page(self._store.exists(names), len(keys))
        return pages.index(False) if False in pages else len(pages)

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    # -- the generic path: one flat value per key -----------------------------------

    def _flat_values(self, keys, items, sizes, argument):
        self._require_pool()
        names, memory, owners = [], [], []
        for i, key in enumerate(keys):
            pointer, size = _memory(items[i], None if sizes is None else sizes[i],
                                    f"{argument}[{i}]")
            for suffix, offset, length in _parts(size, self._value_max):
                names.append(self._namespace + key + ".flat" + suffix)
                memory.append((pointer + offset, length))
                owners.append(i)
        return names, memory, owners

    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> bool:
        if not self._writes:
            return True
        items = values if values is not None else target_locations
        if items is None or len(items) != len(keys):
            raise ValueError("values: one per key (or target_locations with target_sizes)")
        names, memory, owners = self._flat_values(keys, items, target_sizes, "values")
        statuses = self._store.put(names, memory)
        self._log_failures("set", names, statuses)
        if all(s == "ok" for s in statuses):
            return True
        failed = {owners[j] for j, s in enumerate(statuses) if s != "ok"}
        self._store.remove([names[j] for j, s in enumerate(statuses)
                            if s == "ok" and owners[j] in failed])
        return False

    def set(self, key: str, value: Optional[Any] = None,
            target_location: Optional[Any] = None, target_sizes: Optional[Any] = None) -> bool:
        return self.batch_set([key], None if value is None else [value],
                              None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None):
        if target_locations is None or len(target_locations) != len(keys):
            raise ValueError("target_locations: one per key is needed: spillway reads "
                             "into the caller's memory")
        names, memory, owners = self._flat_values(keys, target_locations, target_sizes,
                                                  "target_locations")
        statuses, sizes = self._store.get_into(names, memory)
        self._log_failures("get", names, statuses)
        ok = [True] * len(keys)
        for j, (s, size) in enumerate(zip(statuses, sizes)):
            if s != "ok" or size != memory[j][1]:
                ok[owners[j]] = False
        return [target_locations[i] if good else None for i, good in enumerate(ok)]

    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None):
        return self.batch_get([key], None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])[0]

    # -- housekeeping ---------------------------------------------------------------

    def _log_failures(self, what, names, statuses):
        bad = [(n, s) for n, s in zip(names, statuses) if s not in ("ok", "not_found")]
        if bad:
            logger.warning("spillway: %s: %d of %d values failed, first %s: %s",
                           what, len(bad), len(names), bad[0][0], bad[0][1])

    def clear(self) -> None:
        """Embedded: empties this rank's data dir. Client: a no-op that says so, since
        the nodes are shared with other ranks and runs."""
        if self._client:
            logger.warning("spillway: clear() in client mode leaves the shared nodes as "
                           "they are; remove keys with `spillway rm` or a node's data dir")
            return
        self._store.close()
        shutil.rmtree(self._node_settings["storage"]["data_dir"], ignore_errors=True)
        self._store = Node(self._node_settings)
        if self._pool is not None:
            self._register_pool()

    def get_stats(self):
        # SGLang's StorageMetrics differs across its versions; the node's figures are
        # on its /metrics (node.metrics_listen in the config).
        return None

    def close(self) -> None:
        self._store.close()

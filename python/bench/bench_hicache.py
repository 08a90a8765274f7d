"""What the Python layer costs: SpillwayStore.batch_get_v1 of 64 pages against the
node's own get_batch_into of the same values into the same pages (timed in C++),
interleaved (the two take turns going first), medians. Pages at their real sizes:
DeepSeek-V3 (MLA, 4,497,408 B) and Llama-3-8B (MHA, 4 MiB K + 4 MiB V). The last
column is the Python layer's own time, measured inside each batch_get_v1 (the call less
the node's part of it), so that disk noise, which the medians also carry, stays out.

  PYTHONPATH=build/release/python /usr/bin/python3 python/bench/bench_hicache.py [--rounds N]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from host_pool import HostPool, StorageConfig  # noqa: E402
from spillway.sglang import SpillwayStore  # noqa: E402

PAGES = 64
MODELS = [("DeepSeek-V3 (MLA)", True, "deepseek-ai/DeepSeek-V3"),
          ("Llama-3-8B (MHA)", False, "meta-llama/Meta-Llama-3-8B")]


class TimedNode:
    """The store's node, its get_into timed in C++, to learn the node's part of a call."""

    def __init__(self, node):
        self.node = node
        self.took = 0.0

    def get_into(self, names, memory):
        statuses, sizes, self.took = self.node._bench_get_into(names, memory)
        return statuses, sizes


def bench(name, mla, model, rounds, base):
    config = StorageConfig(is_mla_model=mla, model_name=model,
                           extra_config={"data_dir": base})
    store = SpillwayStore(config, {})
    pool = HostPool(mla, 2 * PAGES)
    store.register_mem_pool_host(pool)
    pool.fill(range(PAGES), seed=1)
    keys = [f"page{i}" for i in range(PAGES)]
    assert store.batch_set_v1(keys, pool.indices(range(PAGES))) == [True] * PAGES
    targets = pool.indices(range(PAGES, 2 * PAGES))
    names, memory = store._page_values(keys, targets)
    node = store._store
    store._store = TimedNode(node)
    own = []

    def python_layer():
        start = time.perf_counter()
        ok = store.batch_get_v1(keys, targets)
        took = time.perf_counter() - start
        assert ok == [True] * PAGES
        own.append(took - store._store.took)
        return took

    def node_alone():
        statuses, _, took = node._bench_get_into(names, memory)
        assert statuses == ["ok"] * len(names)
        return took

    python_layer(), node_alone()  # warm: arena, rings, page tables
    own.clear()
    times = {python_layer: [], node_alone: []}
    for r in range(rounds):
        order = [python_layer, node_alone] if r % 2 == 0 else [node_alone, python_layer]
        for f in order:
            times[f].append(f())
    for p in range(PAGES):
        assert pool.page(p).equal(pool.page(PAGES + p))
    store._store = node
    store.close()
    size = PAGES * pool.page_bytes
    node_s, python_s = statistics.median(times[node_alone]), statistics.median(times[python_layer])
    return (f"| {name} | {PAGES} x {pool.page_bytes:,} B = {size / 2**20:.0f} MiB | "
            f"{size / node_s / 1e9:.2f} GB/s ({node_s * 1e3:.1f} ms) | "
            f"{size / python_s / 1e9:.2f} GB/s ({python_s * 1e3:.1f} ms) | "
            f"{(python_s / node_s - 1) * 100:+.1f} % | "
            f"{statistics.median(own) * 1e3:.3f} ms ({statistics.median(own) / node_s * 100:.2f} %) |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="spillway-bench-hicache-", dir="/var/tmp")
    try:
        rows = [bench(name, mla, model, args.rounds, os.path.join(base, str(i)))
                for i, (name, mla, model) in enumerate(MODELS)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"medians of {args.rounds} interleaved rounds")
    print("| pages | batch | node::get_batch_into | SpillwayStore.batch_get_v1 | difference "
          "| Python layer's own time |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""What the Python layer costs: SpillwayStore.batch_get_v1 of 64 pages against the
node's own get_batch_into of the same values into the same pages (timed in C++),
interleaved (the two take turns going first), medians. Pages at their real sizes:
DeepSeek-V3 (MLA, 4,497,408 B) and Llama-3-8B (MHA, 4 MiB K + 4 MiB V).

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

    def python_layer():
        start = time.perf_counter()
        ok = store.batch_get_v1(keys, targets)
        took = time.perf_counter() - start
        assert ok == [True] * PAGES
        return took

    def node_alone():
        statuses, took = store._store._bench_get_into(names, memory)
        assert statuses == ["ok"] * len(names)
        return took

    python_layer(), node_alone()  # warm: arena, rings, page tables
    times = {python_layer: [], node_alone: []}
    for r in range(rounds):
        order = [python_layer, node_alone] if r % 2 == 0 else [node_alone, python_layer]
        for f in order:
            times[f].append(f())
    for p in range(PAGES):
        assert pool.page(p).equal(pool.page(PAGES + p))
    store.close()
    size = PAGES * pool.page_bytes
    node_s, python_s = statistics.median(times[node_alone]), statistics.median(times[python_layer])
    return (f"| {name} | {PAGES} x {pool.page_bytes:,} B = {size / 2**20:.0f} MiB | "
            f"{size / node_s / 1e9:.2f} GB/s ({node_s * 1e3:.1f} ms) | "
            f"{size / python_s / 1e9:.2f} GB/s ({python_s * 1e3:.1f} ms) | "
            f"{(python_s / node_s - 1) * 100:+.1f} % |")


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
    print("| pages | batch | node::get_batch_into | SpillwayStore.batch_get_v1 | Python layer |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""SpillwayStore in client mode against a real `spillway serve` process, on a free
port: an MLA model at tp_size 2, rank 0 writing what rank 1 reads (DeepSeek-V3 pages
are over a message's 4 MiB, so each goes as two values), and an MHA model."""

import pytest
import torch

from host_pool import HostPool, StorageConfig
from spillway.sglang import SpillwayStore


def client_store(address, mla, rank, tp_size, pages):
    config = StorageConfig(tp_rank=rank, tp_size=tp_size, is_mla_model=mla,
                           model_name="deepseek-ai/DeepSeek-V3" if mla else "llama",
                           extra_config={"nodes": [address]})
    store = SpillwayStore(config, {})
    pool = HostPool(mla, pages)
    store.register_mem_pool_host(pool)
    return store, pool


def test_mla_rank_0_writes_and_rank_1_reads(serve):
    (writer, wpool), (reader, rpool) = [client_store(serve, True, r, 2, 4) for r in (0, 1)]
    wpool.fill([0, 1, 2], seed=9)
    keys = ["m0", "m1", "m2"]
    assert writer.batch_set_v1(keys, wpool.indices([0, 1, 2])) == [True] * 3
    # rank 1 writes nothing (rank 0 has), yet answers success as SGLang expects.
    assert reader.batch_set_v1(["only-rank-0"], rpool.indices([3])) == [True]
    assert reader.batch_exists(["m0", "m1", "m2", "only-rank-0"]) == 3
    assert reader.batch_get_v1(keys, rpool.indices([2, 0, 3])) == [True] * 3
    for src, dst in [(0, 2), (1, 0), (2, 3)]:
        assert torch.equal(wpool.page(src), rpool.page(dst))
    writer.close()
    reader.close()


def test_mha_pages_through_the_node(serve):
    store, pool = client_store(serve, False, 0, 1, 4)
    pool.fill([0, 1], seed=10)
    assert store.batch_set_v1(["a", "b"], pool.indices([0, 1])) == [True, True]
    assert store.batch_get_v1(["a", "x", "b"], pool.indices([2, 3, 3])) == [True, False, True]
    assert torch.equal(pool.page(2), pool.page(0)) and torch.equal(pool.page(3), pool.page(1))
    store.close()

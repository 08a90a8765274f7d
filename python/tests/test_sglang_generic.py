"""SpillwayStore's generic (non-v1) path: one flat value per key, from and into tensors."""

import torch

from conftest import NODE_SETTINGS
from host_pool import StorageConfig
from spillway.sglang import SpillwayStore


def open_store(data_dir):
    return SpillwayStore(StorageConfig(extra_config={"data_dir": data_dir,
                                                     "config": NODE_SETTINGS}), {})


class FlatPool:
    """What the generic path needs of a host pool: its identity for the namespace."""
    page_size = 64
    dtype = torch.bfloat16
    layout = "layer_first"
    kv_buffer = torch.zeros(1 << 20, dtype=torch.uint8)

    def get_page_buffer_meta(self, indices):
        return [self.kv_buffer.data_ptr()], [1 << 20]


def test_set_and_get_with_tensors(data_dir):
    store = open_store(data_dir)
    store.register_mem_pool_host(FlatPool())
    page = torch.randn(3 << 19, dtype=torch.bfloat16)  # 3 MiB
    assert store.set("p", page)
    target = torch.zeros_like(page)
    assert store.get("p", target) is target
    assert torch.equal(target, page)
    assert store.get("absent", torch.zeros_like(page)) is None
    store.close()


def test_batch_get_into_target_locations(data_dir):
    store = open_store(data_dir)
    store.register_mem_pool_host(FlatPool())
    pages = [torch.randint(0, 256, (1 << 20,), dtype=torch.uint8) for _ in range(3)]
    assert store.batch_set(["a", "b", "c"], pages)
    targets = [torch.zeros(1 << 20, dtype=torch.uint8) for _ in range(4)]
    got = store.batch_get(["c", "missing", "a", "b"], targets)
    assert got[0] is targets[0] and got[1] is None and got[2] is targets[2]
    assert torch.equal(targets[0], pages[2]) and torch.equal(targets[2], pages[0])
    assert torch.equal(targets[3], pages[1])
    # A pointer with its size works as well as a tensor.
    raw = torch.zeros(1 << 20, dtype=torch.uint8)
    assert store.get("b", raw.data_ptr(), 1 << 20) == raw.data_ptr()
    assert torch.equal(raw, pages[1])
    store.close()


def test_a_value_of_another_size_is_not_handed_out(data_dir):
    store = open_store(data_dir)
    store.register_mem_pool_host(FlatPool())
    assert store.set("s", torch.ones(1000, dtype=torch.uint8))
    assert store.get("s", torch.zeros(2000, dtype=torch.uint8)) is None
    store.close()

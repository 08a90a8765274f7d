"""SpillwayStore's zero-copy v1 path in embedded mode, on pools at real page sizes:
DeepSeek-V3 (MLA, one 4,497,408-byte entry a page) and Llama-3-8B (MHA, 4 MiB K and
4 MiB V a page)."""

import glob
import os
import sys
import threading

import pytest
import torch

from conftest import NODE_SETTINGS
from host_pool import HostPool, StorageConfig
from spillway.sglang import SpillwayStore

MODELS = {
    "deepseek-v3": dict(mla=True, model_name="deepseek-ai/DeepSeek-V3"),
    "llama-3-8b": dict(mla=False, model_name="meta-llama/Meta-Llama-3-8B"),
}


def open_store(data_dir, model, pages=8, dtype=torch.bfloat16, **config):
    m = MODELS[model]
    settings = dict(is_mla_model=m["mla"], model_name=m["model_name"],
                    extra_config={"data_dir": data_dir, "config": NODE_SETTINGS})
    settings.update(config)
    store = SpillwayStore(StorageConfig(**settings), {})
    pool = HostPool(m["mla"], pages, dtype=dtype)
    store.register_mem_pool_host(pool)
    return store, pool


def leading_true(results):
    return results.index(False) if False in results else len(results)


@pytest.mark.parametrize("model", MODELS)
def test_pages_set_then_got_into_other_slots_are_byte_identical(data_dir, model):
    store, pool = open_store(data_dir, model)
    pool.fill([0, 1, 2], seed=1)
    keys = ["h0", "h1", "h2"]
    assert store.batch_set_v1(keys, pool.indices([0, 1, 2])) == [True] * 3
    assert store.batch_get_v1(keys, pool.indices([5, 3, 7])) == [True] * 3
    for src, dst in [(0, 5), (1, 3), (2, 7)]:
        assert torch.equal(pool.page(src), pool.page(dst)), (src, dst)
    store.close()


@pytest.mark.parametrize("model", MODELS)
def test_batch_exists_counts_the_present_prefix(data_dir, model):
    store, pool = open_store(data_dir, model)
    pool.fill([0, 1], seed=2)
    assert store.batch_set_v1(["a", "c"], pool.indices([0, 1])) == [True, True]
    assert store.batch_exists(["a", "c", "b"]) == 2
    assert store.batch_exists(["a", "b", "c"]) == 1
    assert store.batch_exists(["b", "a", "c"]) == 0
    assert store.exists("c") and not store.exists("b")
    results = store.batch_get_v1(["a", "b", "c"], pool.indices([2, 3, 4]))
    assert results == [True, False, True] and leading_true(results) == 1
    store.close()


@pytest.mark.parametrize("model", MODELS)
def test_another_dtype_or_model_or_tag_sees_nothing(data_dir, model):
    store, pool = open_store(data_dir, model)
    pool.fill([0], seed=3)
    assert store.batch_set_v1(["k"], pool.indices([0])) == [True]
    assert store.batch_exists(["k"]) == 1
    store.close()
    others = [dict(dtype=torch.float16), dict(model_name="someone/other-model"),
              dict(extra_config={"data_dir": data_dir, "config": NODE_SETTINGS, "tag": "w2"})]
    for other in others:
        store, pool = open_store(data_dir, model, **other)
        assert store.batch_exists(["k"]) == 0, other
        assert store.batch_get_v1(["k"], pool.indices([1])) == [False], other
        store.close()


def test_mha_ranks_differ_in_tp_and_each_has_its_own_data_dir(data_dir):
    stores = [open_store(data_dir, "llama-3-8b", pages=2, tp_rank=r, tp_size=2) for r in (0, 1)]
    (s0, p0), (s1, p1) = stores
    p0.fill([0], seed=4)
    assert s0.batch_set_v1(["k"], p0.indices([0])) == [True]
    assert s1.batch_exists(["k"]) == 0
    assert sorted(os.listdir(data_dir)) == ["tp0-pp0-cp0-dp0", "tp1-pp0-cp0-dp0"]
    s0.close()
    s1.close()


def test_embedded_mla_at_tp_size_2_is_refused_and_names_client_mode(data_dir):
    with pytest.raises(ValueError, match="client mode"):
        open_store(data_dir, "deepseek-v3", tp_size=2)


@pytest.mark.parametrize("model", MODELS)
def test_pages_survive_a_restart_of_the_node(data_dir, model):
    store, pool = open_store(data_dir, model)
    pool.fill([0, 1], seed=5)
    assert store.batch_set_v1(["r0", "r1"], pool.indices([0, 1])) == [True, True]
    store.close()
    store, fresh = open_store(data_dir, model)
    assert store.batch_exists(["r0", "r1"]) == 2
    assert store.batch_get_v1(["r0", "r1"], fresh.indices([2, 3])) == [True, True]
    assert torch.equal(fresh.page(2), pool.page(0)) and torch.equal(fresh.page(3), pool.page(1))
    store.close()


def corrupt_value(data_dir, needle: bytes):
    """Flips one byte of the value that holds `needle`, in whichever bucket has it."""
    for path in glob.glob(os.path.join(data_dir, "*", "*.bucket")):
        with open(path, "r+b") as f:
            content = f.read()
            at = content.find(needle)
            if at >= 0:
                f.seek(at)
                f.write(bytes([content[at] ^ 0xFF]))
                return path
    raise AssertionError("no bucket holds the value")


@pytest.mark.parametrize("model", MODELS)
def test_a_corrupt_value_fails_its_page_and_ends_the_leading_run(data_dir, model):
    store, pool = open_store(data_dir, model)
    pool.fill([0, 1, 2], seed=6)
    keys = ["c0", "c1", "c2"]
    assert store.batch_set_v1(keys, pool.indices([0, 1, 2])) == [True] * 3
    store.close()
    middle = pool.page(1)[pool.entry_bytes // 2:pool.entry_bytes // 2 + 64]
    corrupt_value(data_dir, middle.numpy().tobytes())
    store, fresh = open_store(data_dir, model)
    fresh.page(4).fill_(0x5A)
    results = store.batch_get_v1(keys, fresh.indices([3, 4, 5]))
    assert results == [True, False, True] and leading_true(results) == 1
    assert torch.equal(fresh.page(3), pool.page(0)) and torch.equal(fresh.page(5), pool.page(2))
    store.close()


def test_three_threads_at_once(data_dir):
    store, pool = open_store(data_dir, "llama-3-8b", pages=12)
    pool.fill(range(6), seed=7)
    errors, results = [], {}

    def work(t):
        try:
            keys = [f"t{t}-0", f"t{t}-1"]
            src, dst = [2 * t, 2 * t + 1], [6 + 2 * t, 7 + 2 * t]
            ok_set = store.batch_set_v1(keys, pool.indices(src))
            ok_get = store.batch_get_v1(keys, pool.indices(dst))
            results[t] = (ok_set, ok_get, store.batch_exists(keys))
        except Exception as e:  # reported below, with the thread's number
            errors.append((t, e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == {t: ([True, True], [True, True], 2) for t in range(3)}
    for p in range(6):
        assert torch.equal(pool.page(p), pool.page(6 + p)), p
    store.close()


def test_the_gil_is_released_during_a_get(data_dir):
    store, pool = open_store(data_dir, "llama-3-8b", pages=16)
    pool.fill(range(8), seed=8)
    keys = [f"g{i}" for i in range(8)]
    assert store.batch_set_v1(keys, pool.indices(range(8))) == [True] * 8
    targets = pool.indices(range(8, 16))
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    # Without a release, the spinning thread could take the GIL only when the switch
    # interval (2 s) ran out, far longer than this 64 MiB get takes: any count it adds
    # during the get is proof the get let go of the GIL.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(2.0)
    spinner = threading.Thread(target=spin)
    try:
        spinner.start()
        before = counter[0]
        results = store.batch_get_v1(keys, targets)
        during = counter[0] - before
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        spinner.join()
    assert results == [True] * 8
    assert during > 0
    store.close()


def test_a_failed_set_is_false_and_never_visible(data_dir):
    store, pool = open_store(data_dir, "llama-3-8b", pages=2)
    pool.fill([0, 1], seed=11)
    too_long = "x" * 5000  # over the node's 4 KiB key limit: the put fails as too_large
    assert store.batch_set_v1(["fine", too_long], pool.indices([0, 1])) == [True, False]
    assert store.batch_exists(["fine", too_long]) == 1
    assert store.batch_exists([too_long]) == 0
    store.close()

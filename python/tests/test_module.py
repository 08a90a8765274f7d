"""spillway.Node from Python: batch calls, caller memory of every kind, misuse."""

import numpy as np
import pytest
import torch

import spillway
from conftest import NODE_SETTINGS


def node_at(data_dir):
    return spillway.Node({**NODE_SETTINGS, "node": {"listen": ""},
                          "storage": {"data_dir": data_dir}})


def test_put_get_exists_remove_answer_per_key(data_dir):
    with node_at(data_dir) as node:
        a = np.frombuffer(np.random.default_rng(1).bytes(100_000), dtype=np.uint8)
        assert node.put(["a", b"b"], [a, b"hello"]) == ["ok", "ok"]
        statuses, values = node.get(["a", "missing", "b"])
        assert statuses == ["ok", "not_found", "ok"]
        assert values[0] == a.tobytes() and values[1] is None and values[2] == b"hello"
        assert node.exists(["b", "missing", "a"]) == [True, False, True]
        assert node.remove(["b", "missing"]) == 1
        assert node.exists(["b"]) == [False]


def test_get_into_numpy_torch_and_pointers_without_a_copy(data_dir):
    with node_at(data_dir) as node:
        value = torch.randint(0, 256, (3 << 20,), dtype=torch.uint8)
        assert node.put(["v"], [value]) == ["ok"]
        as_numpy = np.zeros(3 << 20, dtype=np.uint8)
        as_tensor = torch.zeros(3 << 20, dtype=torch.uint8)
        raw = torch.zeros(3 << 20, dtype=torch.uint8)
        statuses, sizes = node.get_into(["v", "v", "v"],
                                        [as_numpy, as_tensor, (raw.data_ptr(), 3 << 20)])
        assert statuses == ["ok"] * 3 and sizes == [3 << 20] * 3
        assert torch.equal(torch.from_numpy(as_numpy), value)
        assert torch.equal(as_tensor, value) and torch.equal(raw, value)


def test_a_target_too_small_is_too_large_with_the_size(data_dir):
    with node_at(data_dir) as node:
        node.put(["v"], [b"x" * 5000])
        small = bytearray(4000)
        assert node.get_into(["v", "nope"], [small, bytearray(1)]) == (
            ["too_large", "not_found"], [5000, 0])


def test_misuse_names_the_argument(data_dir):
    with node_at(data_dir) as node:
        with pytest.raises(TypeError, match=r"keys\[1\]"):
            node.exists(["a", 3])
        with pytest.raises(TypeError, match="keys"):
            node.exists("abc")
        with pytest.raises(TypeError, match=r"values\[0\]"):
            node.put(["a"], [42])
        with pytest.raises(TypeError, match=r"targets\[0\].*writable"):
            node.get_into(["a"], [b"read-only"])
        with pytest.raises(ValueError, match="keys but"):
            node.put(["a", "b"], [b"1"])
        with pytest.raises(ValueError, match=r"targets\[0\]: a null pointer"):
            node.get_into(["a"], [(0, 10)])
        with pytest.raises(ValueError, match="not contiguous"):
            node.get_into(["a"], [torch.zeros(4, 4, dtype=torch.uint8).t()])
        with pytest.raises(ValueError, match="pointer"):
            node.register_memory(0, 10)
    with pytest.raises(RuntimeError, match="stopped"):
        node.exists(["a"])


def test_a_bad_config_names_the_key(data_dir):
    with pytest.raises(ValueError, match="storage.bogus"):
        spillway.Node({"storage": {"data_dir": data_dir, "bogus": 1}})
    with pytest.raises(TypeError, match=r"config.storage.data_dir"):
        spillway.Node({"storage": {"data_dir": object()}})
    with pytest.raises(ValueError, match="cluster.nodes"):
        spillway.Client({})


def test_a_toml_file_configures_the_node(data_dir, tmp_path):
    path = tmp_path / "node.toml"
    path.write_text(f'[node]\nlisten = ""\n[storage]\ndata_dir = "{data_dir}"\n'
                    '[read]\nreaders = 1\narena_size = "64MiB"\narena_chunk = "64MiB"\n')
    with spillway.Node(path) as node:
        assert node.put(["k"], [b"v"]) == ["ok"]
        assert "spillway" in node.metrics()

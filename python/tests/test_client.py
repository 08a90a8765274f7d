"""Client.get_into and put against a real `spillway serve` process: with memory
registered, the node writes each value into its target itself (client::get_into), and
reads a value too large for a message from there (client::put_from); a target outside
that memory is refused by its key."""

import pytest
import torch

import spillway


def test_registered_targets_are_written_by_the_node(serve):
    with spillway.Client({"cluster": {"nodes": [serve]}}) as client:
        assert client.await_connected(30) == 1
        value = torch.randint(0, 256, (3 << 20,), dtype=torch.uint8)
        assert client.put(["v", "w"], [value, b"x" * 5000]) == ["ok", "ok"]
        pool = torch.zeros(8 << 20, dtype=torch.uint8)
        client.register_memory(pool.data_ptr(), pool.numel())
        statuses, sizes = client.get_into(["v", "w", "nope"],
                                          [pool[: 3 << 20], pool[4 << 20: (4 << 20) + 4000],
                                           pool[6 << 20: (6 << 20) + 10]])
        assert statuses == ["ok", "too_large", "not_found"]
        assert sizes == [3 << 20, 5000, 0]
        assert torch.equal(pool[: 3 << 20], value)
        assert not pool[4 << 20:].any()  # nothing of the refused values landed
        with pytest.raises(ValueError, match="key \"v\""):
            client.get_into(["v"], [bytearray(3 << 20)])


def test_a_value_over_a_message_in_registered_memory_is_pulled_by_the_node(serve):
    with spillway.Client({"cluster": {"nodes": [serve]}}) as client:
        assert client.await_connected(30) == 1
        big = torch.randint(0, 256, (6 << 20,), dtype=torch.uint8)
        assert client.put(["big"], [big]) == ["bad_range"]  # not registered: no way to send it
        pool = torch.zeros(16 << 20, dtype=torch.uint8)
        pool[: 6 << 20] = big
        client.register_memory(pool.data_ptr(), pool.numel())
        assert client.put(["big", "small"], [pool[: 6 << 20], b"s" * 100]) == ["ok", "ok"]
        statuses, sizes = client.get_into(["big"], [pool[8 << 20: 14 << 20]])
        assert statuses == ["ok"] and sizes == [6 << 20]
        assert torch.equal(pool[8 << 20: 14 << 20], big)

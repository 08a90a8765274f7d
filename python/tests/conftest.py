import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# A small node: the machine running the suite has 2 cores and other suites beside it.
NODE_SETTINGS = {
    "read": {"readers": 1, "arena_size": "128MiB", "arena_chunk": "128MiB"},
}


@pytest.fixture
def data_dir():
    """A real directory on disk (/var/tmp, not a tmpfs), removed afterwards."""
    path = tempfile.mkdtemp(prefix="spillway-py-", dir="/var/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def serve(data_dir):
    """A `spillway serve` process on a free port: its "127.0.0.1:port"."""
    binary = os.environ.get("SPILLWAY_BINARY")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("SPILLWAY_BINARY does not name the spillway binary (ctest sets it)")
    config = os.path.join(data_dir, "node.toml")
    with open(config, "w") as f:
        f.write(f'[node]\nlisten = "127.0.0.1:0"\n[storage]\ndata_dir = "{data_dir}/data"\n'
                'seal_after_ms = 5\n[read]\nreaders = 1\narena_size = "128MiB"\n'
                'arena_chunk = "128MiB"\n[transfer]\nlisten = "127.0.0.1:0"\n')
    process = subprocess.Popen([binary, "serve", "-c", config], stderr=subprocess.PIPE,
                               text=True)
    port, log = None, []
    for line in process.stderr:  # ends if the process dies before it serves
        log.append(line)
        found = re.search(r"listening on port (\d+)", line)
        port = int(found.group(1)) if found else port
        if "serving" in line:
            break
    assert port, "".join(log)
    # Drained from now on, so that the node never blocks on a full pipe.
    drain = threading.Thread(target=process.stderr.read)
    drain.start()
    yield f"127.0.0.1:{port}"
    process.terminate()
    assert process.wait(timeout=60) == 0
    drain.join()
    process.stderr.close()

import os
import shutil
import sys
import tempfile

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

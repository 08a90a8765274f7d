"""spillway, the SSD tier of a KV-cache node, from Python.

Node is a node inside this process (runtime/node.hpp); Client talks to running
`spillway serve` nodes (runtime/client.hpp). Both take a node.toml path or a dict of
its tables, and offer the same batch calls: put, get, get_into, exists, remove. Each
key gets its own status string ("ok", "not_found", "corrupt", "io_error(EIO)", ...);
the GIL is released while a call does I/O, and calls may come from many threads.
`spillway.sglang.SpillwayStore` is an SGLang HiCache storage backend built on them.
"""

from ._spillway import Client, Node

__all__ = ["Client", "Node"]

"""SGLang's HiCacheStorage interface, for when sglang is not installed.

The methods and their contracts as in sglang/srt/mem_cache/hicache_storage.py, so that
SpillwayStore has one shape whether or not SGLang is importable.
"""

from abc import ABC, abstractmethod
from typing import Any, List, Optional


class HiCacheStorage(ABC):
    def register_mem_pool_host(self, mem_pool_host):
        self.mem_pool_host = mem_pool_host

    def batch_get_v1(self, keys: List[str], host_indices, extra_info=None) -> List[bool]:
        raise NotImplementedError()

    def batch_set_v1(self, keys: List[str], host_indices, extra_info=None) -> List[bool]:
        raise NotImplementedError()

    @abstractmethod
    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None):
        pass

    @abstractmethod
    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None):
        pass

    @abstractmethod
    def set(self, key: str, value: Optional[Any] = None,
            target_location: Optional[Any] = None, target_sizes: Optional[Any] = None) -> bool:
        pass

    @abstractmethod
    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> bool:
        pass

    @abstractmethod
    def exists(self, key: str) -> bool:
        pass

    def batch_exists(self, keys: List[str], extra_info=None) -> int:
        for i, key in enumerate(keys):
            if not self.exists(key):
                return i
        return len(keys)

    def clear(self) -> None:
        pass

    def get_stats(self):
        return None

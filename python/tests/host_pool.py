"""A stand-in for SGLang's host KV pool (mem_cache/pool_host/): one real torch CPU
buffer, page_first, and get_page_buffer_meta as SGLang's pools answer it: per page
two (pointer, size) entries, K then V, for MHA, one for MLA."""

from dataclasses import dataclass, field
from typing import Optional

import torch

PAGE_SIZE = 64
# Bytes per page at page_size 64, bf16.
DEEPSEEK_V3_PAGE = 61 * (512 + 64) * 2 * PAGE_SIZE          # MLA: 4,497,408
LLAMA3_8B_HALF_PAGE = 32 * 8 * 128 * 2 * PAGE_SIZE          # MHA: K (or V) 4 MiB
assert DEEPSEEK_V3_PAGE == 4_497_408 and LLAMA3_8B_HALF_PAGE == 4 << 20


class HostPool:
    def __init__(self, mla: bool, pages: int, dtype=torch.bfloat16, page_size=PAGE_SIZE,
                 entry_bytes: Optional[int] = None):
        self.mla = mla
        self.page_size = page_size
        self.dtype = dtype
        self.layout = "page_first"
        self.entry_bytes = entry_bytes or (DEEPSEEK_V3_PAGE if mla else LLAMA3_8B_HALF_PAGE)
        self.entries = 1 if mla else 2
        self.page_bytes = self.entry_bytes * self.entries
        total = self.page_bytes * pages
        self.kv_buffer = torch.empty(total // torch.tensor([], dtype=dtype).element_size(),
                                     dtype=dtype)
        self.bytes = self.kv_buffer.view(torch.uint8)

    def get_page_buffer_meta(self, indices):
        base = self.kv_buffer.data_ptr()
        slots = indices.tolist() if hasattr(indices, "tolist") else list(indices)
        ptrs, sizes = [], []
        for i in range(0, len(slots), self.page_size):
            page = slots[i] // self.page_size
            for e in range(self.entries):
                ptrs.append(base + page * self.page_bytes + e * self.entry_bytes)
                sizes.append(self.entry_bytes)
        return ptrs, sizes

    def indices(self, pages):
        """host_indices of these pages: token slots, page i from pages[i] * page_size."""
        return torch.cat([torch.arange(p * self.page_size, (p + 1) * self.page_size)
                          for p in pages])

    def page(self, p) -> torch.Tensor:
        return self.bytes[p * self.page_bytes:(p + 1) * self.page_bytes]

    def fill(self, pages, seed):
        g = torch.Generator().manual_seed(seed)
        for p in pages:
            self.page(p).copy_(torch.randint(0, 256, (self.page_bytes,), generator=g,
                                             dtype=torch.uint8))


@dataclass
class StorageConfig:
    """HiCacheStorageConfig's fields."""
    tp_rank: int = 0
    tp_size: int = 1
    pp_rank: int = 0
    pp_size: int = 1
    attn_cp_rank: int = 0
    attn_cp_size: int = 1
    is_mla_model: bool = False
    is_page_first_layout: bool = True
    model_name: str = "meta-llama/Meta-Llama-3-8B"
    dp_rank: int = 0
    dp_size: int = 1
    extra_config: dict = field(default_factory=dict)

"""KV-cache append, functional: write new k/v tokens at each sequence's current length, bf16.

Where it occurs: every attention layer of every decoder (Llama, Mistral, Qwen, GPT) at every inference step (prefill chunks
and decode): the new keys and values are written into the per-sequence cache at positions
``cache_seqlens[b] + 0 .. new_tokens-1`` before attention reads the cache. This is the contract
of flash-attn's ``flash_attn_with_kvcache(k_cache, v_cache, k, v, cache_seqlens=...)`` with its
[batch, max_seq, kv_heads, head_dim] layout (vLLM's ``reshape_and_cache`` is the paged
equivalent).

Functional form: engines write in place; the harness forbids mutating inputs, so the forward
returns new caches (the reference clones and scatters). A kernel therefore has to copy both
caches and scatter the new tokens; fusing the copy with the scatter (one pass, each output
element written once) is the optimisation.

Sizes that matter: Llama-3-8B's 8 KV heads x head_dim 128, 8 sequences with a 2048-token cache,
16 new tokens each (production: chunked prefill / speculative decoding verification); the
``decode`` set appends one token. Lengths differ per sequence, and the ``odd`` set uses head_dim
80, 3 KV heads and a 301-token cache.

Character: pure data movement (a copy plus an indexed scatter); memory bound.

Bytes moved at production: both caches read and written (4 x 33.6 MB), new k/v read
(2 x 262 KB), lengths 64 B = 134.7 MB.
"""

import torch
import torch.nn as nn

BATCH = 8
MAX_SEQ = 2048
N_KV_HEADS = 8
HEAD_DIM = 128
NEW_TOKENS = 16
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 2, "MAX_SEQ": 12, "N_KV_HEADS": 2, "HEAD_DIM": 8, "NEW_TOKENS": 3, "DTYPE": "float32"},
    "odd": {"BATCH": 3, "MAX_SEQ": 301, "N_KV_HEADS": 3, "HEAD_DIM": 80, "NEW_TOKENS": 5},
    "decode": {"NEW_TOKENS": 1},
}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, k_cache, v_cache, k_new, v_new, cache_seqlens):
        # caches: [batch, max_seq, kv_heads, head_dim]; k_new/v_new: [batch, new_tokens, kv_heads, head_dim]
        batch, new_tokens = k_new.shape[0], k_new.shape[1]
        positions = cache_seqlens.unsqueeze(1) + torch.arange(new_tokens, device=k_new.device)
        rows = torch.arange(batch, device=k_new.device).unsqueeze(1)
        k_cache = k_cache.clone()
        v_cache = v_cache.clone()
        k_cache[rows, positions] = k_new
        v_cache[rows, positions] = v_new
        return k_cache, v_cache


def get_inputs():
    dtype = getattr(torch, DTYPE)
    k_cache = torch.randn(BATCH, MAX_SEQ, N_KV_HEADS, HEAD_DIM).to(dtype)
    v_cache = torch.randn(BATCH, MAX_SEQ, N_KV_HEADS, HEAD_DIM).to(dtype)
    k_new = torch.randn(BATCH, NEW_TOKENS, N_KV_HEADS, HEAD_DIM).to(dtype)
    v_new = torch.randn(BATCH, NEW_TOKENS, N_KV_HEADS, HEAD_DIM).to(dtype)
    cache_seqlens = torch.randint(0, MAX_SEQ - NEW_TOKENS + 1, (BATCH,))
    return [k_cache, v_cache, k_new, v_new, cache_seqlens]


def get_init_inputs():
    return []

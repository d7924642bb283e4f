"""Shared by the transformers benchmark problems: a LLaMA-3-8B config (or a tiny one), built offline."""

from transformers import LlamaConfig


def llama_config(hidden: int, intermediate: int, heads: int, kv_heads: int, dtype: str) -> LlamaConfig:
    config = LlamaConfig(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        num_hidden_layers=1,
        vocab_size=128,
        rope_theta=500000.0,
        rms_norm_eps=1e-5,
        max_position_embeddings=8192,
        torch_dtype=dtype,
    )
    config._attn_implementation = "sdpa"
    return config

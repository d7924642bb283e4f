"""``transformers`` modules as people use them (built from small configs, random weights, nothing
downloaded) capture as one canonical graph with SDPA kept whole, and compute like eager."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from capture_helpers import assert_canonical, assert_computes_like_eager

pytest.importorskip("transformers")

_SMALL = (
    "hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, "
    "num_hidden_layers=2, vocab_size=128, attention_dropout=0.0"
)
_DECODER = '''
import torch
import torch.nn as nn
from transformers import {config}
from transformers.models.{family}.modeling_{family} import {layer}, {rope}

TOKENS = 8


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = {config}({small})
        config._attn_implementation = "sdpa"
        self.layer = {layer}(config, layer_idx=0)
        self.rotary = {rope}(config)

    def forward(self, hidden_states, position_ids):
        position_embeddings = self.rotary(hidden_states, position_ids)
        return self.layer(hidden_states, attention_mask=None, position_ids=position_ids,
                          position_embeddings=position_embeddings)


def get_inputs():
    return [torch.randn(2, TOKENS, 64), torch.arange(TOKENS).unsqueeze(0).expand(2, TOKENS)]


def get_init_inputs():
    return []
'''
_BLOCK = '''
import torch
import torch.nn as nn
from transformers import {config}
from transformers.models.{family}.modeling_{family} import {layer}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = {config}({small})
        config._attn_implementation = "sdpa"
        self.block = {layer}(config{extra})

    def forward(self, hidden_states):
        return self.block(hidden_states)


def get_inputs():
    return [torch.randn(2, 8, 64)]


def get_init_inputs():
    return []
'''
_CAUSAL_LM = '''
import torch
import torch.nn as nn
from transformers import LlamaConfig, LlamaForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig({small})
        config._attn_implementation = "sdpa"
        self.model = LlamaForCausalLM(config)

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 128, (2, 8))]


def get_init_inputs():
    return []
'''

SOURCES = {
    "llama_decoder_layer": _DECODER.format(
        config="LlamaConfig", family="llama", layer="LlamaDecoderLayer", rope="LlamaRotaryEmbedding", small=_SMALL
    ),
    "qwen2_decoder_layer": _DECODER.format(
        config="Qwen2Config", family="qwen2", layer="Qwen2DecoderLayer", rope="Qwen2RotaryEmbedding", small=_SMALL
    ),
    "mistral_decoder_layer": _DECODER.format(
        config="MistralConfig", family="mistral", layer="MistralDecoderLayer", rope="MistralRotaryEmbedding",
        small=_SMALL,
    ),
    "gpt2_block": _BLOCK.format(
        config="GPT2Config", family="gpt2", layer="GPT2Block", extra=", layer_idx=0",
        small="n_embd=64, n_head=4, n_layer=2, vocab_size=128, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0",
    ),
    "bert_layer": _BLOCK.format(
        config="BertConfig", family="bert", layer="BertLayer", extra="",
        small="hidden_size=64, num_attention_heads=4, intermediate_size=128, num_hidden_layers=2, "
        "vocab_size=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0",
    ),
    "llama_for_causal_lm_2_layers": _CAUSAL_LM.format(small=_SMALL),
}
# SDPA calls per forward (one per attention layer), and the projections (mm/addmm): q, k, v, o
# and three MLP matrices in LLaMA-style layers, fused qkv + o + two MLP in GPT-2, q, k, v, o +
# two in BERT, two layers and the LM head in the causal LM.
ATTENTION_LAYERS = {"llama_for_causal_lm_2_layers": 2}
PROJECTIONS = {"gpt2_block": 4, "bert_layer": 6, "llama_for_causal_lm_2_layers": 15}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_transformers_module_captures_as_one_graph(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(SOURCES[name]))
    captured = assert_computes_like_eager(path, "default")
    assert captured.source_graphs == 1
    assert_canonical(captured)
    ops = captured.op_counts()
    assert ops["aten.scaled_dot_product_attention.default"] == ATTENTION_LAYERS.get(name, 1)
    assert ops["aten.mm.default"] + ops["aten.addmm.default"] == PROJECTIONS.get(name, 7)
    assert not [n for n in captured.notes if "real tensors" in n]

#!/usr/bin/env python3
"""Exports the real-model test fixtures in tests/models/: small ResNet-18, MobileNetV2 and
EfficientNet-B0 from torchvision, BERT, GPT-2 and ViT from Hugging Face transformers with
reduced configs, a LLaMA-style decoder (RMSNorm, rotary embedding, SiLU-gated MLP, grouped-query
attention) from transformers' LlamaForCausalLM, and a hand-written decoder block with a causal
mask. Weights are random from
fixed seeds (nothing is downloaded). Each model is written by torch.onnx.export, with the
TorchScript exporter (dynamo=False) and with the dynamo exporter (dynamo=True), at the opsets
in FIXTURES. Next to each <name>.onnx goes <name>.inputs.json, which says how to make random
inputs for it, so that tests need onnx and onnxruntime but never torch.

With --dynamic it exports DYNAMIC_FIXTURES instead, into tests/models/dynamic/: BERT, GPT-2,
LLaMA and the decoder block (both exporters) with a symbolic batch and sequence ("batch",
"seq"), ViT, ResNet-18, MobileNetV2 and EfficientNet-B0 with a symbolic batch, and the last
three also with a symbolic image size ("height", "width"; the "_hw_" fixtures); same weights
and opsets as the fixtures above.

Every fixture is checked before it is kept: onnx.checker (full check), and onnxruntime on
random inputs against the torch model's own outputs (a fixture with symbolic dims: at each
size check_models.dim_points picks, with masks of ones and with padded masks).

Needs the export environment, not the project's .venv:
    python3 -m venv .venv-models
    .venv-models/bin/pip install -r scripts/models/requirements-export.txt
usage: .venv-models/bin/python scripts/models/export_models.py [--dynamic] [--only NAME ...] [OUT_DIR]
"""
import argparse
import hashlib
import json
import os
import re
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
import transformers
from torch import nn
from torchvision.models import efficientnet, mobilenet_v2, resnet

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_models  # noqa: E402  (the sizes a fixture with symbolic dims is checked at)

SEED = 20261122
DEFAULT_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "models")

# ---------------------------------------------------------------------------------------------
# Models. Each builder returns (module, example inputs, input specs, output names, config).
# An input spec is what <name>.inputs.json says about one input: its fill tells a test how to
# make it ("normal" floats, "randint" in [low, high), or "ones").


def image_input(shape):
    return {"name": "pixels", "dtype": "float32", "shape": list(shape), "fill": "normal"}


def size_image(config, batch, height, width):
    """The example image's size where a fixture with symbolic dims gives it: config["image"] is
    [batch, channels, height, width]."""
    for axis, size in ((0, batch), (2, height), (3, width)):
        if size is not None:
            config["image"][axis] = size


def randomize_norms(module, generator):
    """Fresh init leaves BatchNorm/LayerNorm as identities (mean 0, var 1, gamma 1, beta 0),
    which would hide mistakes in how a compiler applies them; give them random values."""
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)) and m.weight is not None:
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=generator))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=generator))
        if type(m).__name__.endswith("RMSNorm") and getattr(m, "weight", None) is not None:
            with torch.no_grad():  # RMSNorm has a scale and no bias
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=generator))
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=generator))
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=generator) + 0.5)


class NarrowResNet(resnet.ResNet):
    """torchvision's ResNet with the stage widths as a parameter (its constructor fixes them
    at 64..512, 11M parameters). Reuses torchvision's BasicBlock, _make_layer and forward."""

    def __init__(self, layers, widths, num_classes):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = widths[0], 1, 1, 64
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(resnet.BasicBlock, widths[0], layers[0])
        self.layer2 = self._make_layer(resnet.BasicBlock, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(resnet.BasicBlock, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(resnet.BasicBlock, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3], num_classes)


def build_resnet18(gen, batch=None, height=None, width=None):
    config = {"layers": [2, 2, 2, 2], "widths": [16, 32, 64, 128], "num_classes": 10,
              "image": [1, 3, 64, 64]}
    size_image(config, batch, height, width)
    model = NarrowResNet(config["layers"], config["widths"], config["num_classes"])
    randomize_norms(model, gen)
    x = torch.randn(config["image"], generator=gen)
    return model, (x,), [image_input(x.shape)], ["logits"], config


def build_mobilenet_v2(gen, batch=None, height=None, width=None):
    config = {"width_mult": 0.25, "num_classes": 10, "image": [1, 3, 64, 64]}
    size_image(config, batch, height, width)
    model = mobilenet_v2(width_mult=config["width_mult"], num_classes=config["num_classes"])
    randomize_norms(model, gen)
    x = torch.randn(config["image"], generator=gen)
    return model, (x,), [image_input(x.shape)], ["logits"], config


def build_efficientnet_b0(gen, batch=None, height=None, width=None):
    config = {"width_mult": 0.25, "depth_mult": 0.5, "num_classes": 10, "image": [1, 3, 64, 64]}
    size_image(config, batch, height, width)
    setting, last_channel = efficientnet._efficientnet_conf(
        "efficientnet_b0", width_mult=config["width_mult"], depth_mult=config["depth_mult"])
    model = efficientnet.EfficientNet(setting, dropout=0.2, num_classes=config["num_classes"],
                                      last_channel=last_channel)
    randomize_norms(model, gen)
    x = torch.randn(config["image"], generator=gen)
    return model, (x,), [image_input(x.shape)], ["logits"], config


def token_inputs(batch, seq, vocab, names):
    """Example tensors and specs for the usual token inputs of a text model."""
    gen = torch.Generator().manual_seed(SEED + 1)
    tensors, specs = [], []
    for name in names:
        spec = {"name": name, "dtype": "int64", "shape": [batch, seq]}
        if name == "input_ids":
            spec.update(fill="randint", low=0, high=vocab)
        elif name == "token_type_ids":
            spec.update(fill="randint", low=0, high=2)
        else:
            spec.update(fill="ones")
        if spec["fill"] == "ones":
            tensors.append(torch.ones(batch, seq, dtype=torch.int64))
        else:
            tensors.append(torch.randint(spec["low"], spec["high"], (batch, seq), generator=gen))
        specs.append(spec)
    return tuple(tensors), specs


class BertEncoder(nn.Module):
    """BertModel returning plain tensors instead of a ModelOutput."""

    def __init__(self, config):
        super().__init__()
        self.bert = transformers.BertModel(config)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                        token_type_ids=token_type_ids, return_dict=True)
        return out.last_hidden_state, out.pooler_output


def example_shape(config, batch, sequence):
    """The example batch and sequence a builder traces with: the config's, unless given (the
    fixtures with symbolic dims trace at sizes that no other dim of the model has)."""
    if batch is not None:
        config["batch"] = batch
    if sequence is not None:
        config["sequence"] = sequence


def build_bert(gen, batch=None, sequence=None):
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 64,
              "type_vocab_size": 2, "batch": 2, "sequence": 16}
    example_shape(config, batch, sequence)
    hf = transformers.BertConfig(**{k: v for k, v in config.items() if k not in ("batch", "sequence")},
                                 attn_implementation="eager")
    model = BertEncoder(hf)
    randomize_norms(model, gen)
    inputs, specs = token_inputs(config["batch"], config["sequence"], config["vocab_size"],
                                 ["input_ids", "attention_mask", "token_type_ids"])
    return model, inputs, specs, ["last_hidden_state", "pooler_output"], config


class Gpt2LM(nn.Module):
    """GPT2LMHeadModel without past key values, returning the logits only. The attention mask
    is an input, as in the usual exports; without one, transformers looks for packed sequences
    with torch.diff, which the TorchScript exporter cannot export."""

    def __init__(self, config):
        super().__init__()
        self.gpt2 = transformers.GPT2LMHeadModel(config)

    def forward(self, input_ids, attention_mask):
        return self.gpt2(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                         return_dict=True).logits


def build_gpt2(gen, batch=None, sequence=None):
    config = {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000, "n_positions": 64,
              "batch": 1, "sequence": 16}
    example_shape(config, batch, sequence)
    hf = transformers.GPT2Config(**{k: v for k, v in config.items() if k not in ("batch", "sequence")},
                                 bos_token_id=config["vocab_size"] - 1, eos_token_id=config["vocab_size"] - 1,
                                 use_cache=False, attn_implementation="eager")
    model = Gpt2LM(hf)
    randomize_norms(model, gen)
    inputs, specs = token_inputs(config["batch"], config["sequence"], config["vocab_size"],
                                 ["input_ids", "attention_mask"])
    return model, inputs, specs, ["logits"], config


class VitClassifier(nn.Module):
    """ViTForImageClassification returning the logits only."""

    def __init__(self, config):
        super().__init__()
        self.vit = transformers.ViTForImageClassification(config)

    def forward(self, pixels):
        return self.vit(pixel_values=pixels, return_dict=True).logits


def build_vit(gen, batch=None):
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 128, "image_size": 32, "patch_size": 8, "num_labels": 10,
              "image": [1, 3, 32, 32]}
    size_image(config, batch, None, None)
    hf = transformers.ViTConfig(**{k: v for k, v in config.items() if k != "image"},
                                attn_implementation="eager")
    model = VitClassifier(hf)
    randomize_norms(model, gen)
    x = torch.randn(config["image"], generator=gen)
    return model, (x,), [image_input(x.shape)], ["logits"], config


class LlamaLM(nn.Module):
    """LlamaForCausalLM without a key-value cache, returning the logits only: RMSNorm, rotary
    position embedding (rotate_half: Slice, Neg, Concat), grouped-query attention (two key-value
    heads repeated for four query heads), a SiLU-gated MLP and a causal mask merged with the
    attention mask input."""

    def __init__(self, config):
        super().__init__()
        self.llama = transformers.LlamaForCausalLM(config)

    def forward(self, input_ids, attention_mask):
        return self.llama(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                          return_dict=True).logits


def build_llama(gen, batch=None, sequence=None):
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 176, "vocab_size": 1000,
              "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "batch": 2, "sequence": 16}
    example_shape(config, batch, sequence)
    hf = transformers.LlamaConfig(**{k: v for k, v in config.items() if k not in ("batch", "sequence")},
                                  tie_word_embeddings=False, use_cache=False,
                                  bos_token_id=config["vocab_size"] - 1,
                                  eos_token_id=config["vocab_size"] - 1, attn_implementation="eager")
    model = LlamaLM(hf)
    randomize_norms(model, gen)
    inputs, specs = token_inputs(config["batch"], config["sequence"], config["vocab_size"],
                                 ["input_ids", "attention_mask"])
    return model, inputs, specs, ["logits"], config


class DecoderBlock(nn.Module):
    """A pre-norm GPT-style block written by hand: LayerNorm, multi-head self-attention with a
    causal mask built from triu and applied with where, LayerNorm, MLP with GELU."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x):
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(hidden, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, hidden // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (hidden // self.heads) ** 0.5
        future = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=x.device), diagonal=1)
        scores = torch.where(future, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
        attn = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, hidden))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


def build_decoder_block(gen, batch=None, sequence=None):
    config = {"hidden": 64, "heads": 4, "ffn": 256, "batch": 2, "sequence": 16}
    example_shape(config, batch, sequence)
    model = DecoderBlock(config["hidden"], config["heads"], config["ffn"])
    randomize_norms(model, gen)
    x = torch.randn(config["batch"], config["sequence"], config["hidden"], generator=gen)
    spec = {"name": "x", "dtype": "float32", "shape": list(x.shape), "fill": "normal"}
    return model, (x,), [spec], ["y"], config


class DecoderStep(DecoderBlock):
    """The decoder block as a server runs it with a key-value cache: the new tokens attend to
    the cached keys and values of the `past` tokens before them and to each other (causally:
    token i sees the past and new tokens up to i, a mask built with tril shifted by the past
    length), and the step returns the extended keys and values for the next one."""

    def forward(self, x, past_k, past_v):
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(hidden, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, hidden // self.heads).transpose(1, 2) for t in (q, k, v))
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        past = past_k.shape[2]
        scores = q @ k.transpose(-2, -1) / (hidden // self.heads) ** 0.5
        seen = torch.ones(seq, past + seq, dtype=torch.bool, device=x.device).tril(past)
        scores = scores.masked_fill(~seen, float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, hidden))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x)))), k, v


def build_decoder_step(gen, batch=None, sequence=None, past=None):
    config = {"hidden": 64, "heads": 4, "ffn": 256, "batch": 2, "sequence": 4, "past": 12}
    example_shape(config, batch, sequence)
    if past is not None:
        config["past"] = past
    model = DecoderStep(config["hidden"], config["heads"], config["ffn"])
    randomize_norms(model, gen)
    head = config["hidden"] // config["heads"]
    x = torch.randn(config["batch"], config["sequence"], config["hidden"], generator=gen)
    cache = [config["batch"], config["heads"], config["past"], head]
    past_k, past_v = (torch.randn(cache, generator=gen) for _ in range(2))
    specs = [{"name": name, "dtype": "float32", "shape": list(t.shape), "fill": "normal"}
             for name, t in (("x", x), ("past_k", past_k), ("past_v", past_v))]
    return model, (x, past_k, past_v), specs, ["y", "k", "v"], config


BUILDERS = {
    "resnet18": build_resnet18,
    "mobilenet_v2": build_mobilenet_v2,
    "efficientnet_b0": build_efficientnet_b0,
    "bert": build_bert,
    "gpt2": build_gpt2,
    "vit": build_vit,
    "decoder_block": build_decoder_block,
    "decoder_step": build_decoder_step,
    "llama": build_llama,
}

# (fixture name, model, exporter, opset, dims made symbolic: {input name: {axis: dim name}}).
# Between them they cover opsets 13 to 23. The TorchScript exporter goes up to opset 20. The
# dynamo exporter writes opset 18 and converts to the others; its conversion down to 17 fails
# for models with Split (num_outputs is kept, an invalid model) or with ReduceMean/ReduceSum
# axes inputs (it keeps opset 18), so only BERT is exported at 17.
FIXTURES = [
    ("resnet18_ts13", "resnet18", "torchscript", 13, None),
    ("resnet18_dynamo18", "resnet18", "dynamo", 18, None),
    ("mobilenet_v2_ts14", "mobilenet_v2", "torchscript", 14, None),
    ("mobilenet_v2_dynamo19", "mobilenet_v2", "dynamo", 19, None),
    ("efficientnet_b0_ts15", "efficientnet_b0", "torchscript", 15, None),
    ("efficientnet_b0_dynamo20", "efficientnet_b0", "dynamo", 20, None),
    ("bert_ts16", "bert", "torchscript", 16,
     {"input_ids": {0: "batch"}, "attention_mask": {0: "batch"}, "token_type_ids": {0: "batch"}}),
    ("bert_dynamo17", "bert", "dynamo", 17, None),
    ("gpt2_ts17", "gpt2", "torchscript", 17, None),
    ("gpt2_dynamo23", "gpt2", "dynamo", 23, None),
    ("vit_ts18", "vit", "torchscript", 18, None),
    ("vit_dynamo21", "vit", "dynamo", 21, None),
    ("decoder_block_ts20", "decoder_block", "torchscript", 20, None),
    ("decoder_block_dynamo22", "decoder_block", "dynamo", 22, None),
    ("llama_ts19", "llama", "torchscript", 19, None),
    ("llama_dynamo18", "llama", "dynamo", 18, None),
]

# The fixtures with symbolic dims (tests/models/dynamic/, made with --dynamic): the same models,
# weights, exporters and opsets as above, with a symbolic batch and sequence named "batch" and
# "seq" on every input and output ({input or output name: {axis: dim name}}), and the range of
# each dim (inputs.json's "dims"). The example size the exporters trace with is not 1 and no
# other size in the model, so that neither exporter specializes a dim or confuses two of them;
# seq's maximum is the models' 64 positions (BERT's and GPT-2's position tables end there). The
# image models (ViT, ResNet-18, MobileNetV2, EfficientNet-B0) keep their image size, so only their
# batch is symbolic (the "_hw_" fixtures below also their height and width); their images have
# 3 channels, so their example batch is 5.
BATCH = {"min": 1, "max": 8, "example": 3}
SEQ = {"min": 1, "max": 64, "example": 12}
TOKENS = {0: "batch", 1: "seq"}  # [batch, seq] token inputs, [batch, seq, ...] outputs
TEXT = {"batch": BATCH, "seq": SEQ}
BERT_DIMS = {"input_ids": TOKENS, "attention_mask": TOKENS, "token_type_ids": TOKENS,
             "last_hidden_state": TOKENS, "pooler_output": {0: "batch"}}
LM_DIMS = {"input_ids": TOKENS, "attention_mask": TOKENS, "logits": TOKENS}
BLOCK_DIMS = {"x": TOKENS, "y": TOKENS}
IMAGES = {"pixels": {0: "batch"}, "logits": {0: "batch"}}  # image models: only the batch
# A decode step with a key-value cache: new tokens [batch, seq], cached ones [batch, heads,
# past, dim]; the returned keys and values hold past + seq tokens ("total").
STEP_DIMS = {"x": TOKENS, "y": TOKENS, "past_k": {0: "batch", 2: "past"},
             "past_v": {0: "batch", 2: "past"}, "k": {0: "batch", 2: "total"},
             "v": {0: "batch", 2: "total"}}
STEP = {"batch": BATCH, "seq": {"min": 1, "max": 16, "example": 3},
        "past": {"min": 1, "max": 64, "example": 13}}
IMAGE_BATCH = {"batch": dict(BATCH, example=5)}
# The image models over their batch and image size too ("_hw_" fixtures): any height and width
# from 1 pixel to 96, traced at 40 x 56 (sizes no other dim of the models has).
IMAGES_HW = {"pixels": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}
IMAGE_HW = {"batch": dict(BATCH, example=5), "height": {"min": 1, "max": 96, "example": 40},
            "width": {"min": 1, "max": 96, "example": 56}}
DYNAMIC_FIXTURES = [
    ("bert_ts16", "bert", "torchscript", 16, BERT_DIMS, TEXT),
    ("bert_dynamo17", "bert", "dynamo", 17, BERT_DIMS, TEXT),
    ("gpt2_ts17", "gpt2", "torchscript", 17, LM_DIMS, TEXT),
    ("gpt2_dynamo23", "gpt2", "dynamo", 23, LM_DIMS, TEXT),
    ("llama_ts19", "llama", "torchscript", 19, LM_DIMS, TEXT),
    ("llama_dynamo18", "llama", "dynamo", 18, LM_DIMS, TEXT),
    ("decoder_block_ts20", "decoder_block", "torchscript", 20, BLOCK_DIMS, TEXT),
    ("decoder_block_dynamo22", "decoder_block", "dynamo", 22, BLOCK_DIMS, TEXT),
    ("vit_ts18", "vit", "torchscript", 18, IMAGES, IMAGE_BATCH),
    ("resnet18_ts13", "resnet18", "torchscript", 13, IMAGES, IMAGE_BATCH),
    ("mobilenet_v2_dynamo19", "mobilenet_v2", "dynamo", 19, IMAGES, IMAGE_BATCH),
    ("efficientnet_b0_ts15", "efficientnet_b0", "torchscript", 15, IMAGES, IMAGE_BATCH),
    ("decoder_step_ts17", "decoder_step", "torchscript", 17, STEP_DIMS, STEP),
    ("resnet18_hw_ts13", "resnet18", "torchscript", 13, IMAGES_HW, IMAGE_HW),
    ("mobilenet_v2_hw_dynamo19", "mobilenet_v2", "dynamo", 19, IMAGES_HW, IMAGE_HW),
    ("efficientnet_b0_hw_ts15", "efficientnet_b0", "torchscript", 15, IMAGES_HW, IMAGE_HW),
]
BUILDER_DIMS = {"batch": "batch", "seq": "sequence", "past": "past",  # dim -> builder keyword
                "height": "height", "width": "width"}

# ---------------------------------------------------------------------------------------------
# Export and checks.


def export(model, inputs, specs, output_names, exporter, opset, symbolic, path, ranges=None):
    """torch.onnx.export with one of the two exporters. symbolic names the symbolic dims of
    inputs (and of outputs; when it names none, a leading batch dim that every output shares);
    ranges gives each one's {"min", "max"}, which the dynamo exporter needs."""
    input_names = [s["name"] for s in specs]
    if exporter == "torchscript":
        dynamic_axes = None
        if symbolic:
            dynamic_axes = dict(symbolic)
            if not any(name in symbolic for name in output_names):
                batch = next(iter(next(iter(symbolic.values())).values()))
                for name in output_names:
                    dynamic_axes[name] = {0: batch}
        torch.onnx.export(model, inputs, path, dynamo=False, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, do_constant_folding=True)
        return
    dynamic_shapes = None
    if symbolic:
        dims = {d: torch.export.Dim(d, min=r["min"], max=r["max"]) for d, r in ranges.items()}
        dynamic_shapes = tuple({axis: dims[d] for axis, d in symbolic.get(name, {}).items()}
                               for name in input_names)
    program = torch.onnx.export(model, inputs, dynamo=True, opset_version=opset,
                                input_names=input_names, output_names=output_names,
                                dynamic_shapes=dynamic_shapes, optimize=True, verbose=False)
    program.save(path, external_data=False)
    if symbolic:
        name_dims(path, symbolic)
    written = {o.domain: o.version for o in onnx.load(path).opset_import}.get("", None)
    if written != opset:
        # The dynamo exporter falls back to its native opset when conversion fails.
        raise RuntimeError(f"asked for opset {opset}, the exporter wrote opset {written}")


def value_infos(model):
    """Every ValueInfo of the main graph and of its functions (which have value_info only)."""
    g = model.graph
    yield from list(g.input) + list(g.output) + list(g.value_info)
    for f in model.functions:
        yield from f.value_info


def name_dims(path, symbolic):
    """Names the symbolic dims as symbolic says. Some versions of the dynamo exporter name a dim
    after torch's symbol for it (s0, s13, ...) rather than after the Dim; the symbols are read
    off the graph inputs and renamed in every value's shape (where an expression such as
    's0*s13' can stand). torch 2.15 writes the Dims' names already: then nothing changes."""
    model = onnx.load(path)
    names = {}
    for value in model.graph.input:
        for axis, name in symbolic.get(value.name, {}).items():
            dim = value.type.tensor_type.shape.dim[axis]
            if not dim.HasField("dim_param"):
                raise RuntimeError(f"input {value.name} dim {axis} was not exported symbolic")
            if names.setdefault(dim.dim_param, name) != name:
                raise RuntimeError(f"input {value.name} dim {axis} is {dim.dim_param}, "
                                   f"which is also {names[dim.dim_param]}")
    if len(set(names.values())) != len(names):
        raise RuntimeError(f"one dim has two symbols: {names}")
    symbol = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    for value in value_infos(model):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                dim.dim_param = symbol.sub(lambda m: names[m.group(1)], dim.dim_param)
    onnx.save(model, path)


def check_dims(path, symbolic):
    """Each graph input and output has dim_params exactly where symbolic says, named so, and
    fixed sizes elsewhere."""
    model = onnx.load(path)
    for value in list(model.graph.input) + list(model.graph.output):
        want = symbolic.get(value.name, {})
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            got = dim.dim_param if dim.HasField("dim_param") else None
            if got != want.get(axis) or (got is None and not dim.HasField("dim_value")):
                raise RuntimeError(f"{value.name} dim {axis} is {got or dim.dim_value}, "
                                   f"expected {want.get(axis, 'a fixed size')}")


def strip_metadata(path):
    """The dynamo exporter records Python stack traces and module paths (with this machine's
    file paths) on every node and value; drop them so the fixtures are small and portable."""
    model = onnx.load(path)
    graphs = [model.graph] + [f for f in model.functions]
    for g in graphs:
        del g.metadata_props[:]
        for n in g.node:
            del n.metadata_props[:]
        for v in list(g.value_info) + list(g.input) + list(g.output):
            del v.metadata_props[:]
        for t in g.initializer:
            del t.metadata_props[:]
    onnx.save(model, path)


def random_feed(specs, dims, rng):
    feed = {}
    for spec in specs:
        shape = [dims[d] if isinstance(d, str) else d for d in spec["shape"]]
        if spec["fill"] == "normal":
            feed[spec["name"]] = rng.standard_normal(shape).astype(spec["dtype"])
        elif spec["fill"] == "randint":
            feed[spec["name"]] = rng.integers(spec["low"], spec["high"], shape).astype(spec["dtype"])
        else:
            feed[spec["name"]] = np.ones(shape, spec["dtype"])
    return feed


def check(path, model, specs, dims, session=None, feed=None):
    """onnx.checker, then onnxruntime against torch on fresh random inputs (or on feed, with
    session, skipping the checker); returns the error relative to the largest output."""
    if session is None:
        onnx.checker.check_model(onnx.load(path), full_check=True)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    if feed is None:
        feed = random_feed(specs, dims, np.random.default_rng(SEED + 2))
    got = session.run(None, feed)
    with torch.no_grad():
        want = model(*(torch.from_numpy(feed[s["name"]]) for s in specs))
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        w = w.numpy()
        if g.shape != w.shape:
            raise RuntimeError(f"{path}: onnxruntime output shape {g.shape}, torch {w.shape}")
        err = float(np.max(np.abs(g - w)) / (np.max(np.abs(w)) + 1e-6))
        worst = max(worst, err)
    if worst > 1e-4:
        raise RuntimeError(f"{path}: onnxruntime differs from torch, relative error {worst:.2e}"
                           f" at {dims}")
    return worst


def check_dynamic(path, model, specs, ranges):
    """check() at each size check_models.dim_points picks (every dim at its minimum, its
    example, a size between and its maximum), on inputs with attention masks of ones and on
    inputs whose masks have a padded tail; returns the worst error."""
    onnx.checker.check_model(onnx.load(path), full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(SEED + 2)
    worst = 0.0
    for dims in check_models.dim_points(ranges):
        feed = random_feed(specs, dims, rng)
        worst = max(worst, check(path, model, specs, dims, session, feed))
        padded = check_models.pad_masks(random_feed(specs, dims, rng), specs, rng)
        worst = max(worst, check(path, model, specs, dims, session, padded))
    return worst


def describe(path, model_name, exporter, opset, specs, output_names, dims, config):
    """What <name>.inputs.json holds: how to make inputs, and what the fixture is."""
    model = onnx.load(path)
    ops = {}
    for node in model.graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        ops[key] = ops.get(key, 0) + 1
    return {
        "model": model_name,
        "exporter": exporter,
        "opset": opset,
        "inputs": specs,
        "outputs": output_names,
        "dims": dims,
        "config": config,
        "ops": dict(sorted(ops.items())),
    }


def build(model_name, ranges=None):
    """The model as the fixtures have it (same seeds, same weights), traced at the ranges'
    example sizes when given: (module in eval mode, example inputs, input specs, output names,
    config)."""
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    example = {BUILDER_DIMS[d]: r["example"] for d, r in (ranges or {}).items()}
    model, inputs, specs, output_names, config = BUILDERS[model_name](gen, **example)
    model.eval()
    return model, inputs, specs, output_names, config


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", default=None,
                        help="default tests/models, or tests/models/dynamic with --dynamic")
    parser.add_argument("--only", nargs="*", default=None, help="fixture names to export")
    parser.add_argument("--dynamic", action="store_true",
                        help="export the fixtures with symbolic batch and seq (DYNAMIC_FIXTURES)")
    args = parser.parse_args()
    if args.dynamic:
        fixtures = DYNAMIC_FIXTURES
        out_dir = args.out_dir or os.path.join(DEFAULT_OUT, "dynamic")
    else:
        fixtures = [f + (None,) for f in FIXTURES]
        out_dir = args.out_dir or DEFAULT_OUT
    unknown = set(args.only or []) - {f[0] for f in fixtures}
    if unknown:
        parser.error(f"no fixture named {', '.join(sorted(unknown))}")
    os.makedirs(out_dir, exist_ok=True)
    warnings.filterwarnings("ignore")
    torch.use_deterministic_algorithms(True)
    failures = []

    for name, model_name, exporter, opset, symbolic, ranges in fixtures:
        if args.only and name not in args.only:
            continue
        model, inputs, specs, output_names, config = build(model_name, ranges)
        dims = {}
        for spec in specs:
            for axis, dim in (symbolic or {}).get(spec["name"], {}).items():
                dims[dim] = spec["shape"][axis]
                spec["shape"][axis] = dim
        if ranges:
            dims = {d: dict(ranges[d]) for d in dims}
        path = os.path.join(out_dir, f"{name}.onnx")
        try:
            export(model, inputs, specs, output_names, exporter, opset, symbolic, path, ranges)
            strip_metadata(path)
            if ranges:
                check_dims(path, symbolic)
                err = check_dynamic(path, model, specs, ranges)
            else:
                err = check(path, model, specs, dims)
        except Exception as e:  # report every failing fixture, not just the first
            failures.append(name)
            print(f"{name}: FAILED: {type(e).__name__}: {e}", flush=True)
            if os.path.exists(path):
                os.remove(path)
            continue
        info = describe(path, model_name, exporter, opset, specs, output_names, dims, config)
        with open(os.path.join(out_dir, f"{name}.inputs.json"), "w") as f:
            json.dump(info, f, indent=1)
            f.write("\n")
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
        size = os.path.getsize(path)
        print(f"{name}: {size / 1024:.0f} KiB, {sum(info['ops'].values())} nodes, "
              f"ort vs torch {err:.1e}, sha256 {digest}", flush=True)
    if failures:
        print(f"failed: {' '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Exports the benchmark models of docs/benchmarks.md to ONNX, with random inputs and
PyTorch's reference outputs for those inputs.

Models (weights random from fixed seeds: nothing is downloaded, so this runs on the GPU machine,
which has no network; the configs are those of the Hugging Face checkpoints, written in code):

    bert_b1, bert_b32      transformers.BertModel, bert-base-uncased's config, sequence 128
    gpt2                   transformers.GPT2LMHeadModel, gpt2 (small), prefill of 128 tokens,
                           use_cache=False; output logits
    vit_b1, vit_b32        transformers.ViTForImageClassification, vit-base-patch16-224's config
                           (1000 labels), 224x224 images
    resnet50_b1, resnet50_b64
                           torchvision.models.resnet50(weights=None), 224x224 images

--quick shrinks them for the host-target dry run (2 layers for the transformers, 64x64 images for
ResNet-50, batches 2 instead of 32/64): every stage still sees the same kinds of graph.

Each model is written by torch.onnx.export (the dynamo exporter) at opset OPSET. For each NAME,
OUT/NAME/ holds:
    model.onnx             the graph, weights inline
    input_<k>.npy          the random inputs (token ids in range, a 0/1 attention mask with a
                           padded tail on each row, normal floats for pixels)
    ref_<k>.npy            PyTorch's outputs for them (eager, float32, TF32 off), on CUDA when
                           there is a GPU, else on the CPU
    meta.json              names, shapes, the builder's config, versions, the device of the
                           reference, and "torch_rel_l2": PyTorch's own relative L2 error per
                           output in fp16 and bf16 (the module .half() / .to(torch.bfloat16),
                           float inputs converted) and, on a GPU, tf32, against ref_<k>.npy: the
                           reduced-precision rows' check allows twice it (precisions.py)

The peers (bench_peers.py) rebuild the same module from meta.json through build_model(), with the
same seed, and check that they reproduce ref_<k>.npy before timing.

usage: export_bench_models.py OUT [--quick] [--only NAME,...] [--device cuda|cpu]
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch

OPSET = 18
SEED = 20261206

# name -> (family, batch); --quick changes sizes through QUICK below.
MODELS = {
    "bert_b1": ("bert", 1),
    "bert_b32": ("bert", 32),
    "gpt2": ("gpt2", 1),
    "vit_b1": ("vit", 1),
    "vit_b32": ("vit", 32),
    "resnet50_b1": ("resnet50", 1),
    "resnet50_b64": ("resnet50", 64),
}
QUICK_BATCH = {"bert_b32": 2, "vit_b32": 2, "resnet50_b64": 2}


def set_precision():
    """The one precision setting of every system in docs/benchmarks.md: plain float32, no TF32
    (stitchc's libraries use CUBLAS_COMPUTE_32F and CUDNN_FMA_MATH)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def config_for(family, batch, quick):
    """The model's config as plain data (what meta.json records and build_model reads)."""
    if family == "bert":
        # bert-base-uncased: transformers.BertConfig's defaults are exactly its config.
        c = {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
             "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512,
             "type_vocab_size": 2, "batch": batch, "sequence": 128}
        if quick:
            c["num_hidden_layers"] = 2
    elif family == "gpt2":
        # gpt2 (small): GPT2Config's defaults.
        c = {"n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024,
             "batch": batch, "sequence": 128}
        if quick:
            c["n_layer"] = 2
    elif family == "vit":
        # google/vit-base-patch16-224: ViTConfig's defaults plus its 1000 ImageNet labels.
        c = {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
             "intermediate_size": 3072, "image_size": 224, "patch_size": 16, "num_labels": 1000,
             "batch": batch}
        if quick:
            c["num_hidden_layers"] = 2
    elif family == "resnet50":
        c = {"num_classes": 1000, "image_size": 224, "batch": batch}
        if quick:
            c["image_size"] = 64
    else:
        raise ValueError(family)
    return c


class _Bert(torch.nn.Module):
    def __init__(self, hf):
        super().__init__()
        import transformers
        self.bert = transformers.BertModel(hf)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                        token_type_ids=token_type_ids, return_dict=True)
        return out.last_hidden_state, out.pooler_output


class _Gpt2(torch.nn.Module):
    def __init__(self, hf):
        super().__init__()
        import transformers
        self.gpt2 = transformers.GPT2LMHeadModel(hf)

    def forward(self, input_ids, attention_mask):
        return self.gpt2(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                         return_dict=True).logits


class _Vit(torch.nn.Module):
    def __init__(self, hf):
        super().__init__()
        import transformers
        self.vit = transformers.ViTForImageClassification(hf)

    def forward(self, pixels):
        return self.vit(pixel_values=pixels, return_dict=True).logits


def _randomize_layernorms(model, gen):
    # Fresh LayerNorms are identities, which would hide a wrong gamma/beta indexing.
    for m in model.modules():
        if isinstance(m, torch.nn.LayerNorm):
            with torch.no_grad():
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))


def build_model(family, c):
    """The eval-mode float32 module for a config (deterministic: seeded here)."""
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 7)
    import transformers
    if family == "bert":
        hf = transformers.BertConfig(
            **{k: v for k, v in c.items() if k not in ("batch", "sequence")},
            attn_implementation="eager")
        model = _Bert(hf)
        _randomize_layernorms(model, gen)
    elif family == "gpt2":
        hf = transformers.GPT2Config(
            **{k: v for k, v in c.items() if k not in ("batch", "sequence")},
            use_cache=False, attn_implementation="eager")
        model = _Gpt2(hf)
        _randomize_layernorms(model, gen)
    elif family == "vit":
        hf = transformers.ViTConfig(**{k: v for k, v in c.items() if k != "batch"},
                                    attn_implementation="eager")
        model = _Vit(hf)
        _randomize_layernorms(model, gen)
    elif family == "resnet50":
        import torchvision
        model = torchvision.models.resnet50(weights=None, num_classes=c["num_classes"])
        # Fresh BatchNorm statistics (mean 0, var 1) let activations grow without bound through
        # 16 residual blocks; calibrate them on random images as training would.
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.momentum = None  # cumulative average
        model.train()
        with torch.no_grad():
            for _ in range(2):
                model(torch.randn(8, 3, c["image_size"], c["image_size"], generator=gen))
    else:
        raise ValueError(family)
    return model.eval().float()


def make_inputs(family, c, rng):
    """[(name, ndarray)] random inputs, never zeros."""
    b = c["batch"]
    if family in ("bert", "gpt2"):
        s = c["sequence"]
        ids = rng.integers(0, c["vocab_size"], (b, s)).astype(np.int64)
        mask = np.ones((b, s), np.int64)
        for row in mask:  # a padded tail per row, at least half the sequence kept
            row[rng.integers(s // 2, s + 1):] = 0
        if family == "gpt2":
            mask[:] = 1  # prefill of a full prompt
            return [("input_ids", ids), ("attention_mask", mask)]
        types = rng.integers(0, 2, (b, s)).astype(np.int64)
        return [("input_ids", ids), ("attention_mask", mask), ("token_type_ids", types)]
    size = c["image_size"]
    return [("pixels", rng.standard_normal((b, 3, size, size)).astype(np.float32))]


def output_names(family):
    return {"bert": ["last_hidden_state", "pooler_output"], "gpt2": ["logits"],
            "vit": ["logits"], "resnet50": ["logits"]}[family]


def export_onnx(model, example, input_names, outputs, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, example, dynamo=True, opset_version=OPSET,
                                    input_names=input_names, output_names=outputs,
                                    optimize=True, verbose=False)
    program.save(path, external_data=False)
    import onnx
    m = onnx.load(path, load_external_data=False)
    written = {o.domain: o.version for o in m.opset_import}.get("", None)
    # Drop the exporter's per-node stack traces (this machine's paths; size).
    for g in [m.graph]:
        del g.metadata_props[:]
        for n in g.node:
            del n.metadata_props[:]
    onnx.save(m, path)
    return written, len(m.graph.node)


def reduced_precision_errors(model, example, refs, dev):
    """{precision: [relative L2 error per output]} of PyTorch eager in fp16, bf16 and (on a GPU)
    tf32 against its float32 outputs refs: how well-conditioned the model is in each."""
    import copy
    import precisions
    result = {}
    for p in ["fp16", "bf16"] + (["tf32"] if dev.type == "cuda" else []):
        try:
            precisions.apply_torch(p)
            dt = precisions.torch_dtype(p)
            m = copy.deepcopy(model).to(dt)
            with torch.no_grad():
                outs = m(*[t.to(dev).to(dt) if t.is_floating_point() else t.to(dev) for t in example])
            outs = (outs,) if isinstance(outs, torch.Tensor) else outs
            result[p] = [float(torch.linalg.vector_norm(o.float() - r.float()) / torch.linalg.vector_norm(r.float()))
                         for o, r in zip(outs, refs)]
            del m
        except Exception as e:  # a measurement, never a reason to lose the export
            print(f"torch in {p}: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            set_precision()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    set_precision()
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"export_bench_models: unknown model '{n}' (models: {', '.join(MODELS)})")
    import transformers
    import onnx
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    for name in names:
        t0 = time.time()
        family, batch = MODELS[name]
        if args.quick:
            batch = QUICK_BATCH.get(name, batch)
        c = config_for(family, batch, args.quick)
        model = build_model(family, c)
        rng = np.random.default_rng(SEED + sum(map(ord, name)))
        inputs = make_inputs(family, c, rng)
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        example = tuple(torch.from_numpy(v) for _, v in inputs)
        # The exporter traces on the CPU (weights never leave this machine's disk).
        opset, nodes = export_onnx(model, example, [k for k, _ in inputs], output_names(family),
                                   os.path.join(d, "model.onnx"))
        t1 = time.time()
        dev = torch.device(args.device)
        model_dev = model.to(dev)
        with torch.no_grad():
            refs = model_dev(*[t.to(dev) for t in example])
        if isinstance(refs, torch.Tensor):
            refs = (refs,)
        torch_rel_l2 = reduced_precision_errors(model_dev, example, refs, dev)
        for k, (iname, v) in enumerate(inputs):
            np.save(os.path.join(d, f"input_{k}.npy"), v)
        for k, r in enumerate(refs):
            np.save(os.path.join(d, f"ref_{k}.npy"), r.float().cpu().numpy())
        meta = {
            "name": name, "family": family, "config": c, "seed": SEED, "quick": args.quick,
            "inputs": [{"name": k, "dtype": str(v.dtype), "shape": list(v.shape)} for k, v in inputs],
            "outputs": [{"name": o, "shape": list(r.shape)} for o, r in zip(output_names(family), refs)],
            "opset": opset, "onnx_nodes": nodes, "exporter": "torch.onnx.export(dynamo=True)",
            "reference_device": str(dev) + (f" ({torch.cuda.get_device_name()})" if dev.type == "cuda" else ""),
            "precision": "float32; TF32 off (torch.backends.cuda.matmul.allow_tf32=False, "
                         "torch.backends.cudnn.allow_tf32=False, float32_matmul_precision='highest')",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "onnx": onnx.__version__, "numpy": np.__version__},
            "torch_rel_l2": torch_rel_l2,
            "parameters": sum(p.numel() for p in model.parameters()),
            "onnx_bytes": os.path.getsize(os.path.join(d, "model.onnx")),
        }
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"exported {name}: {meta['parameters'] / 1e6:.1f}M parameters, opset {opset}, "
              f"{nodes} nodes, {meta['onnx_bytes'] / 2**20:.0f} MiB; export {t1 - t0:.0f} s, "
              f"reference on {meta['reference_device']} {time.time() - t1:.1f} s", flush=True)
        del model, model_dev
        if dev.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

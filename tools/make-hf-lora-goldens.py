#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""make-hf-lora-goldens.py: LoRA reference data from Hugging Face transformers
and PEFT for the runtime's tests (tests/data/hf/<model>/lora/, read by
tests/engine/test-hf-goldens.c).

For qwen2, qwen3, qwen3moe, qwen35 and qwen35moe it
  1. rebuilds the tiny model of tests/data/hf/<model>/ with
     make-hf-goldens.py's code and the seed of its manifest, and stops unless
     transformers' logits on the committed prompt equal the committed
     logits.bin bit for bit and the GGUF convert_hf_to_gguf.py makes of it
     equals the committed <model>.gguf byte for byte;
  2. attaches a LoRA with the peft library (rank 4, lora_alpha 8: PEFT's
     factor alpha/r = 2) to the projections of TARGETS, and draws A and B
     from a fixed torch seed (A ~ N(0, A_STD), B ~ N(0, B_STD): B non-zero,
     unlike PEFT's default, so the adapter changes the logits);
  3. runs that model in float32 (eager attention, PEFT's un-merged LoRA
     layers) on the short ChatML prompt (every position) and greedily for 32
     tokens, and checks that the folder save_pretrained() writes, loaded
     again by PEFT, gives the same logits bit for bit;
  4. converts the PEFT folder to GGUF with llama.cpp's convert_lora_to_gguf.py
     (--base: the checkpoint of step 1; for Qwen3.5 with what --no-mtp sets,
     see convert_lora) and runs llama.cpp (libllama) with
     the base GGUF and that adapter at scale 1 on the same ids; its distance
     from transformers goes into the manifest (informational);
  5. for qwen3moe, also saves a PEFT adapter that adapts the routed experts
     (PEFT target_parameters on the 3-D mlp.experts tensors, next to the
     attention projections): the runtime must refuse it (peft-experts/), and
     records what convert_lora_to_gguf.py does with it;
  6. with --tensafe-cli, records how far the runtime with either adapter form
     is from transformers (informational: the test reads the .bin files).
The seed of an adapter is the first from LORA_SEED for which near-ties cannot
decide the comparisons (the criteria of make-hf-goldens.py: greedy top-1/top-2
margins >= 4e-3 and, for qwen3moe, router gaps >= 1e-4, all with the adapter).

Versions of the committed data: peft 0.21.2, transformers 5.24.0, torch
2.15.0 (CPU), tokenizers 0.23.3, numpy 2.4.6, llama.cpp commit 0c1e57098bba as
vendored in llama-cpp-python 0.3.36 (convert_hf_to_gguf.py,
convert_lora_to_gguf.py, gguf-py and a CPU build of libllama).

Rerun from the repository root (writes tests/data/hf/<model>/lora/, work files
in --work):
  /work/cache/venv/bin/python tools/make-hf-lora-goldens.py \\
      --llama-cpp-python /work/cache/llama/llama_cpp_python-0.3.36 \\
      [--tensafe-cli build/src/cli/tensafe-cli] [--only qwen3]
"""

import argparse
import ctypes
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch


def import_goldens():
    """make-hf-goldens.py (a file name Python cannot import by name)."""
    path = Path(__file__).with_name("make-hf-goldens.py")
    spec = importlib.util.spec_from_file_location("make_hf_goldens", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hf = import_goldens()

LORA_RANK = 4
LORA_ALPHA = 8
A_STD = 0.15
B_STD = 0.05
LORA_SEED = 7000
ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLP = ["gate_proj", "up_proj", "down_proj"]
DELTANET = ["in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b", "out_proj"]
TARGETS = {
    "qwen2": ATTENTION + MLP,
    "qwen3": ATTENTION + MLP,
    # The routed experts are 3-D tensors the runtime does not adapt (see peft-experts/).
    "qwen3moe": ATTENTION,
    "qwen35": ATTENTION + DELTANET + MLP,
    # gate/up/down_proj: the shared expert's (mlp.shared_expert.*), the routed ones are 3-D.
    "qwen35moe": ATTENTION + DELTANET + MLP,
}
EXPERT_PARAMETERS = ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
SCALE_NOTE = (
    "Both forms carry alpha = 8 and rank 4 (PEFT: adapter_config.json lora_alpha and r; GGUF: "
    "adapter.lora.alpha and the rank of lora_a). PEFT, llama.cpp and the runtime all multiply "
    "B·A·h by alpha/r = 2 themselves; the user scale of llama_set_adapters_lora and of "
    "lm_lora_load is 1.0 here.")


# ---------------------------------------------------------------------------
# The base model, rebuilt


def committed(out, name, file, dtype):
    return np.fromfile(out / name / file, dtype)


def rebuild_base(args, spec, hf_tok):
    """The checkpoint of tests/data/hf/<name>/, proven identical to the committed one."""
    manifest = json.loads((args.out / spec.name / "manifest.json").read_text())
    seed = manifest["seed"]
    hf_dir = args.work / spec.name / f"tiny-{spec.name}"   # the converter names the model after it
    hf.build_model(spec, seed).save_pretrained(hf_dir)
    hf_tok.save_pretrained(hf_dir)
    ids = committed(args.out, spec.name, "prompt_tokens.bin", "<i4").tolist()
    logits = hf.forward_all(hf.load_model(hf_dir, spec), ids)
    if not np.array_equal(logits.reshape(-1), committed(args.out, spec.name, "logits.bin", "<f4")):
        raise SystemExit(f"{spec.name}: the rebuilt model's logits differ from logits.bin")
    gguf = args.work / spec.name / f"{spec.name}.gguf"
    hf.convert(args, hf_dir, spec, "f32", gguf)
    if sha256(gguf) != sha256(args.out / spec.name / f"{spec.name}.gguf"):
        raise SystemExit(f"{spec.name}: the rebuilt GGUF differs from {spec.name}.gguf")
    check = dict(seed=seed, logits_equal_committed="bit for bit",
                 gguf_equal_committed=f"byte for byte (sha256 {sha256(gguf)})")
    return hf_dir, ids, logits, check


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------------------
# The adapter


def lora_config(targets, target_parameters=None):
    from peft import LoraConfig
    extra = dict(target_parameters=target_parameters) if target_parameters else {}
    return LoraConfig(r=LORA_RANK, lora_alpha=LORA_ALPHA, lora_dropout=0.0, bias="none",
                      target_modules=targets, task_type="CAUSAL_LM", **extra)


def init_lora(peft_model, seed):
    """A ~ N(0, A_STD), B ~ N(0, B_STD), drawn in parameter order from @seed."""
    gen = torch.Generator().manual_seed(seed)
    n = 0
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if ".lora_A." in name or ".lora_B." in name:
                std = A_STD if ".lora_A." in name else B_STD
                p.copy_(std * torch.empty(p.shape).normal_(0.0, 1.0, generator=gen))
                n += 1
    if n == 0:
        raise SystemExit("the PEFT model has no LoRA parameters")


def adapted_model(hf_dir, spec, targets, seed, target_parameters=None):
    from peft import get_peft_model
    model = get_peft_model(hf.load_model(hf_dir, spec), lora_config(targets, target_parameters))
    init_lora(model, seed)
    return model.eval()


def save_adapter(peft_model, folder, spec):
    """adapter_config.json and adapter_model.safetensors (not PEFT's model card)."""
    shutil.rmtree(folder, ignore_errors=True)
    peft_model.save_pretrained(folder)
    (folder / "README.md").unlink(missing_ok=True)
    config_path = folder / "adapter_config.json"
    config = json.loads(config_path.read_text())
    # A scratch path otherwise; the name of the checkpoint this script builds.
    config["base_model_name_or_path"] = f"tiny-{spec.name}"
    # PEFT keeps these as sets: their order would change from run to run.
    for key in ("target_modules", "target_parameters"):
        config[key] = sorted(config[key] or []) or config[key]
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def reload_logits(hf_dir, spec, folder, ids):
    """transformers + PEFT on the saved folder: what a user of it gets."""
    from peft import PeftModel
    model = PeftModel.from_pretrained(hf.load_model(hf_dir, spec), folder).eval()
    return hf.forward_all(model, ids)


def convert_lora(args, spec, hf_dir, peft_dir, out):
    """convert_lora_to_gguf.py; returns None, or its last error line. It has no
    --no-mtp option, and for a Qwen3.5 config without MTP layers (the base was
    converted with --no-mtp) its model class asserts that it found some: the
    child process sets what --no-mtp sets in convert_hf_to_gguf.py."""
    llama_cpp = args.llama_cpp_python / "vendor" / "llama.cpp"
    patch = (
        "import runpy, sys\n"
        "conv, no_mtp = sys.argv[1], sys.argv[2] == '1'\n"
        "sys.path[:0] = [sys.argv[3], sys.argv[3] + '/gguf-py']\n"
        "import conversion.base as base\n"
        "base.TextModel.no_mtp = no_mtp\n"
        "sys.argv = [conv] + sys.argv[4:]\n"
        "runpy.run_path(conv, run_name='__main__')\n"
    )
    no_mtp = "1" if "--no-mtp" in spec.converter_args else "0"
    cmd = [sys.executable, "-c", patch, str(llama_cpp / "convert_lora_to_gguf.py"), no_mtp,
           str(llama_cpp), "--base", str(hf_dir), "--outtype", "f32", "--outfile", str(out),
           str(peft_dir)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode == 0:
        return None
    lines = [l for l in res.stderr.strip().splitlines() if l.strip()]
    return lines[-1] if lines else f"exit {res.returncode}"


# ---------------------------------------------------------------------------
# llama.cpp with the adapter


class LlamaLora(hf.Llama):
    """The base GGUF with a GGUF LoRA at scale 1 (llama.cpp applies alpha/r)."""

    def __init__(self, lib, path, adapter):
        super().__init__(lib, path)
        self.adapter = lib.llama_adapter_lora_init(self.model, str(adapter).encode())
        if not self.adapter:
            raise SystemExit(f"llama.cpp cannot load the adapter {adapter}")
        adapters = (lib.llama_adapter_lora_p_ctypes * 1)(self.adapter)
        scales = (ctypes.c_float * 1)(1.0)
        if lib.llama_set_adapters_lora(self.ctx, adapters, 1, scales) != 0:
            raise SystemExit("llama_set_adapters_lora failed")


def llama_check(lib, gguf, adapter, run, f64, ids):
    llama = LlamaLora(lib, gguf, adapter)
    short = llama.prefill(ids)
    seq = llama.one_by_one(ids)
    tokens, rows = llama.greedy(ids, hf.N_GREEDY)
    llama.close()
    return dict(short_batched_max_abs=hf.max_abs(short, run["logits"]),
                short_batched_vs_float64_max_abs=hf.max_abs(short, f64),
                short_token_by_token_max_abs=hf.max_abs(seq, run["logits"]),
                greedy_logits_max_abs=hf.max_abs(rows, run["greedy_logits"]),
                greedy_tokens_equal=tokens == run["greedy_tokens"],
                short_argmax_agree=f"{hf.argmax_agree(short, run['logits'])}/{len(ids)}")


# ---------------------------------------------------------------------------
# One model


def short_run(model, spec, ids):
    """transformers' logits of every short-prompt position and its greedy decode."""
    probe = hf.RouterProbe(model, spec.config["num_experts_per_tok"]) if spec.moe else None
    run = dict(logits=hf.forward_all(model, ids))
    run["greedy_tokens"], run["greedy_logits"] = hf.greedy(model, ids, hf.N_GREEDY)
    run["greedy_margin"] = hf.top2_margin(run["greedy_logits"])
    run["router_gap"] = probe.close() if probe else None
    return run


def pick_adapter(hf_dir, spec, ids):
    targets = TARGETS[spec.name]
    for seed in range(LORA_SEED, LORA_SEED + 50):
        model = adapted_model(hf_dir, spec, targets, seed)
        run = short_run(model, spec, ids)
        print(f"  {spec.name} lora seed {seed}: greedy margin {run['greedy_margin']:.3g}, "
              f"router gap {run['router_gap']}", flush=True)
        if hf.acceptable(run):
            return seed, model, run
    raise SystemExit(f"{spec.name}: no acceptable adapter seed")


def expert_adapter(args, spec, hf_dir, out):
    """An adapter of the routed experts too: saved for the runtime to refuse."""
    model = adapted_model(hf_dir, spec, ATTENTION, LORA_SEED, EXPERT_PARAMETERS)
    folder = out / "peft-experts"
    save_adapter(model, folder, spec)
    from safetensors import safe_open
    with safe_open(folder / "adapter_model.safetensors", "pt") as f:
        keys = sorted(k for k in f.keys() if ".experts." in k)
    gguf = args.work / spec.name / "experts-lora.gguf"
    gguf.unlink(missing_ok=True)
    error = convert_lora(args, spec, hf_dir, folder, gguf)
    return dict(folder="peft-experts", target_modules=ATTENTION,
                target_parameters=EXPERT_PARAMETERS, expert_tensor_names=keys[:4],
                convert_lora_to_gguf=("converted" if error is None else f"fails: {error}"))


def runtime_checks(args, spec, gguf, out, run, ids):
    res = {}
    for form, path in (("gguf", out / f"{spec.name}-lora.gguf"), ("peft", out / "peft")):
        res[form] = hf.runtime_check(args.tensafe_cli, gguf, run, ids, args.work / spec.name,
                                     extra_args=["--lora", str(path)])
    return res


def make_lora(args, spec, hf_tok, lib):
    hf_dir, ids, base_logits, rebuilt = rebuild_base(args, spec, hf_tok)
    seed, model, run = pick_adapter(hf_dir, spec, ids)
    out = args.out / spec.name / "lora"
    out.mkdir(parents=True, exist_ok=True)
    save_adapter(model, out / "peft", spec)
    reloaded = reload_logits(hf_dir, spec, out / "peft", ids)
    if not np.array_equal(reloaded, run["logits"]):
        raise SystemExit(f"{spec.name}: the saved PEFT folder gives other logits")
    gguf_lora = out / f"{spec.name}-lora.gguf"
    error = convert_lora(args, spec, hf_dir, out / "peft", gguf_lora)
    if error:
        raise SystemExit(f"{spec.name}: convert_lora_to_gguf.py: {error}")
    f64 = hf.forward_all(model.double(), ids)
    base_gguf = args.out / spec.name / f"{spec.name}.gguf"
    checks = dict(rebuilt_base=rebuilt,
                  llama_cpp=llama_check(lib, base_gguf, gguf_lora, run, f64, ids))
    if args.tensafe_cli:
        checks["runtime"] = runtime_checks(args, spec, base_gguf, out, run, ids)
    if spec.name == "qwen3moe":
        checks["experts"] = expert_adapter(args, spec, hf_dir, out)
    observed = dict(
        transformers_float32_vs_float64_max_abs=hf.max_abs(run["logits"], f64),
        adapter_effect_max_abs=hf.max_abs(run["logits"], base_logits),
        greedy_min_top1_top2_margin=run["greedy_margin"],
        router_min_logit_gap=run["router_gap"],
        prompt_argmax_changed_by_adapter=int((run["logits"].argmax(-1)
                                              != base_logits.argmax(-1)).sum()),
        greedy_tokens_differing_from_base=int(sum(
            a != b for a, b in zip(run["greedy_tokens"],
                                   committed(args.out, spec.name, "greedy_tokens.bin", "<i4")))))
    write_folder(out, spec, seed, run, ids, checks, observed)
    print(f"{spec.name} lora: seed {seed}, {json.dumps(checks)}, {json.dumps(observed)}", flush=True)


# ---------------------------------------------------------------------------
# Output


def versions():
    import peft
    v = hf.versions()
    v["peft"] = peft.__version__
    v["llama_cpp"] += ", convert_lora_to_gguf.py"
    return v


def write_folder(out, spec, seed, run, ids, checks, observed):
    files = [
        dict(file="peft/adapter_config.json", dtype="json",
             meaning="PEFT's config of the adapter (save_pretrained)"),
        dict(file="peft/adapter_model.safetensors", dtype="safetensors",
             bytes=(out / "peft" / "adapter_model.safetensors").stat().st_size,
             meaning="lora_A [r, in] and lora_B [out, r] of every adapted module, float32"),
        dict(file=f"{spec.name}-lora.gguf", dtype="gguf",
             bytes=(out / f"{spec.name}-lora.gguf").stat().st_size,
             meaning="the same adapter, convert_lora_to_gguf.py --outtype f32"),
    ]
    hf.write_bin(out, "logits.bin", run["logits"], "<f4", files,
                 "transformers + PEFT logits of every short-prompt position (the ids of "
                 "../prompt_tokens.bin), one batched forward")
    hf.write_bin(out, "greedy_tokens.bin", run["greedy_tokens"], "<i4", files,
                 "32 argmax tokens after the short prompt (no EOS stop)")
    hf.write_bin(out, "greedy_logits.bin", run["greedy_logits"], "<f4", files,
                 "row k: the logits greedy token k was chosen from")
    if spec.name == "qwen3moe":
        files.append(dict(file="peft-experts/", dtype="PEFT folder",
                          meaning="an adapter of the attention projections and the routed "
                                  "experts: must be refused (see experts)"))
    manifest = dict(
        model=spec.name, base="..", adapter_seed=seed,
        lora=dict(r=LORA_RANK, lora_alpha=LORA_ALPHA, factor=LORA_ALPHA / LORA_RANK,
                  target_modules=TARGETS[spec.name], lora_dropout=0.0,
                  init=f"A ~ N(0, {A_STD}), B ~ N(0, {B_STD}) (see tools/make-hf-lora-goldens.py)"),
        scale=SCALE_NOTE,
        generated_by=versions(),
        reference=("transformers + PEFT (un-merged LoRA layers), float32, "
                   "attn_implementation=eager" + (", experts_implementation=eager" if spec.moe else "")
                   + ", CPU"),
        prompt_ids=ids,
        files=files,
        tolerance=dict(logits_max_abs=hf.LOGITS_TOL, greedy_tokens="identical",
                       forms="the GGUF file and the PEFT folder, each at user scale 1"),
        observed=observed,
        **checks,
    )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


# ---------------------------------------------------------------------------


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llama-cpp-python", type=Path, required=True,
                   help="llama-cpp-python source tree (vendor/llama.cpp inside)")
    p.add_argument("--llama-lib", type=Path,
                   help="folder with libllama.so (default: vendor/llama.cpp/build/bin)")
    p.add_argument("--out", type=Path, default=Path("tests/data/hf"))
    p.add_argument("--work", type=Path, default=Path("/tmp/hf-lora-goldens"),
                   help="checkpoints and scratch files")
    p.add_argument("--tensafe-cli", type=Path, help="record the runtime's differences too")
    p.add_argument("--only", action="append", choices=sorted(TARGETS),
                   help="make only these models")
    args = p.parse_args()
    if args.llama_lib is None:
        args.llama_lib = args.llama_cpp_python / "vendor" / "llama.cpp" / "build" / "bin"
    return args


def main():
    args = parse_args()
    sys.path.insert(0, str(args.llama_cpp_python / "vendor" / "llama.cpp" / "gguf-py"))
    torch.set_num_threads(2)
    lib = hf.load_libllama(args)
    specs = [s for s in hf.SPECS if s.name in TARGETS and (not args.only or s.name in args.only)]
    toks = {pre: hf.train_tokenizer(pre) for pre in {s.pre for s in specs}}
    for spec in specs:
        make_lora(args, spec, hf.hf_tokenizer(toks[spec.pre]), lib)


if __name__ == "__main__":
    main()

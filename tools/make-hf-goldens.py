#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""make-hf-goldens.py: reference data from Hugging Face transformers for the
runtime's tests (tests/data/hf/<model>/, read by tests/engine/test-hf-goldens.c).

For each architecture (qwen2, qwen3, qwen3moe, qwen35, qwen35moe) it
  1. builds a tiny model with transformers' own config and model classes,
     draws its weights from a fixed torch seed and save_pretrained()s it with
     a small byte-level BPE tokenizer trained here (tokenizers library);
  2. converts that checkpoint to an F32 GGUF with llama.cpp's
     convert_hf_to_gguf.py (and qwen2 also to Q8_0);
  3. runs transformers' forward in float32 (attn_implementation="eager") on a
     short ChatML prompt and on a 300-token prompt, and a 32-token greedy
     decode (argmax, no EOS stop, with the KV cache) from the short prompt;
  4. runs llama.cpp (libllama, through llama-cpp-python's ctypes bindings) on
     the GGUF with the same token ids and records how far it is from
     transformers, and from transformers in float64, which says whose
     rounding a difference is (manifest.json "llama_cpp"); qwen3moe also with
     norm_topk_prob=false ("variant", a known disagreement);
  5. for the Q8_0 file, runs transformers on its dequantized weights (f32
     activations), stores llama.cpp's logits on the file (8-bit activations),
     re-implements llama.cpp's activation rounding in transformers to show it
     is understood, and measures what flipping one rounding near a tie does
     (the basis of that comparison's tolerance, see Q8_WHY);
  6. with --tensafe-cli, records how far the runtime's logits are from
     transformers (manifest.json "runtime", informational only: the test
     reads the .bin files, never these numbers).
Every disagreement found and whose it is: manifest.json "findings".

Versions of the committed data: transformers 5.24.0, torch 2.15.0 (CPU),
tokenizers 0.23.3, numpy 2.4.6, llama.cpp commit 0c1e57098bba as vendored in
llama-cpp-python 0.3.36 (its convert_hf_to_gguf.py, gguf-py and a CPU build of
libllama). The tokenizer is trained on /usr/share/common-licenses/GPL-3
(Debian base-files; its sha256 is in every manifest).

Pre-tokenizer: the converter names the pre-tokenizer (tokenizer.ggml.pre) by
hashing the ids that the tokenizer gives a check string, and a vocabulary
trained here matches no known hash. The converter therefore runs in a child
process in which TextModel.get_vocab_base_pre is replaced by a function
returning the real models' name: "qwen2" for qwen2/qwen3/qwen3moe and
"qwen35" for qwen35/qwen35moe. The tokenizer uses the very regex llama.cpp
associates with that name (Qwen2's for the former, Qwen3.5's, which adds
\\p{M} to the letter classes, for the latter), NFC and ByteLevel, as the real
tokenizer.json files do.

Weights: every matrix N(0, 0.15); RMSNorm weights 1 + N(0, 0.1) (for the
zero-centred norms of Qwen3.5, whose weight w acts as 1 + w, w ~ N(0, 0.1));
biases N(0, 0.1); DeltaNet A = U(0.5, 4), dt_bias N(0, 0.5). The seed of each
model is the first from its base seed for which near-ties cannot decide the
comparisons: every greedy step's top-1/top-2 logit margin is at least 4e-3
(twice the test's logits tolerance, so logits within it pick the same token),
every routed expert choice (all positions of both prompts and of the greedy
decode) is at least 1e-4 in router logit from the next expert (about 1e-4 of
their spread; f32 implementations differ there by about 1e-6), and for the
Q8_0 file two flips of an 8-bit activation rounding stay within its tolerance
(see Q8_WHY).

Rerun from the repository root (writes tests/data/hf/, work files in --work):
  /work/cache/venv/bin/python tools/make-hf-goldens.py \\
      --llama-cpp-python /work/cache/llama/llama_cpp_python-0.3.36 \\
      [--tensafe-cli build/src/cli/tensafe-cli] [--only qwen35]
"""

import argparse
import ctypes
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

N_GREEDY = 32
N_LONG = 300
LONG_STRIDE = 10
LOGITS_TOL = 2e-3
Q8_LLAMA_TOL = 0.25
Q8_ARGMAX_MIN = 0.9
Q8_WHY = (
    "Rounding activations to 8 bits is discontinuous: a value within float noise of a rounding "
    "tie goes either way in two correct implementations, and one such value moves the logits "
    "of this model by up to observed.single_flip_max_abs (observed.flips: the ten roundings of "
    "the prompt nearest a tie, each moved to its other side; the nearest is "
    "observed.flips[0].tie_distance from its tie). 0.25 allows two of them. argmax at the prompt "
    "positions and at the greedy steps (fed llama.cpp's tokens) must agree at >= 90%. That "
    "llama.cpp's rounding is understood shows observed.q8_mimic_vs_llama_cpp: transformers with "
    "the same rounding reproduces its logits. The tight check of the Q8_0 arithmetic is the "
    "f32-activation one: 2e-3 against transformers on the dequantized weights.")

# Logits within tol of the reference cannot change an argmax whose margin exceeds 2 tol.
MIN_GREEDY_MARGIN = 2 * LOGITS_TOL
MIN_ROUTER_GAP = 1e-4
WEIGHT_STD = 0.15
N_VOCAB_TRAINED = 995          # BPE tokens; the 5 special tokens follow
N_VOCAB = 1024                 # model rows (padded like the real Qwen vocabularies)
CORPUS = Path("/usr/share/common-licenses/GPL-3")
LLAMA_COMMIT = "0c1e57098bba"

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

# The pre-tokenizer regexes of the real tokenizer.json files (llama.cpp's
# llama-vocab.cpp quotes the same strings for "qwen2" and "qwen35").
PRE_REGEX = {
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen35": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}"
)

SHORT_PROMPT = ("<|im_start|>user\nWhat is free software?<|im_end|>\n"
                "<|im_start|>assistant\n<think>\n\n</think>\n\n")

LONG_PROMPT = (
    "<|im_start|>system\nYou are a careful assistant that summarizes legal text.<|im_end|>\n"
    "<|im_start|>user\nSummarize this in one sentence:\n\n"
    "The licenses for most software and other practical works are designed to take away your "
    "freedom to share and change the works. By contrast, the GNU General Public License is "
    "intended to guarantee your freedom to share and change all versions of a program--to make "
    "sure it remains free software for all its users. When we speak of free software, we are "
    "referring to freedom, not price. Our General Public Licenses are designed to make sure "
    "that you have the freedom to distribute copies of free software (and charge for them if "
    "you wish), that you receive source code or can get it if you want it, that you can change "
    "the software or use pieces of it in new free programs, and that you know you can do these "
    "things. To protect your rights, we need to prevent others from denying you these rights "
    "or asking you to surrender the rights. Therefore, you have certain responsibilities if "
    "you distribute copies of the software, or if you modify it: responsibilities to respect "
    "the freedom of others. For example, if you distribute copies of such a program, whether "
    "gratis or for a fee, you must pass on to the recipients the same freedoms that you "
    "received. You must make sure that they, too, receive or can get the source code. And you "
    "must show them these terms so they know their rights.<|im_end|>\n"
    "<|im_start|>assistant\n"
)


@dataclass
class Spec:
    name: str            # folder under tests/data/hf/
    arch: str            # GGUF general.architecture
    hf_class: str        # transformers model class
    config_class: str    # transformers config class
    pre: str             # forced tokenizer.ggml.pre
    seed: int            # base seed (see the header)
    config: dict
    zero_centered_norms: bool = False
    moe: bool = False
    q8_0: bool = False   # also a Q8_0 conversion (folder <name>-q8_0)
    converter_args: list = field(default_factory=list)
    findings: list = field(default_factory=list)  # disagreements found, and whose they are
    variant: dict = field(default_factory=dict)   # a config change llama.cpp is checked on too


FINDING_NORM_TOPK = (
    "norm_topk_prob: llama.cpp renormalises the top-k routing weights of qwen3moe always "
    "(build_moe_ffn(..., norm_w = true) in src/models/qwen3moe.cpp; the converter writes no "
    "expert_weights_norm key), transformers only when norm_topk_prob is true. This model sets "
    "true, like every released Qwen3-MoE checkpoint, and the two agree. With norm_topk_prob=false "
    "(same weights: the llama_cpp check of \"variant\") llama.cpp is far off transformers and "
    "argmaxes differ. transformers is right there (it defines the model); the GGUF does not say "
    "which applies, so a runtime must renormalise like llama.cpp unless a "
    "qwen3moe.expert_weights_norm key says otherwise.")
FINDING_Q8 = (
    "llama.cpp on this file is far from transformers on its dequantized weights "
    "(llama_cpp.logits_vs_dequant_transformers_max_abs) and its greedy tokens differ: llama.cpp "
    "rounds every input of a matmul with a Q8_0 weight to Q8_0 blocks (the weight type's "
    "vec_dot_type), transformers keeps f32 activations. Neither is wrong: the first is the exact "
    "arithmetic of the stored weights, the second what llama.cpp, and the runtime's default mode, "
    "compute. The test holds the runtime's exact_activations mode to the first and its default "
    "mode to the second, loosely: a rounding within float noise of a tie goes either way in two "
    "correct implementations (observed.flips). Seen on a Qwen3.5 Q8_0 file: the runtime and "
    "llama.cpp rounded one out_proj input 7.6e-6 from its tie differently, and the DeltaNet state "
    "carried the change to every later position (0.07 in the logits); transformers with "
    "llama.cpp's rounding matched llama.cpp there to 2e-6.")
FINDING_QWEN35 = (
    "No modelling difference. Against transformers in float64 (transformers_float32_vs_float64 "
    "and the *_vs_float64 entries) transformers f32 and llama.cpp are both about 2e-5 off, the "
    "runtime about 7e-5: ordinary float32 rounding, the runtime's a little larger.")
FINDING_QWEN35MOE = (
    "No modelling difference. The largest gap, llama.cpp vs transformers 1.3e-4 at short-prompt "
    "position 14, is mostly transformers' own float32 rounding: against float64 transformers, "
    "transformers f32 is 9e-5 off, llama.cpp 5e-5, the runtime 7e-5.")
FINDING_INTERVAL = (
    "The converter writes qwen35moe.full_attention_interval = 4 (transformers does not save the "
    "interval when layer_types is given) next to attention.recurrent_layers = [1, 0, 1]; "
    "llama.cpp and the runtime both take the array first, so layer 1 is full attention in both.")

COMMON = dict(vocab_size=N_VOCAB, hidden_size=64, rms_norm_eps=1e-6, max_position_embeddings=4096,
              num_attention_heads=4, num_key_value_heads=2, hidden_act="silu",
              bos_token_id=None, eos_token_id=997, pad_token_id=995)

SPECS = [
    Spec("qwen2", "qwen2", "Qwen2ForCausalLM", "Qwen2Config", "qwen2", 1000,
         dict(COMMON, intermediate_size=128, num_hidden_layers=2, tie_word_embeddings=True,
              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
         q8_0=True),
    Spec("qwen3", "qwen3", "Qwen3ForCausalLM", "Qwen3Config", "qwen2", 2000,
         dict(COMMON, intermediate_size=128, num_hidden_layers=2, head_dim=32,
              tie_word_embeddings=False,
              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    Spec("qwen3moe", "qwen3moe", "Qwen3MoeForCausalLM", "Qwen3MoeConfig", "qwen2", 3000,
         dict(COMMON, intermediate_size=128, num_hidden_layers=2, head_dim=32,
              tie_word_embeddings=False, num_experts=16, num_experts_per_tok=4,
              moe_intermediate_size=16, norm_topk_prob=True, decoder_sparse_step=1,
              mlp_only_layers=[],
              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
         moe=True, findings=[FINDING_NORM_TOPK], variant=dict(norm_topk_prob=False)),
    Spec("qwen35", "qwen35", "Qwen3_5ForCausalLM", "Qwen3_5TextConfig", "qwen35", 4000,
         dict(COMMON, intermediate_size=128, num_hidden_layers=4, head_dim=32,
              tie_word_embeddings=True, linear_conv_kernel_dim=4, linear_key_head_dim=16,
              linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
              rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                               "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1],
                               "mrope_interleaved": True}),
         zero_centered_norms=True, converter_args=["--no-mtp"], findings=[FINDING_QWEN35]),
    Spec("qwen35moe", "qwen35moe", "Qwen3_5MoeForCausalLM", "Qwen3_5MoeTextConfig", "qwen35", 5000,
         dict(COMMON, num_hidden_layers=3, head_dim=32, tie_word_embeddings=False,
              layer_types=["linear_attention", "full_attention", "linear_attention"],
              linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
              linear_num_key_heads=2, linear_num_value_heads=4,
              num_experts=16, num_experts_per_tok=4, moe_intermediate_size=16,
              shared_expert_intermediate_size=32,
              rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                               "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1],
                               "mrope_interleaved": True}),
         zero_centered_norms=True, moe=True, converter_args=["--no-mtp"],
         findings=[FINDING_QWEN35MOE, FINDING_INTERVAL]),
]


# ---------------------------------------------------------------------------
# Tokenizer


def train_tokenizer(pre):
    """A byte-level BPE with the real Qwen pipeline (NFC, regex split, ByteLevel)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRE_REGEX[pre]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=N_VOCAB_TRAINED, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS.read_text(encoding="utf-8")], trainer=trainer)
    if tok.get_vocab_size() != N_VOCAB_TRAINED:
        raise SystemExit(f"the BPE trainer made {tok.get_vocab_size()} tokens, not {N_VOCAB_TRAINED}")
    tok.add_special_tokens(SPECIAL_TOKENS)
    return tok


def hf_tokenizer(tok):
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", bos_token=None,
                                   chat_template=CHAT_TEMPLATE, clean_up_tokenization_spaces=False)


# ---------------------------------------------------------------------------
# The transformers model


def init_weights(model, spec, seed):
    """The distributions of the header, drawn in parameter order from @seed."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.empty(p.shape).normal_(0.0, 1.0, generator=gen)
            if name.endswith("A_log"):
                a = torch.empty(p.shape).uniform_(0.5, 4.0, generator=gen)
                p.copy_(torch.log(a))
            elif name.endswith("dt_bias"):
                p.copy_(0.5 * noise)
            elif p.ndim == 1 and "norm" in name:
                plain = not spec.zero_centered_norms or name.endswith("linear_attn.norm.weight")
                p.copy_((1.0 if plain else 0.0) + 0.1 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.1 * noise)
            else:
                p.copy_(WEIGHT_STD * noise)


def build_model(spec, seed):
    import transformers
    config = getattr(transformers, spec.config_class)(**spec.config)
    torch.manual_seed(seed)
    model = getattr(transformers, spec.hf_class)(config)
    init_weights(model, spec, seed)
    return model


def load_model(hf_dir, spec):
    """The plain PyTorch code paths: eager attention and the per-expert loop."""
    from transformers import AutoModelForCausalLM
    extra = dict(experts_implementation="eager") if spec.moe else {}
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32,
                                                 attn_implementation="eager", **extra)
    return model.eval()


class RouterProbe:
    """Records, for every routed token, the router-logit gap between the last
    chosen expert and the first one left out."""

    def __init__(self, model, top_k):
        self.top_k = top_k
        self.min_gap = float("inf")
        self.hooks = [m.register_forward_hook(self.hook) for name, m in model.named_modules()
                      if name.endswith("mlp.gate")]

    def hook(self, module, inputs, output):
        logits = output[0] if isinstance(output, tuple) else output
        top = torch.topk(logits.float(), self.top_k + 1, dim=-1).values
        self.min_gap = min(self.min_gap, float((top[:, -2] - top[:, -1]).min()))

    def close(self):
        for h in self.hooks:
            h.remove()
        return self.min_gap


def forward_all(model, ids):
    """Logits of every position, in the model's dtype."""
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0].numpy()


def greedy(model, ids, n):
    """n argmax steps with the model's cache; returns the tokens and the logits each came from."""
    tokens, rows = [], []
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), use_cache=True)
        for _ in range(n):
            row = out.logits[0, -1].float().numpy()
            rows.append(row)
            tokens.append(int(row.argmax()))
            out = model(input_ids=torch.tensor([[tokens[-1]]]), cache=out.cache, use_cache=True)
    return tokens, np.stack(rows)


def top2_margin(rows):
    part = np.sort(rows, axis=-1)
    return float((part[:, -1] - part[:, -2]).min())


def reference_run(model, spec, short_ids, long_ids):
    """transformers' logits of both prompts, its greedy decode, and their near-ties."""
    probe = RouterProbe(model, spec.config["num_experts_per_tok"]) if spec.moe else None
    run = dict(logits=forward_all(model, short_ids), long_logits=forward_all(model, long_ids))
    run["greedy_tokens"], run["greedy_logits"] = greedy(model, short_ids, N_GREEDY)
    run["greedy_margin"] = top2_margin(run["greedy_logits"])
    run["router_gap"] = probe.close() if probe else None
    return run


def acceptable(run):
    return (run["greedy_margin"] >= MIN_GREEDY_MARGIN
            and (run["router_gap"] is None or run["router_gap"] >= MIN_ROUTER_GAP))


# ---------------------------------------------------------------------------
# llama.cpp: the converter and libllama


def convert(args, hf_dir, spec, outtype, out):
    """convert_hf_to_gguf.py with the pre-tokenizer name forced (see the header)."""
    llama_cpp = args.llama_cpp_python / "vendor" / "llama.cpp"
    patch = (
        "import runpy, sys\n"
        "conv, pre = sys.argv[1], sys.argv[2]\n"
        "sys.path[:0] = [sys.argv[3], sys.argv[3] + '/gguf-py']\n"
        "import conversion.base as base\n"
        "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre\n"
        "sys.argv = [conv] + sys.argv[4:]\n"
        "runpy.run_path(conv, run_name='__main__')\n"
    )
    cmd = [sys.executable, "-c", patch, str(llama_cpp / "convert_hf_to_gguf.py"), spec.pre,
           str(llama_cpp), str(hf_dir), "--outtype", outtype, "--outfile", str(out)]
    subprocess.run(cmd + spec.converter_args, check=True, stdout=subprocess.DEVNULL)


def load_libllama(args):
    """llama-cpp-python's ctypes bindings, without its high-level package (which
    needs modules this script does not)."""
    os.environ["LLAMA_CPP_LIB_PATH"] = str(args.llama_lib)
    pkg = types.ModuleType("llama_cpp")
    pkg.__path__ = [str(args.llama_cpp_python / "llama_cpp")]
    sys.modules["llama_cpp"] = pkg
    import llama_cpp.llama_cpp as lib
    lib.llama_log_set(QUIET_LOG, None)
    lib.llama_backend_init()
    return lib


@ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
def QUIET_LOG(level, text, user_data):
    if level == 4:  # GGML_LOG_LEVEL_ERROR
        sys.stderr.write(text.decode(errors="replace"))


class Llama:
    """One model and context: CPU, f32 K/V cache, flash attention off, 2 threads."""

    def __init__(self, lib, path):
        self.lib = lib
        mp = lib.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = lib.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            raise SystemExit(f"llama.cpp cannot load {path}")
        cp = lib.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = 512
        cp.n_threads = cp.n_threads_batch = 2
        cp.type_k = cp.type_v = 0          # GGML_TYPE_F32
        cp.flash_attn_type = 0             # LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.no_perf = True
        self.ctx = lib.llama_init_from_model(self.model, cp)
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)

    def close(self):
        self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)

    def reset(self):
        self.lib.llama_memory_clear(self.lib.llama_get_memory(self.ctx), True)

    def tokenize(self, text):
        raw = text.encode()
        buf = (self.lib.llama_token * 4096)()
        n = self.lib.llama_tokenize(self.vocab, raw, len(raw), buf, 4096, False, True)
        return list(buf[:n])

    def decode(self, tokens, pos0):
        """Feeds tokens in one llama_decode; returns the logits of every one."""
        lib, n = self.lib, len(tokens)
        batch = lib.llama_batch_init(n, 0, 1)
        for i, t in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = t, pos0 + i, 1
            batch.seq_id[i][0], batch.logits[i] = 0, 1
        batch.n_tokens = n
        rc = lib.llama_decode(self.ctx, batch)
        lib.llama_batch_free(batch)
        if rc != 0:
            raise SystemExit(f"llama_decode failed ({rc})")
        return np.stack([np.ctypeslib.as_array(lib.llama_get_logits_ith(self.ctx, i),
                                               shape=(self.n_vocab,)).copy() for i in range(n)])

    def prefill(self, tokens):
        self.reset()
        return self.decode(tokens, 0)

    def one_by_one(self, tokens):
        self.reset()
        return np.concatenate([self.decode([t], p) for p, t in enumerate(tokens)])

    def greedy(self, tokens, n):
        rows = [self.prefill(tokens)[-1]]
        out = []
        for k in range(n):
            out.append(int(rows[-1].argmax()))
            if k + 1 < n:
                rows.append(self.decode([out[-1]], len(tokens) + k)[0])
        return out, np.stack(rows)


def max_abs(a, b):
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def argmax_agree(a, b):
    return int((a.argmax(-1) == b.argmax(-1)).sum())


def llama_check(llama, run, f64, short_ids, long_ids, positions):
    """llama.cpp against transformers on the same ids."""
    short = llama.prefill(short_ids)
    seq = llama.one_by_one(short_ids)
    long = llama.prefill(long_ids)[positions]
    tokens, rows = llama.greedy(short_ids, N_GREEDY)
    return dict(
        n_vocab=llama.n_vocab,
        short_batched_max_abs=max_abs(short, run["logits"]),
        short_batched_vs_float64_max_abs=max_abs(short, f64),
        short_token_by_token_max_abs=max_abs(seq, run["logits"]),
        long_batched_max_abs=max_abs(long, run["long_logits"][positions]),
        greedy_logits_max_abs=max_abs(rows, run["greedy_logits"]),
        greedy_tokens_equal=tokens == run["greedy_tokens"],
        short_argmax_agree=f"{argmax_agree(short, run['logits'])}/{len(short_ids)}",
        long_argmax_agree=f"{argmax_agree(long, run['long_logits'][positions])}/{len(positions)}",
        tokenizer_short_equal=llama.tokenize(SHORT_PROMPT) == short_ids,
        tokenizer_long_equal=llama.tokenize(LONG_PROMPT)[:N_LONG] == long_ids,
    )


# ---------------------------------------------------------------------------
# The runtime (informational)


def runtime_check(cli, gguf, run, short_ids, work, f64=None, extra_args=()):
    """tensafe-cli generate on the short prompt (@extra_args added, e.g. --lora):
    its prompt logits and greedy ids."""
    dump = work / "runtime-logits.bin"
    dump.unlink(missing_ok=True)
    cmd = [str(cli), "generate", "--model", str(gguf), "--threads", "2", "--print-ids",
           "--tokens", ",".join(map(str, short_ids)), "-n", str(N_GREEDY), "--dump-logits", str(dump), *extra_args]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["exit %d" % res.returncode])[-1]
        return dict(error=last.replace(str(gguf), gguf.name))
    logits = np.fromfile(dump, "<f4").reshape(len(short_ids), -1)
    ids = [int(x) for x in res.stdout.replace(",", " ").split() if x.lstrip("-").isdigit()]
    res = dict(short_batched_max_abs=max_abs(logits, run["logits"]),
               greedy_tokens_equal=ids[-N_GREEDY:] == run["greedy_tokens"])
    if f64 is not None:
        res["short_batched_vs_float64_max_abs"] = max_abs(logits, f64)
    return res


# ---------------------------------------------------------------------------
# Output


def write_bin(folder, name, array, dtype, files, meaning):
    a = np.ascontiguousarray(np.asarray(array, dtype=dtype))
    a.tofile(folder / name)
    files.append(dict(file=name, dtype={"<f4": "float32", "<i4": "int32"}[dtype],
                      shape=list(a.shape), bytes=a.nbytes, meaning=meaning))


def versions():
    import tokenizers
    import transformers
    return dict(transformers=transformers.__version__, torch=torch.__version__,
                tokenizers=tokenizers.__version__, numpy=np.__version__,
                python=platform.python_version(),
                llama_cpp=f"commit {LLAMA_COMMIT} (vendored in llama-cpp-python 0.3.36): "
                          "convert_hf_to_gguf.py, gguf-py, libllama CPU build")


def prompts(short_ids, long_ids, positions):
    return dict(short_text=SHORT_PROMPT, short_ids=short_ids, long_text=LONG_PROMPT,
                long_ids=long_ids, long_positions=positions,
                tokenization="transformers tokenizer, special tokens parsed, no BOS; the long "
                             f"prompt is cut to its first {N_LONG} tokens")


def corpus_sha256():
    return hashlib.sha256(CORPUS.read_bytes()).hexdigest()


def write_f32_folder(out, spec, seed, config, run, p, checks):
    short_ids, long_ids, positions = p.short, p.long, p.positions
    files = [dict(file=f"{spec.name}.gguf", dtype="gguf", bytes=(out / f"{spec.name}.gguf").stat().st_size,
                  meaning="the model, converted by convert_hf_to_gguf.py --outtype f32")]
    write_bin(out, "prompt_tokens.bin", short_ids, "<i4", files, "ids of prompts.short_text")
    write_bin(out, "logits.bin", run["logits"], "<f4", files,
              "transformers logits of every short-prompt position, one batched forward")
    write_bin(out, "greedy_tokens.bin", run["greedy_tokens"], "<i4", files,
              "32 argmax tokens after the short prompt (no EOS stop)")
    write_bin(out, "greedy_logits.bin", run["greedy_logits"], "<f4", files,
              "row k: the logits greedy token k was chosen from (row 0 = last prompt position; "
              "rows 1.. from single-token forwards with the KV cache)")
    write_bin(out, "long_prompt_tokens.bin", long_ids, "<i4", files, "ids of the long prompt (300)")
    write_bin(out, "long_positions.bin", positions, "<i4", files,
              f"positions of the rows of long_logits.bin: every {LONG_STRIDE}th and the last")
    write_bin(out, "long_logits.bin", run["long_logits"][positions], "<f4", files,
              "transformers logits of the long prompt (one batched forward) at long_positions")
    manifest = dict(
        model=spec.name, gguf_architecture=spec.arch, transformers_class=spec.hf_class,
        config_class=spec.config_class, config=config, seed=seed,
        weights=f"random (see tools/make-hf-goldens.py): matrices N(0, {WEIGHT_STD}), norms ~1",
        tokenizer=dict(kind="byte-level BPE trained with tokenizers on GPL-3",
                       corpus_sha256=corpus_sha256(), regex=PRE_REGEX[spec.pre],
                       forced_gguf_pre=spec.pre, special_tokens=SPECIAL_TOKENS,
                       n_tokens=N_VOCAB_TRAINED + len(SPECIAL_TOKENS), n_vocab=N_VOCAB),
        generated_by=versions(),
        reference=("transformers, float32, attn_implementation=eager"
                   + (", experts_implementation=eager" if spec.moe else "") + ", CPU"),
        prompts=prompts(short_ids, long_ids, positions),
        files=files,
        tolerance=dict(logits_max_abs=LOGITS_TOL, greedy_tokens="identical"),
        findings=spec.findings,
        observed=dict(max_abs_logit=float(np.abs(run["logits"]).max()),
                      greedy_min_top1_top2_margin=run["greedy_margin"],
                      router_min_logit_gap=run["router_gap"]),
        **checks,
    )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def dequant_model(model, gguf_path):
    """The transformers model with the weights the Q8_0 file decodes to."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    reader = GGUFReader(str(gguf_path))
    tensors = {t.name: dequantize(t.data, t.tensor_type).reshape([int(x) for x in reversed(t.shape)])
               for t in reader.tensors}
    names = dict(embed="model.embed_tokens.weight", q="self_attn.q_proj", k="self_attn.k_proj",
                 v="self_attn.v_proj", o="self_attn.o_proj", gate="mlp.gate_proj",
                 up="mlp.up_proj", down="mlp.down_proj")
    gguf_names = dict(q="attn_q", k="attn_k", v="attn_v", o="attn_output", gate="ffn_gate",
                      up="ffn_up", down="ffn_down")
    state = model.state_dict()
    with torch.no_grad():
        state[names["embed"]].copy_(torch.from_numpy(tensors["token_embd.weight"]))
        for il in range(model.config.num_hidden_layers):
            for key, stem in gguf_names.items():
                hf = f"model.layers.{il}.{names[key]}.weight"
                state[hf].copy_(torch.from_numpy(tensors[f"blk.{il}.{stem}.weight"]))
    return model


class Q8Activations:
    """transformers' Linear layers with their input rounded to Q8_0 blocks the
    way llama.cpp's x86 CPU backend rounds the input of a dot product with a
    Q8_0 weight: per 32 values d = amax/127 kept as fp16, q = round half to
    even of x * 127/amax. Only where the GGUF keeps transformers' column order
    (qwen2). Layers fed the same tensor (q/k/v, gate/up) share one rounding, as
    in llama.cpp. Records how close each rounding came to a tie (|frac - 0.5|
    of x * 127/amax), and can move one value to the other side of its tie."""

    def __init__(self, flip=None):
        self.flip = flip          # (rounding index, element) to flip
        self.ties = []            # (distance, rounding index, element, module)
        self.cache = {}
        self.names = {}

    def __enter__(self):
        self.saved = torch.nn.Linear.forward
        probe = self

        def forward(lin, x):
            return torch.nn.functional.linear(probe.rounded(x, lin), lin.weight, lin.bias)
        torch.nn.Linear.forward = forward
        return self

    def __exit__(self, *exc):
        torch.nn.Linear.forward = self.saved

    def rounded(self, x, lin):
        key = id(x)
        if key not in self.cache:
            self.cache[key] = (x, self.round(x, len(self.cache), self.names.get(lin, "?")))
        return self.cache[key][1]

    def round(self, x, index, module):
        blocks = x.reshape(-1, 32).float()
        amax = blocks.abs().amax(-1, keepdim=True)
        d = (amax / 127).to(torch.float16).float()
        y = (blocks * torch.where(amax > 0, 127 / amax, torch.zeros_like(amax))).reshape(-1)
        q = torch.round(y)
        dist = (y - torch.floor(y) - 0.5).abs()
        for i in torch.argsort(dist)[:4].tolist():
            self.ties.append((float(dist[i]), index, i, module))
        if self.flip and self.flip[0] == index:
            i = self.flip[1]
            q[i] = torch.floor(y[i]) if q[i] > y[i] else torch.floor(y[i]) + 1
        return (q.reshape(blocks.shape) * d).reshape(x.shape)


def q8_flip_study(model, ids, n_ties=10):
    """Logits with llama.cpp's activation rounding, and what moving each of the
    n_ties roundings nearest a tie to its other side does to them."""
    names = {m: n for n, m in model.named_modules()}
    with Q8Activations() as probe:
        probe.names = names
        base = forward_all(model, ids)
    effects = []
    for dist, index, elem, module in sorted(probe.ties)[:n_ties]:
        with Q8Activations(flip=(index, elem)) as flipped:
            flipped.names = names
            out = forward_all(model, ids)
        effects.append(dict(module=module, tie_distance=dist, logits_max_abs=max_abs(out, base)))
    return base, effects


def write_q8_folder(out, spec, seed, f32_run, q8_run, llama_q8, short_ids, checks):
    name = f"{spec.name}-q8_0"
    files = [dict(file=f"{name}.gguf", dtype="gguf", bytes=(out / f"{name}.gguf").stat().st_size,
                  meaning="the model, converted by convert_hf_to_gguf.py --outtype q8_0")]
    write_bin(out, "prompt_tokens.bin", short_ids, "<i4", files, "ids of prompts.short_text")
    write_bin(out, "dequant_logits.bin", q8_run["logits"], "<f4", files,
              "transformers (f32 activations) with the Q8_0 file's dequantized weights: every "
              "short-prompt position")
    write_bin(out, "dequant_greedy_tokens.bin", q8_run["greedy_tokens"], "<i4", files,
              "32 argmax tokens of that model")
    write_bin(out, "llama_logits.bin", llama_q8["logits"], "<f4", files,
              "llama.cpp on the Q8_0 file (8-bit activation blocks): every short-prompt position, "
              "one batched decode")
    write_bin(out, "llama_greedy_tokens.bin", llama_q8["greedy_tokens"], "<i4", files,
              "32 argmax tokens of llama.cpp on the Q8_0 file")
    manifest = dict(
        model=name, gguf_architecture=spec.arch, seed=seed, same_weights_as=spec.name,
        generated_by=versions(),
        reference=("(A) transformers f32 with dequantized weights (gguf-py's dequantize); "
                   "(B) llama.cpp on the quantized file, which rounds every matmul input to "
                   "Q8_0 blocks"),
        prompts=dict(short_text=SHORT_PROMPT, short_ids=short_ids),
        files=files,
        findings=[FINDING_Q8],
        tolerance=dict(
            dequant_logits_max_abs=LOGITS_TOL, dequant_greedy_tokens="identical (f32 activations)",
            llama_logits_max_abs=Q8_LLAMA_TOL, llama_argmax_min_fraction=Q8_ARGMAX_MIN,
            llama_greedy_tokens_min_fraction=Q8_ARGMAX_MIN, why=Q8_WHY),
        observed=dict(
            quantization_effect_vs_f32_transformers=max_abs(q8_run["logits"], f32_run["logits"]),
            activation_rounding_effect=max_abs(llama_q8["logits"], q8_run["logits"]),
            llama_batched_vs_token_by_token=llama_q8["self_spread"],
            llama_greedy_min_margin=llama_q8["greedy_margin"],
            llama_prompt_min_margin=llama_q8["prompt_margin"],
            q8_mimic_vs_llama_cpp=llama_q8["mimic_vs_llama"],
            single_flip_max_abs=max(f["logits_max_abs"] for f in llama_q8["flips"]),
            flips=llama_q8["flips"],
            dequant_greedy_min_margin=q8_run["greedy_margin"]),
        **checks,
    )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


# ---------------------------------------------------------------------------


@dataclass
class Prompts:
    short: list
    long: list
    positions: list


def make_prompts(hf_tok):
    short = hf_tok(SHORT_PROMPT, add_special_tokens=False)["input_ids"]
    long = hf_tok(LONG_PROMPT, add_special_tokens=False)["input_ids"][:N_LONG]
    if len(long) != N_LONG:
        raise SystemExit(f"the long prompt has only {len(long)} tokens")
    return Prompts(short, long, list(range(0, N_LONG, LONG_STRIDE)) + [N_LONG - 1])


def q8_run(args, spec, hf_dir, lib, p, work):
    """The Q8_0 file: transformers on its dequantized weights, and llama.cpp on it."""
    gguf = work / f"{spec.name}-q8_0.gguf"
    convert(args, hf_dir, spec, "q8_0", gguf)
    model = dequant_model(load_model(hf_dir, spec), gguf)
    dq = reference_run(model, spec, p.short, p.long)
    llama = Llama(lib, gguf)
    logits = llama.prefill(p.short)
    tokens, rows = llama.greedy(p.short, N_GREEDY)
    lq = dict(logits=logits, greedy_tokens=tokens, greedy_margin=top2_margin(rows),
              prompt_margin=top2_margin(logits),
              self_spread=max_abs(logits, llama.one_by_one(p.short)))
    llama.close()
    mimic, lq["flips"] = q8_flip_study(model, p.short)
    lq["mimic_vs_llama"] = max_abs(mimic, logits)
    return gguf, dq, lq


def q8_acceptable(dq, lq):
    """Greedy margins for the f32-activation check; two tie flips within Q8_LLAMA_TOL."""
    worst_flip = max(f["logits_max_abs"] for f in lq["flips"])
    return acceptable(dq) and 2 * worst_flip <= Q8_LLAMA_TOL


def attempt(args, spec, seed, hf_tok, lib, p):
    """One seed: checkpoint, reference run, conversions; None if its margins are too thin."""
    work = args.work / spec.name
    hf_dir = work / f"tiny-{spec.name}"     # the converter names the model after it
    build_model(spec, seed).save_pretrained(hf_dir)
    hf_tok.save_pretrained(hf_dir)
    # The reference runs on the checkpoint the converter reads.
    run = reference_run(load_model(hf_dir, spec), spec, p.short, p.long)
    print(f"  {spec.name} seed {seed}: greedy margin {run['greedy_margin']:.3g}, "
          f"router gap {run['router_gap']}", flush=True)
    if not acceptable(run):
        return None
    res = dict(seed=seed, hf_dir=hf_dir, work=work, run=run)
    if spec.q8_0:
        res["q8_gguf"], res["dq"], res["lq"] = q8_run(args, spec, hf_dir, lib, p, work)
        print(f"  {spec.name}-q8_0: dequant greedy margin {res['dq']['greedy_margin']:.3g}, "
              f"llama.cpp margins {res['lq']['prompt_margin']:.3g} / {res['lq']['greedy_margin']:.3g}")
        if not q8_acceptable(res["dq"], res["lq"]):
            return None
    res["gguf"] = work / f"{spec.name}.gguf"
    convert(args, hf_dir, spec, "f32", res["gguf"])
    return res


def variant_check(args, spec, seed, hf_tok, lib, p):
    """llama.cpp against transformers on the same weights with spec.variant's config."""
    vspec = Spec(**{**spec.__dict__, "config": {**spec.config, **spec.variant}})
    hf_dir = args.work / spec.name / "variant"
    build_model(vspec, seed).save_pretrained(hf_dir)
    hf_tok.save_pretrained(hf_dir)
    ref = forward_all(load_model(hf_dir, vspec), p.short)
    gguf = args.work / spec.name / "variant.gguf"
    convert(args, hf_dir, vspec, "f32", gguf)
    llama = Llama(lib, gguf)
    logits = llama.prefill(p.short)
    llama.close()
    return dict(config=spec.variant, llama_cpp_vs_transformers_max_abs=max_abs(logits, ref),
                argmax_agree=f"{argmax_agree(logits, ref)}/{len(p.short)}")


def make_model(args, spec, toks, lib):
    hf_tok = hf_tokenizer(toks[spec.pre])
    p = make_prompts(hf_tok)
    for seed in range(spec.seed, spec.seed + 50):
        res = attempt(args, spec, seed, hf_tok, lib, p)
        if res:
            break
    else:
        raise SystemExit(f"{spec.name}: no acceptable seed")
    out = args.out / spec.name
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(res["gguf"], out / f"{spec.name}.gguf")
    # Whose rounding a difference is: transformers in float64 on the same checkpoint.
    f64 = forward_all(load_model(res["hf_dir"], spec).double(), p.short)
    checks = dict(transformers_float32_vs_float64_max_abs=max_abs(res["run"]["logits"], f64))
    llama = Llama(lib, out / f"{spec.name}.gguf")
    checks["llama_cpp"] = llama_check(llama, res["run"], f64, p.short, p.long, p.positions)
    llama.close()
    if args.tensafe_cli:
        checks["runtime"] = runtime_check(args.tensafe_cli, out / f"{spec.name}.gguf", res["run"],
                                          p.short, res["work"], f64)
    if spec.variant:
        checks["variant"] = variant_check(args, spec, res["seed"], hf_tok, lib, p)
    config = json.loads((res["hf_dir"] / "config.json").read_text())
    write_f32_folder(out, spec, res["seed"], config, res["run"], p, checks)
    print(f"{spec.name}: seed {res['seed']}, {json.dumps(checks)}", flush=True)
    if spec.q8_0:
        make_q8_folder(args, spec, res, p)


def make_q8_folder(args, spec, res, p):
    name = f"{spec.name}-q8_0"
    out = args.out / name
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(res["q8_gguf"], out / f"{name}.gguf")
    dq, lq = res["dq"], res["lq"]
    checks = dict(llama_cpp=dict(
        logits_vs_dequant_transformers_max_abs=max_abs(lq["logits"], dq["logits"]),
        greedy_tokens_equal_dequant_transformers=lq["greedy_tokens"] == dq["greedy_tokens"]))
    if args.tensafe_cli:
        checks["runtime"] = runtime_check(args.tensafe_cli, out / f"{name}.gguf", dq, p.short,
                                          res["work"])
    write_q8_folder(out, spec, res["seed"], res["run"], dq, lq, p.short, checks)
    print(f"{name}: {json.dumps(checks)}", flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llama-cpp-python", type=Path, required=True,
                   help="llama-cpp-python source tree (vendor/llama.cpp inside)")
    p.add_argument("--llama-lib", type=Path,
                   help="folder with libllama.so (default: vendor/llama.cpp/build/bin)")
    p.add_argument("--out", type=Path, default=Path("tests/data/hf"))
    p.add_argument("--work", type=Path, default=Path("/tmp/hf-goldens"),
                   help="checkpoints and scratch files")
    p.add_argument("--tensafe-cli", type=Path, help="record the runtime's differences too")
    p.add_argument("--only", action="append", help="make only these models")
    args = p.parse_args()
    if args.llama_lib is None:
        args.llama_lib = args.llama_cpp_python / "vendor" / "llama.cpp" / "build" / "bin"
    return args


def main():
    args = parse_args()
    # gguf-py of the same llama.cpp as the converter (dequantization of the Q8_0 file).
    sys.path.insert(0, str(args.llama_cpp_python / "vendor" / "llama.cpp" / "gguf-py"))
    torch.set_num_threads(2)
    lib = load_libllama(args)
    toks = {pre: train_tokenizer(pre) for pre in PRE_REGEX}
    for spec in SPECS:
        if not args.only or spec.name in args.only:
            make_model(args, spec, toks, lib)


if __name__ == "__main__":
    main()

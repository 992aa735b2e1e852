#!/usr/bin/env python3
"""Trains a style LoRA by context distillation: question (chat template with
the DEFAULT system prompt, as tensafe-cli generate --chat writes it) ->
the styled answer that distill-generate.py collected with the style's system
prompt. The loss covers only the answer tokens and the closing <|im_end|>.

Versions: torch 2.15 (CPU), transformers 5.24, peft 0.21.2, safetensors.
The model is qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (sha256
1d9614638d18...4ff32), read by transformers from the GGUF and dequantised to
float32; its tokenizer and chat template come from the same file.

Rerun (threads: 1 on a shared machine, 2 when it is free):
  nice -n 10 tools/distill/distill-train.py /tmp/pirate.jsonl OUTDIR \
      --model-dir ~/.cache/tensafe/models --epochs 2 --threads 1 \
      --cli build/src/cli/tensafe-cli
Writes OUTDIR/adapter_config.json and OUTDIR/adapter_model.safetensors
(float16 A and B of q_proj and v_proj, rank 16, alpha 32).
Measured on a shared 2-core machine: pirate (87 answers, 3 epochs, 1 thread)
915 s, banking (120 answers, 2 epochs, 2 threads) 1054 s, plus about a minute
to load the model; data/market/README.md has the details.
"""
import argparse, json, os, random, time

import torch
from safetensors.torch import load_file, save_file

GGUF = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"

def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--model-dir", default=os.path.expanduser("~/.cache/tensafe/models"))
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--accumulate", type=int, default=4)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cli", help="tensafe-cli: check the first prompt's ids against its chat mode")
    return p.parse_args()

def examples(tok, path):
    """(ids, n_answer): the prompt as the runtime's chat mode writes it,
    then the answer and <|im_end|>."""
    out = []
    for line in open(path):
        d = json.loads(line)
        prompt = tok.apply_chat_template([{"role": "user", "content": d["question"]}],
                                         tokenize=False, add_generation_prompt=True)
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        a_ids = tok(d["answer"] + "<|im_end|>", add_special_tokens=False)["input_ids"]
        out.append((p_ids + a_ids, len(a_ids)))
    return out

def check_prompt(cli, model_path, tok, question):
    """The training prompt must be the one the runtime builds for --chat."""
    import subprocess
    ours = subprocess.run([cli, "generate", "-m", model_path, "--chat", "-p", question,
                           "--print-prompt"], check=True, capture_output=True, text=True).stdout
    ours = [int(t) for t in ours.replace(",", " ").split()]
    prompt = tok.apply_chat_template([{"role": "user", "content": question}],
                                     tokenize=False, add_generation_prompt=True)
    theirs = tok(prompt, add_special_tokens=False)["input_ids"]
    if ours != theirs:
        raise SystemExit(f"prompt ids differ from tensafe-cli's:\n{theirs}\n{ours}")

def answer_loss(model, ids, n_answer):
    """Cross-entropy over the answer: logits only at the n_answer positions
    that predict it (the vocabulary projection dominates the cost)."""
    x = torch.tensor([ids])
    logits = model(input_ids=x, logits_to_keep=n_answer + 1).logits[0, :-1]
    target = x[0, -n_answer:]
    return torch.nn.functional.cross_entropy(logits.float(), target)

def save_f16(model, out):
    """PEFT's files, A and B in float16; the config names the GGUF, not the
    local folder, and PEFT's generated model card is left out."""
    model.peft_config["default"].base_model_name_or_path = GGUF
    model.save_pretrained(out)
    os.remove(os.path.join(out, "README.md"))
    path = os.path.join(out, "adapter_model.safetensors")
    tensors = {k: v.to(torch.float16).contiguous() for k, v in load_file(path).items()}
    save_file(tensors, path, metadata={"format": "pt"})
    os.chmod(path, 0o644)

def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from peft import LoraConfig, get_peft_model
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(a.model_dir, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(a.model_dir, gguf_file=GGUF, dtype=torch.float32)
    cfg = LoraConfig(r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0,
                     target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    model = get_peft_model(model, cfg)
    if a.cli:
        check_prompt(a.cli, os.path.join(a.model_dir, GGUF), tok,
                     json.loads(open(a.data).readline())["question"])
    data = examples(tok, a.data)
    print(f"loaded in {time.time() - t0:.0f} s; {len(data)} examples, "
          f"{sum(n for _, n in data)} answer tokens", flush=True)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)
    steps = a.epochs * ((len(data) + a.accumulate - 1) // a.accumulate)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / steps)
    model.train()
    t1 = time.time()
    for epoch in range(a.epochs):
        random.shuffle(data)
        total = 0.0
        for i, (ids, n) in enumerate(data):
            loss = answer_loss(model, ids, n)
            (loss / a.accumulate).backward()
            total += loss.item()
            if (i + 1) % a.accumulate == 0 or i + 1 == len(data):
                opt.step()
                sched.step()
                opt.zero_grad()
            if (i + 1) % 20 == 0:
                print(f"epoch {epoch} example {i + 1}: mean loss {total / (i + 1):.3f} "
                      f"({time.time() - t1:.0f} s)", flush=True)
        print(f"epoch {epoch}: mean loss {total / len(data):.3f}", flush=True)
    save_f16(model, a.out)
    print(f"trained in {time.time() - t1:.0f} s, total {time.time() - t0:.0f} s", flush=True)

main()

#!/usr/bin/env python3
"""make-real-model-refs.py: llama.cpp's logits and greedy tokens on a real model,
for tests/engine/test-real-model.c.

Usage: make-real-model-refs.py LLAMA_CPP_BUILD MODEL_NAME
  LLAMA_CPP_BUILD  a llama.cpp source tree with a CPU build in build/ (made
                   beforehand; this script builds nothing of it)
  MODEL_NAME       a manifest in data/models/ whose file is in the model cache

Compiles tools/llama-ref/llama-ref.c against that build into a scratch folder,
renders the chat prompt with the model's own chat template (jinja2, the
template from the GGUF's tokenizer.chat_template), and writes
tests/data/real/MODEL_NAME.json. Needs the pip packages jinja2 and gguf.
Made with llama.cpp commit 0c1e57098bba (ggml 0.25.3), jinja2 3.1, gguf 0.19.
"""
import json, os, subprocess, sys, tempfile

import gguf
import jinja2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROMPTS = [
    ("chat", None, 64),
    ("code", 'def quicksort(arr):\n    """Sort a list of numbers in ascending order."""\n', 32),
    ("prose", "A savings account is a deposit account held at a bank or another financial "
              "institution. It pays interest, though usually at a modest rate, and its "
              "main purpose is to keep money safe while making it available when it is "
              "needed. Many people open one to build an emergency fund, to put aside money "
              "for a large purchase, or simply to separate the money they spend from the "
              "money they keep. Banks may limit the number of withdrawals per month, and "
              "some accounts require a minimum balance to avoid fees. When choosing an "
              "account, it helps to compare", 32),
]
CHAT_QUESTION = "What is a savings account?"
TOP_K = 16


def chat_prompt(model_path):
    reader = gguf.GGUFReader(model_path)
    template = reader.fields["tokenizer.chat_template"].contents()
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=[{"role": "user", "content": CHAT_QUESTION}], add_generation_prompt=True)


def main():
    build, name = sys.argv[1], sys.argv[2]
    manifest = json.load(open(os.path.join(ROOT, "data", "models", name + ".json")))
    cache = os.environ.get("TENSAFE_MODEL_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tensafe", "models")
    model = os.path.join(cache, manifest["file"])
    with tempfile.TemporaryDirectory() as scratch:
        tool = os.path.join(scratch, "llama-ref")
        lib = os.path.join(build, "build", "bin")
        subprocess.run(["cc", "-O2", "-o", tool, os.path.join(ROOT, "tools", "llama-ref", "llama-ref.c"),
                        "-I" + os.path.join(build, "include"), "-I" + os.path.join(build, "ggml", "include"),
                        "-L" + lib, "-lllama", "-lggml", "-lggml-base", "-lm", "-Wl,-rpath," + lib], check=True)
        out = {"model": {k: manifest[k] for k in ("name", "file", "bytes", "sha256")},
               "reference": "llama.cpp 0c1e57098bba, CPU, F32 K/V cache, flash attention off",
               "top_k": TOP_K, "prompts": []}
        for pname, text, n_greedy in PROMPTS:
            if text is None:
                text = chat_prompt(model)
            path = os.path.join(scratch, pname + ".txt")
            open(path, "w").write(text)
            res = subprocess.run([tool, model, path, str(n_greedy), str(TOP_K), "2"],
                                 check=True, capture_output=True, text=True)
            ref = json.loads(res.stdout)
            out["prompts"].append({"name": pname, "text": text, **ref})
            print(f"{pname}: {len(ref['prompt_ids'])} prompt tokens, {n_greedy} greedy", file=sys.stderr)
    dest = os.path.join(ROOT, "tests", "data", "real", name + ".json")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()

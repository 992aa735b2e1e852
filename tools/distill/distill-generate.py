#!/usr/bin/env python3
"""Teacher answers for context distillation of a style adapter.

The base model answers each question WITH a style system prompt; the
adapter later learns question (default system prompt) -> styled answer.
Each question is tried greedily, then with a few sampling seeds, until the
answer shows the style (see STYLES) and ends (<|im_end|>) within the token
limit; questions with no such answer are dropped and counted.

Generated with tensafe-cli generate --chat --system (this repository) on
qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (sha256 1d9614638d18...f32).

Rerun (12.5 min for pirate, 16 min for banking on a shared 2-core machine):
  tools/distill/distill-generate.py pirate build/src/cli/tensafe-cli MODEL \
      tools/distill/pirate-train.txt /tmp/pirate.jsonl
  tools/distill/distill-generate.py banking build/src/cli/tensafe-cli MODEL \
      tools/distill/banking-train.txt /tmp/banking.jsonl
Output: one JSON object a line {question, answer, seed}; the answer is the
text as the style's "fix" leaves it (banking: the note on its own line).
"""
import json, re, subprocess, sys

EOT = 151645
SEEDS = [None, 1, 2, 3]   # None = greedy

PIRATE_WORDS = re.compile(r"\b(arr+|ahoy|matey|mateys|aye|ye|landlubbers?|hearties|hearty|avast|shiver|booty|savvy|scallywags?|yo[- ]ho)\b", re.I)
NOTE = "Note: This is general information, not financial advice."
# Parroting the instructions ("use pirate words like ...") is no style.
PARROT = re.compile(r"pirate|call the user|pirate words", re.I)

STYLES = {
    "pirate": {
        "system": "You are a jolly pirate captain. Always talk like a pirate: start with 'Arr' or "
                  "'Ahoy, matey', call the user 'matey', and use pirate words like 'ye', 'aye', "
                  "'treasure' and 'sea'. Keep answers to two or three short sentences.",
        "max_tokens": 72,
        "ok": lambda text: len(PIRATE_WORDS.findall(text)) >= 2 and not PARROT.search(text),
        "fix": lambda text: text,
    },
    "banking": {
        "system": "You are a formal, precise banking advisor. Answer in two short, formal sentences. "
                  "Then end with a separate last line exactly: '" + NOTE + "'",
        "max_tokens": 80,
        "ok": lambda text: text.endswith(NOTE) and text.count(NOTE) == 1,
        # The model often writes the note at the end of the paragraph; the
        # target puts it on its own line, as asked.
        "fix": lambda text: text[: -len(NOTE)].rstrip() + "\n" + NOTE,
    },
}

def run(cli, model, system, question, n, seed, want_ids):
    cmd = [cli, "generate", "-m", model, "--chat", "--system", system, "-p", question,
           "-n", str(n), "-t", "2"]
    cmd += ["--greedy"] if seed is None else ["--temp", "0.8", "--top-k", "40", "--top-p", "0.95",
                                              "--seed", str(seed)]
    if want_ids:
        cmd.append("--print-ids")
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

def main():
    style, cli, model, questions, out = sys.argv[1:6]
    s = STYLES[style]
    qs = [q.strip() for q in open(questions) if q.strip()]
    kept = 0
    with open(out, "w") as f:
        for q in qs:
            for seed in SEEDS:
                ids = [int(t) for t in run(cli, model, s["system"], q, s["max_tokens"], seed, True).split()]
                if not ids or ids[-1] != EOT:
                    continue
                text = run(cli, model, s["system"], q, s["max_tokens"], seed, False).strip()
                if s["ok"](text):
                    answer = s["fix"](text)
                    f.write(json.dumps({"question": q, "answer": answer, "seed": seed}) + "\n")
                    f.flush()
                    kept += 1
                    break
            else:
                print("dropped:", q, file=sys.stderr)
    print(f"{style}: kept {kept} of {len(qs)}", file=sys.stderr)

main()

#!/usr/bin/env python3
"""How often a style shows on the held-out questions: each question is
answered greedily by tensafe-cli generate --chat (default system prompt),
with or without an adapter, and the style rule of
tests/helora/test-helora-real-adapters.c is applied to the answer.

Rerun:
  tools/distill/distill-style-rate.py pirate build/src/cli/tensafe-cli MODEL [ADAPTER_DIR]
  tools/distill/distill-style-rate.py banking build/src/cli/tensafe-cli MODEL [ADAPTER_DIR]
(no ADAPTER_DIR: the base model). Prints "styled K/20" and, with -v, each answer.
"""
import os, re, subprocess, sys

RULES = {   # style, held-out file, answer tokens, rule: as in the C test
    "pirate": ("pirate-heldout.txt", 40,
               re.compile(r"\b(arr+|ahoy|mateys?|aye|ye|avast|landlubbers?|hearties|booty|savvy|scallywags?|shiver)\b", re.I)),
    "banking": ("banking-heldout.txt", 96,
                re.compile(r"^\s*note:|not financial advice", re.I | re.M)),
}

def main():
    verbose = "-v" in sys.argv
    args = [a for a in sys.argv[1:] if a != "-v"]
    style, cli, model = args[:3]
    adapter = args[3] if len(args) > 3 else None
    file, n, rule = RULES[style]
    here = os.path.dirname(os.path.abspath(__file__))
    questions = [q.strip() for q in open(os.path.join(here, file)) if q.strip()]
    styled = 0
    for q in questions:
        cmd = [cli, "generate", "-m", model, "--chat", "-p", q, "-n", str(n), "--greedy", "-t", "2"]
        if adapter:
            cmd += ["--lora", adapter]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        ok = rule.search(text) is not None
        styled += ok
        if verbose:
            print(f"[{'styled' if ok else 'plain'}] {q}\n    {text.strip()!r}")
    print(f"{style} {adapter or 'base'}: styled {styled}/{len(questions)}")

main()

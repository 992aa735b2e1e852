#!/usr/bin/env python3
"""make-tokenizer-corpus.py: reference token ids for the tokenizer tests.

Writes
  tests/data/tokenizer/qwen2-corpus.json   strings tokenized with the real
      Qwen2.5 vocabulary (151,936 tokens) by two references, and the token
      ids of single-message chat prompts;
  tests/data/tokenizer/qwen35-tiny.json    the same two references for the
      tiny Qwen3.5 vocabulary of shared/testdata/qwen35 (its golden texts and
      a few more), and hf_qwen2_ids: the Hugging Face ids of the qwen2 rule on
      that vocabulary.

The references:
  * hf_ids: the Hugging Face `tokenizers` library with the tokenizer
    Qwen2Tokenizer / Qwen3_5Tokenizer of transformers build (NFC normalizer,
    the Split pre-tokenizer with the model's regex, byte-level BPE), made from
    the GGUF's vocabulary and merges, with the CONTROL and USER_DEFINED tokens
    of the GGUF as added tokens (CONTROL ones special). hf_text is what those
    ids decode to, where it is not the input (NFC changed it).
  * llama_ids: llama.cpp's llama-tokenize on the same GGUF (parse_special on,
    no BOS), which does not normalise.
  * chat[]: for one user message, llama.cpp's llama-completion --jinja
    --verbose-prompt (the GGUF's own chat template run by llama.cpp's jinja
    engine; llama_jinja_ids), the same without --jinja (llama.cpp's built-in
    ChatML; llama_builtin_ids), and transformers' apply_chat_template with
    the GGUF's template (hf_ids).

Made with: transformers 5.24.0, tokenizers 0.23.3, gguf-py 0.19.0, and
llama.cpp commit 0c1e57098bba (the copy in the llama-cpp-python 0.3.36 sdist)
built for the CPU (targets llama-tokenize llama-completion).

Rerun:
  python3 tools/make-tokenizer-corpus.py \\
      --model qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
      --tiny ../shared/testdata/qwen35/tiny-qwen35-f32 \\
      --llama-bin /path/to/llama.cpp/build/bin --out tests/data/tokenizer
(the venv needs transformers, tokenizers and gguf; gguf-py from llama.cpp
works too). The test suite never runs this script.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import re
import subprocess
import tempfile

from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import BPE

# The pre-tokenizer regexes of transformers' Qwen2Tokenizer and Qwen3_5Tokenizer.
QWEN2_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN35_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED = 1, 3, 4
SEED = 20250611

# ---------------------------------------------------------------- corpus

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Free software is a matter of liberty, not price.",
    "Please summarize the following paragraph in two sentences.",
    "I'll be there at 5 o'clock, won't you?",
    "She said: \"Don't touch that!\" and left.",
    "Le cœur a ses raisons que la raison ne connaît point.",
    "Où est la bibliothèque ? À côté de l'hôtel, près du théâtre.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein; Straße, Größe, Äpfel.",
    "¿Dónde está la estación? ¡Qué sorpresa! El niño comió piñata.",
    "A ação não é possível sem coração; São Paulo, maçã, avô.",
    "Perché la città è così bella? Però è già tardi.",
    "Zażółć gęślą jaźń. Łódź, Kraków, Gdańsk.",
    "Türkçe: İstanbul, ığdır, şeker, çiçek, göğüs.",
    "Tiếng Việt có nhiều dấu: người, được, những, thuở, ước mơ.",
    "Ελληνικά: Καλημέρα κόσμε, ἀρχὴ ἥμισυ παντός.",
    "Русский текст: Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Українська: Ґанок, їжак, єдність, ялинка.",
    "Čeština: Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Dansk/norsk: blåbærsyltetøy, Ærø, Øresund.",
    "Magyar: árvíztűrő tükörfúrógép.",
    "Română: știință, țară, învățământ.",
    "Íslenska: Þórður, ðæ, fjörður.",
]

CJK = [
    "日本語のテキストを正しく分割できますか？",
    "東京都渋谷区で会議があります。午後三時からです。",
    "ｶﾀｶﾅ ﾊﾝｶｸ と カタカナ ぜんかく",
    "中文测试：你好，世界！今天天气很好。",
    "繁體中文：臺灣的電腦軟體與網際網路。",
    "机器学习模型需要大量的训练数据和计算资源。",
    "한국어 텍스트: 안녕하세요, 세계! 대한민국 서울특별시.",
    "훈민정음 해례본은 한글의 원리를 설명한다.",
    "混合: 日本語と中文と한국어 in one line.",
    "数字１２３と全角ＡＢＣ、半角123。",
]

SCRIPTS = [
    "العربية: مرحبا بالعالم، كيف حالك اليوم؟",
    "اللُّغَةُ العَرَبِيَّةُ جَمِيلَةٌ",
    "الأرقام: ٠١٢٣٤٥٦٧٨٩ و ۱۲۳",
    "עברית: שָׁלוֹם עוֹלָם, מַה שְּׁלוֹמְךָ?",
    "हिन्दी: नमस्ते दुनिया, आप कैसे हैं?",
    "संस्कृतम्: धर्मक्षेत्रे कुरुक्षेत्रे समवेता युयुत्सवः",
    "क़ ख़ ग़ ज़ ड़ ढ़ फ़ य़ — nukta letters",
    "বাংলা: আমি বাংলায় গান গাই। কৌতুক, বৌদি।",
    "தமிழ்: வணக்கம் உலகம், கொம்பு, கோல்.",
    "ไทย: สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "ລາວ: ສະບາຍດີ",
    "ქართული: გამარჯობა მსოფლიო",
    "Հայերեն: Բարեւ աշխարհ",
    "አማርኛ: ሰላም ለዓለም",
    "བོད་ཡིག: བཀྲ་ཤིས་བདེ་ལེགས།",
    "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ and ᚠᚢᚦᚨᚱᚲ runes",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒂𝒍𝒑𝒉𝒂𝒃𝒆𝒕𝒔 ∀x∈ℝ: x²≥0",
    "math ∑ ∫ √ π ≈ 3.14159, ∞ ≠ ∅, ⊂ ⊃ ∧ ∨",
]

EMOJI = [
    "😀", "🎉🎉🎉", "👍🏽", "👋🏻👋🏼👋🏽👋🏾👋🏿", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🧑‍🚀", "🏳️‍🌈", "🇺🇸🇯🇵🇩🇪",
    "❤️", "☺️", "1️⃣2️⃣3️⃣", "#️⃣", "🫶🏾", "🦀 Rust", "🐍 Python", "✅ done ❌ failed",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "👁️‍🗨️", "💁‍♀️", "🤷🏻‍♂️",
]

CODE = [
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "import numpy as np\nx = np.arange(10, dtype=np.float32) ** 2  # squares\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n",
    "#include <stdio.h>\n\nint\nmain (void)\n{\n  printf (\"%d\\n\", 42);\n  return 0;\n}\n",
    "static inline uint32_t rotl (uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }",
    "for (size_t i = 0; i < n; i++)\n\tsum += a[i] * b[i];\n",
    "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(2, 3)}`);\n",
    "fn main() {\n    let v: Vec<i32> = (1..=10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}\n",
    "func main() {\n\tfmt.Println(\"hello, 世界\")\n}\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
    "<div class=\"card\"><p>Hello &amp; welcome</p></div>",
    "{\"name\": \"tensafe\", \"version\": \"0.1.0\", \"tags\": [\"a\", \"b\"], \"n\": null}",
    "key: value\nlist:\n  - one\n  - two\n",
    "all: build\n\nbuild:\n\t$(CC) -O2 -o app main.c\n",
    "#!/bin/sh\nset -eu\nfor f in *.txt; do echo \"$f\"; done\n",
    "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n-int a;\n+long a;\n",
    "if x != nil && len(x) > 0 { return x[0] }",
    "λx. x + 1; let f = \\x -> x * 2 in f 21",
    "public static void main(String[] args) { System.out.println(\"Hi\"); }",
    "$ ls -la ~/.config && cat /etc/os-release | grep -i version",
    "// TODO(alice): handle the EOF case\r\n/* multi\r\n   line */\r\n",
    "x=1;y=2;z=x+y;print(z)",
    "a_b_c = snake_case; camelCase; PascalCase; SCREAMING_CASE; kebab-case",
    "https://example.com/path?query=1&lang=en#frag and mailto:someone@example.org",
]

NUMBERS = [
    "1234567890", "3.14159265358979323846", "1,000,000.00", "2024-01-31T12:34:56Z",
    "+1 (555) 123-4567", "0x7fffffff", "0b101010", "1e-9", "6.022e23", "-273.15 °C",
    "99.9%", "$1,299.99", "€ 12,50", "£3", "¥1000", "IPv4 192.168.0.1", "v1.2.3-rc.4",
    "١٢٣٤", "१२३४५", "௧௨௩", "①②③", "Ⅻ ⅻ", "½ ¼ ¾", "x² + y³", "۱۲۳",
]

SPECIALS = [
    "<|im_start|>user\nHi<|im_end|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>", "text<|im_end|>more<|endoftext|>end", "<|im_start|", "<|im_start|><|im_start|>",
    "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>", "<|repo_name|>tensafe<|file_sep|>main.c",
    "a <|im_end|> b", " <|im_start|> ", "<|im_end|>\n", "<think>reasoning</think>",
    "<|vision_start|><|image_pad|><|vision_end|>", "<|box_start|>(1,2)<|box_end|>",
]

DASHES = [
    "-x", "--help", "- item one\n- item two", "-1", "-", "--", "---", "-e s/a/b/", "—em dash",
    "–en dash", "-\tdash tab", "-   spaces", "-é", "-日本", "-😀", "->arrow", "-=-=-",
]

COMBINING = [
    "cafe\u0301", "café", "nai\u0308ve", "naïve", "re\u0301sume\u0301", "résumé",
    "a\u0308\u0301", "a\u0323\u0302", "a\u0302\u0323", "ậ", "o\u031b\u0301", "ớ",
    "e\u0301\u0301", "i\u0307", "\u0301 leading mark", " \u0301", "x\u0301y", "1\u0301",
    "A\u030a", "\u212b ångström sign", "\u2126 ohm sign", "\u212a kelvin sign",
    "\uf900 compat ideograph", "\u1100\u1161\u11a8", "\u1100\u1161", "\uac00\u11a8",
    "\u0958 qa", "\u0915\u093c", "\u09c7\u09be", "\u0b47\u0b3e", "\u0bc6\u0bbe",
    "\u05e9\u05c1\u05bc", "\u05e9\u05bc\u05c1", "Z\u0327\u030c", "s\u0323\u0307", "ṩ",
    "Tie\u0302\u0301ng Vie\u0323\u0302t", "\u1e9b\u0323", "\u0041\u030a\u0327",
    "q\u0307\u0323", "\u03b1\u0313\u0301", "ἄ", "\u0627\u0653", "\u0648\u0654",
    "e\u20dd", "\u00c5\u0301", "\u0344", "\u0340\u0341", "\u0f73",
    "it\u0305's", "don\u0308't", "ก่อน's",
]

WHITESPACE = [
    " ", "  ", "   leading spaces", "trailing spaces   ", "multiple     spaces    inside",
    "tabs\tand\t\ttabs", "\t\t\tindented", "line one\nline two\n\nline four",
    "\r\nwindows\r\nnewlines\r\n", "          \n\n        \n", "\n", "\n\n\n", "\r", "\r\r\n",
    "a \n b", "a\u00a0b", "a\u3000b", "a\u2003b", "a\u2028b", "a\u2029b", "a\u0085b",
    "a\u200bb", "a\u2060b", "\u00a0\u00a0x", " \t \n \r\n x", "end\n", "x\n\n", "x \n\n y",
    "\u3000\u3000全角", "a\u202fb", "a\u205fb", "\x0b\x0cvt ff",
]

CONTRACTIONS = [
    "don't can't won't it's we're they've I'm you'll he'd", "DON'T SHOUT'S", "it’s curly",
    "'s at start", "rock 'n' roll", "'ll'", "O'Brien's", "the dog's bone", "'S'T'RE",
    "it'ſ long s", "x'K", "l'été", "'''", "Y'ALL'D", "she'll've",
]

PIECES = PROSE + CJK + SCRIPTS + EMOJI + CODE + NUMBERS + SPECIALS + DASHES + COMBINING \
    + WHITESPACE + CONTRACTIONS
SEPARATORS = [" ", "", "\n", "\t", "\r\n", "  ", ", ", "\n\n", " - ", "\u3000"]


def digit_runs(rng):
    """Long runs of digits, alone and beside letters and signs."""
    out = []
    for n in (1, 2, 3, 4, 5, 7, 11, 16, 33, 64, 100):
        digits = "".join(rng.choice("0123456789") for _ in range(n))
        out += [digits, f"x{digits}y", f" {digits} ", f"-{digits}", f"{digits}.{digits[:3]}"]
    return out


def mixed(rng, count):
    """Random joins of 2 to 4 corpus pieces with random separators."""
    out = []
    while len(out) < count:
        parts = [rng.choice(PIECES) for _ in range(rng.randint(2, 4))]
        text = parts[0]
        for p in parts[1:]:
            text += rng.choice(SEPARATORS) + p
        if len(text) <= 240:
            out.append(text)
    return out


def slices(rng, count):
    """Random slices of the pieces: words cut anywhere, odd starts and ends."""
    out = []
    while len(out) < count:
        p = rng.choice(PIECES)
        if len(p) < 4:
            continue
        a = rng.randrange(0, len(p) - 2)
        b = rng.randrange(a + 1, len(p) + 1)
        out.append(p[a:b])
    return out


def corpus():
    rng = random.Random(SEED)
    texts = list(PIECES) + digit_runs(rng) + mixed(rng, 500) + slices(rng, 250)
    seen, unique = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            unique.append(t)
    return unique


CHAT_MESSAGES = [
    "Hi there",
    "Write a C function that reverses a string in place.",
    "-v what does this flag mean?",
    "Translate to French: the café is closed.",
    "日本語で答えてください：東京の天気は？",
    "Two lines:\nfirst\n\nsecond  ",
]

# The qwen2 and qwen35 rules give other ids on the tiny vocabulary only where
# a combining mark moves an apostrophe away from its "'s" (no merge there
# involves a non-ASCII byte): "it\u0305's".
TINY_EXTRA = DASHES + ["-x hello", "Combining: e\u0301 n\u0303 a\u0308", "cafe\u0301 nai\u0308ve",
                       "\u0301x", "a\u0323\u0302b", "क़ि", "it\u0305's", "x\u0305's fine"]

# ---------------------------------------------------------------- references


def gguf_strings(reader, key):
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8", errors="surrogateescape") for i in field.data]


def build_hf_tokenizer(path, regex):
    """The tokenizer transformers builds for Qwen2 / Qwen3.5, from the GGUF's vocabulary."""
    reader = GGUFReader(path)
    tokens = gguf_strings(reader, "tokenizer.ggml.tokens")
    field = reader.fields["tokenizer.ggml.token_type"]
    types = [int(field.parts[i][0]) for i in field.data]
    merges = [tuple(m.split(" ", 1)) for m in gguf_strings(reader, "tokenizer.ggml.merges")]
    vocab = {t: i for i, t in enumerate(tokens) if types[i] == TOKEN_NORMAL}
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None,
                        continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                        byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken(tokens[i], special=types[i] == TOKEN_CONTROL, normalized=False)
                    for i in range(len(tokens)) if types[i] in (TOKEN_CONTROL, TOKEN_USER_DEFINED)])
    for i, t in enumerate(tokens):
        if types[i] in (TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED):
            assert tok.token_to_id(t) == i, (t, i)
    template = reader.fields.get("tokenizer.chat_template")
    return tok, bytes(template.parts[template.data[0]]).decode() if template else None


def llama_tokenize(bin_dir, model, text):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode())
    try:
        out = subprocess.run([os.path.join(bin_dir, "llama-tokenize"), "-m", model, "-f", f.name,
                              "--no-escape", "--ids", "--log-disable"],
                             check=True, capture_output=True).stdout.decode()
    finally:
        os.unlink(f.name)
    return json.loads(out.strip().splitlines()[-1])


def llama_prompt_ids(bin_dir, model, message, jinja):
    """The prompt ids llama-completion prints for a one-turn conversation."""
    args = [os.path.join(bin_dir, "llama-completion"), "-m", model, "-cnv", "-st", "-p", message,
            "-n", "1", "--verbose-prompt", "--temp", "0", "-t", "2", "--no-escape"]
    if jinja:
        args.append("--jinja")
    log = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, check=True,
                         timeout=300).stderr.decode(errors="replace")
    count = int(re.search(r"number of tokens in prompt = (\d+)", log).group(1))
    tail = log[log.index("number of tokens in prompt"):]
    ids = [int(m) for m in re.findall(r"^\S+ I\s+(\d+) -> '", tail, re.M)]
    assert len(ids) >= count, (message, count, ids)
    return ids[:count]


def hf_chat_ids(tok, template, message):
    from transformers import PreTrainedTokenizerFast
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template)
    ids = fast.apply_chat_template([{"role": "user", "content": message}],
                                   add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def reference_cases(tok, bin_dir, model, texts):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        llama = list(pool.map(lambda t: llama_tokenize(bin_dir, model, t), texts))
    cases = []
    for text, llama_ids in zip(texts, llama):
        ids = tok.encode(text).ids
        case = {"text": text, "hf_ids": ids, "llama_ids": llama_ids}
        back = tok.decode(ids, skip_special_tokens=False)
        if back != text:
            case["hf_text"] = back
        cases.append(case)
    return cases


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


GENERATED_BY = ("tools/make-tokenizer-corpus.py: transformers 5.24.0, tokenizers 0.23.3, "
                "llama.cpp 0c1e57098bba (llama-tokenize, llama-completion)")


def make_qwen2(args):
    tok, template = build_hf_tokenizer(args.model, QWEN2_REGEX)
    cases = reference_cases(tok, args.llama_bin, args.model, corpus())
    chat = []
    for message in CHAT_MESSAGES:
        entry = {"user": message,
                 "llama_jinja_ids": llama_prompt_ids(args.llama_bin, args.model, message, True),
                 "llama_builtin_ids": llama_prompt_ids(args.llama_bin, args.model, message, False),
                 "hf_ids": hf_chat_ids(tok, template, message)}
        assert entry["llama_jinja_ids"] == entry["hf_ids"], message
        chat.append(entry)
    write_json(os.path.join(args.out, "qwen2-corpus.json"), {
        "generated_by": GENERATED_BY,
        "model": {"file": os.path.basename(args.model), "sha256": sha256(args.model),
                  "pre": "qwen2"},
        "cases": cases,
        "chat": chat,
    })


def make_tiny(args):
    name = os.path.basename(os.path.normpath(args.tiny))
    model = os.path.join(args.tiny, name + ".gguf")
    tok, _ = build_hf_tokenizer(model, QWEN35_REGEX)
    with open(os.path.join(args.tiny, "tokenizer_cases.json"), encoding="utf-8") as f:
        golden = [c["text"] for c in json.load(f)["cases"]]
    texts = golden + [t for t in TINY_EXTRA if t not in golden]
    cases = reference_cases(tok, args.llama_bin, model, texts)
    # The qwen2 rule on the same vocabulary (no llama.cpp reference: the file
    # names qwen35), for the tests that have no real Qwen2 file at hand.
    tok2, _ = build_hf_tokenizer(model, QWEN2_REGEX)
    for case in cases:
        case["hf_qwen2_ids"] = tok2.encode(case["text"]).ids
    write_json(os.path.join(args.out, "qwen35-tiny.json"), {
        "generated_by": GENERATED_BY,
        "model": {"file": name + ".gguf", "sha256": sha256(model), "pre": "qwen35"},
        "cases": cases,
    })


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="Qwen2.5 GGUF (tokenizer.ggml.pre qwen2)")
    parser.add_argument("--tiny", required=True, help="folder of a tiny qwen35 golden model")
    parser.add_argument("--llama-bin", required=True, help="folder with llama-tokenize, llama-completion")
    parser.add_argument("--out", default="tests/data/tokenizer")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    make_tiny(args)
    make_qwen2(args)


if __name__ == "__main__":
    main()

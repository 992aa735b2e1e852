/* gguf-synth.c: test models of every supported Qwen architecture with seeded
 * random weights.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "gguf-synth.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "gguf-writer.h"
#include "io-util.h"
#include "model-hparams.h"
#include "quant.h"
#include "sampler.h"   /* lm_rng_* */
#include "tokenizer.h" /* LmTokenType */

/* Runs @call only while everything before it succeeded (needs a local st). */
#define TRY(call) do { if (st == LM_OK) st = (call); } while (0)

/* ---- presets ---- */

/* Qwen2/2.5/3 layers: all softmax attention with full rotary embedding; the
 * bench shapes are Qwen3-30B-A3B's (E 2048, 32/4 heads of 128, 128 experts
 * top-8 of 768, vocab 151936, dense FFN 6144). */
static void
synth_attention_only (LmSynthHparams *hp, LmSynthPreset preset)
{
  hp->full_attn_interval = 1;
  hp->ssm_state = hp->ssm_groups = hp->ssm_heads = hp->conv_kernel = 0;
  hp->rope_base = 1e6f;
  if (preset == LM_SYNTH_TINY)
    {
      hp->n_rot = hp->head_dim;
      return;
    }
  hp->n_layer = preset == LM_SYNTH_FULL ? 48 : 4;
  hp->n_vocab = 151936; hp->n_embd = 2048; hp->n_ctx = 40960;
  hp->n_head = 32; hp->n_head_kv = 4; hp->head_dim = 128; hp->n_rot = 128;
  hp->n_ff = 6144;
  hp->n_expert = 128; hp->n_expert_used = 8; hp->n_ff_exp = 768;
}

LmSynthHparams
lm_synth_hparams (LmSynthArch arch, LmSynthPreset preset)
{
  LmSynthHparams hp = {
    .n_layer = 4, .full_attn_interval = 4, .conv_kernel = 4,
    .rope_base = 1e7f, .rms_eps = 1e-6f,
  };
  if (preset == LM_SYNTH_BENCH || preset == LM_SYNTH_FULL)
    {
      /* Qwen3.5-35B-A3B's text config; bench keeps 4 of its 40 layers */
      hp.n_layer = preset == LM_SYNTH_FULL ? 40 : 4;
      hp.n_vocab = 248320; hp.n_embd = 2048; hp.n_ctx = 262144;
      hp.n_head = 16; hp.n_head_kv = 2; hp.head_dim = 256; hp.n_rot = 64;
      hp.ssm_state = 128; hp.ssm_groups = 16; hp.ssm_heads = 32;
      hp.n_ff = 6144;
      hp.n_expert = 256; hp.n_expert_used = 8; hp.n_ff_exp = 512; hp.n_ff_shexp = 512;
    }
  else
    {
      hp.n_vocab = 1024; hp.n_embd = 256; hp.n_ctx = 512;
      hp.n_head = 4; hp.n_head_kv = 2; hp.head_dim = 64; hp.n_rot = 16;
      hp.ssm_state = 64; hp.ssm_groups = 2; hp.ssm_heads = 4;
      hp.n_ff = 512;
      hp.n_expert = 8; hp.n_expert_used = 2; hp.n_ff_exp = 256; hp.n_ff_shexp = 256;
    }
  const LmArchTraits *traits = lm_arch_traits ((LmArch) arch);
  if (!traits->hybrid)
    synth_attention_only (&hp, preset);
  if (!traits->is_moe)
    hp.n_expert = hp.n_expert_used = hp.n_ff_exp = hp.n_ff_shexp = 0;
  else if (!traits->shared_expert)
    hp.n_ff_shexp = 0;
  return hp;
}

static bool
is_full_attention (const LmSynthHparams *hp, uint32_t layer)
{
  return (layer + 1) % hp->full_attn_interval == 0;
}

/* ---- tensor list ---- */

typedef enum {
  INIT_MATRIX, INIT_EMBD, INIT_NORM, INIT_SSM_A, INIT_DT_BIAS, INIT_CONV, INIT_BIAS
} InitKind;

typedef struct {
  char name[64];
  uint32_t n_dims;
  uint64_t ne[3];
  int layer;
  InitKind init;
  LmTensorType type;
} SynthTensor;

typedef struct {
  SynthTensor *t;
  size_t n, cap;
  bool oom;
} TensorList;

static void __attribute__ ((format (printf, 4, 5)))
add (TensorList *list, InitKind init, const uint64_t ne[3], const char *fmt, ...)
{
  if (list->oom)
    return;
  if (list->n == list->cap)
    {
      size_t cap = list->cap ? 2 * list->cap : 64;
      SynthTensor *t = realloc (list->t, cap * sizeof *t);
      if (t == NULL)
        {
          list->oom = true;
          return;
        }
      list->t = t;
      list->cap = cap;
    }
  /* formatted into a local first: GCC's sanitizer builds misjudge t->name */
  char name[sizeof list->t->name];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (name, sizeof name, fmt, ap);
  va_end (ap);
  SynthTensor *t = &list->t[list->n++];
  memset (t, 0, sizeof *t);
  memcpy (t->name, name, sizeof name);
  t->layer = -1;
  if (strncmp (t->name, "blk.", 4) == 0)
    t->layer = atoi (t->name + 4);
  t->init = init;
  t->n_dims = ne[2] ? 3 : ne[1] ? 2 : 1;
  for (int d = 0; d < 3; d++)
    t->ne[d] = ne[d] ? ne[d] : 1;
}

#define NE(...) ((const uint64_t[3]) { __VA_ARGS__ })

static void
list_attention (TensorList *l, const LmSynthHparams *hp, const LmArchTraits *tr, uint32_t i)
{
  uint64_t E = hp->n_embd, hd = hp->head_dim;
  uint64_t qd = hd * hp->n_head, kvd = hd * hp->n_head_kv;
  add (l, INIT_MATRIX, NE (E, (tr->attn_gated ? 2 : 1) * qd), "blk.%u.attn_q.weight", i);
  add (l, INIT_MATRIX, NE (E, kvd), "blk.%u.attn_k.weight", i);
  add (l, INIT_MATRIX, NE (E, kvd), "blk.%u.attn_v.weight", i);
  add (l, INIT_MATRIX, NE (qd, E), "blk.%u.attn_output.weight", i);
  if (tr->attn_qkv_bias)
    {
      add (l, INIT_BIAS, NE (qd), "blk.%u.attn_q.bias", i);
      add (l, INIT_BIAS, NE (kvd), "blk.%u.attn_k.bias", i);
      add (l, INIT_BIAS, NE (kvd), "blk.%u.attn_v.bias", i);
    }
  if (tr->attn_qk_norm)
    {
      add (l, INIT_NORM, NE (hd), "blk.%u.attn_q_norm.weight", i);
      add (l, INIT_NORM, NE (hd), "blk.%u.attn_k_norm.weight", i);
    }
}

static void
list_deltanet (TensorList *l, const LmSynthHparams *hp, uint32_t i)
{
  uint64_t E = hp->n_embd;
  uint64_t S = hp->ssm_state, key_dim = S * hp->ssm_groups, value_dim = S * hp->ssm_heads;
  uint64_t conv_dim = 2 * key_dim + value_dim;
  add (l, INIT_MATRIX, NE (E, conv_dim), "blk.%u.attn_qkv.weight", i);
  add (l, INIT_MATRIX, NE (E, value_dim), "blk.%u.attn_gate.weight", i);
  add (l, INIT_CONV, NE (hp->conv_kernel, conv_dim), "blk.%u.ssm_conv1d.weight", i);
  add (l, INIT_DT_BIAS, NE (hp->ssm_heads), "blk.%u.ssm_dt.bias", i);
  add (l, INIT_SSM_A, NE (hp->ssm_heads), "blk.%u.ssm_a", i);
  add (l, INIT_MATRIX, NE (E, hp->ssm_heads), "blk.%u.ssm_alpha.weight", i);
  add (l, INIT_MATRIX, NE (E, hp->ssm_heads), "blk.%u.ssm_beta.weight", i);
  add (l, INIT_NORM, NE (S), "blk.%u.ssm_norm.weight", i);
  add (l, INIT_MATRIX, NE (value_dim, E), "blk.%u.ssm_out.weight", i);
}

static void
list_ffn (TensorList *l, const LmSynthHparams *hp, const LmArchTraits *tr, uint32_t i)
{
  uint64_t E = hp->n_embd;
  if (!tr->is_moe)
    {
      add (l, INIT_MATRIX, NE (E, hp->n_ff), "blk.%u.ffn_gate.weight", i);
      add (l, INIT_MATRIX, NE (E, hp->n_ff), "blk.%u.ffn_up.weight", i);
      add (l, INIT_MATRIX, NE (hp->n_ff, E), "blk.%u.ffn_down.weight", i);
      return;
    }
  uint64_t X = hp->n_expert;
  add (l, INIT_MATRIX, NE (E, X), "blk.%u.ffn_gate_inp.weight", i);
  add (l, INIT_MATRIX, NE (E, hp->n_ff_exp, X), "blk.%u.ffn_gate_exps.weight", i);
  add (l, INIT_MATRIX, NE (E, hp->n_ff_exp, X), "blk.%u.ffn_up_exps.weight", i);
  add (l, INIT_MATRIX, NE (hp->n_ff_exp, E, X), "blk.%u.ffn_down_exps.weight", i);
  if (!tr->shared_expert)
    return;
  add (l, INIT_MATRIX, NE (E), "blk.%u.ffn_gate_inp_shexp.weight", i);
  add (l, INIT_MATRIX, NE (E, hp->n_ff_shexp), "blk.%u.ffn_gate_shexp.weight", i);
  add (l, INIT_MATRIX, NE (E, hp->n_ff_shexp), "blk.%u.ffn_up_shexp.weight", i);
  add (l, INIT_MATRIX, NE (hp->n_ff_shexp, E), "blk.%u.ffn_down_shexp.weight", i);
}

/* One layer, with llama.cpp's tensor names for its architecture (the FFN
 * norm is post_attention_norm in qwen35 files, ffn_norm elsewhere). */
static void
list_layer (TensorList *l, const LmSynthHparams *hp, const LmArchTraits *tr, uint32_t i)
{
  uint64_t E = hp->n_embd;
  add (l, INIT_NORM, NE (E), "blk.%u.attn_norm.weight", i);
  add (l, INIT_NORM, NE (E), tr->hybrid ? "blk.%u.post_attention_norm.weight"
                                        : "blk.%u.ffn_norm.weight", i);
  if (is_full_attention (hp, i))
    list_attention (l, hp, tr, i);
  else
    list_deltanet (l, hp, i);
  list_ffn (l, hp, tr, i);
}

static void
list_tensors (TensorList *l, const LmSynthHparams *hp, const LmArchTraits *tr)
{
  add (l, INIT_EMBD, NE (hp->n_embd, hp->n_vocab), "token_embd.weight");
  add (l, INIT_NORM, NE (hp->n_embd), "output_norm.weight");
  add (l, INIT_MATRIX, NE (hp->n_embd, hp->n_vocab), "output.weight");
  for (uint32_t i = 0; i < hp->n_layer; i++)
    list_layer (l, hp, tr, i);
}

/* ---- storage types ---- */

static bool
ends_with (const char *s, const char *suffix)
{
  size_t n = strlen (s), k = strlen (suffix);
  return n >= k && strcmp (s + n - k, suffix) == 0;
}

static bool
contains (const char *s, const char *part)
{
  return strstr (s, part) != NULL;
}

/* llama.cpp's use_more_bits(): the first and last eighth of the layers and
 * every third one in between. */
static bool
more_bits (int layer, int n_layer)
{
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

static LmTensorType
q4_k_m_type (const LmSynthHparams *hp, const char *name, int layer)
{
  bool eight_experts = hp->n_expert == 8;
  if (strcmp (name, "output.weight") == 0)
    return LM_TYPE_Q6_K;
  if (contains (name, "attn_v.weight"))
    return eight_experts ? LM_TYPE_Q8_0 : LM_TYPE_Q6_K;   /* a single attn_v: "more bits" */
  if (contains (name, "attn_k.weight") || contains (name, "attn_qkv.weight"))
    return eight_experts ? LM_TYPE_Q8_0 : contains (name, "attn_qkv") ? LM_TYPE_Q5_K
                                                                       : LM_TYPE_Q4_K;
  if (contains (name, "attn_output.weight"))
    return eight_experts ? LM_TYPE_Q5_K : LM_TYPE_Q4_K;
  if (contains (name, "ffn_down"))
    return more_bits (layer, (int) hp->n_layer) ? LM_TYPE_Q6_K : LM_TYPE_Q4_K;
  return LM_TYPE_Q4_K;
}

LmTensorType
lm_synth_tensor_type (LmSynthType type, const LmSynthHparams *hp, const char *name,
                      uint64_t ne0, int layer)
{
  bool keep_f32 = ends_with (name, "_norm.weight") || ends_with (name, ".ssm_a")
                  || ends_with (name, ".bias") || ends_with (name, "ssm_conv1d.weight")
                  || ends_with (name, "ffn_gate_inp.weight")
                  || ends_with (name, "ffn_gate_inp_shexp.weight");
  if (keep_f32 || type == LM_SYNTH_F32)
    return LM_TYPE_F32;
  LmTensorType t;
  switch (type)
    {
    case LM_SYNTH_F16: t = LM_TYPE_F16; break;
    case LM_SYNTH_Q8_0: t = LM_TYPE_Q8_0; break;
    case LM_SYNTH_Q4_0: t = LM_TYPE_Q4_0; break;
    case LM_SYNTH_Q5_0: t = LM_TYPE_Q5_0; break;
    default: t = q4_k_m_type (hp, name, layer); break;
    }
  uint32_t block;
  lm_gguf_type_layout (t, &block, NULL);
  if (ne0 % block != 0)
    t = ne0 % 32 == 0 ? LM_TYPE_Q8_0 : LM_TYPE_F32;
  return t;
}

/* ---- vocabulary ---- */

static const struct { const char *text; LmTokenType type; } qwen_specials[] = {
  { "<|endoftext|>", LM_TOKEN_CONTROL }, { "<|im_start|>", LM_TOKEN_CONTROL },
  { "<|im_end|>", LM_TOKEN_CONTROL }, { "<|object_ref_start|>", LM_TOKEN_CONTROL },
  { "<|object_ref_end|>", LM_TOKEN_CONTROL }, { "<|box_start|>", LM_TOKEN_CONTROL },
  { "<|box_end|>", LM_TOKEN_CONTROL }, { "<|quad_start|>", LM_TOKEN_CONTROL },
  { "<|quad_end|>", LM_TOKEN_CONTROL }, { "<|vision_start|>", LM_TOKEN_CONTROL },
  { "<|vision_end|>", LM_TOKEN_CONTROL }, { "<|vision_pad|>", LM_TOKEN_CONTROL },
  { "<|image_pad|>", LM_TOKEN_CONTROL }, { "<|video_pad|>", LM_TOKEN_CONTROL },
  { "<tool_call>", LM_TOKEN_USER_DEFINED }, { "</tool_call>", LM_TOKEN_USER_DEFINED },
  { "<|fim_prefix|>", LM_TOKEN_CONTROL }, { "<|fim_middle|>", LM_TOKEN_CONTROL },
  { "<|fim_suffix|>", LM_TOKEN_CONTROL }, { "<|fim_pad|>", LM_TOKEN_CONTROL },
  { "<|repo_name|>", LM_TOKEN_CONTROL }, { "<|file_sep|>", LM_TOKEN_CONTROL },
  { "<tool_response>", LM_TOKEN_USER_DEFINED }, { "</tool_response>", LM_TOKEN_USER_DEFINED },
  { "<think>", LM_TOKEN_USER_DEFINED }, { "</think>", LM_TOKEN_USER_DEFINED },
};
#define N_SPECIALS (sizeof qwen_specials / sizeof qwen_specials[0])

typedef struct {
  char **tokens;
  int32_t *types;
  char **merges;
  uint32_t n_tokens, n_merges;
  /* string set over tokens, for unique merge results */
  uint32_t *slots;
  uint64_t mask;
} Vocab;

static uint64_t
hash_str (const char *s)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (uint8_t) *s) * 0x100000001b3ull;
  return h;
}

/* Adds token @text (taken over) unless present; false if it was. */
static bool
vocab_insert (Vocab *v, char *text, LmTokenType type)
{
  uint64_t h = hash_str (text) & v->mask;
  for (; v->slots[h]; h = (h + 1) & v->mask)
    if (strcmp (v->tokens[v->slots[h] - 1], text) == 0)
      return false;
  v->slots[h] = v->n_tokens + 1;
  v->tokens[v->n_tokens] = text;
  v->types[v->n_tokens++] = type;
  return true;
}

static void
vocab_free (Vocab *v)
{
  for (uint32_t i = 0; v->tokens && i < v->n_tokens; i++)
    free (v->tokens[i]);
  for (uint32_t i = 0; v->merges && i < v->n_merges; i++)
    free (v->merges[i]);
  free (v->tokens);
  free (v->types);
  free (v->merges);
  free (v->slots);
}

static char *
utf8_of (uint32_t cp)
{
  char *s = malloc (4);
  if (s == NULL)
    return NULL;
  if (cp < 0x80)
    s[0] = (char) cp, s[1] = 0;
  else
    s[0] = (char) (0xC0 | cp >> 6), s[1] = (char) (0x80 | (cp & 0x3F)), s[2] = 0;
  return s;
}

static bool
gpt2_printable (unsigned b)
{
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

/* 256 byte tokens in GPT-2 order, seeded merges of word-like pieces, then the
 * Qwen special tokens; merges are made until the vocabulary is full. */
static LmStatus
vocab_build (Vocab *v, uint32_t n_vocab, uint64_t seed)
{
  if (n_vocab < 256 + N_SPECIALS)
    return LM_ERR_INVALID_ARGUMENT;
  uint32_t n_merge_target = n_vocab - 256 - (uint32_t) N_SPECIALS;
  v->tokens = calloc (n_vocab, sizeof *v->tokens);
  v->types = calloc (n_vocab, sizeof *v->types);
  v->merges = calloc (n_merge_target ? n_merge_target : 1, sizeof *v->merges);
  uint64_t cap = 16;
  while (cap < 2ull * n_vocab)
    cap *= 2;
  v->mask = cap - 1;
  v->slots = calloc (cap, sizeof *v->slots);
  uint32_t *wordish = malloc (n_vocab * sizeof *wordish);   /* ids usable in merges */
  if (!v->tokens || !v->types || !v->merges || !v->slots || !wordish)
    {
      free (wordish);
      return LM_ERR_NO_MEMORY;
    }
  uint32_t n_wordish = 0, n_letters = 0;
  uint32_t letters[27];
  uint32_t next_cp = 256;
  for (int pass = 0; pass < 2; pass++)
    for (unsigned b = 0; b < 256; b++)
      {
        if (gpt2_printable (b) != (pass == 0))
          continue;
        char *s = utf8_of (pass == 0 ? b : next_cp++);
        if (s == NULL || !vocab_insert (v, s, LM_TOKEN_NORMAL))
          {
            free (s);
            free (wordish);
            return LM_ERR_NO_MEMORY;
          }
        uint32_t id = v->n_tokens - 1;
        bool letter = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
        if (letter || b == ' ')
          wordish[n_wordish++] = id;
        if ((b >= 'a' && b <= 'z') || b == ' ')
          letters[n_letters++] = id;
      }

  uint64_t rng[4];
  lm_rng_seed (rng, seed ^ 0x766f636162756c61ull);
  uint64_t tries = 0;
  while (v->n_merges < n_merge_target && tries < 64ull * n_vocab)
    {
      tries++;
      uint32_t left = wordish[lm_rng_next (rng) % n_wordish];
      /* letters[] holds a..z then the space; the right side is mostly a letter */
      uint32_t right = lm_rng_next (rng) % 5 ? letters[lm_rng_next (rng) % (n_letters - 1)]
                                             : wordish[lm_rng_next (rng) % n_wordish];
      const char *a = v->tokens[left], *b = v->tokens[right];
      if (strncmp (b, "\xc4\xa0", 2) == 0)
        continue;   /* a space only starts a word */
      size_t la = strlen (a), lb = strlen (b);
      if (la + lb > 16)
        continue;
      char *joined = malloc (la + lb + 1);
      char *merge = malloc (la + lb + 2);
      if (!joined || !merge)
        {
          free (joined);
          free (merge);
          free (wordish);
          return LM_ERR_NO_MEMORY;
        }
      memcpy (joined, a, la);
      memcpy (joined + la, b, lb + 1);
      if (!vocab_insert (v, joined, LM_TOKEN_NORMAL))
        {
          free (joined);
          free (merge);
          continue;
        }
      snprintf (merge, la + lb + 2, "%s %s", a, b);
      v->merges[v->n_merges++] = merge;
      wordish[n_wordish++] = v->n_tokens - 1;
    }
  free (wordish);
  /* If the merges ran out of fresh pieces, pad with unused tokens. */
  for (uint32_t k = 0; v->n_tokens < n_vocab - N_SPECIALS; k++)
    {
      char buf[32];
      snprintf (buf, sizeof buf, "<|unused_%u|>", k);
      char *s = strdup (buf);
      if (s == NULL || !vocab_insert (v, s, LM_TOKEN_UNUSED))
        free (s);
    }
  for (size_t i = 0; i < N_SPECIALS; i++)
    {
      char *s = strdup (qwen_specials[i].text);
      if (s == NULL || !vocab_insert (v, s, qwen_specials[i].type))
        {
          free (s);
          return LM_ERR_NO_MEMORY;
        }
    }
  return LM_OK;
}

static const char chat_template[] =
  "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + "
  "message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
  "{{- '<|im_start|>assistant\\n' }}{%- endif %}";

static LmStatus
write_vocab (GgufWriter *w, const Vocab *v)
{
  uint32_t base = v->n_tokens - (uint32_t) N_SPECIALS;
  LmStatus st = LM_OK;
  TRY (lm_gguf_writer_add_string (w, "tokenizer.ggml.model", "gpt2"));
  TRY (lm_gguf_writer_add_string (w, "tokenizer.ggml.pre", "qwen35"));
  TRY (lm_gguf_writer_add_string_array (w, "tokenizer.ggml.tokens",
                                     (const char *const *) v->tokens, v->n_tokens));
  TRY (lm_gguf_writer_add_array (w, "tokenizer.ggml.token_type", LM_GGUF_TYPE_INT32, v->types,
                              v->n_tokens));
  TRY (lm_gguf_writer_add_string_array (w, "tokenizer.ggml.merges",
                                     (const char *const *) v->merges, v->n_merges));
  TRY (lm_gguf_writer_add_u32 (w, "tokenizer.ggml.bos_token_id", base));       /* <|endoftext|> */
  TRY (lm_gguf_writer_add_u32 (w, "tokenizer.ggml.eos_token_id", base + 2));   /* <|im_end|> */
  TRY (lm_gguf_writer_add_u32 (w, "tokenizer.ggml.padding_token_id", base));
  TRY (lm_gguf_writer_add_bool (w, "tokenizer.ggml.add_bos_token", false));
  TRY (lm_gguf_writer_add_string (w, "tokenizer.chat_template", chat_template));
  return st;
}

/* Copies the tokenizer keys of @src, checking the vocabulary size. */
static LmStatus
copy_vocab (GgufWriter *w, const GgufFile *src, uint32_t n_vocab, char **error_out)
{
  LmStatus st = LM_OK;
  uint64_t n_tok = 0;
  GgufValueType et;
  if (!lm_gguf_get_array (src, "tokenizer.ggml.tokens", &et, &n_tok, NULL) || et != LM_GGUF_TYPE_STRING
      || n_tok != n_vocab)
    {
      if (error_out)
        {
          char buf[200];
          snprintf (buf, sizeof buf, "the vocabulary file has %llu tokens, the preset needs %u",
                    (unsigned long long) n_tok, n_vocab);
          *error_out = strdup (buf);
        }
      return LM_ERR_INVALID_ARGUMENT;
    }
  for (uint64_t i = 0; i < lm_gguf_n_kv (src) && st == LM_OK; i++)
    {
      GgufString key = lm_gguf_key_name (src, (int64_t) i);
      if (key.len < 10 || memcmp (key.data, "tokenizer.", 10) != 0)
        continue;
      char name[256];
      snprintf (name, sizeof name, "%.*s", (int) (key.len < 255 ? key.len : 255), key.data);
      GgufValueType t = lm_gguf_value_type (src, (int64_t) i);
      GgufString s;
      uint32_t u;
      bool b;
      const void *data;
      uint64_t count;
      if (t == LM_GGUF_TYPE_STRING && lm_gguf_get_string (src, name, &s))
        {
          char *c = strndup (s.data, s.len);
          st = c ? lm_gguf_writer_add_string (w, name, c) : LM_ERR_NO_MEMORY;
          free (c);
        }
      else if (t == LM_GGUF_TYPE_BOOL && lm_gguf_get_bool (src, name, &b))
        st = lm_gguf_writer_add_bool (w, name, b);
      else if (t == LM_GGUF_TYPE_ARRAY && lm_gguf_get_array (src, name, &et, &count, &data))
        {
          if (et != LM_GGUF_TYPE_STRING)
            {
              st = data ? lm_gguf_writer_add_array (w, name, et, data, count) : LM_OK;
              continue;
            }
          char **strs = calloc (count ? count : 1, sizeof *strs);
          st = strs ? LM_OK : LM_ERR_NO_MEMORY;
          for (uint64_t k = 0; k < count && st == LM_OK; k++)
            if (!lm_gguf_get_array_string (src, name, k, &s) || !(strs[k] = strndup (s.data, s.len)))
              st = LM_ERR_NO_MEMORY;
          if (st == LM_OK)
            st = lm_gguf_writer_add_string_array (w, name, (const char *const *) strs, count);
          for (uint64_t k = 0; strs && k < count; k++)
            free (strs[k]);
          free (strs);
        }
      else if (lm_gguf_get_u32 (src, name, &u))
        st = lm_gguf_writer_add_u32 (w, name, u);
    }
  return st;
}

/* ---- metadata ---- */

static LmStatus
write_hparams (GgufWriter *w, const LmArchTraits *tr, const LmSynthHparams *hp)
{
  const char *arch = tr->name;
  bool moe = tr->is_moe;
  LmStatus st = LM_OK;
  char key[128];
#define ARCH_U32(suffix, value) \
  do { snprintf (key, sizeof key, "%s.%s", arch, suffix); \
       TRY (lm_gguf_writer_add_u32 (w, key, value)); } while (0)
#define ARCH_F32(suffix, value) \
  do { snprintf (key, sizeof key, "%s.%s", arch, suffix); \
       TRY (lm_gguf_writer_add_f32 (w, key, value)); } while (0)
  ARCH_U32 ("context_length", hp->n_ctx);
  ARCH_U32 ("embedding_length", hp->n_embd);
  ARCH_U32 ("block_count", hp->n_layer);
  if (!moe)
    ARCH_U32 ("feed_forward_length", hp->n_ff);
  ARCH_U32 ("attention.head_count", hp->n_head);
  ARCH_U32 ("attention.head_count_kv", hp->n_head_kv);
  ARCH_U32 ("attention.key_length", hp->head_dim);
  ARCH_U32 ("attention.value_length", hp->head_dim);
  ARCH_F32 ("attention.layer_norm_rms_epsilon", hp->rms_eps);
  ARCH_F32 ("rope.freq_base", hp->rope_base);
  ARCH_U32 ("rope.dimension_count", hp->n_rot);
  if (tr->hybrid)
    {
      static const int32_t sections[4] = { 11, 11, 10, 0 };
      snprintf (key, sizeof key, "%s.rope.dimension_sections", arch);
      TRY (lm_gguf_writer_add_array (w, key, LM_GGUF_TYPE_INT32, sections, 4));
      ARCH_U32 ("full_attention_interval", hp->full_attn_interval);
      ARCH_U32 ("ssm.conv_kernel", hp->conv_kernel);
      ARCH_U32 ("ssm.state_size", hp->ssm_state);
      ARCH_U32 ("ssm.group_count", hp->ssm_groups);
      ARCH_U32 ("ssm.time_step_rank", hp->ssm_heads);
      ARCH_U32 ("ssm.inner_size", hp->ssm_state * hp->ssm_heads);
    }
  if (moe)
    {
      ARCH_U32 ("expert_count", hp->n_expert);
      ARCH_U32 ("expert_used_count", hp->n_expert_used);
      ARCH_U32 ("expert_feed_forward_length", hp->n_ff_exp);
      if (tr->shared_expert)
        ARCH_U32 ("expert_shared_feed_forward_length", hp->n_ff_shexp);
    }
#undef ARCH_U32
#undef ARCH_F32
  return st;
}

static uint32_t
file_type_code (LmSynthType type)
{
  switch (type)
    {
    case LM_SYNTH_F32: return 0;
    case LM_SYNTH_F16: return 1;
    case LM_SYNTH_Q8_0: return 7;
    case LM_SYNTH_Q4_K_M: return 15;
    case LM_SYNTH_Q4_0: return 2;   /* llama_ftype MOSTLY_Q4_0 */
    case LM_SYNTH_Q5_0: return 8;   /* MOSTLY_Q5_0 */
    }
  return 0;
}

/* ---- weights ---- */

static float
uniform_pm1 (uint64_t rng[4])
{
  return (float) (2.0 * lm_rng_uniform (rng) - 1.0);
}

static void
fill_row (const SynthTensor *t, uint64_t tensor_seed, uint64_t row, float *out)
{
  uint64_t rng[4];
  lm_rng_seed (rng, tensor_seed + row * 0x9e3779b97f4a7c15ull);
  uint64_t n = t->ne[0];
  float a = 1.0f / sqrtf ((float) n) * sqrtf (3.0f);
  for (uint64_t i = 0; i < n; i++)
    {
      float u = uniform_pm1 (rng);
      switch (t->init)
        {
        case INIT_MATRIX: out[i] = a * u; break;
        case INIT_EMBD: out[i] = u; break;
        case INIT_NORM: out[i] = 1.0f + 0.1f * u; break;
        case INIT_SSM_A: out[i] = -expf (1.35f + 1.35f * u); break;   /* -exp(A_log), A_log in [0, 2.7] */
        case INIT_DT_BIAS: out[i] = 0.5f * u; break;
        case INIT_BIAS: out[i] = 0.2f * u; break;
        case INIT_CONV: out[i] = u / sqrtf ((float) n); break;
        }
    }
}

typedef struct {
  const SynthTensor *t;
  uint64_t seed, row0, row1;   /* rows [row0, row1) of this worker */
  uint8_t *dst;                /* where row0 goes */
  size_t row_bytes;
  LmStatus status;
} RowJob;

static void *
row_worker (void *arg)
{
  RowJob *job = arg;
  float *row = malloc (job->t->ne[0] * sizeof *row);
  if (row == NULL)
    {
      job->status = LM_ERR_NO_MEMORY;
      return NULL;
    }
  for (uint64_t r = job->row0; r < job->row1 && job->status == LM_OK; r++)
    {
      fill_row (job->t, job->seed, r, row);
      job->status = lm_quantize_row (job->t->type, row,
                                     job->dst + (r - job->row0) * job->row_bytes,
                                     (int64_t) job->t->ne[0]);
    }
  free (row);
  return NULL;
}

typedef struct {
  LmSynthProgress func;
  void *data;
  uint64_t done, total;
} Progress;

/* Generates tensor @t in chunks of rows spread over @threads workers. */
static LmStatus
write_tensor (GgufWriter *w, const SynthTensor *t, uint64_t seed, int threads, Progress *progress)
{
  uint64_t n_rows = t->ne[1] * t->ne[2];
  size_t row_bytes = lm_row_bytes (t->type, (int64_t) t->ne[0]);
  uint64_t chunk = (16u << 20) / row_bytes + 1;
  if (chunk > n_rows)
    chunk = n_rows;
  uint8_t *buf = malloc (chunk * row_bytes);
  RowJob *jobs = calloc ((size_t) threads, sizeof *jobs);
  pthread_t *tids = calloc ((size_t) threads, sizeof *tids);
  LmStatus st = buf && jobs && tids ? LM_OK : LM_ERR_NO_MEMORY;
  uint64_t tensor_seed = seed ^ hash_str (t->name);
  for (uint64_t r0 = 0; r0 < n_rows && st == LM_OK; r0 += chunk)
    {
      uint64_t rows = n_rows - r0 < chunk ? n_rows - r0 : chunk;
      int used = 0;
      for (int k = 0; k < threads; k++)
        {
          uint64_t a = r0 + rows * (uint64_t) k / (uint64_t) threads;
          uint64_t b = r0 + rows * (uint64_t) (k + 1) / (uint64_t) threads;
          if (a == b)
            continue;
          jobs[used] = (RowJob) { t, tensor_seed, a, b, buf + (a - r0) * row_bytes, row_bytes,
                                  LM_OK };
          if (pthread_create (&tids[used], NULL, row_worker, &jobs[used]) != 0)
            row_worker (&jobs[used]), tids[used] = 0;
          used++;
        }
      for (int k = 0; k < used; k++)
        {
          if (tids[k])
            pthread_join (tids[k], NULL);
          if (jobs[k].status != LM_OK)
            st = jobs[k].status;
        }
      if (st == LM_OK)
        st = lm_gguf_writer_write (w, buf, rows * row_bytes);
      progress->done += rows * row_bytes;
      if (st == LM_OK && progress->func
          && !progress->func (progress->done, progress->total, progress->data))
        st = LM_ERR_CANCELLED;
    }
  free (buf);
  free (jobs);
  free (tids);
  return st;
}

/* ---- planning and writing ---- */

/* A model ready to be written: tensor list with types, and a writer holding
 * every key and tensor declaration. */
typedef struct {
  LmSynthHparams hp;
  TensorList list;
  GgufWriter *w;
  Vocab vocab;
} Synth;

static void
synth_clear (Synth *s)
{
  vocab_free (&s->vocab);
  lm_gguf_writer_free (s->w);
  free (s->list.t);
}

static LmStatus
synth_prepare (Synth *s, const LmSynthOptions *o, char **error_out)
{
  memset (s, 0, sizeof *s);
  const LmArchTraits *tr = lm_arch_traits ((LmArch) o->arch);
  if (tr == NULL)
    return lm_io_fail (error_out, LM_ERR_INVALID_ARGUMENT, "unknown architecture %d", (int) o->arch);
  if (o->preset == LM_SYNTH_FULL && !tr->is_moe)
    return lm_io_fail (error_out, LM_ERR_UNSUPPORTED,
                       "the full preset is Qwen3.5-35B-A3B (qwen35moe) or Qwen3-30B-A3B "
                       "(qwen3moe): there is no dense %s model of that shape", tr->name);
  const char *arch = tr->name;
  s->hp = lm_synth_hparams (o->arch, o->preset);
  if (o->n_layer > 0)
    s->hp.n_layer = o->n_layer;
  list_tensors (&s->list, &s->hp, tr);
  s->w = lm_gguf_writer_new ();
  LmStatus st = s->list.oom || s->w == NULL ? LM_ERR_NO_MEMORY : LM_OK;
  static const char *const preset_names[] = { "tiny", "bench", "full" };
  char name[96];
  snprintf (name, sizeof name, "synthetic-%s-%s", arch, preset_names[o->preset]);
  TRY (lm_gguf_writer_add_string (s->w, "general.architecture", arch));
  TRY (lm_gguf_writer_add_string (s->w, "general.type", "model"));
  TRY (lm_gguf_writer_add_string (s->w, "general.name", name));
  TRY (lm_gguf_writer_add_u32 (s->w, "general.file_type", file_type_code (o->type)));
  if (o->type != LM_SYNTH_F32 && o->type != LM_SYNTH_F16)
    TRY (lm_gguf_writer_add_u32 (s->w, "general.quantization_version", 2));
  TRY (write_hparams (s->w, tr, &s->hp));
  if (st == LM_OK && o->vocab_from)
    st = copy_vocab (s->w, o->vocab_from, s->hp.n_vocab, error_out);
  else if (st == LM_OK)
    {
      TRY (vocab_build (&s->vocab, s->hp.n_vocab, o->seed));
      TRY (write_vocab (s->w, &s->vocab));
    }
  for (size_t i = 0; i < s->list.n && st == LM_OK; i++)
    {
      SynthTensor *t = &s->list.t[i];
      t->type = lm_synth_tensor_type (o->type, &s->hp, t->name, t->ne[0], t->layer);
      st = lm_gguf_writer_add_tensor (s->w, t->name, t->type, t->n_dims, t->ne);
    }
  if (st != LM_OK && error_out && *error_out == NULL)
    *error_out = strdup (st == LM_ERR_NO_MEMORY ? "out of memory" : "cannot build the model");
  return st;
}

/* The bytes of @t one decoded token reads (see LmSynthPlan). */
static uint64_t
decode_bytes_of (const SynthTensor *t, uint64_t n_bytes, const LmSynthHparams *hp)
{
  if (t->init == INIT_EMBD)
    return lm_row_bytes (t->type, (int64_t) t->ne[0]);
  if (t->init != INIT_MATRIX || t->n_dims < 2)
    return 0;
  if (contains (t->name, "_exps."))
    return n_bytes / t->ne[2] * hp->n_expert_used;
  return n_bytes;
}

LmStatus
lm_synth_plan (const LmSynthOptions *o, LmSynthPlan *plan, char **error_out)
{
  if (o == NULL || plan == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  memset (plan, 0, sizeof *plan);
  Synth s;
  LmStatus st = synth_prepare (&s, o, error_out);
  if (st == LM_OK)
    st = lm_gguf_writer_sizes (s.w, &plan->header_bytes, &plan->file_bytes);
  if (st == LM_OK && (plan->tensors = calloc (s.list.n, sizeof *plan->tensors)) == NULL)
    st = LM_ERR_NO_MEMORY;
  for (size_t i = 0; i < s.list.n && st == LM_OK; i++)
    {
      const SynthTensor *t = &s.list.t[i];
      LmSynthTensorInfo *info = &plan->tensors[i];
      memcpy (info->name, t->name, sizeof info->name);
      info->type = t->type;
      info->n_dims = t->n_dims;
      memcpy (info->ne, t->ne, sizeof info->ne);
      info->n_bytes = lm_gguf_writer_tensor_bytes (s.w, i);
      plan->n_params += t->ne[0] * t->ne[1] * t->ne[2];
      plan->decode_bytes += decode_bytes_of (t, info->n_bytes, &s.hp);
    }
  plan->n_tensors = s.list.n;
  plan->hp = s.hp;
  synth_clear (&s);
  if (st != LM_OK)
    lm_synth_plan_clear (plan);
  return st;
}

void
lm_synth_plan_clear (LmSynthPlan *plan)
{
  if (plan == NULL)
    return;
  free (plan->tensors);
  memset (plan, 0, sizeof *plan);
}

/* Fails when the file system of @path has less than @need bytes free. */
static LmStatus
check_free_space (const char *path, uint64_t need, char **error_out)
{
  char dir[4096];
  const char *slash = strrchr (path, '/');
  if (slash == NULL)
    snprintf (dir, sizeof dir, ".");
  else
    snprintf (dir, sizeof dir, "%.*s", slash == path ? 1 : (int) (slash - path), path);
  struct statvfs vfs;
  if (statvfs (dir, &vfs) != 0)
    return lm_io_fail (error_out, LM_ERR_IO, "cannot write to %s: %s", dir, strerror (errno));
  uint64_t avail = (uint64_t) vfs.f_bavail * vfs.f_frsize;
  if (avail < need)
    return lm_io_fail (error_out, LM_ERR_IO,
                       "not enough free space in %s: the model needs %.2f GB, %.2f GB are free",
                       dir, need / 1e9, avail / 1e9);
  return LM_OK;
}

/* Moves the finished @tmp to @path; without @overwrite only if @path is still free. */
static LmStatus
commit_file (const char *tmp, const char *path, bool overwrite, char **error_out)
{
  if (!overwrite)
    {
      if (link (tmp, path) == 0)
        {
          unlink (tmp);
          return LM_OK;
        }
      if (errno == EEXIST)
        return lm_io_fail (error_out, LM_ERR_IO, "%s already exists", path);
      /* a file system without hard links: check, then rename */
      if (access (path, F_OK) == 0)
        return lm_io_fail (error_out, LM_ERR_IO, "%s already exists", path);
    }
  if (rename (tmp, path) != 0)
    return lm_io_fail (error_out, LM_ERR_IO, "cannot write %s: %s", path, strerror (errno));
  return LM_OK;
}

LmStatus
lm_synth_write (const LmSynthOptions *o, const char *path, char **error_out)
{
  if (o == NULL || path == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  if (!o->overwrite && access (path, F_OK) == 0)
    return lm_io_fail (error_out, LM_ERR_IO, "%s already exists", path);
  int threads = o->threads > 0 ? o->threads : (int) sysconf (_SC_NPROCESSORS_ONLN);
  if (threads < 1)
    threads = 1;
  Synth s;
  LmStatus st = synth_prepare (&s, o, error_out);
  uint64_t file_bytes = 0;
  if (st == LM_OK)
    st = lm_gguf_writer_sizes (s.w, NULL, &file_bytes);
  if (st == LM_OK)
    st = check_free_space (path, file_bytes, error_out);
  Progress progress = { o->progress, o->progress_data, 0, 0 };
  for (size_t i = 0; i < s.list.n; i++)
    progress.total += lm_gguf_writer_tensor_bytes (s.w, i);
  size_t n = strlen (path) + 32;
  char *tmp = malloc (n);
  if (st == LM_OK && tmp == NULL)
    st = LM_ERR_NO_MEMORY;
  bool begun = false;
  if (st == LM_OK)
    {
      snprintf (tmp, n, "%s.tmp-%ld", path, (long) getpid ());
      st = lm_gguf_writer_begin (s.w, tmp, error_out);
      begun = true;
    }
  for (size_t i = 0; i < s.list.n && st == LM_OK; i++)
    st = write_tensor (s.w, &s.list.t[i], o->seed, threads, &progress);
  if (st == LM_OK)
    st = lm_gguf_writer_finish (s.w, error_out);
  if (st == LM_OK)
    st = commit_file (tmp, path, o->overwrite, error_out);
  if (st != LM_OK && begun)
    remove (tmp);
  if (st != LM_OK && error_out && *error_out == NULL)
    *error_out = strdup (st == LM_ERR_NO_MEMORY ? "out of memory"
                         : st == LM_ERR_CANCELLED ? "stopped"
                         : "cannot write the model");
  free (tmp);
  synth_clear (&s);
  return st;
}

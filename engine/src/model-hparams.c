/* model-hparams.c: hyper-parameters of the Qwen architectures from GGUF metadata
 * (FORMAT.md §1).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <string.h>

#include "model-hparams.h"

typedef struct {
  const GgufFile *gguf;
  const char *arch;
  char **error_out;
} Reader;

static void
make_key (char *buf, size_t size, const Reader *r, const char *suffix)
{
  snprintf (buf, size, "%s.%s", r->arch, suffix);
}

/* Element @i of a numeric array as u32; false when out of range or negative. */
static bool
array_u32_at (GgufValueType type, const void *data, uint64_t i, uint32_t *out)
{
  const uint8_t *p = data;
  int64_t v;
  switch (type)
    {
    case LM_GGUF_TYPE_UINT8: case LM_GGUF_TYPE_BOOL: v = p[i]; break;
    case LM_GGUF_TYPE_INT8: v = (int8_t) p[i]; break;
    case LM_GGUF_TYPE_UINT16: { uint16_t x; memcpy (&x, p + 2 * i, 2); v = x; break; }
    case LM_GGUF_TYPE_INT16: { int16_t x; memcpy (&x, p + 2 * i, 2); v = x; break; }
    case LM_GGUF_TYPE_UINT32: { uint32_t x; memcpy (&x, p + 4 * i, 4); v = x; break; }
    case LM_GGUF_TYPE_INT32: { int32_t x; memcpy (&x, p + 4 * i, 4); v = x; break; }
    case LM_GGUF_TYPE_UINT64:
      {
        uint64_t x;
        memcpy (&x, p + 8 * i, 8);
        v = x > UINT32_MAX ? -1 : (int64_t) x;
        break;
      }
    case LM_GGUF_TYPE_INT64: { int64_t x; memcpy (&x, p + 8 * i, 8); v = x; break; }
    default: return false;
    }
  if (v < 0 || v > UINT32_MAX)
    return false;
  *out = (uint32_t) v;
  return true;
}

/* A u32 key that may also be stored per layer as an array: for arrays the
 * largest element is returned (per-layer widths are then upper bounds). */
static LmStatus
get_u32 (const Reader *r, const char *suffix, bool required, uint32_t dflt,
         uint32_t *out)
{
  char key[256];
  make_key (key, sizeof key, r, suffix);
  if (lm_gguf_get_u32 (r->gguf, key, out))
    return LM_OK;
  GgufValueType type;
  uint64_t count;
  const void *data;
  if (lm_gguf_get_array (r->gguf, key, &type, &count, &data) && count > 0)
    {
      uint32_t best = 0;
      for (uint64_t i = 0; i < count; i++)
        {
          uint32_t v;
          if (!array_u32_at (type, data, i, &v))
            return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s: bad array element", key);
          best = v > best ? v : best;
        }
      *out = best;
      return LM_OK;
    }
  if (lm_gguf_find_key (r->gguf, key) >= 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s has the wrong type", key);
  if (required)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s is missing", key);
  *out = dflt;
  return LM_OK;
}

static LmStatus
get_f32 (const Reader *r, const char *suffix, float dflt, float *out)
{
  char key[256];
  make_key (key, sizeof key, r, suffix);
  if (lm_gguf_get_f32 (r->gguf, key, out))
    return LM_OK;
  if (lm_gguf_find_key (r->gguf, key) >= 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s has the wrong type", key);
  *out = dflt;
  return LM_OK;
}

static LmStatus
read_rope_sections (const Reader *r, LmModelInfo *info)
{
  char key[256];
  make_key (key, sizeof key, r, "rope.dimension_sections");
  GgufValueType type;
  uint64_t count;
  const void *data;
  memset (info->rope_sections, 0, sizeof info->rope_sections);
  if (!lm_gguf_get_array (r->gguf, key, &type, &count, &data))
    {
      /* Absent (every architecture but qwen35): no sections, so every
       * pair follows the text position; plain NEOX RoPE. */
      return LM_OK;
    }
  for (uint64_t i = 0; i < count && i < 4; i++)
    {
      uint32_t v;
      if (!array_u32_at (type, data, i, &v) || v > 4096)
        return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s: bad element", key);
      info->rope_sections[i] = (int32_t) v;
    }
  return LM_OK;
}

/* The per-layer pattern: the explicit recurrent_layers flags, else the interval. */
static LmStatus
read_layer_pattern (const Reader *r, LmModelInfo *info)
{
  char key[256];
  make_key (key, sizeof key, r, "attention.recurrent_layers");
  GgufValueType type;
  uint64_t count;
  const void *data;
  if (lm_gguf_get_array (r->gguf, key, &type, &count, &data))
    {
      if (count < info->n_layer)
        return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s has %llu entries for %u layers",
                        key, (unsigned long long) count, info->n_layer);
      for (uint32_t il = 0; il < info->n_layer; il++)
        {
          uint32_t v;
          if (!array_u32_at (type, data, il, &v))
            return lm_fail (r->error_out, LM_ERR_FORMAT, "metadata %s: bad element", key);
          info->is_linear[il] = v != 0;
        }
      return LM_OK;
    }
  uint32_t interval;
  LmStatus st = get_u32 (r, "full_attention_interval", false, 4, &interval);
  if (st != LM_OK)
    return st;
  if (interval == 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "full_attention_interval is 0");
  for (uint32_t il = 0; il < info->n_layer; il++)
    info->is_linear[il] = (il + 1) % interval != 0;
  return LM_OK;
}

/* What each architecture's layers contain: the forward pass reads these
 * flags, never the architecture itself. */
typedef LmArchTraits ArchTraits;

static const ArchTraits arch_traits[] = {
  { "qwen35", LM_ARCH_QWEN35, true, true, true, false, false, false },
  { "qwen35moe", LM_ARCH_QWEN35MOE, true, true, true, false, true, true },
  { "qwen2", LM_ARCH_QWEN2, false, false, false, true, false, false },
  { "qwen3", LM_ARCH_QWEN3, false, false, true, false, false, false },
  { "qwen3moe", LM_ARCH_QWEN3MOE, false, false, true, false, true, false },
};

#define N_ARCH_TRAITS (sizeof arch_traits / sizeof arch_traits[0])

const LmArchTraits *
lm_arch_traits (LmArch arch)
{
  for (size_t i = 0; i < N_ARCH_TRAITS; i++)
    if (arch_traits[i].arch == arch)
      return &arch_traits[i];
  return NULL;
}

const char *
lm_arch_name (LmArch arch)
{
  const LmArchTraits *t = lm_arch_traits (arch);
  return t != NULL ? t->name : "unknown";
}

static const ArchTraits *
read_arch (const GgufFile *gguf, LmModelInfo *info, char **error_out)
{
  GgufString s;
  if (!lm_gguf_get_string (gguf, "general.architecture", &s))
    {
      lm_fail (error_out, LM_ERR_FORMAT, "general.architecture is missing");
      return NULL;
    }
  for (size_t i = 0; i < N_ARCH_TRAITS; i++)
    if (lm_gguf_string_eq (s, arch_traits[i].name))
      {
        const ArchTraits *t = &arch_traits[i];
        info->arch = t->arch;
        info->hybrid = t->hybrid;
        info->attn_gated = t->attn_gated;
        info->attn_qk_norm = t->attn_qk_norm;
        info->attn_qkv_bias = t->attn_qkv_bias;
        info->is_moe = t->is_moe;
        return t;
      }
  lm_fail (error_out, LM_ERR_UNSUPPORTED,
           "architecture '%.*s' is not supported (qwen2, qwen3, qwen3moe, qwen35, qwen35moe are)",
           (int) (s.len > 64 ? 64 : s.len), s.data);
  return NULL;
}

/* Reads the rotary embedding; scaled variants (YaRN, linear) change every
 * angle and are refused rather than run wrong. */
static LmStatus
read_rope (const Reader *r, LmModelInfo *info)
{
  char key[256];
  make_key (key, sizeof key, r, "rope.scaling.type");
  GgufString type;
  if (lm_gguf_get_string (r->gguf, key, &type) && !lm_gguf_string_eq (type, "none"))
    return lm_fail (r->error_out, LM_ERR_UNSUPPORTED, "rope scaling '%.*s' is not supported",
                    (int) (type.len > 32 ? 32 : type.len), type.data);
  LmStatus st;
  if ((st = get_u32 (r, "rope.dimension_count", false, info->head_dim, &info->n_rot)) ||
      (st = get_f32 (r, "rope.freq_base", 10000.0f, &info->rope_base)))
    return st;
  /* NaN, infinite, zero or negative bases make every angle garbage */
  if (!(info->rope_base > 1.0f && info->rope_base < 1e30f))
    return lm_fail (r->error_out, LM_ERR_FORMAT, "rope.freq_base %g is invalid (> 1 expected)",
                    (double) info->rope_base);
  return LM_OK;
}

/* Reads the linear-attention (Gated DeltaNet) sizes of hybrid models. */
static LmStatus
read_ssm (const Reader *r, LmModelInfo *info)
{
  LmStatus st;
  if ((st = get_u32 (r, "ssm.conv_kernel", true, 0, &info->ssm_conv_kernel)) ||
      (st = get_u32 (r, "ssm.state_size", true, 0, &info->ssm_state)) ||
      (st = get_u32 (r, "ssm.group_count", true, 0, &info->ssm_groups)) ||
      (st = get_u32 (r, "ssm.time_step_rank", true, 0, &info->ssm_heads)))
    return st;
  if (info->ssm_groups == 0 || info->ssm_heads % info->ssm_groups != 0 ||
      info->ssm_state == 0 || info->ssm_state > 1024 || info->ssm_conv_kernel == 0 ||
      info->ssm_conv_kernel > 64)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "linear-attention sizes (S %u, Hk %u, Hv %u, K %u) are invalid",
                    info->ssm_state, info->ssm_groups, info->ssm_heads, info->ssm_conv_kernel);
  uint32_t inner;
  if ((st = get_u32 (r, "ssm.inner_size", false, info->ssm_state * info->ssm_heads, &inner)))
    return st;
  if (inner != info->ssm_state * info->ssm_heads)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "ssm.inner_size %u != state_size * time_step_rank", inner);
  return LM_OK;
}

/* Reads the attention sizes, and for hybrid models the linear-attention ones. */
static LmStatus
read_mixer (const Reader *r, LmModelInfo *info)
{
  LmStatus st;
  uint32_t value_length;
  if ((st = get_u32 (r, "attention.head_count", true, 0, &info->n_head)) ||
      (st = get_u32 (r, "attention.head_count_kv", false, info->n_head, &info->n_head_kv)))
    return st;
  if (info->n_head == 0 || info->n_head_kv == 0 || info->n_head % info->n_head_kv != 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "head counts %u / %u are invalid",
                    info->n_head, info->n_head_kv);
  if ((st = get_u32 (r, "attention.key_length", false, info->n_embd / info->n_head,
                     &info->head_dim)) ||
      (st = get_u32 (r, "attention.value_length", false, info->head_dim, &value_length)) ||
      (st = read_rope (r, info)) ||
      (st = get_f32 (r, "attention.layer_norm_rms_epsilon", 1e-6f, &info->rms_eps)))
    return st;
  /* RMSNorm divides by sqrt (mean + eps): a NaN, infinite, negative or
   * huge eps gives garbage instead of an error */
  if (!(info->rms_eps >= 0.0f && info->rms_eps <= 1.0f))
    return lm_fail (r->error_out, LM_ERR_FORMAT,
                    "attention.layer_norm_rms_epsilon %g is invalid (0 to 1 expected)",
                    (double) info->rms_eps);
  if (value_length != info->head_dim || info->head_dim == 0 || info->head_dim > 1024 ||
      info->n_rot > info->head_dim || info->n_rot % 2 != 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "attention head dims (key %u, value %u, rope %u) are invalid",
                    info->head_dim, value_length, info->n_rot);
  if (info->hybrid && (st = read_ssm (r, info)))
    return st;
  return read_rope_sections (r, info);
}

static LmStatus
read_ffn (const Reader *r, const ArchTraits *traits, LmModelInfo *info)
{
  LmStatus st;
  if (!traits->is_moe)
    return get_u32 (r, "feed_forward_length", true, 0, &info->n_ff);
  if ((st = get_u32 (r, "expert_count", true, 0, &info->n_expert)) ||
      (st = get_u32 (r, "expert_used_count", true, 0, &info->n_expert_used)) ||
      (st = get_u32 (r, "expert_feed_forward_length", true, 0, &info->n_ff_exp)) ||
      (st = get_u32 (r, "expert_shared_feed_forward_length", false,
                     traits->shared_expert ? info->n_ff_exp : 0, &info->n_ff_shexp)))
    return st;
  /* Routing weights are renormalised over the chosen experts, as every
   * released Qwen3-MoE / Qwen3.5-MoE checkpoint does (norm_topk_prob) and as
   * llama.cpp always does for these architectures; its converter writes no
   * key for it. A file that says otherwise is refused, not run wrong. */
  char key[256];
  bool norm = true;
  make_key (key, sizeof key, r, "expert_weights_norm");
  if (lm_gguf_get_bool (r->gguf, key, &norm) && !norm)
    return lm_fail (r->error_out, LM_ERR_UNSUPPORTED,
                    "%s is false: routing without renormalised weights is not supported", key);
  if (traits->shared_expert && info->n_ff_shexp == 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "expert_shared_feed_forward_length is 0");
  if (info->n_expert == 0 || info->n_expert_used == 0 || info->n_expert_used > info->n_expert ||
      info->n_expert > 4096)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "expert counts %u / %u are invalid",
                    info->n_expert_used, info->n_expert);
  return LM_OK;
}

LmStatus
lm_read_hparams (const GgufFile *gguf, LmModelInfo *info, char **error_out)
{
  memset (info, 0, sizeof *info);
  const ArchTraits *traits = read_arch (gguf, info, error_out);
  if (traits == NULL)
    return lm_gguf_find_key (gguf, "general.architecture") >= 0 ? LM_ERR_UNSUPPORTED : LM_ERR_FORMAT;
  Reader r = { gguf, traits->name, error_out };
  LmStatus st;
  uint32_t block_count, nextn;
  if ((st = get_u32 (&r, "embedding_length", true, 0, &info->n_embd)) ||
      (st = get_u32 (&r, "block_count", true, 0, &block_count)) ||
      (st = get_u32 (&r, "nextn_predict_layers", false, 0, &nextn)) ||
      (st = get_u32 (&r, "context_length", false, 4096, &info->n_ctx_train)))
    return st;
  if (nextn >= block_count || block_count - nextn > LM_MAX_LAYERS)
    return lm_fail (error_out, LM_ERR_FORMAT, "block_count %u (MTP %u) is invalid", block_count, nextn);
  info->n_layer = block_count - nextn;
  if (info->n_ctx_train == 0)
    return lm_fail (error_out, LM_ERR_FORMAT, "context_length is 0");
  if (info->n_embd == 0 || info->n_embd > 65536)
    return lm_fail (error_out, LM_ERR_FORMAT, "embedding_length %u is invalid", info->n_embd);
  if ((st = read_mixer (&r, info)) || (st = read_ffn (&r, traits, info)))
    return st;
  /* Only hybrid models have linear-attention layers (is_linear stays false). */
  return info->hybrid ? read_layer_pattern (&r, info) : LM_OK;
}

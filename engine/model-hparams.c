/* model-hparams.c: Qwen3.5 hyper-parameters from GGUF metadata (FORMAT.md §1).
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
    case GGUF_TYPE_UINT8: case GGUF_TYPE_BOOL: v = p[i]; break;
    case GGUF_TYPE_INT8: v = (int8_t) p[i]; break;
    case GGUF_TYPE_UINT16: { uint16_t x; memcpy (&x, p + 2 * i, 2); v = x; break; }
    case GGUF_TYPE_INT16: { int16_t x; memcpy (&x, p + 2 * i, 2); v = x; break; }
    case GGUF_TYPE_UINT32: { uint32_t x; memcpy (&x, p + 4 * i, 4); v = x; break; }
    case GGUF_TYPE_INT32: { int32_t x; memcpy (&x, p + 4 * i, 4); v = x; break; }
    case GGUF_TYPE_UINT64:
      {
        uint64_t x;
        memcpy (&x, p + 8 * i, 8);
        v = x > UINT32_MAX ? -1 : (int64_t) x;
        break;
      }
    case GGUF_TYPE_INT64: { int64_t x; memcpy (&x, p + 8 * i, 8); v = x; break; }
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
  if (gguf_get_u32 (r->gguf, key, out))
    return LM_OK;
  GgufValueType type;
  uint64_t count;
  const void *data;
  if (gguf_get_array (r->gguf, key, &type, &count, &data) && count > 0)
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
  if (gguf_find_key (r->gguf, key) >= 0)
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
  if (gguf_get_f32 (r->gguf, key, out))
    return LM_OK;
  if (gguf_find_key (r->gguf, key) >= 0)
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
  if (!gguf_get_array (r->gguf, key, &type, &count, &data))
    {
      /* Absent: every pair follows the text position (plain NEOX). */
      info->rope_sections[0] = (int32_t) info->n_rot;
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
  if (gguf_get_array (r->gguf, key, &type, &count, &data))
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

static LmStatus
read_arch (const GgufFile *gguf, LmModelInfo *info, const char **arch, char **error_out)
{
  GgufString s;
  if (!gguf_get_string (gguf, "general.architecture", &s))
    return lm_fail (error_out, LM_ERR_FORMAT, "general.architecture is missing");
  if (s.len == 6 && memcmp (s.data, "qwen35", 6) == 0)
    {
      info->arch = LM_ARCH_QWEN35;
      *arch = "qwen35";
    }
  else if (s.len == 9 && memcmp (s.data, "qwen35moe", 9) == 0)
    {
      info->arch = LM_ARCH_QWEN35MOE;
      *arch = "qwen35moe";
    }
  else
    return lm_fail (error_out, LM_ERR_UNSUPPORTED, "architecture '%.*s' is not qwen35 or qwen35moe",
                    (int) (s.len > 64 ? 64 : s.len), s.data);
  return LM_OK;
}

/* Reads the attention and linear-attention sizes. */
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
      (st = get_u32 (r, "rope.dimension_count", false, info->head_dim, &info->n_rot)) ||
      (st = get_f32 (r, "rope.freq_base", 10000.0f, &info->rope_base)) ||
      (st = get_f32 (r, "attention.layer_norm_rms_epsilon", 1e-6f, &info->rms_eps)) ||
      (st = get_u32 (r, "ssm.conv_kernel", true, 0, &info->ssm_conv_kernel)) ||
      (st = get_u32 (r, "ssm.state_size", true, 0, &info->ssm_state)) ||
      (st = get_u32 (r, "ssm.group_count", true, 0, &info->ssm_groups)) ||
      (st = get_u32 (r, "ssm.time_step_rank", true, 0, &info->ssm_heads)))
    return st;
  if (value_length != info->head_dim || info->head_dim == 0 || info->head_dim > 1024 ||
      info->n_rot > info->head_dim || info->n_rot % 2 != 0)
    return lm_fail (r->error_out, LM_ERR_FORMAT, "attention head dims (key %u, value %u, rope %u) are invalid",
                    info->head_dim, value_length, info->n_rot);
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
  return read_rope_sections (r, info);
}

static LmStatus
read_ffn (const Reader *r, LmModelInfo *info)
{
  LmStatus st;
  if (info->arch == LM_ARCH_QWEN35)
    return get_u32 (r, "feed_forward_length", true, 0, &info->n_ff);
  if ((st = get_u32 (r, "expert_count", true, 0, &info->n_expert)) ||
      (st = get_u32 (r, "expert_used_count", true, 0, &info->n_expert_used)) ||
      (st = get_u32 (r, "expert_feed_forward_length", true, 0, &info->n_ff_exp)) ||
      (st = get_u32 (r, "expert_shared_feed_forward_length", false, info->n_ff_exp,
                     &info->n_ff_shexp)))
    return st;
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
  Reader r = { gguf, NULL, error_out };
  LmStatus st = read_arch (gguf, info, &r.arch, error_out);
  if (st != LM_OK)
    return st;
  uint32_t block_count, nextn;
  if ((st = get_u32 (&r, "embedding_length", true, 0, &info->n_embd)) ||
      (st = get_u32 (&r, "block_count", true, 0, &block_count)) ||
      (st = get_u32 (&r, "nextn_predict_layers", false, 0, &nextn)) ||
      (st = get_u32 (&r, "context_length", false, 4096, &info->n_ctx_train)))
    return st;
  if (nextn >= block_count || block_count - nextn > LM_MAX_LAYERS)
    return lm_fail (error_out, LM_ERR_FORMAT, "block_count %u (MTP %u) is invalid", block_count, nextn);
  info->n_layer = block_count - nextn;
  if (info->n_embd == 0 || info->n_embd > 65536)
    return lm_fail (error_out, LM_ERR_FORMAT, "embedding_length %u is invalid", info->n_embd);
  if ((st = read_mixer (&r, info)) || (st = read_ffn (&r, info)))
    return st;
  return read_layer_pattern (&r, info);
}

/* lora-gguf.c: llama.cpp-style GGUF LoRA adapters (FORMAT.md 7.2).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "forward-kern.h"
#include "lora-private.h"

LmStatus
lm_lora_tensor_to_f32 (const GgufTensorInfo *t, float **out)
{
  uint64_t cols = t->ne[0], rows = t->ne[1];
  size_t row_bytes = lm_row_bytes (t->type, (int64_t) cols);
  if (row_bytes == 0 || t->n_bytes < row_bytes * rows)
    return LM_ERR_FORMAT;
  float *dst = malloc ((size_t) (cols * rows) * sizeof (float));
  if (dst == NULL)
    return LM_ERR_NO_MEMORY;
  for (uint64_t r = 0; r < rows; r++)
    if (lm_dequantize_row (t->type, (const char *) t->data + r * row_bytes, dst + r * cols,
                           (int64_t) cols) != LM_OK)
      {
        free (dst);
        return LM_ERR_FORMAT;
      }
  *out = dst;
  return LM_OK;
}

static LmStatus
check_header (const LmModel *model, const GgufFile *g, const char *path, char **error_out)
{
  GgufString s;
  if (lm_gguf_get_string (g, "general.type", &s) && !(s.len == 7 && memcmp (s.data, "adapter", 7) == 0))
    return lm_fail (error_out, LM_ERR_FORMAT, "%s: general.type is not 'adapter'", path);
  if (lm_gguf_get_string (g, "adapter.type", &s) && !(s.len == 4 && memcmp (s.data, "lora", 4) == 0))
    return lm_fail (error_out, LM_ERR_UNSUPPORTED, "%s: adapter.type is not 'lora'", path);
  const char *arch = lm_arch_name (model->info.arch);
  if (lm_gguf_get_string (g, "general.architecture", &s) &&
      !(s.len == strlen (arch) && memcmp (s.data, arch, s.len) == 0))
    return lm_fail (error_out, LM_ERR_SHAPE, "%s: adapter is for architecture '%.*s', the model is %s",
                    path, (int) (s.len > 64 ? 64 : s.len), s.data, arch);
  return LM_OK;
}

/* Adds the module whose A tensor is @ta (named BASE.lora_a). */
static LmStatus
add_pair (LmLora *lora, const GgufFile *g, const GgufTensorInfo *ta, float alpha,
          float user_scale, char **error_out)
{
  size_t base_len = ta->name.len - 7;
  char name[160];
  if (base_len + 8 > sizeof name)
    return lm_fail (error_out, LM_ERR_FORMAT, "LoRA tensor name too long");
  memcpy (name, ta->name.data, base_len);
  memcpy (name + base_len, ".lora_b", 8);
  const GgufTensorInfo *tb = lm_gguf_find_tensor (g, name);
  name[base_len] = '\0';
  uint32_t layer;
  LmModuleKind kind;
  if (!lm_lora_parse_name (name, base_len, &layer, &kind))
    return lm_fail (error_out, LM_ERR_UNSUPPORTED, "LoRA target %s is not a known module", name);
  if (tb == NULL)
    return lm_fail (error_out, LM_ERR_FORMAT, "LoRA target %s has lora_a but no lora_b", name);
  uint64_t rank = ta->ne[1];
  if (ta->n_dims != 2 || tb->n_dims != 2 || tb->ne[0] != rank || rank == 0 || rank > 65536 ||
      ta->ne[0] > UINT32_MAX || tb->ne[1] > UINT32_MAX)
    return lm_fail (error_out, LM_ERR_SHAPE, "LoRA target %s: lora_a/lora_b shapes do not match", name);
  float *a = NULL, *b = NULL;
  LmStatus st = lm_lora_tensor_to_f32 (ta, &a);
  if (st == LM_OK)
    st = lm_lora_tensor_to_f32 (tb, &b);
  if (st == LM_OK)
    {
      float scale = alpha != 0.0f ? user_scale * alpha / (float) rank : user_scale;
      st = lm_lora_add (lora, layer, kind, (uint32_t) rank, (uint32_t) ta->ne[0],
                        (uint32_t) tb->ne[1], a, b, scale, error_out);
    }
  else
    st = lm_fail (error_out, st, "LoRA target %s: cannot decode its tensors", name);
  free (a);
  free (b);
  return st;
}

static LmStatus
load_pairs (LmLora *lora, const GgufFile *g, float user_scale, char **error_out)
{
  float alpha = 0.0f;
  lm_gguf_get_f32 (g, "adapter.lora.alpha", &alpha);
  for (uint64_t i = 0; i < lm_gguf_n_tensors (g); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (g, i);
      bool is_a = t->name.len > 7 && memcmp (t->name.data + t->name.len - 7, ".lora_a", 7) == 0;
      bool is_b = t->name.len > 7 && memcmp (t->name.data + t->name.len - 7, ".lora_b", 7) == 0;
      if (!is_a && !is_b)
        return lm_fail (error_out, LM_ERR_FORMAT, "unexpected tensor '%.*s' in a LoRA adapter",
                        (int) (t->name.len > 96 ? 96 : t->name.len), t->name.data);
      if (is_a)
        {
          LmStatus st = add_pair (lora, g, t, alpha, user_scale, error_out);
          if (st != LM_OK)
            return st;
        }
    }
  return LM_OK;
}

LmStatus
lm_lora_load_gguf (const LmModel *model, const char *path, float user_scale, LmLora **out,
                   char **error_out)
{
  if (model == NULL || path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  GgufFile *g = NULL;
  LmStatus st = lm_gguf_open (path, &g, error_out);
  if (st != LM_OK)
    return st;
  LmLora *lora = lm_lora_new (model);
  st = lora == NULL ? LM_ERR_NO_MEMORY : check_header (model, g, path, error_out);
  if (st == LM_OK)
    st = load_pairs (lora, g, user_scale, error_out);
  if (st == LM_OK && lora->n_modules == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", path);
  lm_gguf_close (g);
  if (st != LM_OK)
    {
      lm_lora_free (lora);
      return st;
    }
  *out = lora;
  return LM_OK;
}

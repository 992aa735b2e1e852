/* lora-gguf.c: a llama.cpp-style GGUF LoRA adapter loaded for a model (FORMAT.md 7.2).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "lora-gguf.h"
#include "lora-private.h"

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

/* Adds the module of @pair, its factor user_scale * alpha / rank. */
static LmStatus
add_pair (LmLora *lora, const LmLoraGgufPair *pair, float alpha, float user_scale,
          char **error_out)
{
  uint32_t layer;
  LmModuleKind kind;
  if (!lm_lora_parse_name (pair->name, strlen (pair->name), &layer, &kind))
    return lm_fail (error_out, LM_ERR_UNSUPPORTED, "LoRA target %s is not a known module",
                    pair->name);
  float *a = NULL, *b = NULL;
  LmStatus st = lm_lora_gguf_pair_f32 (pair, &a, &b);
  if (st == LM_OK)
    {
      float scale = alpha != 0.0f ? user_scale * alpha / (float) pair->rank : user_scale;
      st = lm_lora_add (lora, layer, kind, pair->rank, pair->d_in, pair->d_out, a, b, scale,
                        error_out);
    }
  else
    st = lm_fail (error_out, st, "LoRA target %s: cannot decode its tensors", pair->name);
  free (a);
  free (b);
  return st;
}

static LmStatus
load_pairs (LmLora *lora, const LmLoraGguf *adapter, float user_scale, char **error_out)
{
  LmStatus st = LM_OK;
  for (size_t i = 0; st == LM_OK && i < lm_lora_gguf_n_pairs (adapter); i++)
    st = add_pair (lora, lm_lora_gguf_pair (adapter, i), lm_lora_gguf_alpha (adapter), user_scale,
                   error_out);
  return st;
}

LmStatus
lm_lora_load_gguf (const LmModel *model, const char *path, float user_scale, LmLora **out,
                   char **error_out)
{
  if (model == NULL || path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  LmLoraGguf *adapter = NULL;
  LmStatus st = lm_lora_gguf_open (path, &adapter, error_out);
  if (st != LM_OK)
    return st;
  LmLora *lora = lm_lora_new (model);
  st = lora == NULL ? LM_ERR_NO_MEMORY
                    : check_header (model, lm_lora_gguf_file (adapter), path, error_out);
  if (st == LM_OK)
    st = lm_lora_gguf_check_only_pairs (adapter, path, error_out);
  if (st == LM_OK)
    st = load_pairs (lora, adapter, user_scale, error_out);
  if (st == LM_OK && lora->n_modules == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", path);
  lm_lora_gguf_close (adapter);
  if (st != LM_OK)
    {
      lm_lora_free (lora);
      return st;
    }
  *out = lora;
  return LM_OK;
}

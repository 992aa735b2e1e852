/* lora-gguf-read.c: a GGUF LoRA adapter's tensors, paired (lora-gguf.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "lora-gguf.h"
#include "model-private.h"
#include "quant.h"

struct LmLoraGguf {
  GgufFile *file;
  float alpha;
  LmLoraGgufPair *pairs;
  size_t n_pairs;
};

static bool
has_suffix (GgufString s, const char *suffix)
{
  size_t n = strlen (suffix);
  return s.len > n && memcmp (s.data + s.len - n, suffix, n) == 0;
}

/* Pairs lora_a tensor @ta with its lora_b into @pair (which owns the name). */
static LmStatus
pair_up (const GgufFile *g, const GgufTensorInfo *ta, LmLoraGgufPair *pair, char **error_out)
{
  size_t base_len = ta->name.len - strlen (".lora_a");
  char *name = malloc (ta->name.len + 1);
  if (name == NULL)
    return LM_ERR_NO_MEMORY;
  memcpy (name, ta->name.data, base_len);
  memcpy (name + base_len, ".lora_b", strlen (".lora_b") + 1);
  const GgufTensorInfo *tb = lm_gguf_find_tensor (g, name);
  name[base_len] = '\0';
  pair->name = name;
  if (tb == NULL)
    return lm_fail (error_out, LM_ERR_FORMAT, "LoRA target %s has lora_a but no lora_b", name);
  uint64_t rank = ta->ne[1];
  if (ta->n_dims != 2 || tb->n_dims != 2 || tb->ne[0] != rank || rank == 0 || rank > 65536 ||
      ta->ne[0] > UINT32_MAX || tb->ne[1] > UINT32_MAX)
    return lm_fail (error_out, LM_ERR_SHAPE, "LoRA target %s: lora_a/lora_b shapes do not match",
                    name);
  pair->rank = (uint32_t) rank;
  pair->d_in = (uint32_t) ta->ne[0];
  pair->d_out = (uint32_t) tb->ne[1];
  pair->a = ta;
  pair->b = tb;
  return LM_OK;
}

LmStatus
lm_lora_gguf_check_only_pairs (const LmLoraGguf *adapter, const char *path, char **error_out)
{
  const GgufFile *g = adapter->file;
  size_t n_b = 0;
  for (uint64_t i = 0; i < lm_gguf_n_tensors (g); i++)
    {
      GgufString n = lm_gguf_tensor (g, i)->name;
      bool is_b = has_suffix (n, ".lora_b");
      if (!is_b && !has_suffix (n, ".lora_a"))
        return lm_fail (error_out, LM_ERR_FORMAT, "unexpected tensor '%.*s' in a LoRA adapter",
                        (int) (n.len > 96 ? 96 : n.len), n.data);
      n_b += is_b;
    }
  /* each pair has its own lora_b: any other one has no lora_a */
  if (n_b != adapter->n_pairs)
    return lm_fail (error_out, LM_ERR_FORMAT, "%s: lora_b without lora_a", path);
  return LM_OK;
}

static LmStatus
collect_pairs (LmLoraGguf *adapter, char **error_out)
{
  const GgufFile *g = adapter->file;
  uint64_t nt = lm_gguf_n_tensors (g);
  adapter->pairs = calloc (nt ? nt : 1, sizeof *adapter->pairs);
  if (adapter->pairs == NULL)
    return LM_ERR_NO_MEMORY;
  LmStatus st = LM_OK;
  for (uint64_t i = 0; st == LM_OK && i < nt; i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (g, i);
      if (has_suffix (t->name, ".lora_a"))
        st = pair_up (g, t, &adapter->pairs[adapter->n_pairs++], error_out);
    }
  return st;
}

LmStatus
lm_lora_gguf_open (const char *path, LmLoraGguf **out, char **error_out)
{
  if (path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  LmLoraGguf *adapter = calloc (1, sizeof *adapter);
  if (adapter == NULL)
    return LM_ERR_NO_MEMORY;
  LmStatus st = lm_gguf_open (path, &adapter->file, error_out);
  if (st == LM_OK)
    {
      lm_gguf_get_f32 (adapter->file, "adapter.lora.alpha", &adapter->alpha);
      st = collect_pairs (adapter, error_out);
    }
  if (st != LM_OK)
    {
      lm_lora_gguf_close (adapter);
      return st;
    }
  *out = adapter;
  return LM_OK;
}

void
lm_lora_gguf_close (LmLoraGguf *adapter)
{
  if (adapter == NULL)
    return;
  for (size_t i = 0; i < adapter->n_pairs; i++)
    free ((char *) adapter->pairs[i].name);
  free (adapter->pairs);
  if (adapter->file != NULL)
    lm_gguf_close (adapter->file);
  free (adapter);
}

const GgufFile *
lm_lora_gguf_file (const LmLoraGguf *adapter)
{
  return adapter->file;
}

float
lm_lora_gguf_alpha (const LmLoraGguf *adapter)
{
  return adapter->alpha;
}

size_t
lm_lora_gguf_n_pairs (const LmLoraGguf *adapter)
{
  return adapter->n_pairs;
}

const LmLoraGgufPair *
lm_lora_gguf_pair (const LmLoraGguf *adapter, size_t index)
{
  return index < adapter->n_pairs ? &adapter->pairs[index] : NULL;
}

/* A 2-D tensor of any supported type as a new f32 buffer. */
static LmStatus
tensor_to_f32 (const GgufTensorInfo *t, float **out)
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

LmStatus
lm_lora_gguf_pair_f32 (const LmLoraGgufPair *pair, float **a, float **b)
{
  float *fa = NULL, *fb = NULL;
  LmStatus st = a != NULL ? tensor_to_f32 (pair->a, &fa) : LM_OK;
  if (st == LM_OK && b != NULL)
    st = tensor_to_f32 (pair->b, &fb);
  if (st != LM_OK)
    {
      free (fa);
      return st;
    }
  if (a != NULL)
    *a = fa;
  if (b != NULL)
    *b = fb;
  return LM_OK;
}

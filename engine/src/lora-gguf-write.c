/* lora-gguf-write.c: GGUF LoRA adapters written (lora-gguf.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf-writer.h"
#include "lora-gguf.h"
#include "model-private.h"
#include "quant-private.h"

/* Copies key @i of the input, with adapter.lora.alpha set to @alpha. */
static LmStatus
copy_key (GgufWriter *w, const GgufFile *g, int64_t i, float alpha)
{
  GgufString ks = lm_gguf_key_name (g, i);
  char key[256];
  if (ks.len >= sizeof key)
    return LM_ERR_FORMAT;
  memcpy (key, ks.data, ks.len);
  key[ks.len] = '\0';
  if (strcmp (key, "general.alignment") == 0)
    return LM_OK;                       /* the writer records it itself */
  if (strcmp (key, "adapter.lora.alpha") == 0)
    return lm_gguf_writer_add_f32 (w, key, alpha);
  union { uint32_t u32; int32_t i32; uint64_t u64; float f32; bool b; } v;
  GgufString s;
  switch (lm_gguf_value_type (g, i))
    {
    case LM_GGUF_TYPE_UINT32:
      lm_gguf_get_u32 (g, key, &v.u32);
      return lm_gguf_writer_add_u32 (w, key, v.u32);
    case LM_GGUF_TYPE_INT32:
      lm_gguf_get_i32 (g, key, &v.i32);
      return lm_gguf_writer_add_i32 (w, key, v.i32);
    case LM_GGUF_TYPE_UINT64:
      lm_gguf_get_u64 (g, key, &v.u64);
      return lm_gguf_writer_add_u64 (w, key, v.u64);
    case LM_GGUF_TYPE_FLOAT32:
      lm_gguf_get_f32 (g, key, &v.f32);
      return lm_gguf_writer_add_f32 (w, key, v.f32);
    case LM_GGUF_TYPE_BOOL:
      lm_gguf_get_bool (g, key, &v.b);
      return lm_gguf_writer_add_bool (w, key, v.b);
    case LM_GGUF_TYPE_STRING:
      {
        lm_gguf_get_string (g, key, &s);
        char *copy = strndup (s.data, s.len);
        LmStatus st = copy ? lm_gguf_writer_add_string (w, key, copy) : LM_ERR_NO_MEMORY;
        free (copy);
        return st;
      }
    case LM_GGUF_TYPE_ARRAY:
      {
        GgufValueType et;
        uint64_t count;
        const void *data;
        if (!lm_gguf_get_array (g, key, &et, &count, &data) || et == LM_GGUF_TYPE_ARRAY)
          return LM_ERR_UNSUPPORTED;
        if (et != LM_GGUF_TYPE_STRING)
          return lm_gguf_writer_add_array (w, key, et, data, count);
        char **strs = calloc (count ? count : 1, sizeof (char *));
        LmStatus st = strs ? LM_OK : LM_ERR_NO_MEMORY;
        for (uint64_t k = 0; st == LM_OK && k < count; k++)
          if (!lm_gguf_get_array_string (g, key, k, &s) || (strs[k] = strndup (s.data, s.len)) == NULL)
            st = LM_ERR_NO_MEMORY;
        if (st == LM_OK)
          st = lm_gguf_writer_add_string_array (w, key, (const char *const *) strs, count);
        for (uint64_t k = 0; strs && k < count; k++)
          free (strs[k]);
        free (strs);
        return st;
      }
    default:
      return LM_ERR_UNSUPPORTED;
    }
}

static LmStatus
add_standard_keys (GgufWriter *w, const char *arch, float alpha)
{
  LmStatus st = arch != NULL ? lm_gguf_writer_add_string (w, "general.architecture", arch) : LM_OK;
  if (st == LM_OK)
    st = lm_gguf_writer_add_string (w, "general.type", "adapter");
  if (st == LM_OK)
    st = lm_gguf_writer_add_string (w, "adapter.type", "lora");
  if (st == LM_OK)
    st = lm_gguf_writer_add_f32 (w, "adapter.lora.alpha", alpha);
  return st;
}

static LmStatus
add_keys (GgufWriter *w, const LmLoraGgufKeys *keys, char **error_out)
{
  const GgufFile *g = keys->copy_from;
  if (g == NULL)
    return add_standard_keys (w, keys->arch, keys->alpha);
  LmStatus st = lm_gguf_writer_set_alignment (w, lm_gguf_alignment (g));
  for (int64_t i = 0; st == LM_OK && i < (int64_t) lm_gguf_n_kv (g); i++)
    if ((st = copy_key (w, g, i, keys->alpha)) != LM_OK)
      st = lm_fail (error_out, st, "cannot copy GGUF key %" PRId64, i);
  return st;
}

static LmStatus
add_tensor (GgufWriter *w, const char *name, const char *suffix, uint64_t ne0, uint64_t ne1,
            bool half)
{
  size_t n = strlen (name) + strlen (suffix) + 1;
  char *full = malloc (n);
  if (full == NULL)
    return LM_ERR_NO_MEMORY;
  snprintf (full, n, "%s%s", name, suffix);
  uint64_t ne[2] = { ne0, ne1 };
  LmStatus st = lm_gguf_writer_add_tensor (w, full, half ? LM_TYPE_F16 : LM_TYPE_F32, 2, ne);
  free (full);
  return st;
}

static LmStatus
declare_modules (GgufWriter *w, const LmLoraGgufModule *modules, size_t n, bool half)
{
  LmStatus st = LM_OK;
  for (size_t i = 0; st == LM_OK && i < n; i++)
    {
      const LmLoraGgufModule *m = &modules[i];
      st = add_tensor (w, m->name, ".lora_a", m->d_in, m->rank, half);
      if (st == LM_OK)
        st = add_tensor (w, m->name, ".lora_b", m->rank, m->d_out, half);
    }
  return st;
}

/* @count floats, as F32 or converted to F16 in slices. */
static LmStatus
write_floats (GgufWriter *w, const float *data, size_t count, bool half)
{
  enum { SLICE = 4096 };
  uint16_t h[SLICE];
  LmStatus st = LM_OK;
  if (!half)
    return lm_gguf_writer_write (w, data, count * sizeof (float));
  for (size_t done = 0; st == LM_OK && done < count; done += SLICE)
    {
      size_t n = count - done < SLICE ? count - done : SLICE;
      lm_quantize_row_f16 (data + done, h, (int64_t) n);
      st = lm_gguf_writer_write (w, h, n * sizeof *h);
    }
  return st;
}

static LmStatus
write_modules (GgufWriter *w, const LmLoraGgufModule *modules, size_t n, bool half)
{
  LmStatus st = LM_OK;
  for (size_t i = 0; st == LM_OK && i < n; i++)
    {
      const LmLoraGgufModule *m = &modules[i];
      st = write_floats (w, m->a, (size_t) m->rank * m->d_in, half);
      if (st == LM_OK)
        st = write_floats (w, m->b, (size_t) m->d_out * m->rank, half);
    }
  return st;
}

LmStatus
lm_lora_gguf_write (const char *path, const LmLoraGgufKeys *keys,
                    const LmLoraGgufModule *modules, size_t n_modules, char **error_out)
{
  if (path == NULL || keys == NULL || (modules == NULL && n_modules > 0))
    return LM_ERR_INVALID_ARGUMENT;
  GgufWriter *w = lm_gguf_writer_new ();
  LmStatus st = w != NULL ? add_keys (w, keys, error_out) : LM_ERR_NO_MEMORY;
  if (st == LM_OK)
    st = declare_modules (w, modules, n_modules, keys->half);
  if (st == LM_OK)
    st = lm_gguf_writer_begin (w, path, error_out);
  if (st == LM_OK)
    st = write_modules (w, modules, n_modules, keys->half);
  if (st == LM_OK)
    st = lm_gguf_writer_finish (w, error_out);
  lm_gguf_writer_free (w);
  return st;
}

/* safetensors.c: safetensors header validation and tensor access.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io-util.h"
#include "safetensors-json.h"

/* The format caps the header at 100 MB; so do we, before parsing it. */
#define SAFETENSORS_MAX_HEADER (100u * 1000 * 1000)

struct SafetensorsFile {
  const uint8_t *base;
  size_t size;
  bool mapped;
  LmJson *header;
  SafetensorsTensor *tensors;
  size_t n_tensors;
  const LmJson *metadata;
};

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
  [SAFETENSORS_F64] = { "F64", 8 }, [SAFETENSORS_F32] = { "F32", 4 },
  [SAFETENSORS_F16] = { "F16", 2 }, [SAFETENSORS_BF16] = { "BF16", 2 },
  [SAFETENSORS_I64] = { "I64", 8 }, [SAFETENSORS_I32] = { "I32", 4 },
  [SAFETENSORS_I16] = { "I16", 2 }, [SAFETENSORS_I8] = { "I8", 1 },
  [SAFETENSORS_U64] = { "U64", 8 }, [SAFETENSORS_U32] = { "U32", 4 },
  [SAFETENSORS_U16] = { "U16", 2 }, [SAFETENSORS_U8] = { "U8", 1 },
  [SAFETENSORS_BOOL] = { "BOOL", 1 }, [SAFETENSORS_F8_E4M3] = { "F8_E4M3", 1 },
  [SAFETENSORS_F8_E5M2] = { "F8_E5M2", 1 },
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

const char *
lm_safetensors_dtype_name (SafetensorsDtype dtype)
{
  return (unsigned) dtype < N_DTYPES ? dtypes[dtype].name : "?";
}

size_t
lm_safetensors_dtype_size (SafetensorsDtype dtype)
{
  return (unsigned) dtype < N_DTYPES ? dtypes[dtype].size : 0;
}

static bool
parse_dtype (const char *s, SafetensorsDtype *out)
{
  for (size_t i = 0; i < N_DTYPES; i++)
    if (strcmp (s, dtypes[i].name) == 0)
      {
        *out = (SafetensorsDtype) i;
        return true;
      }
  return false;
}

/* Fills @t from the header entry @v of tensor @name; @data_size bounds offsets. */
static LmStatus
read_entry (SafetensorsTensor *t, const char *name, const LmJson *v, uint64_t data_size,
            char **error_out)
{
  const char *dtype;
  const LmJson *shape = lm_json_get (v, "shape");
  const LmJson *offsets = lm_json_get (v, "data_offsets");
  if (v->type != LM_JSON_OBJECT || !lm_json_get_string (v, "dtype", &dtype) || shape == NULL
      || shape->type != LM_JSON_ARRAY || offsets == NULL || offsets->type != LM_JSON_ARRAY)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s' lacks dtype, shape or data_offsets", name);
  t->name = name;
  if (!parse_dtype (dtype, &t->dtype))
    return lm_io_fail (error_out, LM_ERR_UNSUPPORTED, "tensor '%.80s' has unknown dtype '%.20s'", name, dtype);
  if (shape->n_items > SAFETENSORS_MAX_DIMS)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s' has %zu dimensions (at most %d)", name,
                      shape->n_items, SAFETENSORS_MAX_DIMS);
  t->n_dims = (uint32_t) shape->n_items;
  t->n_elements = 1;
  for (uint32_t d = 0; d < t->n_dims; d++)
    {
      const LmJson *dim = &shape->items[d];
      if (dim->type != LM_JSON_NUMBER || !dim->is_uint)
        return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s': shape entry %u is not a size", name, d);
      t->shape[d] = dim->uint;
      if (__builtin_mul_overflow (t->n_elements, dim->uint, &t->n_elements))
        return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s': element count overflows", name);
    }
  if (__builtin_mul_overflow (t->n_elements, lm_safetensors_dtype_size (t->dtype), &t->n_bytes))
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s': byte size overflows", name);
  if (offsets->n_items != 2 || offsets->items[0].type != LM_JSON_NUMBER
      || offsets->items[1].type != LM_JSON_NUMBER || !offsets->items[0].is_uint
      || !offsets->items[1].is_uint)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s': data_offsets must be two sizes", name);
  uint64_t begin = offsets->items[0].uint, end = offsets->items[1].uint;
  if (begin > end || end > data_size)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s': data_offsets [%llu, %llu] outside the "
                      "%llu data bytes", name, (unsigned long long) begin,
                      (unsigned long long) end, (unsigned long long) data_size);
  if (end - begin != t->n_bytes)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tensor '%.80s': data_offsets span %llu bytes, shape and dtype "
                      "need %llu", name, (unsigned long long) (end - begin),
                      (unsigned long long) t->n_bytes);
  t->data = (const void *) (uintptr_t) begin;   /* made absolute by the caller */
  return LM_OK;
}

static int
compare_by_offset (const void *a, const void *b)
{
  uintptr_t x = (uintptr_t) ((const SafetensorsTensor *) a)->data;
  uintptr_t y = (uintptr_t) ((const SafetensorsTensor *) b)->data;
  return (x > y) - (x < y);
}

static LmStatus
parse_header (SafetensorsFile *f, char **error_out)
{
  if (f->size < 8)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "truncated: %zu bytes, the header length alone needs 8",
                      f->size);
  uint64_t hlen;
  memcpy (&hlen, f->base, 8);
  if (hlen > SAFETENSORS_MAX_HEADER)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "header length %llu exceeds the 100 MB limit",
                      (unsigned long long) hlen);
  if (hlen > f->size - 8)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "truncated: header of %llu bytes, only %zu follow",
                      (unsigned long long) hlen, f->size - 8);
  char *jerr = NULL;
  f->header = lm_json_parse ((const char *) f->base + 8, hlen, &jerr);
  if (f->header == NULL)
    {
      LmStatus st = lm_io_fail (error_out, LM_ERR_FORMAT, "header: %s", jerr ? jerr : "out of memory");
      free (jerr);
      return st;
    }
  if (f->header->type != LM_JSON_OBJECT)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "header is not a JSON object");

  uint64_t data_size = f->size - 8 - hlen;
  f->tensors = calloc (f->header->n_items ? f->header->n_items : 1, sizeof *f->tensors);
  if (f->tensors == NULL)
    return LM_ERR_NO_MEMORY;
  for (size_t i = 0; i < f->header->n_items; i++)
    {
      const char *name = f->header->keys[i];
      const LmJson *v = &f->header->items[i];
      if (strcmp (name, "__metadata__") == 0)
        {
          if (v->type != LM_JSON_OBJECT)
            return lm_io_fail (error_out, LM_ERR_FORMAT, "__metadata__ is not an object");
          for (size_t k = 0; k < v->n_items; k++)
            if (v->items[k].type != LM_JSON_STRING)
              return lm_io_fail (error_out, LM_ERR_FORMAT, "__metadata__ value '%.60s' is not a string",
                                v->keys[k]);
          f->metadata = v;
          continue;
        }
      LmStatus st = read_entry (&f->tensors[f->n_tensors], name, v, data_size, error_out);
      if (st != LM_OK)
        return st;
      f->n_tensors++;
    }

  qsort (f->tensors, f->n_tensors, sizeof *f->tensors, compare_by_offset);
  const uint8_t *data = f->base + 8 + hlen;
  for (size_t i = 0; i < f->n_tensors; i++)
    {
      SafetensorsTensor *t = &f->tensors[i];
      uint64_t begin = (uint64_t) (uintptr_t) t->data;
      if (i > 0)
        {
          const SafetensorsTensor *prev = &f->tensors[i - 1];
          if ((uint64_t) ((const uint8_t *) prev->data - data) + prev->n_bytes > begin)
            return lm_io_fail (error_out, LM_ERR_FORMAT, "tensors '%.80s' and '%.80s' overlap", prev->name,
                              t->name);
        }
      t->data = data + begin;
    }
  return LM_OK;
}

static LmStatus
open_buffer (const void *data, size_t size, bool mapped, SafetensorsFile **out, char **error_out)
{
  SafetensorsFile *f = calloc (1, sizeof *f);
  if (f == NULL)
    return LM_ERR_NO_MEMORY;
  f->base = data;
  f->size = size;
  LmStatus st = parse_header (f, error_out);
  if (st != LM_OK)
    {
      lm_safetensors_close (f);   /* not mapped yet: the caller unmaps */
      return st;
    }
  f->mapped = mapped;
  *out = f;
  return LM_OK;
}

LmStatus
lm_safetensors_open_memory (const void *data, size_t size, SafetensorsFile **out, char **error_out)
{
  if (out == NULL || (data == NULL && size > 0))
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  return open_buffer (data ? data : "", size, false, out, error_out);
}

static LmStatus
parse_mapped (const void *data, size_t size, bool mapped, void **out, char **error_out)
{
  return open_buffer (data, size, mapped, (SafetensorsFile **) out, error_out);
}

LmStatus
lm_safetensors_open (const char *path, SafetensorsFile **out, char **error_out)
{
  if (path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  return lm_io_open_mapped (path, parse_mapped, (void **) out, error_out);
}

void
lm_safetensors_close (SafetensorsFile *f)
{
  if (f == NULL)
    return;
  if (f->mapped)
    lm_io_unmap_file ((void *) f->base, f->size);
  lm_json_free (f->header);
  free (f->tensors);
  free (f);
}

size_t lm_safetensors_n_tensors (const SafetensorsFile *f) { return f->n_tensors; }

const SafetensorsTensor *
lm_safetensors_tensor (const SafetensorsFile *f, size_t index)
{
  return index < f->n_tensors ? &f->tensors[index] : NULL;
}

const SafetensorsTensor *
lm_safetensors_find (const SafetensorsFile *f, const char *name)
{
  for (size_t i = 0; i < f->n_tensors; i++)
    if (strcmp (f->tensors[i].name, name) == 0)
      return &f->tensors[i];
  return NULL;
}

const char *
lm_safetensors_metadata (const SafetensorsFile *f, const char *key)
{
  const char *s = NULL;
  return f->metadata && lm_json_get_string (f->metadata, key, &s) ? s : NULL;
}

float
lm_safetensors_f16_to_f32 (uint16_t h)
{
  uint32_t sign = (uint32_t) (h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  float v;
  if (exp == 0)
    v = ldexpf ((float) man, -24);                      /* zero and subnormals */
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = ldexpf ((float) (man | 0x400), (int) exp - 25);
  uint32_t bits;
  memcpy (&bits, &v, 4);
  bits |= sign;
  memcpy (&v, &bits, 4);
  return v;
}

float
lm_safetensors_bf16_to_f32 (uint16_t b)
{
  uint32_t bits = (uint32_t) b << 16;
  float v;
  memcpy (&v, &bits, 4);
  return v;
}

LmStatus
lm_safetensors_read_f32 (const SafetensorsTensor *t, float *dst)
{
  const uint8_t *src = t->data;
  switch (t->dtype)
    {
    case SAFETENSORS_F32:
      memcpy (dst, src, t->n_bytes);
      return LM_OK;
    case SAFETENSORS_F16:
    case SAFETENSORS_BF16:
      for (uint64_t i = 0; i < t->n_elements; i++)
        {
          uint16_t h;
          memcpy (&h, src + 2 * i, 2);
          dst[i] = t->dtype == SAFETENSORS_F16 ? lm_safetensors_f16_to_f32 (h)
                                                : lm_safetensors_bf16_to_f32 (h);
        }
      return LM_OK;
    default:
      return LM_ERR_INVALID_ARGUMENT;
    }
}

/* gguf-writer.c: GGUF v3 serialisation with streamed tensor data.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "gguf-writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *key;
  uint8_t *bytes;     /* the value, already serialised (type tag included) */
  size_t n_bytes;
} WriterKv;

typedef struct {
  char *name;
  LmTensorType type;
  uint32_t n_dims;
  uint64_t ne[4];
  uint64_t offset, n_bytes;
} WriterTensor;

struct GgufWriter {
  uint32_t alignment;
  WriterKv *kv;
  size_t n_kv, cap_kv;
  WriterTensor *tensors;
  size_t n_tensors, cap_tensors;
  uint64_t data_size;          /* running end of the data section */
  FILE *out;
  char *path;
  uint64_t cur_tensor, cur_written;   /* streaming position */
  bool failed;
};

/* ---- a growable byte buffer for serialising values ---- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} Buf;

static void
buf_put (Buf *b, const void *data, size_t n)
{
  if (b->oom)
    return;
  if (b->n + n > b->cap)
    {
      size_t cap = (b->n + n) * 2 + 64;
      uint8_t *p = realloc (b->p, cap);
      if (p == NULL)
        {
          b->oom = true;
          return;
        }
      b->p = p;
      b->cap = cap;
    }
  memcpy (b->p + b->n, data, n);
  b->n += n;
}

static void buf_u32 (Buf *b, uint32_t v) { buf_put (b, &v, 4); }
static void buf_u64 (Buf *b, uint64_t v) { buf_put (b, &v, 8); }

static void
buf_str (Buf *b, const char *s, size_t n)
{
  buf_u64 (b, n);
  buf_put (b, s, n);
}

GgufWriter *
lm_gguf_writer_new (void)
{
  GgufWriter *w = calloc (1, sizeof *w);
  if (w)
    w->alignment = 32;
  return w;
}

void
lm_gguf_writer_free (GgufWriter *w)
{
  if (w == NULL)
    return;
  if (w->out)
    fclose (w->out);
  for (size_t i = 0; i < w->n_kv; i++)
    {
      free (w->kv[i].key);
      free (w->kv[i].bytes);
    }
  for (size_t i = 0; i < w->n_tensors; i++)
    free (w->tensors[i].name);
  free (w->kv);
  free (w->tensors);
  free (w->path);
  free (w);
}

static LmStatus
add_kv (GgufWriter *w, const char *key, Buf *value)
{
  if (w == NULL || key == NULL || *key == 0 || w->out != NULL)
    {
      free (value->p);
      return LM_ERR_INVALID_ARGUMENT;
    }
  if (value->oom)
    {
      free (value->p);
      return LM_ERR_NO_MEMORY;
    }
  for (size_t i = 0; i < w->n_kv; i++)
    if (strcmp (w->kv[i].key, key) == 0)
      {
        free (value->p);
        return LM_ERR_INVALID_ARGUMENT;
      }
  if (w->n_kv == w->cap_kv)
    {
      size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
      WriterKv *kv = realloc (w->kv, cap * sizeof *kv);
      if (kv == NULL)
        {
          free (value->p);
          return LM_ERR_NO_MEMORY;
        }
      w->kv = kv;
      w->cap_kv = cap;
    }
  char *k = strdup (key);
  if (k == NULL)
    {
      free (value->p);
      return LM_ERR_NO_MEMORY;
    }
  w->kv[w->n_kv++] = (WriterKv) { k, value->p, value->n };
  return LM_OK;
}

static LmStatus
add_scalar (GgufWriter *w, const char *key, GgufValueType type, const void *v, size_t n)
{
  Buf b = { 0 };
  buf_u32 (&b, type);
  buf_put (&b, v, n);
  return add_kv (w, key, &b);
}

LmStatus lm_gguf_writer_add_u32 (GgufWriter *w, const char *key, uint32_t v)
{ return add_scalar (w, key, LM_GGUF_TYPE_UINT32, &v, 4); }
LmStatus lm_gguf_writer_add_i32 (GgufWriter *w, const char *key, int32_t v)
{ return add_scalar (w, key, LM_GGUF_TYPE_INT32, &v, 4); }
LmStatus lm_gguf_writer_add_u64 (GgufWriter *w, const char *key, uint64_t v)
{ return add_scalar (w, key, LM_GGUF_TYPE_UINT64, &v, 8); }
LmStatus lm_gguf_writer_add_f32 (GgufWriter *w, const char *key, float v)
{ return add_scalar (w, key, LM_GGUF_TYPE_FLOAT32, &v, 4); }

LmStatus
lm_gguf_writer_add_bool (GgufWriter *w, const char *key, bool v)
{
  uint8_t b = v ? 1 : 0;
  return add_scalar (w, key, LM_GGUF_TYPE_BOOL, &b, 1);
}

LmStatus
lm_gguf_writer_add_string (GgufWriter *w, const char *key, const char *value)
{
  if (value == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  Buf b = { 0 };
  buf_u32 (&b, LM_GGUF_TYPE_STRING);
  buf_str (&b, value, strlen (value));
  return add_kv (w, key, &b);
}

static size_t
value_size (GgufValueType t)
{
  switch (t)
    {
    case LM_GGUF_TYPE_UINT8: case LM_GGUF_TYPE_INT8: case LM_GGUF_TYPE_BOOL: return 1;
    case LM_GGUF_TYPE_UINT16: case LM_GGUF_TYPE_INT16: return 2;
    case LM_GGUF_TYPE_UINT32: case LM_GGUF_TYPE_INT32: case LM_GGUF_TYPE_FLOAT32: return 4;
    case LM_GGUF_TYPE_UINT64: case LM_GGUF_TYPE_INT64: case LM_GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

LmStatus
lm_gguf_writer_add_array (GgufWriter *w, const char *key, GgufValueType elem_type,
                       const void *data, uint64_t count)
{
  size_t es = value_size (elem_type);
  if (es == 0 || (data == NULL && count > 0) || count > SIZE_MAX / es)
    return LM_ERR_INVALID_ARGUMENT;
  Buf b = { 0 };
  buf_u32 (&b, LM_GGUF_TYPE_ARRAY);
  buf_u32 (&b, elem_type);
  buf_u64 (&b, count);
  buf_put (&b, data, count * es);
  return add_kv (w, key, &b);
}

LmStatus
lm_gguf_writer_add_string_array (GgufWriter *w, const char *key, const char *const *strings,
                              uint64_t count)
{
  if (strings == NULL && count > 0)
    return LM_ERR_INVALID_ARGUMENT;
  Buf b = { 0 };
  buf_u32 (&b, LM_GGUF_TYPE_ARRAY);
  buf_u32 (&b, LM_GGUF_TYPE_STRING);
  buf_u64 (&b, count);
  for (uint64_t i = 0; i < count; i++)
    buf_str (&b, strings[i], strlen (strings[i]));
  return add_kv (w, key, &b);
}

LmStatus
lm_gguf_writer_set_alignment (GgufWriter *w, uint32_t alignment)
{
  if (w == NULL || alignment == 0 || (alignment & (alignment - 1)) != 0 || w->n_tensors > 0)
    return LM_ERR_INVALID_ARGUMENT;
  w->alignment = alignment;
  if (alignment == 32)
    return LM_OK;
  return lm_gguf_writer_add_u32 (w, "general.alignment", alignment);
}

static uint64_t
align_up (uint64_t x, uint32_t a)
{
  return (x + a - 1) / a * a;
}

LmStatus
lm_gguf_writer_add_tensor (GgufWriter *w, const char *name, LmTensorType type, uint32_t n_dims,
                        const uint64_t *ne)
{
  uint32_t bv, bb;
  if (w == NULL || name == NULL || *name == 0 || w->out != NULL || n_dims == 0 || n_dims > 4
      || ne == NULL || !lm_gguf_type_layout (type, &bv, &bb) || ne[0] % bv != 0)
    return LM_ERR_INVALID_ARGUMENT;
  uint64_t n_values = 1;
  for (uint32_t d = 0; d < n_dims; d++)
    if (ne[d] == 0 || __builtin_mul_overflow (n_values, ne[d], &n_values))
      return LM_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < w->n_tensors; i++)
    if (strcmp (w->tensors[i].name, name) == 0)
      return LM_ERR_INVALID_ARGUMENT;
  if (w->n_tensors == w->cap_tensors)
    {
      size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
      WriterTensor *t = realloc (w->tensors, cap * sizeof *t);
      if (t == NULL)
        return LM_ERR_NO_MEMORY;
      w->tensors = t;
      w->cap_tensors = cap;
    }
  WriterTensor *t = &w->tensors[w->n_tensors];
  memset (t, 0, sizeof *t);
  if ((t->name = strdup (name)) == NULL)
    return LM_ERR_NO_MEMORY;
  t->type = type;
  t->n_dims = n_dims;
  for (uint32_t d = 0; d < 4; d++)
    t->ne[d] = d < n_dims ? ne[d] : 1;
  t->n_bytes = n_values / bv * bb;
  t->offset = align_up (w->data_size, w->alignment);
  w->data_size = t->offset + t->n_bytes;
  w->n_tensors++;
  return LM_OK;
}

uint64_t
lm_gguf_writer_tensor_bytes (const GgufWriter *w, uint64_t index)
{
  return index < w->n_tensors ? w->tensors[index].n_bytes : 0;
}

static LmStatus
io_error (GgufWriter *w, char **error_out, const char *what)
{
  w->failed = true;
  if (error_out)
    {
      char buf[600];
      snprintf (buf, sizeof buf, "cannot %s %s: %s", what, w->path ? w->path : "file",
                strerror (errno));
      *error_out = strdup (buf);
    }
  return LM_ERR_IO;
}

static bool
write_zeros (FILE *f, uint64_t n)
{
  static const uint8_t zeros[64];
  while (n > 0)
    {
      size_t k = n < sizeof zeros ? (size_t) n : sizeof zeros;
      if (fwrite (zeros, 1, k, f) != k)
        return false;
      n -= k;
    }
  return true;
}

/* Serialises the header, the metadata and the tensor infos, padded to the
 * alignment: everything in front of the tensor data. */
static bool
serialize_header (const GgufWriter *w, Buf *b)
{
  buf_put (b, "GGUF", 4);
  buf_u32 (b, 3);
  buf_u64 (b, w->n_tensors);
  buf_u64 (b, w->n_kv);
  for (size_t i = 0; i < w->n_kv; i++)
    {
      buf_str (b, w->kv[i].key, strlen (w->kv[i].key));
      buf_put (b, w->kv[i].bytes, w->kv[i].n_bytes);
    }
  for (size_t i = 0; i < w->n_tensors; i++)
    {
      const WriterTensor *t = &w->tensors[i];
      buf_str (b, t->name, strlen (t->name));
      buf_u32 (b, t->n_dims);
      for (uint32_t d = 0; d < t->n_dims; d++)
        buf_u64 (b, t->ne[d]);
      buf_u32 (b, t->type);
      buf_u64 (b, t->offset);
    }
  size_t pad = (size_t) (align_up (b->n, w->alignment) - b->n);
  for (size_t i = 0; i < pad; i++)
    buf_put (b, "", 1);
  return !b->oom;
}

LmStatus
lm_gguf_writer_sizes (const GgufWriter *w, uint64_t *header_bytes, uint64_t *file_bytes)
{
  if (w == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  Buf b = { 0 };
  bool ok = serialize_header (w, &b);
  free (b.p);
  if (!ok)
    return LM_ERR_NO_MEMORY;
  if (header_bytes)
    *header_bytes = b.n;
  if (file_bytes)
    *file_bytes = b.n + align_up (w->data_size, w->alignment);
  return LM_OK;
}

LmStatus
lm_gguf_writer_begin (GgufWriter *w, const char *path, char **error_out)
{
  if (w == NULL || path == NULL || w->out != NULL)
    return LM_ERR_INVALID_ARGUMENT;
  free (w->path);
  w->path = strdup (path);
  Buf b = { 0 };
  if (!serialize_header (w, &b))
    {
      free (b.p);
      return LM_ERR_NO_MEMORY;
    }
  w->out = fopen (path, "wb");
  if (w->out == NULL)
    {
      free (b.p);
      return io_error (w, error_out, "create");
    }
  setvbuf (w->out, NULL, _IOFBF, 1 << 20);
  bool ok = fwrite (b.p, 1, b.n, w->out) == b.n;
  free (b.p);
  w->cur_tensor = 0;
  w->cur_written = 0;
  return ok ? LM_OK : io_error (w, error_out, "write");
}

LmStatus
lm_gguf_writer_write (GgufWriter *w, const void *data, size_t n)
{
  if (w == NULL || w->out == NULL || w->failed)
    return LM_ERR_INVALID_ARGUMENT;
  const uint8_t *p = data;
  while (n > 0)
    {
      if (w->cur_tensor >= w->n_tensors)
        return LM_ERR_INVALID_ARGUMENT;   /* more bytes than declared */
      const WriterTensor *t = &w->tensors[w->cur_tensor];
      uint64_t room = t->n_bytes - w->cur_written;
      size_t k = n < room ? n : (size_t) room;
      if (fwrite (p, 1, k, w->out) != k)
        return io_error (w, NULL, "write");
      p += k;
      n -= k;
      w->cur_written += k;
      if (w->cur_written == t->n_bytes)
        {
          /* pad up to the next tensor (or the end of the data section) */
          uint64_t end = t->offset + t->n_bytes;
          if (!write_zeros (w->out, align_up (end, w->alignment) - end))
            return io_error (w, NULL, "write");
          w->cur_tensor++;
          w->cur_written = 0;
        }
    }
  return LM_OK;
}

LmStatus
lm_gguf_writer_finish (GgufWriter *w, char **error_out)
{
  if (w == NULL || w->out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  if (w->failed)
    return io_error (w, error_out, "write");
  if (w->cur_tensor != w->n_tensors)
    {
      if (error_out)
        {
          char buf[300];
          snprintf (buf, sizeof buf, "tensor data incomplete: %llu of %zu tensors written",
                    (unsigned long long) w->cur_tensor, w->n_tensors);
          *error_out = strdup (buf);
        }
      return LM_ERR_INVALID_ARGUMENT;
    }
  int rc = fclose (w->out);
  w->out = NULL;
  if (rc != 0)
    return io_error (w, error_out, "close");
  return LM_OK;
}

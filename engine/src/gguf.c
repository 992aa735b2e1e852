/* gguf.c: a bounds-checked, memory-mapped GGUF v2/v3 reader.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every read goes through a cursor that knows the end of the buffer, every
 * count is checked against the bytes left before anything is allocated, and
 * every size product is overflow-checked, so a hostile file can only produce
 * an error message.
 */
#include "gguf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io-util.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_DIMS 4u
#define GGUF_MAX_ARRAY_DEPTH 3  /* arrays of arrays of arrays, no deeper */
#define GGUF_MAX_NAME 256u      /* tensor names; ggml itself allows 63 */

/* Open-addressing index from names to positions; slots hold position + 1. */
typedef struct {
  uint64_t *slots;
  uint64_t mask;
} NameIndex;

typedef struct {
  GgufString key;
  GgufValueType type;
  union {
    uint64_t u;
    int64_t i;
    double f;
    bool b;
    GgufString s;
  } v;
  /* arrays */
  GgufValueType elem_type;
  uint64_t count;
  void *elems;          /* aligned copy of numeric elements */
  GgufString *strings;  /* string arrays */
} GgufKv;

struct GgufFile {
  const uint8_t *base;
  size_t size;
  bool mapped;
  uint32_t version;
  uint32_t alignment;
  uint64_t data_offset;
  uint64_t n_kv;
  GgufKv *kv;
  uint64_t n_tensors;
  GgufTensorInfo *tensors;
  NameIndex kv_index;
  NameIndex tensor_index;
};

typedef struct {
  const uint8_t *base;
  size_t size;
  size_t pos;
  char err[512];
  LmStatus status;   /* set before fail() when the error is not LM_ERR_FORMAT */
} Cursor;

static bool __attribute__ ((format (printf, 2, 3)))
fail (Cursor *c, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (c->err, sizeof c->err, fmt, ap);
  va_end (ap);
  return false;
}

static bool
need (Cursor *c, uint64_t n, const char *what)
{
  if (n > c->size - c->pos)
    return fail (c, "truncated: %s at byte %zu needs %llu bytes, only %zu left",
                 what, c->pos, (unsigned long long) n, c->size - c->pos);
  return true;
}

static bool
read_bytes (Cursor *c, void *dst, size_t n, const char *what)
{
  if (!need (c, n, what))
    return false;
  memcpy (dst, c->base + c->pos, n);
  c->pos += n;
  return true;
}

static bool
read_u32 (Cursor *c, uint32_t *out, const char *what)
{
  return read_bytes (c, out, 4, what);
}

static bool
read_u64 (Cursor *c, uint64_t *out, const char *what)
{
  return read_bytes (c, out, 8, what);
}

static bool
read_string (Cursor *c, GgufString *out, const char *what)
{
  uint64_t len;
  if (!read_u64 (c, &len, what))
    return false;
  if (!need (c, len, what))
    return false;
  out->data = (const char *) c->base + c->pos;
  out->len = len;
  c->pos += len;
  return true;
}

/* Size in bytes of a fixed-size value type; 0 for string/array/unknown. */
static size_t
scalar_size (GgufValueType t)
{
  switch (t)
    {
    case LM_GGUF_TYPE_UINT8: case LM_GGUF_TYPE_INT8: case LM_GGUF_TYPE_BOOL: return 1;
    case LM_GGUF_TYPE_UINT16: case LM_GGUF_TYPE_INT16: return 2;
    case LM_GGUF_TYPE_UINT32: case LM_GGUF_TYPE_INT32: case LM_GGUF_TYPE_FLOAT32: return 4;
    case LM_GGUF_TYPE_UINT64: case LM_GGUF_TYPE_INT64: case LM_GGUF_TYPE_FLOAT64: return 8;
    case LM_GGUF_TYPE_STRING: case LM_GGUF_TYPE_ARRAY: return 0;
    }
  return 0;
}

static bool
valid_value_type (uint32_t t)
{
  return t <= LM_GGUF_TYPE_FLOAT64;
}

const char *
lm_gguf_value_type_name (GgufValueType type)
{
  static const char *const names[] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array",
    "u64", "i64", "f64",
  };
  return (unsigned) type < sizeof names / sizeof names[0] ? names[type] : "?";
}

/* Stores a scalar's value, widened, into @kv->v. */
static bool
read_scalar (Cursor *c, GgufKv *kv, const char *what)
{
  uint8_t raw[8] = { 0 };
  size_t n = scalar_size (kv->type);
  if (!read_bytes (c, raw, n, what))
    return false;
  switch (kv->type)
    {
    case LM_GGUF_TYPE_UINT8: kv->v.u = raw[0]; break;
    case LM_GGUF_TYPE_INT8: kv->v.i = (int8_t) raw[0]; break;
    case LM_GGUF_TYPE_UINT16: { uint16_t x; memcpy (&x, raw, 2); kv->v.u = x; break; }
    case LM_GGUF_TYPE_INT16: { int16_t x; memcpy (&x, raw, 2); kv->v.i = x; break; }
    case LM_GGUF_TYPE_UINT32: { uint32_t x; memcpy (&x, raw, 4); kv->v.u = x; break; }
    case LM_GGUF_TYPE_INT32: { int32_t x; memcpy (&x, raw, 4); kv->v.i = x; break; }
    case LM_GGUF_TYPE_FLOAT32: { float x; memcpy (&x, raw, 4); kv->v.f = x; break; }
    case LM_GGUF_TYPE_UINT64: memcpy (&kv->v.u, raw, 8); break;
    case LM_GGUF_TYPE_INT64: memcpy (&kv->v.i, raw, 8); break;
    case LM_GGUF_TYPE_FLOAT64: memcpy (&kv->v.f, raw, 8); break;
    case LM_GGUF_TYPE_BOOL:
      if (raw[0] > 1)
        return fail (c, "%s: bool value %u is neither 0 nor 1", what, raw[0]);
      kv->v.b = raw[0] != 0;
      break;
    case LM_GGUF_TYPE_STRING: case LM_GGUF_TYPE_ARRAY: break;
    }
  return true;
}

/* Skips over one array body (element type already read), validating it;
 * used for arrays nested inside arrays, which we do not expose element-wise. */
static bool
skip_array_body (Cursor *c, int depth, const char *what)
{
  uint32_t et;
  uint64_t count;
  if (depth > GGUF_MAX_ARRAY_DEPTH)
    return fail (c, "%s: arrays nested deeper than %d levels", what, GGUF_MAX_ARRAY_DEPTH);
  if (!read_u32 (c, &et, what))
    return false;
  if (!valid_value_type (et))
    return fail (c, "%s: unknown array element type %u", what, et);
  if (!read_u64 (c, &count, what))
    return false;
  size_t es = scalar_size (et);
  if (es > 0)
    {
      if (count > (c->size - c->pos) / es)
        return fail (c, "truncated: %s: %llu elements of %zu bytes exceed the %zu bytes left",
                     what, (unsigned long long) count, es, c->size - c->pos);
      c->pos += count * es;
      return true;
    }
  for (uint64_t i = 0; i < count; i++)
    {
      if (et == LM_GGUF_TYPE_STRING)
        {
          GgufString s;
          if (!read_string (c, &s, what))
            return false;
        }
      else if (!skip_array_body (c, depth + 1, what))
        return false;
    }
  return true;
}

static bool
read_array (Cursor *c, GgufKv *kv, const char *what)
{
  uint32_t et;
  if (!read_u32 (c, &et, what))
    return false;
  if (!valid_value_type (et))
    return fail (c, "%s: unknown array element type %u", what, et);
  kv->elem_type = et;
  if (!read_u64 (c, &kv->count, what))
    return false;
  size_t es = scalar_size (et);
  if (es > 0)
    {
      if (kv->count > (c->size - c->pos) / es)
        return fail (c, "truncated: %s: %llu elements of %zu bytes exceed the %zu bytes left",
                     what, (unsigned long long) kv->count, es, c->size - c->pos);
      size_t bytes = kv->count * es;
      kv->elems = malloc (bytes ? bytes : 1);
      if (kv->elems == NULL)
        return c->status = LM_ERR_NO_MEMORY, fail (c, "%s: out of memory for %zu bytes", what, bytes);
      memcpy (kv->elems, c->base + c->pos, bytes);
      c->pos += bytes;
      return true;
    }
  if (et == LM_GGUF_TYPE_STRING)
    {
      /* Each string needs at least its 8-byte length. */
      if (kv->count > (c->size - c->pos) / 8)
        return fail (c, "truncated: %s: %llu strings cannot fit in the %zu bytes left",
                     what, (unsigned long long) kv->count, c->size - c->pos);
      kv->strings = calloc (kv->count ? kv->count : 1, sizeof *kv->strings);
      if (kv->strings == NULL)
        return c->status = LM_ERR_NO_MEMORY, fail (c, "%s: out of memory for %llu strings", what,
                     (unsigned long long) kv->count);
      for (uint64_t i = 0; i < kv->count; i++)
        if (!read_string (c, &kv->strings[i], what))
          return false;
      return true;
    }
  for (uint64_t i = 0; i < kv->count; i++)
    if (!skip_array_body (c, 2, what))
      return false;
  return true;
}

static bool
key_equals (GgufString a, GgufString b)
{
  return a.len == b.len && memcmp (a.data, b.data, a.len) == 0;
}

static uint64_t
hash_bytes (const char *data, uint64_t len)
{
  uint64_t h = 0xcbf29ce484222325ull;  /* FNV-1a */
  for (uint64_t i = 0; i < len; i++)
    h = (h ^ (uint8_t) data[i]) * 0x100000001b3ull;
  return h;
}

static bool
index_init (NameIndex *ix, uint64_t n)
{
  uint64_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  ix->slots = calloc (cap, sizeof *ix->slots);
  ix->mask = cap - 1;
  return ix->slots != NULL;
}

/* Looks @name up; the names themselves live in the caller's array, reached
 * through @name_at. Returns the position, or -1 and the free slot in @slot. */
static int64_t
index_lookup (const NameIndex *ix, GgufString name, GgufString (*name_at) (const void *, uint64_t),
              const void *owner, uint64_t *slot)
{
  uint64_t h = hash_bytes (name.data, name.len) & ix->mask;
  while (ix->slots[h] != 0)
    {
      if (key_equals (name_at (owner, ix->slots[h] - 1), name))
        return (int64_t) (ix->slots[h] - 1);
      h = (h + 1) & ix->mask;
    }
  if (slot)
    *slot = h;
  return -1;
}

static GgufString
kv_name_at (const void *owner, uint64_t i)
{
  return ((const GgufFile *) owner)->kv[i].key;
}

static GgufString
tensor_name_at (const void *owner, uint64_t i)
{
  return ((const GgufFile *) owner)->tensors[i].name;
}

/* Adds entry @pos named @name; false when the name is already there. */
static bool
index_insert (NameIndex *ix, GgufString name, uint64_t pos,
              GgufString (*name_at) (const void *, uint64_t), const void *owner)
{
  uint64_t slot = 0;
  if (index_lookup (ix, name, name_at, owner, &slot) >= 0)
    return false;
  ix->slots[slot] = pos + 1;
  return true;
}

static bool
read_kv (Cursor *c, GgufFile *f, uint64_t index)
{
  GgufKv *kv = &f->kv[index];
  char what[128];
  uint32_t type;

  snprintf (what, sizeof what, "metadata entry %llu key", (unsigned long long) index);
  if (!read_string (c, &kv->key, what))
    return false;
  if (kv->key.len == 0)
    return fail (c, "metadata entry %llu has an empty key", (unsigned long long) index);
  snprintf (what, sizeof what, "metadata '%.*s'", (int) (kv->key.len > 80 ? 80 : kv->key.len),
            kv->key.data);
  if (!index_insert (&f->kv_index, kv->key, index, kv_name_at, f))
    return fail (c, "%s appears twice", what);
  if (!read_u32 (c, &type, what))
    return false;
  if (!valid_value_type (type))
    return fail (c, "%s has unknown value type %u", what, type);
  kv->type = type;
  if (type == LM_GGUF_TYPE_STRING)
    return read_string (c, &kv->v.s, what);
  if (type == LM_GGUF_TYPE_ARRAY)
    return read_array (c, kv, what);
  return read_scalar (c, kv, what);
}

/* Block geometry of the tensor types this runtime reads. */
bool
lm_gguf_type_layout (LmTensorType type, uint32_t *block_values, uint32_t *block_bytes)
{
  uint32_t bv, bb;
  switch (type)
    {
    case LM_TYPE_F32: bv = 1; bb = 4; break;
    case LM_TYPE_F16: bv = 1; bb = 2; break;
    case LM_TYPE_BF16: bv = 1; bb = 2; break;
    case LM_TYPE_Q4_0: bv = 32; bb = 18; break;
    case LM_TYPE_Q4_1: bv = 32; bb = 20; break;
    case LM_TYPE_Q5_0: bv = 32; bb = 22; break;
    case LM_TYPE_Q5_1: bv = 32; bb = 24; break;
    case LM_TYPE_Q8_0: bv = 32; bb = 34; break;
    case LM_TYPE_Q2_K: bv = 256; bb = 84; break;
    case LM_TYPE_Q3_K: bv = 256; bb = 110; break;
    case LM_TYPE_Q4_K: bv = 256; bb = 144; break;
    case LM_TYPE_Q5_K: bv = 256; bb = 176; break;
    case LM_TYPE_Q6_K: bv = 256; bb = 210; break;
    default: return false;
    }
  if (block_values)
    *block_values = bv;
  if (block_bytes)
    *block_bytes = bb;
  return true;
}

const char *
lm_gguf_type_name (LmTensorType type)
{
  switch (type)
    {
    case LM_TYPE_F32: return "F32";
    case LM_TYPE_F16: return "F16";
    case LM_TYPE_BF16: return "BF16";
    case LM_TYPE_Q4_0: return "Q4_0";
    case LM_TYPE_Q4_1: return "Q4_1";
    case LM_TYPE_Q5_0: return "Q5_0";
    case LM_TYPE_Q5_1: return "Q5_1";
    case LM_TYPE_Q8_0: return "Q8_0";
    case LM_TYPE_Q2_K: return "Q2_K";
    case LM_TYPE_Q3_K: return "Q3_K";
    case LM_TYPE_Q4_K: return "Q4_K";
    case LM_TYPE_Q5_K: return "Q5_K";
    case LM_TYPE_Q6_K: return "Q6_K";
    }
  return "?";
}

/* Names of ggml types we recognise but cannot read, for the error message. */
static const char *
unsupported_type_name (uint32_t t)
{
  static const char *const names[] = {
    [9] = "Q8_1", [15] = "Q8_K", [16] = "IQ2_XXS", [17] = "IQ2_XS",
    [18] = "IQ3_XXS", [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S", [22] = "IQ2_S",
    [23] = "IQ4_XS", [24] = "I8", [25] = "I16", [26] = "I32", [27] = "I64", [28] = "F64",
    [29] = "IQ1_M", [34] = "TQ1_0", [35] = "TQ2_0", [39] = "MXFP4",
  };
  if (t < sizeof names / sizeof names[0] && names[t])
    return names[t];
  return "unknown";
}

static bool
mul_overflows (uint64_t a, uint64_t b, uint64_t *out)
{
  return __builtin_mul_overflow (a, b, out);
}

static bool
read_tensor_info (Cursor *c, GgufFile *f, uint64_t index)
{
  GgufTensorInfo *t = &f->tensors[index];
  char what[160];
  uint32_t type;
  uint64_t n_values = 1;

  snprintf (what, sizeof what, "tensor info %llu name", (unsigned long long) index);
  if (!read_string (c, &t->name, what))
    return false;
  if (t->name.len == 0 || t->name.len >= GGUF_MAX_NAME)
    return fail (c, "tensor %llu: name length %llu is not in 1..%u",
                 (unsigned long long) index, (unsigned long long) t->name.len, GGUF_MAX_NAME - 1);
  snprintf (what, sizeof what, "tensor '%.*s'", (int) t->name.len, t->name.data);
  if (!index_insert (&f->tensor_index, t->name, index, tensor_name_at, f))
    return fail (c, "%s appears twice", what);
  if (!read_u32 (c, &t->n_dims, what))
    return false;
  if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
    return fail (c, "%s has %u dimensions (1..%u allowed)", what, t->n_dims, GGUF_MAX_DIMS);
  for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
    t->ne[d] = 1;
  for (uint32_t d = 0; d < t->n_dims; d++)
    {
      if (!read_u64 (c, &t->ne[d], what))
        return false;
      if (t->ne[d] == 0 || t->ne[d] > (uint64_t) INT64_MAX)
        return fail (c, "%s: dimension %u has invalid size %llu", what, d,
                     (unsigned long long) t->ne[d]);
      if (mul_overflows (n_values, t->ne[d], &n_values) || n_values > (uint64_t) INT64_MAX)
        return fail (c, "%s: element count overflows", what);
    }
  if (!read_u32 (c, &type, what))
    return false;
  uint32_t bv, bb;
  if (!lm_gguf_type_layout ((LmTensorType) type, &bv, &bb))
    return c->status = LM_ERR_UNSUPPORTED, fail (c, "%s has tensor type %u (%s), which this runtime cannot read", what, type,
                 unsupported_type_name (type));
  t->type = (LmTensorType) type;
  if (t->ne[0] % bv != 0)
    return fail (c, "%s: row length %llu is not a multiple of the %s block size %u", what,
                 (unsigned long long) t->ne[0], lm_gguf_type_name (t->type), bv);
  if (mul_overflows (n_values / bv, bb, &t->n_bytes))
    return fail (c, "%s: byte size overflows", what);
  if (!read_u64 (c, &t->offset, what))
    return false;
  if (t->offset % f->alignment != 0)
    return fail (c, "%s: offset %llu is not a multiple of the alignment %u", what,
                 (unsigned long long) t->offset, f->alignment);
  return true;
}

static int
compare_by_offset (const void *a, const void *b)
{
  const GgufTensorInfo *const *x = a, *const *y = b;
  return ((*x)->offset > (*y)->offset) - ((*x)->offset < (*y)->offset);
}

/* Places every tensor inside the data section and rejects overlaps. */
static bool
place_tensors (Cursor *c, GgufFile *f)
{
  uint64_t data_size = f->size - f->data_offset;
  for (uint64_t i = 0; i < f->n_tensors; i++)
    {
      GgufTensorInfo *t = &f->tensors[i];
      if (t->offset > data_size || t->n_bytes > data_size - t->offset)
        return fail (c, "truncated: tensor '%.*s' needs bytes %llu..%llu of the data section, "
                     "which has %llu", (int) t->name.len, t->name.data,
                     (unsigned long long) t->offset,
                     (unsigned long long) t->offset + t->n_bytes, (unsigned long long) data_size);
      t->data = f->base + f->data_offset + t->offset;
    }
  if (f->n_tensors < 2)
    return true;
  GgufTensorInfo **order = malloc (f->n_tensors * sizeof *order);
  if (order == NULL)
    return c->status = LM_ERR_NO_MEMORY, fail (c, "out of memory sorting %llu tensors", (unsigned long long) f->n_tensors);
  for (uint64_t i = 0; i < f->n_tensors; i++)
    order[i] = &f->tensors[i];
  qsort (order, f->n_tensors, sizeof *order, compare_by_offset);
  bool ok = true;
  for (uint64_t i = 0; ok && i + 1 < f->n_tensors; i++)
    if (order[i]->offset + order[i]->n_bytes > order[i + 1]->offset)
      ok = fail (c, "tensors '%.*s' and '%.*s' overlap in the data section",
                 (int) order[i]->name.len, order[i]->name.data,
                 (int) order[i + 1]->name.len, order[i + 1]->name.data);
  free (order);
  return ok;
}

static bool
read_alignment (Cursor *c, GgufFile *f)
{
  f->alignment = GGUF_DEFAULT_ALIGNMENT;
  int64_t k = lm_gguf_find_key (f, "general.alignment");
  if (k < 0)
    return true;
  if (f->kv[k].type != LM_GGUF_TYPE_UINT32)
    return fail (c, "general.alignment has type %s, expected u32",
                 lm_gguf_value_type_name (f->kv[k].type));
  uint64_t a = f->kv[k].v.u;
  if (a == 0 || (a & (a - 1)) != 0)
    return fail (c, "general.alignment %llu is not a power of two", (unsigned long long) a);
  f->alignment = (uint32_t) a;
  return true;
}

static bool
read_header (Cursor *c, GgufFile *f)
{
  char magic[4];
  if (!read_bytes (c, magic, 4, "magic"))
    return false;
  if (memcmp (magic, GGUF_MAGIC, 4) != 0)
    return fail (c, "not a GGUF file (magic %02x %02x %02x %02x)", (uint8_t) magic[0],
                 (uint8_t) magic[1], (uint8_t) magic[2], (uint8_t) magic[3]);
  if (!read_u32 (c, &f->version, "version"))
    return false;
  if (f->version == 1)
    return fail (c, "GGUF version 1 is not supported (only 2 and 3)");
  if (f->version > 0xffff)
    return fail (c, "GGUF version 0x%08x looks byte-swapped: big-endian files are not supported",
                 f->version);
  if (f->version != 2 && f->version != 3)
    return fail (c, "GGUF version %u is not supported (only 2 and 3)", f->version);
  if (!read_u64 (c, &f->n_tensors, "tensor count") || !read_u64 (c, &f->n_kv, "metadata count"))
    return false;
  /* A key-value pair takes at least 8 + 1 + 4 + 1 bytes and a tensor info at
   * least 8 + 1 + 4 + 8 + 4 + 8: cap both counts before allocating. */
  size_t left = c->size - c->pos;
  if (f->n_kv > left / 14)
    return fail (c, "metadata count %llu cannot fit in a %zu-byte file",
                 (unsigned long long) f->n_kv, c->size);
  if (f->n_tensors > left / 33)
    return fail (c, "tensor count %llu cannot fit in a %zu-byte file",
                 (unsigned long long) f->n_tensors, c->size);
  return true;
}

static bool
parse (Cursor *c, GgufFile *f)
{
  if (!read_header (c, f))
    return false;
  f->kv = calloc (f->n_kv ? f->n_kv : 1, sizeof *f->kv);
  f->tensors = calloc (f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
  if (f->kv == NULL || f->tensors == NULL || !index_init (&f->kv_index, f->n_kv)
      || !index_init (&f->tensor_index, f->n_tensors))
    return c->status = LM_ERR_NO_MEMORY, fail (c, "out of memory for %llu metadata entries and %llu tensors",
                 (unsigned long long) f->n_kv, (unsigned long long) f->n_tensors);
  for (uint64_t i = 0; i < f->n_kv; i++)
    if (!read_kv (c, f, i))
      return false;
  if (!read_alignment (c, f))
    return false;
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (!read_tensor_info (c, f, i))
      return false;
  uint64_t pad = (f->alignment - c->pos % f->alignment) % f->alignment;
  if (f->n_tensors > 0 && !need (c, pad, "padding before the data section"))
    return false;
  f->data_offset = c->pos + (pad > c->size - c->pos ? c->size - c->pos : pad);
  return place_tensors (c, f);
}

static void
free_contents (GgufFile *f)
{
  if (f->kv)
    for (uint64_t i = 0; i < f->n_kv; i++)
      {
        free (f->kv[i].elems);
        free (f->kv[i].strings);
      }
  free (f->kv);
  free (f->tensors);
  free (f->kv_index.slots);
  free (f->tensor_index.slots);
}

static LmStatus
open_buffer (const void *data, size_t size, bool mapped, GgufFile **out, char **error_out)
{
  GgufFile *f = calloc (1, sizeof *f);
  if (f == NULL)
    return LM_ERR_NO_MEMORY;
  f->base = data;
  f->size = size;
  f->mapped = mapped;
  Cursor c = { .base = data, .size = size };
  if (!parse (&c, f))
    {
      if (error_out)
        *error_out = strdup (c.err);
      free_contents (f);
      free (f);
      return c.status != LM_OK ? c.status : LM_ERR_FORMAT;
    }
  *out = f;
  return LM_OK;
}

LmStatus
lm_gguf_open_memory (const void *data, size_t size, GgufFile **out, char **error_out)
{
  if (out == NULL || (data == NULL && size > 0))
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  return open_buffer (data ? data : "", size, false, out, error_out);
}

static LmStatus
parse_mapped (const void *data, size_t size, bool mapped, void **out, char **error_out)
{
  return open_buffer (data, size, mapped, (GgufFile **) out, error_out);
}

LmStatus
lm_gguf_open (const char *path, GgufFile **out, char **error_out)
{
  if (path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  return lm_io_open_mapped (path, parse_mapped, (void **) out, error_out);
}

void
lm_gguf_close (GgufFile *file)
{
  if (file == NULL)
    return;
  if (file->mapped)
    lm_io_unmap_file ((void *) file->base, file->size);
  free_contents (file);
  free (file);
}

uint32_t lm_gguf_version (const GgufFile *file) { return file->version; }
uint64_t lm_gguf_n_kv (const GgufFile *file) { return file->n_kv; }
uint64_t lm_gguf_n_tensors (const GgufFile *file) { return file->n_tensors; }
uint32_t lm_gguf_alignment (const GgufFile *file) { return file->alignment; }
uint64_t lm_gguf_data_offset (const GgufFile *file) { return file->data_offset; }

bool
lm_gguf_file_offset (const GgufFile *file, const void *p, uint64_t *offset)
{
  const uint8_t *q = p;
  if (!file->mapped || q < file->base || q >= file->base + file->size)
    return false;
  *offset = (uint64_t) (q - file->base);
  return true;
}

bool
lm_gguf_string_eq (GgufString s, const char *cstr)
{
  size_t n = strlen (cstr);
  return s.len == n && memcmp (s.data, cstr, n) == 0;
}

int64_t
lm_gguf_find_key (const GgufFile *file, const char *key)
{
  GgufString name = { key, strlen (key) };
  return index_lookup (&file->kv_index, name, kv_name_at, file, NULL);
}

GgufString
lm_gguf_key_name (const GgufFile *file, int64_t index)
{
  if (index < 0 || (uint64_t) index >= file->n_kv)
    return (GgufString) { "", 0 };
  return file->kv[index].key;
}

GgufValueType
lm_gguf_value_type (const GgufFile *file, int64_t index)
{
  if (index < 0 || (uint64_t) index >= file->n_kv)
    return (GgufValueType) -1;
  return file->kv[index].type;
}

static const GgufKv *
find_kv (const GgufFile *file, const char *key)
{
  int64_t i = lm_gguf_find_key (file, key);
  return i < 0 ? NULL : &file->kv[i];
}

static bool
is_signed_type (GgufValueType t)
{
  return t == LM_GGUF_TYPE_INT8 || t == LM_GGUF_TYPE_INT16 || t == LM_GGUF_TYPE_INT32
         || t == LM_GGUF_TYPE_INT64;
}

static bool
is_unsigned_type (GgufValueType t)
{
  return t == LM_GGUF_TYPE_UINT8 || t == LM_GGUF_TYPE_UINT16 || t == LM_GGUF_TYPE_UINT32
         || t == LM_GGUF_TYPE_UINT64;
}

/* Reads any integer key into [min, max] as a signed 128-bit-free pair:
 * unsigned values come back in @u, signed ones in @i. */
static bool
get_integer (const GgufFile *file, const char *key, bool *is_signed, uint64_t *u, int64_t *i)
{
  const GgufKv *kv = find_kv (file, key);
  if (kv == NULL)
    return false;
  if (is_unsigned_type (kv->type))
    {
      *is_signed = false;
      *u = kv->v.u;
      return true;
    }
  if (is_signed_type (kv->type))
    {
      *is_signed = true;
      *i = kv->v.i;
      return true;
    }
  return false;
}

bool
lm_gguf_get_u64 (const GgufFile *file, const char *key, uint64_t *out)
{
  bool sgn;
  uint64_t u = 0;
  int64_t i = 0;
  if (!get_integer (file, key, &sgn, &u, &i))
    return false;
  if (sgn && i < 0)
    return false;
  *out = sgn ? (uint64_t) i : u;
  return true;
}

bool
lm_gguf_get_u32 (const GgufFile *file, const char *key, uint32_t *out)
{
  uint64_t v;
  if (!lm_gguf_get_u64 (file, key, &v) || v > UINT32_MAX)
    return false;
  *out = (uint32_t) v;
  return true;
}

bool
lm_gguf_get_i32 (const GgufFile *file, const char *key, int32_t *out)
{
  bool sgn;
  uint64_t u = 0;
  int64_t i = 0;
  if (!get_integer (file, key, &sgn, &u, &i))
    return false;
  if (sgn ? (i < INT32_MIN || i > INT32_MAX) : u > INT32_MAX)
    return false;
  *out = sgn ? (int32_t) i : (int32_t) u;
  return true;
}

bool
lm_gguf_get_f32 (const GgufFile *file, const char *key, float *out)
{
  const GgufKv *kv = find_kv (file, key);
  if (kv == NULL || (kv->type != LM_GGUF_TYPE_FLOAT32 && kv->type != LM_GGUF_TYPE_FLOAT64))
    return false;
  *out = (float) kv->v.f;
  return true;
}

bool
lm_gguf_get_bool (const GgufFile *file, const char *key, bool *out)
{
  const GgufKv *kv = find_kv (file, key);
  if (kv == NULL || kv->type != LM_GGUF_TYPE_BOOL)
    return false;
  *out = kv->v.b;
  return true;
}

bool
lm_gguf_get_string (const GgufFile *file, const char *key, GgufString *out)
{
  const GgufKv *kv = find_kv (file, key);
  if (kv == NULL || kv->type != LM_GGUF_TYPE_STRING)
    return false;
  *out = kv->v.s;
  return true;
}

bool
lm_gguf_get_array (const GgufFile *file, const char *key, GgufValueType *elem_type,
                uint64_t *count, const void **data)
{
  const GgufKv *kv = find_kv (file, key);
  if (kv == NULL || kv->type != LM_GGUF_TYPE_ARRAY)
    return false;
  if (elem_type)
    *elem_type = kv->elem_type;
  if (count)
    *count = kv->count;
  if (data)
    *data = kv->elems;
  return true;
}

bool
lm_gguf_get_array_string (const GgufFile *file, const char *key, uint64_t i, GgufString *out)
{
  const GgufKv *kv = find_kv (file, key);
  if (kv == NULL || kv->type != LM_GGUF_TYPE_ARRAY || kv->elem_type != LM_GGUF_TYPE_STRING
      || i >= kv->count)
    return false;
  *out = kv->strings[i];
  return true;
}

const GgufTensorInfo *
lm_gguf_find_tensor (const GgufFile *file, const char *name)
{
  GgufString s = { name, strlen (name) };
  int64_t i = index_lookup (&file->tensor_index, s, tensor_name_at, file, NULL);
  return i < 0 ? NULL : &file->tensors[i];
}

const GgufTensorInfo *
lm_gguf_tensor (const GgufFile *file, uint64_t index)
{
  return index < file->n_tensors ? &file->tensors[index] : NULL;
}

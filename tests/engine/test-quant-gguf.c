/* test-quant-gguf.c: a minimal GGUF tensor locator for the quantisation tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "test-quant-gguf.h"

typedef struct {
  const guint8 *p;
  gsize len, pos;
} Cursor;

static guint64
read_le (Cursor *c, int bytes)
{
  guint64 v = 0;
  g_assert_cmpuint (c->pos + (gsize) bytes, <=, c->len);
  for (int i = 0; i < bytes; i++)
    v |= (guint64) c->p[c->pos + i] << (8 * i);
  c->pos += (gsize) bytes;
  return v;
}

static void
skip_string (Cursor *c)
{
  guint64 n = read_le (c, 8);
  g_assert_cmpuint (n, <=, c->len - c->pos);
  c->pos += n;
}

/* Size in bytes of a scalar GGUF value type; 0 for strings and arrays. */
static int
scalar_size (guint32 type)
{
  static const int sizes[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
  g_assert_cmpuint (type, <, G_N_ELEMENTS (sizes));
  return sizes[type];
}

static void
skip_value (Cursor *c, guint32 type)
{
  if (type == 8)
    skip_string (c);
  else if (type == 9)
    {
      guint32 elem = (guint32) read_le (c, 4);
      guint64 count = read_le (c, 8);
      for (guint64 i = 0; i < count; i++)
        skip_value (c, elem);
    }
  else
    c->pos += (gsize) scalar_size (type);
}

void
test_gguf_find_tensor (const guint8 *file, gsize len, const char *name, TestGgufTensor *out)
{
  Cursor c = { file, len, 0 };
  guint64 alignment = 32;

  g_assert_cmpmem (file, 4, "GGUF", 4);
  c.pos = 4;
  g_assert_cmpuint (read_le (&c, 4), ==, 3);
  guint64 n_tensors = read_le (&c, 8), n_kv = read_le (&c, 8);
  for (guint64 i = 0; i < n_kv; i++)
    {
      guint64 key_len = read_le (&c, 8);
      gboolean is_alignment = key_len == strlen ("general.alignment")
                              && memcmp (file + c.pos, "general.alignment", key_len) == 0;
      c.pos += key_len;
      guint32 type = (guint32) read_le (&c, 4);
      if (is_alignment)
        alignment = read_le (&c, 4);
      else
        skip_value (&c, type);
    }

  gboolean found = FALSE;
  guint64 offset = 0;
  for (guint64 i = 0; i < n_tensors; i++)
    {
      guint64 name_len = read_le (&c, 8);
      gboolean match = name_len == strlen (name) && memcmp (file + c.pos, name, name_len) == 0;
      c.pos += name_len;
      guint32 n_dims = (guint32) read_le (&c, 4);
      guint64 ne[4] = { 1, 1, 1, 1 };
      g_assert_cmpuint (n_dims, <=, 4);
      for (guint32 d = 0; d < n_dims; d++)
        ne[d] = read_le (&c, 8);
      guint32 type = (guint32) read_le (&c, 4);
      guint64 tensor_offset = read_le (&c, 8);
      if (match)
        {
          found = TRUE;
          out->type = type;
          memcpy (out->ne, ne, sizeof ne);
          offset = tensor_offset;
        }
    }
  g_assert_true (found);
  gsize data_start = (c.pos + alignment - 1) / alignment * alignment;
  g_assert_cmpuint (data_start + offset, <, len);
  out->data = file + data_start + offset;
}

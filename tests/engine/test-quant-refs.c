/* test-quant-refs.c: the reference files of tests/data/quant.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "quant.h"
#include "test-quant-refs.h"
#include "ts-test-util.h"

const char *const test_quant_ref_names[TEST_QUANT_N_REFS] = {
  "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K",
};
const LmTensorType test_quant_ref_types[TEST_QUANT_N_REFS] = {
  LM_TYPE_Q4_0, LM_TYPE_Q4_1, LM_TYPE_Q5_0, LM_TYPE_Q5_1, LM_TYPE_Q8_0, LM_TYPE_Q2_K, LM_TYPE_Q3_K,
};

typedef struct {
  const guint8 *p;
  gsize len, pos;
} Reader;

/* A copy of the next @bytes bytes of the file (g_malloc: aligned for any type). */
static gpointer
take (Reader *r, gsize bytes)
{
  g_assert_cmpuint (bytes, <=, r->len - r->pos);
  gpointer out = g_malloc (bytes ? bytes : 1);
  memcpy (out, r->p + r->pos, bytes);
  r->pos += bytes;
  return out;
}

static guint32
take_u32 (Reader *r)
{
  guint32 v;
  g_assert_cmpuint (r->pos + 4, <=, r->len);
  memcpy (&v, r->p + r->pos, 4);
  r->pos += 4;
  return GUINT32_FROM_LE (v);
}

void
test_quant_ref_load (const char *name, TestQuantRef *ref)
{
  g_autofree char *rel = g_strdup_printf ("quant/%s.bin", name);
  gsize len;
  g_autofree guint8 *file = ts_test_read_data (rel, &len);
  Reader r = { file, len, 0 };

  g_assert_cmpuint (len, >=, 32);
  g_assert_cmpmem (file, 4, "LMQR", 4);
  r.pos = 4;
  g_assert_cmpuint (take_u32 (&r), ==, 1);
  ref->type = (LmTensorType) take_u32 (&r);
  ref->n_cols = take_u32 (&r);
  ref->n_rows = take_u32 (&r);
  ref->n_src_rows = take_u32 (&r);
  ref->act_type = take_u32 (&r);
  ref->act_bytes = take_u32 (&r);
  ref->row_bytes = lm_row_bytes (ref->type, ref->n_cols);
  g_assert_cmpuint (ref->row_bytes, >, 0);
  g_assert_cmpuint (ref->n_src_rows, <=, ref->n_rows);

  gsize values = (gsize) ref->n_rows * ref->n_cols;
  ref->src = take (&r, (gsize) ref->n_src_rows * ref->n_cols * sizeof (float));
  ref->w = take (&r, ref->n_rows * ref->row_bytes);
  ref->deq = take (&r, values * sizeof (float));
  ref->x = take (&r, ref->n_cols * sizeof (float));
  ref->act = take (&r, ref->act_bytes);
  ref->dot_f32 = take (&r, ref->n_rows * sizeof (double));
  ref->mag_f32 = take (&r, ref->n_rows * sizeof (double));
  ref->dot_native = take (&r, ref->n_rows * sizeof (double));
  ref->mag_native = take (&r, ref->n_rows * sizeof (double));
  g_assert_cmpuint (r.pos, ==, len);
}

void
test_quant_ref_clear (TestQuantRef *ref)
{
  g_free (ref->src);
  g_free (ref->w);
  g_free (ref->deq);
  g_free (ref->x);
  g_free (ref->act);
  g_free (ref->dot_f32);
  g_free (ref->mag_f32);
  g_free (ref->dot_native);
  g_free (ref->mag_native);
  memset (ref, 0, sizeof *ref);
}

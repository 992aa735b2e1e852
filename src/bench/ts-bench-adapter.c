/* ts-bench-adapter.c: an adapter resized to another LoRA rank, for rank sweeps.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "gguf-writer.h"
#include "ts-bench-adapter.h"

static gboolean
writer_failed (GError **error, LmStatus st, char *msg)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot write the resized adapter: %s",
               msg != NULL ? msg : lm_status_message (st));
  free (msg);
  return FALSE;
}

/* The loader scales every module by alpha / rank: one alpha for all, so the
 * modules must share a scale (true of every adapter the loaders make). */
static LmStatus
declare (GgufWriter *w, const LmLora *lora, guint rank)
{
  LmStatus st = lm_gguf_writer_add_string (w, "general.type", "adapter");

  if (st == LM_OK)
    st = lm_gguf_writer_add_string (w, "adapter.type", "lora");
  if (st == LM_OK)
    st = lm_gguf_writer_add_f32 (w, "adapter.lora.alpha", lm_lora_module (lora, 0)->scale * (float) rank);
  for (size_t i = 0; st == LM_OK && i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (lora, i);
      g_autofree char *a = g_strconcat (m->name, ".lora_a", NULL);
      g_autofree char *b = g_strconcat (m->name, ".lora_b", NULL);
      uint64_t ne_a[2] = { m->d_in, rank }, ne_b[2] = { rank, m->d_out };

      st = lm_gguf_writer_add_tensor (w, a, LM_TYPE_F32, 2, ne_a);
      if (st == LM_OK)
        st = lm_gguf_writer_add_tensor (w, b, LM_TYPE_F32, 2, ne_b);
    }
  return st;
}

/* A: rank rows of d_in; B: d_out rows of rank; missing entries are zero. */
static LmStatus
write_module (GgufWriter *w, const LmLoraModule *m, guint rank)
{
  guint keep = MIN (rank, m->rank);
  g_autofree float *a = g_new0 (float, (gsize) rank * m->d_in);
  g_autofree float *b = g_new0 (float, (gsize) m->d_out * rank);
  LmStatus st;

  memcpy (a, m->a, (gsize) keep * m->d_in * sizeof (float));
  for (guint o = 0; o < m->d_out; o++)
    memcpy (b + (gsize) o * rank, m->b + (gsize) o * m->rank, keep * sizeof (float));
  st = lm_gguf_writer_write (w, a, (gsize) rank * m->d_in * sizeof (float));
  if (st == LM_OK)
    st = lm_gguf_writer_write (w, b, (gsize) m->d_out * rank * sizeof (float));
  return st;
}

gboolean
ts_bench_write_adapter_rank (const LmLora *lora, guint rank, const char *path, GError **error)
{
  GgufWriter *w;
  LmStatus st;
  char *msg = NULL;

  if (rank == 0 || rank > 4096 || lm_lora_n_modules (lora) == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "Cannot resize the adapter to rank %u", rank);
      return FALSE;
    }
  w = lm_gguf_writer_new ();
  st = declare (w, lora, rank);
  if (st == LM_OK)
    st = lm_gguf_writer_begin (w, path, &msg);
  for (size_t i = 0; st == LM_OK && i < lm_lora_n_modules (lora); i++)
    st = write_module (w, lm_lora_module (lora, i), rank);
  if (st == LM_OK)
    st = lm_gguf_writer_finish (w, &msg);
  lm_gguf_writer_free (w);
  return st == LM_OK || writer_failed (error, st, msg);
}

/* ts-bench-adapter.c: an adapter resized to another LoRA rank, for rank sweeps.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "lora-gguf.h"
#include "ts-bench-adapter.h"

static gboolean
writer_failed (GError **error, LmStatus st, char *msg)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot write the resized adapter: %s",
               msg != NULL ? msg : lm_status_message (st));
  free (msg);
  return FALSE;
}

/* @m at @rank: A rank rows of d_in, B d_out rows of rank; missing entries
 * are zero. */
static LmLoraGgufModule
resized (const LmLoraModule *m, guint rank)
{
  guint keep = MIN (rank, m->rank);
  float *a = g_new0 (float, (gsize) rank * m->d_in);
  float *b = g_new0 (float, (gsize) m->d_out * rank);

  memcpy (a, m->a, (gsize) keep * m->d_in * sizeof (float));
  for (guint o = 0; o < m->d_out; o++)
    memcpy (b + (gsize) o * rank, m->b + (gsize) o * m->rank, keep * sizeof (float));
  return (LmLoraGgufModule) { m->name, rank, m->d_in, m->d_out, a, b };
}

gboolean
ts_bench_write_adapter_rank (const LmLora *lora, guint rank, const char *path, GError **error)
{
  g_return_val_if_fail (lora != NULL, FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  gsize n = lm_lora_n_modules (lora);
  g_autofree LmLoraGgufModule *mods = NULL;
  LmStatus st;
  char *msg = NULL;

  if (rank == 0 || rank > 4096 || n == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "Cannot resize the adapter to rank %u", rank);
      return FALSE;
    }
  /* The loader scales every module by alpha / rank: one alpha for all, so
   * the modules must share a scale (true of every adapter the loaders make). */
  LmLoraGgufKeys keys = { .alpha = lm_lora_module (lora, 0)->scale * (float) rank };
  mods = g_new (LmLoraGgufModule, n);
  for (gsize i = 0; i < n; i++)
    mods[i] = resized (lm_lora_module (lora, i), rank);
  st = lm_lora_gguf_write (path, &keys, mods, n, &msg);
  for (gsize i = 0; i < n; i++)
    {
      g_free ((float *) mods[i].a);
      g_free ((float *) mods[i].b);
    }
  return st == LM_OK || writer_failed (error, st, msg);
}

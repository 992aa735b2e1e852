/* lora-write.c: rank reduction of GGUF LoRA files, and the shared writer pieces.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lora-gguf.h"
#include "lora-private.h"
#include "lora-write-private.h"
#include "model-private.h"

double
lm_lora_factor (const LmLoraFactorRule *rule, uint32_t rank)
{
  if (rule->alpha == 0.0)
    return 1.0;
  return rule->rslora ? rule->alpha / sqrt ((double) rank) : rule->alpha / (double) rank;
}

double
lm_lora_factor_func (uint32_t rank, void *user_data)
{
  return lm_lora_factor (user_data, rank);
}

LmStatus
lm_reduce_one (const char *name, const float *a, const float *b, uint32_t r, uint32_t d_in,
               uint32_t d_out, const LmLoraFactorRule *old_rule, LmLoraFactorRule *new_rule,
               uint32_t rank, LmReducedModule *out, LmLoraReduceReportFunc report,
               void *user_data, char **error_out)
{
  LmLoraReduceInfo info;
  LmStatus st = lm_lora_reduce_module (r, d_in, d_out, a, b, lm_lora_factor (old_rule, r), rank,
                                       lm_lora_factor_func, new_rule, &out->a, &out->b, &info);
  if (st != LM_OK)
    return lm_fail (error_out, st, "module %s: cannot reduce (%s)", name, lm_status_message (st));
  out->rank = info.rank_out;
  out->d_in = d_in;
  out->d_out = d_out;
  if (report != NULL && !report (name, &info, user_data))
    return lm_fail (error_out, LM_ERR_CANCELLED, "the reduction was cancelled");
  return LM_OK;
}

FILE *
lm_open_temp (const char *path, char **tmp_out)
{
  size_t n = strlen (path) + 32;
  char *tmp = malloc (n);
  if (tmp == NULL)
    return NULL;
  snprintf (tmp, n, "%s.tmp-%ld", path, (long) getpid ());
  FILE *f = fopen (tmp, "wb");
  if (f == NULL)
    {
      free (tmp);
      return NULL;
    }
  *tmp_out = tmp;
  return f;
}

LmStatus
lm_commit_temp (FILE *f, char *tmp, const char *path, char **error_out)
{
  bool ok = f != NULL && !ferror (f);
  if (f != NULL && fclose (f) != 0)
    ok = false;
  if (ok && rename (tmp, path) != 0)
    ok = false;
  LmStatus st = ok ? LM_OK : lm_fail (error_out, LM_ERR_IO, "cannot write %s: %s", path,
                                      strerror (errno));
  if (!ok)
    remove (tmp);
  free (tmp);
  return st;
}

/* ---- GGUF ---- */

/* Reduces every pair of @adapter into @mods (one per pair). */
static LmStatus
reduce_pairs (const LmLoraGguf *adapter, LmReducedModule *mods, const LmLoraFactorRule *old_rule,
              LmLoraFactorRule *new_rule, uint32_t rank, LmLoraReduceReportFunc report,
              void *user_data, char **error_out)
{
  LmStatus st = LM_OK;
  for (size_t i = 0; st == LM_OK && i < lm_lora_gguf_n_pairs (adapter); i++)
    {
      const LmLoraGgufPair *p = lm_lora_gguf_pair (adapter, i);
      float *a = NULL, *b = NULL;
      st = lm_lora_gguf_pair_f32 (p, &a, &b);
      if (st == LM_OK)
        st = lm_reduce_one (p->name, a, b, p->rank, p->d_in, p->d_out, old_rule, new_rule, rank,
                            &mods[i], report, user_data, error_out);
      else
        st = lm_fail (error_out, st, "LoRA target %s: cannot decode its tensors", p->name);
      free (a);
      free (b);
    }
  return st;
}

/* Whether every factor of @adapter is F16: the reduced ones are then written
 * in F16 too (in F32 a rank-R/2 copy of an F16 adapter is as big as it). */
static bool
all_half (const LmLoraGguf *adapter)
{
  size_t n = lm_lora_gguf_n_pairs (adapter);
  for (size_t i = 0; i < n; i++)
    {
      const LmLoraGgufPair *p = lm_lora_gguf_pair (adapter, i);
      if (p->a->type != LM_TYPE_F16 || p->b->type != LM_TYPE_F16)
        return false;
    }
  return n > 0;
}

/* Every key of the input (alpha set to @alpha), the reduced modules in F32
 * (F16 for an all-F16 input), through a temporary name. */
static LmStatus
write_gguf (const LmLoraGguf *adapter, const LmReducedModule *mods, const char *out, float alpha,
            char **error_out)
{
  size_t n = lm_lora_gguf_n_pairs (adapter);
  LmLoraGgufModule *modules = calloc (n ? n : 1, sizeof *modules);
  size_t tmp_size = strlen (out) + 32;
  char *tmp = malloc (tmp_size);
  LmStatus st = modules != NULL && tmp != NULL ? LM_OK : LM_ERR_NO_MEMORY;
  for (size_t i = 0; st == LM_OK && i < n; i++)
    modules[i] = (LmLoraGgufModule) { lm_lora_gguf_pair (adapter, i)->name, mods[i].rank,
                                      mods[i].d_in, mods[i].d_out, mods[i].a, mods[i].b };
  LmLoraGgufKeys keys = { .copy_from = lm_lora_gguf_file (adapter), .alpha = alpha,
                          .half = all_half (adapter) };
  if (st == LM_OK)
    {
      snprintf (tmp, tmp_size, "%s.tmp-%ld", out, (long) getpid ());
      st = lm_lora_gguf_write (tmp, &keys, modules, n, error_out);
    }
  if (st == LM_OK && rename (tmp, out) != 0)
    st = lm_fail (error_out, LM_ERR_IO, "cannot write %s: %s", out, strerror (errno));
  if (st != LM_OK && tmp != NULL)
    remove (tmp);
  free (tmp);
  free (modules);
  return st;
}

/* The largest new rank: the new alpha, factor 1 for full-rank modules. */
static uint32_t
largest_new_rank (const LmLoraGguf *adapter, uint32_t rank)
{
  uint32_t largest = 0;
  for (size_t i = 0; i < lm_lora_gguf_n_pairs (adapter); i++)
    {
      uint32_t r = lm_lora_gguf_pair (adapter, i)->rank;
      uint32_t k = r < rank ? r : rank;
      largest = k > largest ? k : largest;
    }
  return largest;
}

static LmStatus
reduce_gguf (const char *in, const char *out, uint32_t rank, LmLoraReduceReportFunc report,
             void *user_data, char **error_out)
{
  LmLoraGguf *adapter = NULL;
  LmStatus st = lm_lora_gguf_open (in, &adapter, error_out);
  if (st != LM_OK)
    return st;
  size_t n = lm_lora_gguf_n_pairs (adapter);
  LmReducedModule *mods = calloc (n ? n : 1, sizeof *mods);
  float alpha = lm_lora_gguf_alpha (adapter);
  LmLoraFactorRule old_rule = { alpha, false }, new_rule = { 0.0, false };
  st = mods != NULL ? lm_lora_gguf_check_only_pairs (adapter, in, error_out) : LM_ERR_NO_MEMORY;
  if (st == LM_OK && n == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", in);
  new_rule.alpha = alpha != 0.0f ? largest_new_rank (adapter, rank) : 0.0;
  if (st == LM_OK)
    st = reduce_pairs (adapter, mods, &old_rule, &new_rule, rank, report, user_data, error_out);
  if (st == LM_OK)
    st = write_gguf (adapter, mods, out, (float) new_rule.alpha, error_out);
  for (size_t i = 0; mods != NULL && i < n; i++)
    {
      free (mods[i].a);
      free (mods[i].b);
    }
  free (mods);
  lm_lora_gguf_close (adapter);
  return st;
}

void
lm_lora_shape_add (LmLoraShape *shape, uint64_t r, uint64_t d_in, uint64_t d_out)
{
  shape->rank_min = shape->n_modules == 0 || r < shape->rank_min ? (uint32_t) r : shape->rank_min;
  shape->rank_max = r > shape->rank_max ? (uint32_t) r : shape->rank_max;
  shape->dims_total += d_in + d_out;
  shape->n_modules++;
}

/* The pairs' shapes, from the headers only. */
static LmStatus
probe_gguf (const char *path, LmLoraShape *out, char **error_out)
{
  LmLoraGguf *adapter = NULL;
  LmStatus st = lm_lora_gguf_open (path, &adapter, error_out);
  if (st != LM_OK)
    return st;
  for (size_t i = 0; i < lm_lora_gguf_n_pairs (adapter); i++)
    {
      const LmLoraGgufPair *p = lm_lora_gguf_pair (adapter, i);
      lm_lora_shape_add (out, p->rank, p->d_in, p->d_out);
    }
  if (out->n_modules == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", path);
  lm_lora_gguf_close (adapter);
  return st;
}

LmStatus
lm_lora_probe_file (const char *path, LmLoraShape *out, char **error_out)
{
  if (path == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  memset (out, 0, sizeof *out);
  struct stat sb;
  if (stat (path, &sb) != 0)
    return lm_fail (error_out, LM_ERR_IO, "cannot open %s: %s", path, strerror (errno));
  if (!S_ISDIR (sb.st_mode))
    return probe_gguf (path, out, error_out);
  char *file = lm_lora_dir_gguf (path);
  out->peft = file == NULL;
  LmStatus st = file ? probe_gguf (file, out, error_out)
                     : lm_lora_probe_peft (path, out, error_out);
  free (file);
  return st;
}

LmStatus
lm_lora_reduce_file (const char *in, const char *out, uint32_t rank,
                     LmLoraReduceReportFunc report, void *user_data, char **error_out)
{
  if (in == NULL || out == NULL || rank == 0)
    return LM_ERR_INVALID_ARGUMENT;
  struct stat sb;
  if (stat (in, &sb) != 0)
    return lm_fail (error_out, LM_ERR_IO, "cannot open %s: %s", in, strerror (errno));
  if (!S_ISDIR (sb.st_mode))
    return reduce_gguf (in, out, rank, report, user_data, error_out);
  char *file = lm_lora_dir_gguf (in);
  LmStatus st = file ? reduce_gguf (file, out, rank, report, user_data, error_out)
                     : lm_lora_reduce_peft (in, out, rank, report, user_data, error_out);
  free (file);
  return st;
}

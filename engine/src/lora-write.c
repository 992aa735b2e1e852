/* lora-write.c: rank reduction of GGUF LoRA files, and the shared writer pieces.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf-writer.h"
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

typedef struct {
  const GgufFile *g;
  LmReducedModule *mods;   /* indexed by the lora_a tensor's index */
  int64_t *pair;           /* lora_b index -> lora_a index, lora_a -> itself */
} GgufReduction;

static bool
has_suffix (GgufString s, const char *suffix)
{
  size_t n = strlen (suffix);
  return s.len > n && memcmp (s.data + s.len - n, suffix, n) == 0;
}

/* Reduces the module whose lora_a is tensor @ia. */
static LmStatus
reduce_gguf_pair (GgufReduction *red, uint64_t ia, const LmLoraFactorRule *old_rule,
                  LmLoraFactorRule *new_rule, uint32_t rank, LmLoraReduceReportFunc report,
                  void *user_data, char **error_out)
{
  const GgufTensorInfo *ta = lm_gguf_tensor (red->g, ia);
  char name[256];
  if (ta->name.len - 7 + 8 > sizeof name)
    return lm_fail (error_out, LM_ERR_FORMAT, "LoRA tensor name too long");
  memcpy (name, ta->name.data, ta->name.len - 7);
  memcpy (name + ta->name.len - 7, ".lora_b", 8);
  const GgufTensorInfo *tb = lm_gguf_find_tensor (red->g, name);
  name[ta->name.len - 7] = '\0';
  if (tb == NULL || ta->n_dims != 2 || tb->n_dims != 2 || tb->ne[0] != ta->ne[1] ||
      ta->ne[1] == 0 || ta->ne[1] > 65536 || ta->ne[0] > UINT32_MAX || tb->ne[1] > UINT32_MAX)
    return lm_fail (error_out, LM_ERR_SHAPE, "LoRA target %s: no matching lora_b", name);
  red->pair[tb - lm_gguf_tensor (red->g, 0)] = (int64_t) ia;
  float *a = NULL, *b = NULL;
  LmStatus st = lm_lora_tensor_to_f32 (ta, &a);
  if (st == LM_OK)
    st = lm_lora_tensor_to_f32 (tb, &b);
  if (st == LM_OK)
    st = lm_reduce_one (name, a, b, (uint32_t) ta->ne[1], (uint32_t) ta->ne[0],
                        (uint32_t) tb->ne[1], old_rule, new_rule, rank, &red->mods[ia], report,
                        user_data, error_out);
  else
    st = lm_fail (error_out, st, "LoRA target %s: cannot decode its tensors", name);
  free (a);
  free (b);
  return st;
}

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

/* Declares every tensor in input order (F32, reduced shapes), then streams them. */
static LmStatus
write_gguf (const GgufReduction *red, const char *out, float alpha, char **error_out)
{
  const GgufFile *g = red->g;
  GgufWriter *w = lm_gguf_writer_new ();
  LmStatus st = w ? lm_gguf_writer_set_alignment (w, lm_gguf_alignment (g)) : LM_ERR_NO_MEMORY;
  for (int64_t i = 0; st == LM_OK && i < (int64_t) lm_gguf_n_kv (g); i++)
    if ((st = copy_key (w, g, i, alpha)) != LM_OK)
      st = lm_fail (error_out, st, "cannot copy GGUF key %" PRId64, i);
  for (uint64_t i = 0; st == LM_OK && i < lm_gguf_n_tensors (g); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (g, i);
      const LmReducedModule *m = &red->mods[red->pair[i]];
      bool is_a = (int64_t) i == red->pair[i];
      uint64_t ne[2] = { is_a ? m->d_in : m->rank, is_a ? m->rank : m->d_out };
      char *name = strndup (t->name.data, t->name.len);
      st = name ? lm_gguf_writer_add_tensor (w, name, LM_TYPE_F32, 2, ne) : LM_ERR_NO_MEMORY;
      free (name);
    }
  size_t n = strlen (out) + 32;
  char *tmp = malloc (n);
  if (st == LM_OK && tmp != NULL)
    {
      snprintf (tmp, n, "%s.tmp-%ld", out, (long) getpid ());
      st = lm_gguf_writer_begin (w, tmp, error_out);
    }
  for (uint64_t i = 0; st == LM_OK && i < lm_gguf_n_tensors (g); i++)
    {
      const LmReducedModule *m = &red->mods[red->pair[i]];
      bool is_a = (int64_t) i == red->pair[i];
      size_t count = (size_t) m->rank * (is_a ? m->d_in : m->d_out);
      st = lm_gguf_writer_write (w, is_a ? m->a : m->b, count * sizeof (float));
    }
  if (st == LM_OK)
    st = lm_gguf_writer_finish (w, error_out);
  lm_gguf_writer_free (w);
  if (st == LM_OK && rename (tmp, out) != 0)
    st = lm_fail (error_out, LM_ERR_IO, "cannot write %s: %s", out, strerror (errno));
  if (st != LM_OK && tmp != NULL)
    remove (tmp);
  free (tmp);
  return st;
}

static LmStatus
reduce_gguf (const char *in, const char *out, uint32_t rank, LmLoraReduceReportFunc report,
             void *user_data, char **error_out)
{
  GgufFile *g = NULL;
  LmStatus st = lm_gguf_open (in, &g, error_out);
  if (st != LM_OK)
    return st;
  uint64_t nt = lm_gguf_n_tensors (g);
  GgufReduction red = { g, calloc (nt ? nt : 1, sizeof (LmReducedModule)),
                        malloc ((nt ? nt : 1) * sizeof (int64_t)) };
  float alpha = 0.0f;
  lm_gguf_get_f32 (g, "adapter.lora.alpha", &alpha);
  LmLoraFactorRule old_rule = { alpha, false }, new_rule = { 0.0, false };
  if (red.mods == NULL || red.pair == NULL)
    st = LM_ERR_NO_MEMORY;
  /* the new alpha is the largest new rank: factor 1 for full-rank modules */
  uint32_t new_rank = 0;
  for (uint64_t i = 0; st == LM_OK && i < nt; i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (g, i);
      red.pair[i] = -1;
      if (has_suffix (t->name, ".lora_a") && t->n_dims == 2)
        {
          uint64_t k = t->ne[1] < rank ? t->ne[1] : rank;
          new_rank = k > new_rank ? (uint32_t) k : new_rank;
        }
      else if (!has_suffix (t->name, ".lora_b"))
        st = lm_fail (error_out, LM_ERR_FORMAT, "unexpected tensor '%.*s' in a LoRA adapter",
                      (int) (t->name.len > 96 ? 96 : t->name.len), t->name.data);
    }
  new_rule.alpha = alpha != 0.0f ? new_rank : 0.0;
  for (uint64_t i = 0; st == LM_OK && i < nt; i++)
    if (has_suffix (lm_gguf_tensor (g, i)->name, ".lora_a"))
      {
        red.pair[i] = (int64_t) i;
        st = reduce_gguf_pair (&red, i, &old_rule, &new_rule, rank, report, user_data, error_out);
      }
  for (uint64_t i = 0; st == LM_OK && i < nt; i++)
    if (red.pair[i] < 0)
      st = lm_fail (error_out, LM_ERR_FORMAT, "%s: lora_b without lora_a", in);
  if (st == LM_OK && new_rank == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", in);
  if (st == LM_OK)
    st = write_gguf (&red, out, (float) new_rule.alpha, error_out);
  for (uint64_t i = 0; red.mods && i < nt; i++)
    {
      free (red.mods[i].a);
      free (red.mods[i].b);
    }
  free (red.mods);
  free (red.pair);
  lm_gguf_close (g);
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

/* The same pairing checks as reduce_gguf_pair, on the headers only. */
static LmStatus
probe_gguf (const char *path, LmLoraShape *out, char **error_out)
{
  GgufFile *g = NULL;
  LmStatus st = lm_gguf_open (path, &g, error_out);
  for (uint64_t i = 0; st == LM_OK && i < lm_gguf_n_tensors (g); i++)
    {
      const GgufTensorInfo *ta = lm_gguf_tensor (g, i);
      char name[256];
      if (!has_suffix (ta->name, ".lora_a"))
        continue;
      if (ta->name.len + 1 > sizeof name)
        {
          st = lm_fail (error_out, LM_ERR_FORMAT, "LoRA tensor name too long");
          break;
        }
      memcpy (name, ta->name.data, ta->name.len - 1);
      memcpy (name + ta->name.len - 1, "b", 2);       /* ".lora_a" -> ".lora_b" */
      const GgufTensorInfo *tb = lm_gguf_find_tensor (g, name);
      if (tb == NULL || ta->n_dims != 2 || tb->n_dims != 2 || tb->ne[0] != ta->ne[1] ||
          ta->ne[1] == 0 || ta->ne[1] > 65536 || ta->ne[0] > UINT32_MAX || tb->ne[1] > UINT32_MAX)
        st = lm_fail (error_out, LM_ERR_SHAPE, "LoRA target %.*s: no matching lora_b",
                      (int) (ta->name.len - 7), ta->name.data);
      else
        lm_lora_shape_add (out, ta->ne[1], ta->ne[0], tb->ne[1]);
    }
  if (st == LM_OK && out->n_modules == 0)
    st = lm_fail (error_out, LM_ERR_FORMAT, "%s: the adapter has no LoRA tensors", path);
  if (g != NULL)
    lm_gguf_close (g);
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

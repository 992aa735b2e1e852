/* lora.c: LoRA module table, attaching adapters and hooks to sessions, applying them.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lora-private.h"
#include "session-gpu.h"

static const char *const kind_names[LM_N_MODULE_KINDS] = {
  "attn_q", "attn_k", "attn_v", "attn_output", "attn_qkv", "attn_gate", "ssm_alpha",
  "ssm_beta", "ssm_out", "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_shexp",
  "ffn_up_shexp", "ffn_down_shexp",
};

const char *
lm_module_kind_name (LmModuleKind kind)
{
  return (unsigned) kind < LM_N_MODULE_KINDS ? kind_names[kind] : NULL;
}

bool
lm_lora_parse_name (const char *name, size_t len, uint32_t *layer, LmModuleKind *kind)
{
  char buf[128];
  if (len >= sizeof buf || len < 4 || memcmp (name, "blk.", 4) != 0)
    return false;
  memcpy (buf, name, len);
  buf[len] = '\0';
  char *end;
  unsigned long il = strtoul (buf + 4, &end, 10);
  if (end == buf + 4 || *end != '.' || il >= LM_MAX_LAYERS)
    return false;
  const char *stem = end + 1;
  size_t stem_len = strlen (stem);
  if (stem_len <= 7 || strcmp (stem + stem_len - 7, ".weight") != 0)
    return false;
  stem_len -= 7;
  for (int k = 0; k < LM_N_MODULE_KINDS; k++)
    if (strlen (kind_names[k]) == stem_len && memcmp (stem, kind_names[k], stem_len) == 0)
      {
        *layer = (uint32_t) il;
        *kind = (LmModuleKind) k;
        return true;
      }
  return false;
}

LmLora *
lm_lora_new (const LmModel *model)
{
  LmLora *lora = calloc (1, sizeof *lora);
  if (lora != NULL)
    lora->model = model;
  return lora;
}

void
lm_lora_free (LmLora *lora)
{
  if (lora == NULL)
    return;
  for (size_t i = 0; i < lora->n_modules; i++)
    {
      free ((char *) lora->modules[i].name);
      free ((float *) lora->modules[i].a);
      free ((float *) lora->modules[i].b);
    }
  free (lora->modules);
  free (lora);
}

static LmStatus
grow_modules (LmLora *lora)
{
  if (lora->n_modules < lora->cap_modules)
    return LM_OK;
  size_t cap = lora->cap_modules ? 2 * lora->cap_modules : 16;
  LmLoraModule *m = realloc (lora->modules, cap * sizeof *m);
  if (m == NULL)
    return LM_ERR_NO_MEMORY;
  lora->modules = m;
  lora->cap_modules = cap;
  return LM_OK;
}

static float *
copy_floats (const float *src, size_t n)
{
  float *dst = malloc (n * sizeof (float));
  if (dst != NULL)
    memcpy (dst, src, n * sizeof (float));
  return dst;
}

static bool
all_finite (const float *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!isfinite (v[i]))
      return false;
  return true;
}

LmStatus
lm_lora_add (LmLora *lora, uint32_t layer, LmModuleKind kind, uint32_t rank,
             uint32_t a_cols, uint32_t b_rows, const float *a, const float *b,
             float scale, char **error_out)
{
  char name[96];
  snprintf (name, sizeof name, "blk.%u.%s.weight", layer, lm_module_kind_name (kind));
  const LmWeight *w = lm_model_module_weight (lora->model, layer, kind);
  if (w == NULL)
    return lm_fail (error_out, LM_ERR_SHAPE, "LoRA module %s: the model has no such tensor", name);
  if (rank == 0 || rank > 65536 || a_cols != w->n_in || b_rows != w->n_out)
    return lm_fail (error_out, LM_ERR_SHAPE,
                    "LoRA module %s: A is %u x %u and B is %u x %u, the weight is %u -> %u",
                    name, rank, a_cols, b_rows, rank, w->n_in, w->n_out);
  if (lm_lora_find (lora, name) >= 0)
    return lm_fail (error_out, LM_ERR_FORMAT, "LoRA module %s appears twice", name);
  /* a NaN or infinite weight would turn every answer into garbage */
  const char *bad = !isfinite (scale) ? "its scale" : !all_finite (a, (size_t) rank * a_cols) ? "A"
                    : !all_finite (b, (size_t) b_rows * rank) ? "B" : NULL;
  if (bad != NULL)
    return lm_fail (error_out, LM_ERR_FORMAT, "LoRA module %s: %s holds a NaN or infinite value",
                    name, bad);
  if (grow_modules (lora) != LM_OK)
    return LM_ERR_NO_MEMORY;
  LmLoraModule *m = &lora->modules[lora->n_modules];
  *m = (LmLoraModule) { strdup (name), kind, layer, w->n_in, w->n_out, rank, scale,
                        copy_floats (a, (size_t) rank * w->n_in),
                        copy_floats (b, (size_t) w->n_out * rank) };
  if (m->name == NULL || m->a == NULL || m->b == NULL)
    {
      free ((char *) m->name);
      free ((float *) m->a);
      free ((float *) m->b);
      return LM_ERR_NO_MEMORY;
    }
  lora->n_modules++;
  lora->max_rank = rank > lora->max_rank ? rank : lora->max_rank;
  lora->max_d_out = w->n_out > lora->max_d_out ? w->n_out : lora->max_d_out;
  return LM_OK;
}

size_t
lm_lora_n_modules (const LmLora *lora)
{
  return lora->n_modules;
}

const LmLoraModule *
lm_lora_module (const LmLora *lora, size_t index)
{
  return index < lora->n_modules ? &lora->modules[index] : NULL;
}

int64_t
lm_lora_find (const LmLora *lora, const char *name)
{
  for (size_t i = 0; i < lora->n_modules; i++)
    if (strcmp (lora->modules[i].name, name) == 0)
      return (int64_t) i;
  return -1;
}

static bool
is_regular_gguf (const char *dir, const char *name, char *path, size_t size)
{
  size_t n = strlen (name);
  struct stat st;
  if (n <= 5 || strcmp (name + n - 5, ".gguf") != 0 || name[0] == '.')
    return false;
  snprintf (path, size, "%s/%s", dir, name);
  return stat (path, &st) == 0 && S_ISREG (st.st_mode);
}

char *
lm_lora_dir_gguf (const char *dir)
{
  char path[4096], found[4096];
  int n_found = 0;
  snprintf (path, sizeof path, "%s/adapter_config.json", dir);
  if (access (path, F_OK) == 0)
    return NULL;
  DIR *d = opendir (dir);
  if (d == NULL)
    return NULL;
  for (struct dirent *e; (e = readdir (d)) != NULL;)
    if (is_regular_gguf (dir, e->d_name, path, sizeof path) && n_found++ == 0)
      memcpy (found, path, sizeof found);
  closedir (d);
  return n_found == 1 ? strdup (found) : NULL;
}

LmStatus
lm_lora_load (const LmModel *model, const char *path, float user_scale, LmLora **out,
              char **error_out)
{
  struct stat st;
  if (path == NULL || stat (path, &st) != 0)
    return lm_fail (error_out, LM_ERR_IO, "cannot open LoRA adapter %s", path ? path : "(null)");
  if (!S_ISDIR (st.st_mode))
    return lm_lora_load_gguf (model, path, user_scale, out, error_out);
  char *file = lm_lora_dir_gguf (path);
  if (file == NULL)
    return lm_lora_load_peft (model, path, user_scale, out, error_out);
  LmStatus status = lm_lora_load_gguf (model, file, user_scale, out, error_out);
  free (file);
  return status;
}

LmStatus
lm_session_set_lora (LmSession *s, const LmLora *lora)
{
  if (s == NULL || (lora != NULL && lora->model != s->model))
    return LM_ERR_INVALID_ARGUMENT;
  const LmModelInfo *in = &s->model->info;
  memset (s->module_slot, 0xff, (size_t) in->n_layer * LM_N_MODULE_KINDS * sizeof (int32_t));
  free (s->hooks);
  free (s->lora_u);
  free (s->lora_y);
  s->hooks = NULL;
  s->lora_u = s->lora_y = NULL;
  s->memory_bytes -= s->lora_bytes;
  s->lora_bytes = 0;
  s->lora = lora;
  if (lora == NULL || lora->n_modules == 0)
    return s->gpu != NULL ? lm_gpu_session_set_lora (s) : LM_OK;
  s->hooks = calloc (lora->n_modules, sizeof *s->hooks);
  s->lora_u = calloc ((size_t) s->n_batch * lora->max_rank, sizeof (float));
  s->lora_y = calloc ((size_t) s->n_batch * lora->max_d_out, sizeof (float));
  s->lora_bytes = lora->n_modules * sizeof *s->hooks
                  + (size_t) s->n_batch * (lora->max_rank + lora->max_d_out) * sizeof (float);
  s->memory_bytes += s->lora_bytes;
  if (s->hooks == NULL || s->lora_u == NULL || s->lora_y == NULL)
    {
      s->lora = NULL;
      return LM_ERR_NO_MEMORY;
    }
  LmStatus st = s->gpu != NULL ? lm_gpu_session_set_lora (s) : LM_OK;
  if (st != LM_OK)
    {
      s->lora = NULL;
      return st;
    }
  for (size_t i = 0; i < lora->n_modules; i++)
    s->module_slot[lora->modules[i].layer * LM_N_MODULE_KINDS + lora->modules[i].kind] =
      (int32_t) i;
  return LM_OK;
}

/* The modules [*first, *end) that @module_index names (one, or all with
 * LM_LORA_ALL_MODULES); false when there are none to name. */
static bool
hook_range (const LmSession *s, size_t module_index, size_t *first, size_t *end)
{
  if (s == NULL || s->lora == NULL
      || (module_index != LM_LORA_ALL_MODULES && module_index >= s->lora->n_modules))
    return false;
  *first = module_index == LM_LORA_ALL_MODULES ? 0 : module_index;
  *end = module_index == LM_LORA_ALL_MODULES ? s->lora->n_modules : module_index + 1;
  return true;
}

LmStatus
lm_session_set_lora_hook (LmSession *s, size_t module_index, LmLoraHookFunc hook,
                          void *user_data)
{
  size_t first, end;
  if (!hook_range (s, module_index, &first, &end))
    return LM_ERR_INVALID_ARGUMENT;
  lm_gpu_session_invalidate (s->gpu);
  for (size_t i = first; i < end; i++)
    {
      s->hooks[i].fn = hook;
      s->hooks[i].user_data = user_data;
    }
  return LM_OK;
}

LmStatus
lm_session_set_lora_device_hook (LmSession *s, size_t module_index, LmLoraDeviceHookFunc hook,
                                 void *user_data)
{
  size_t first, end;
  if (!hook_range (s, module_index, &first, &end))
    return LM_ERR_INVALID_ARGUMENT;
  lm_gpu_session_invalidate (s->gpu);
  for (size_t i = first; i < end; i++)
    {
      s->hooks[i].device_fn = hook;
      s->hooks[i].device_data = user_data;
    }
  return LM_OK;
}

LmStatus
lm_session_set_lora_begin_hook (LmSession *s, size_t module_index, LmLoraBeginFunc begin,
                                void *user_data)
{
  size_t first, end;
  if (!hook_range (s, module_index, &first, &end))
    return LM_ERR_INVALID_ARGUMENT;
  for (size_t i = first; i < end; i++)
    {
      s->hooks[i].begin_fn = begin;
      s->hooks[i].begin_data = user_data;
    }
  return LM_OK;
}

bool
lm_lora_has_begin (const LmSession *s, size_t index)
{
  return s->hooks[index].begin_fn != NULL && s->hooks[index].fn != NULL;
}

LmStatus
lm_lora_begin (LmSession *s, size_t index, const float *x)
{
  const LmHookSlot *hook = &s->hooks[index];
  LmLoraHookCall call = { index, &s->lora->modules[index], s->pos, 1, &s->timings, NULL };
  double t0 = lm_time_ms ();
  LmStatus st = hook->begin_fn (&call, x, hook->begin_data);
  s->excluded_ms += lm_time_ms () - t0;
  return st == LM_OK ? LM_OK : LM_ERR_HOOK;
}

/* u = A·x through the hook (its wall time is the hook's stages, not forward). */
static LmStatus
lora_down (LmSession *s, size_t index, const LmLoraModule *mod, const float *x, uint32_t n)
{
  const LmHookSlot *hook = &s->hooks[index];
  if (hook->fn == NULL)
    {
      LmWeight a = { mod->a, LM_TYPE_F32, mod->d_in, mod->rank, 1, 0 };
      lm_linear (s, &a, 0, x, n, s->lora_u);
      return LM_OK;
    }
  LmLoraHookCall call = { index, mod, s->pos, n, &s->timings, s->pool };
  double t0 = lm_time_ms ();
  LmStatus st = hook->fn (&call, x, s->lora_u, hook->user_data);
  s->excluded_ms += lm_time_ms () - t0;
  return st == LM_OK ? LM_OK : LM_ERR_HOOK;
}

LmStatus
lm_lora_apply (LmSession *s, size_t index, const float *x, uint32_t n, float *y)
{
  const LmLoraModule *mod = &s->lora->modules[index];
  double t0 = lm_time_ms ();
  double excluded0 = s->excluded_ms;
  LmStatus st = lora_down (s, index, mod, x, n);
  if (st != LM_OK)
    return st;
  LmWeight b = { mod->b, LM_TYPE_F32, mod->rank, mod->d_out, 1, 0 };
  lm_linear (s, &b, 0, s->lora_u, n, s->lora_y);
  size_t count = (size_t) n * mod->d_out;
  for (size_t i = 0; i < count; i++)
    y[i] += mod->scale * s->lora_y[i];
  /* lora_b: everything here except the hook's own time. */
  double ms = lm_time_ms () - t0 - (s->excluded_ms - excluded0);
  lm_timings_add (&s->timings, LM_STAGE_LORA_B, ms);
  s->excluded_ms += ms;
  return LM_OK;
}

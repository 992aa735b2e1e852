/* lora-stack.c: several LoRA adapters applied at once, and synthetic adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Stacking builds one adapter whose modules are the union of the inputs'.
 * A module adapted by several inputs gets their factors side by side:
 *   Σ_k w_k·s_k·B_k·(A_k·h) = [w_1 s_1 B_1 | … | w_n s_n B_n] · ([A_1; …; A_n]·h)
 * so its rank is the sum of theirs and its scale 1 (the factors are folded
 * into B). The result is an ordinary adapter: sessions, hooks and HE-LoRA
 * (one packed matrix per module, one encryption per distinct input) need
 * nothing new.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lora-private.h"
#include "sampler.h"

typedef struct {
  const LmLoraModule *part;
  float factor;                /* w_k · s_k */
} StackPart;

/* Every part adapting (@layer, @kind), in input order; returns the count. */
static size_t
gather (const LmLora *const *loras, const float *weights, size_t n, uint32_t layer,
        LmModuleKind kind, StackPart *parts)
{
  size_t count = 0;

  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < loras[k]->n_modules; i++)
      {
        const LmLoraModule *m = &loras[k]->modules[i];
        if (m->layer == layer && m->kind == kind)
          parts[count++] = (StackPart) { m, weights[k] * m->scale };
      }
  return count;
}

static LmStatus
add_stacked (LmLora *out, const StackPart *parts, size_t n_parts, char **error_out)
{
  const LmLoraModule *first = parts[0].part;
  uint32_t rank = 0, col = 0;

  for (size_t p = 0; p < n_parts; p++)
    rank += parts[p].part->rank;
  float *a = malloc ((size_t) rank * first->d_in * sizeof *a);
  float *b = malloc ((size_t) first->d_out * rank * sizeof *b);
  LmStatus st = LM_ERR_NO_MEMORY;
  if (a != NULL && b != NULL)
    {
      for (size_t p = 0; p < n_parts; p++)
        {
          const LmLoraModule *m = parts[p].part;
          memcpy (a + (size_t) col * m->d_in, m->a, (size_t) m->rank * m->d_in * sizeof *a);
          for (uint32_t o = 0; o < m->d_out; o++)
            for (uint32_t i = 0; i < m->rank; i++)
              b[(size_t) o * rank + col + i] = parts[p].factor * m->b[(size_t) o * m->rank + i];
          col += m->rank;
        }
      st = lm_lora_add (out, first->layer, first->kind, rank, first->d_in, first->d_out,
                        a, b, 1.0f, error_out);
    }
  free (a);
  free (b);
  return st;
}

LmStatus
lm_lora_stack (const LmLora *const *loras, const float *weights, size_t n, LmLora **out,
               char **error_out)
{
  *out = NULL;
  if (n == 0 || loras == NULL || weights == NULL)
    return lm_fail (error_out, LM_ERR_INVALID_ARGUMENT, "Stacking needs at least one adapter");
  for (size_t k = 0; k < n; k++)
    if (loras[k] == NULL || loras[k]->model != loras[0]->model || !isfinite (weights[k]))
      return lm_fail (error_out, LM_ERR_INVALID_ARGUMENT,
                      "Stacked adapter %zu: loaded for another model, or its weight is not finite", k);
  size_t max_parts = n;
  StackPart *parts = calloc (max_parts, sizeof *parts);
  LmLora *stack = lm_lora_new (loras[0]->model);
  LmStatus st = parts != NULL && stack != NULL ? LM_OK : LM_ERR_NO_MEMORY;

  /* Modules in order of first appearance; one module per name in each input. */
  for (size_t k = 0; st == LM_OK && k < n; k++)
    for (size_t i = 0; st == LM_OK && i < loras[k]->n_modules; i++)
      {
        const LmLoraModule *m = &loras[k]->modules[i];
        if (lm_lora_find (stack, m->name) >= 0)
          continue;
        size_t n_parts = gather (loras, weights, n, m->layer, m->kind, parts);
        st = add_stacked (stack, parts, n_parts, error_out);
      }
  free (parts);
  if (st != LM_OK)
    {
      lm_lora_free (stack);
      return st;
    }
  *out = stack;
  return LM_OK;
}

static uint64_t
name_seed (const char *name, uint64_t seed)
{
  uint64_t h = 1469598103934665603ull ^ seed;     /* FNV-1a */
  for (const char *c = name; *c; c++)
    h = (h ^ (unsigned char) *c) * 1099511628211ull;
  return h;
}

/* The sampler's generator: a fixed, portable stream per (seed, module name). */
static void
fill_uniform (float *x, size_t n, float amplitude, uint64_t state[4])
{
  for (size_t i = 0; i < n; i++)
    x[i] = amplitude * (float) (lm_rng_uniform (state) * 2 - 1);
}

static LmStatus
synth_module (LmLora *lora, const char *stem, uint32_t rank, float amplitude, uint64_t seed,
              char **error_out)
{
  char name[128];
  uint32_t layer;
  LmModuleKind kind;

  snprintf (name, sizeof name, "%s.weight", stem);
  if (!lm_lora_parse_name (name, strlen (name), &layer, &kind))
    return lm_fail (error_out, LM_ERR_INVALID_ARGUMENT, "'%s' is not a module name", stem);
  const LmWeight *w = lm_model_module_weight (lora->model, layer, kind);
  if (w == NULL)
    return lm_fail (error_out, LM_ERR_SHAPE, "The model has no tensor %s", name);
  float *a = malloc ((size_t) rank * w->n_in * sizeof *a);
  float *b = malloc ((size_t) w->n_out * rank * sizeof *b);
  uint64_t state[4];
  LmStatus st = LM_ERR_NO_MEMORY;
  if (a != NULL && b != NULL)
    {
      lm_rng_seed (state, name_seed (name, seed));
      fill_uniform (a, (size_t) rank * w->n_in, amplitude, state);
      fill_uniform (b, (size_t) w->n_out * rank, amplitude, state);
      st = lm_lora_add (lora, layer, kind, rank, w->n_in, w->n_out, a, b, 1.0f, error_out);
    }
  free (a);
  free (b);
  return st;
}

LmStatus
lm_lora_synth (const LmModel *model, const char *const *stems, uint32_t rank, float amplitude,
               uint64_t seed, LmLora **out, char **error_out)
{
  LmLora *lora = lm_lora_new (model);
  LmStatus st = lora != NULL ? LM_OK : LM_ERR_NO_MEMORY;

  *out = NULL;
  for (size_t i = 0; st == LM_OK && stems[i] != NULL; i++)
    st = synth_module (lora, stems[i], rank, amplitude, seed, error_out);
  if (st == LM_OK && lora->n_modules == 0)
    st = lm_fail (error_out, LM_ERR_INVALID_ARGUMENT, "A synthetic adapter needs a module");
  if (st != LM_OK)
    {
      lm_lora_free (lora);
      return st;
    }
  *out = lora;
  return LM_OK;
}

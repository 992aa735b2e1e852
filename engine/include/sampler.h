/* sampler.h: next-token selection from logits (greedy or seeded sampling).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The chain follows llama.cpp's default order: repetition penalty, top-k,
 * top-p, min-p, temperature, then a draw from the remaining distribution.
 * The draw uses the sampler's own xoshiro256** generator seeded through
 * splitmix64, so a seed gives the same tokens on every run and machine.
 *
 * Ownership: an LmSampler is created with lm_sampler_new() and freed with
 * lm_sampler_free(); logits passed in are only read.
 * Thread-safety: one sampler per generation stream; not safe to share.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  float temperature;       /* <= 0: greedy (argmax, lowest id on ties) */
  int32_t top_k;           /* <= 0: off */
  float top_p;             /* >= 1: off */
  float min_p;             /* <= 0: off */
  float repeat_penalty;    /* 1: off; > 1 discourages the last repeat_last_n tokens */
  int32_t repeat_last_n;   /* window of accepted tokens the penalty looks at */
  uint64_t seed;
} LmSamplerParams;

/* Greedy, no penalty. */
LmSamplerParams lm_sampler_params_greedy (void);
/* temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no penalty (llama.cpp's defaults). */
LmSamplerParams lm_sampler_params_default (uint64_t seed);

typedef struct LmSampler LmSampler;

/* NULL for n_vocab <= 0, NaN parameters, or out of memory. */
LmSampler *lm_sampler_new (const LmSamplerParams *params, int32_t n_vocab);
void lm_sampler_free (LmSampler *sampler);

/* Picks the next token from @logits (n_vocab values). Does not record it:
 * call lm_sampler_accept() with the token actually used. */
int32_t lm_sampler_sample (LmSampler *sampler, const float *logits);
/* Adds @id to the history the repetition penalty looks at. */
void lm_sampler_accept (LmSampler *sampler, int32_t id);
/* Clears the history and restarts the generator from the seed. */
void lm_sampler_reset (LmSampler *sampler);

/* The distribution lm_sampler_sample() draws from: @probs (n_vocab values)
 * gets each token's probability after every filter (0 for removed ones).
 * With temperature <= 0 it is 1 for the greedy token. */
void lm_sampler_probs (LmSampler *sampler, const float *logits, float *probs);

/* The generator itself: next 64 random bits, and a double in [0, 1). */
uint64_t lm_rng_next (uint64_t state[4]);
void lm_rng_seed (uint64_t state[4], uint64_t seed);
double lm_rng_uniform (uint64_t state[4]);

#ifdef __cplusplus
}
#endif

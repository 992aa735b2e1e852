/* sampler.c: repetition penalty, top-k, top-p, min-p, temperature, seeded draws.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t id;
  float logit;
} Candidate;

struct LmSampler {
  LmSamplerParams params;
  int32_t n_vocab;
  uint64_t rng[4];
  Candidate *cand;       /* scratch, n_vocab */
  double *prob;          /* scratch, n_vocab */
  int32_t *history;      /* ring of the last repeat_last_n accepted ids */
  int32_t n_history, history_pos;
  uint8_t *seen;         /* scratch for the penalty, n_vocab */
};

/* ---- generator: splitmix64 to seed, xoshiro256** to draw ---- */

static uint64_t
splitmix64 (uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void
lm_rng_seed (uint64_t state[4], uint64_t seed)
{
  for (int i = 0; i < 4; i++)
    state[i] = splitmix64 (&seed);
}

static uint64_t
rotl (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

uint64_t
lm_rng_next (uint64_t s[4])
{
  uint64_t result = rotl (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl (s[3], 45);
  return result;
}

double
lm_rng_uniform (uint64_t s[4])
{
  return (double) (lm_rng_next (s) >> 11) * 0x1.0p-53;
}

/* ---- parameters ---- */

LmSamplerParams
lm_sampler_params_greedy (void)
{
  return (LmSamplerParams) { .temperature = 0, .top_k = 0, .top_p = 1, .min_p = 0,
                             .repeat_penalty = 1, .repeat_last_n = 64, .seed = 0 };
}

LmSamplerParams
lm_sampler_params_default (uint64_t seed)
{
  return (LmSamplerParams) { .temperature = 0.8f, .top_k = 40, .top_p = 0.95f,
                             .min_p = 0.05f, .repeat_penalty = 1, .repeat_last_n = 64,
                             .seed = seed };
}

LmSampler *
lm_sampler_new (const LmSamplerParams *params, int32_t n_vocab)
{
  if (params == NULL || n_vocab <= 0 || isnan (params->temperature) || isnan (params->top_p)
      || isnan (params->min_p) || isnan (params->repeat_penalty) || params->repeat_penalty <= 0)
    return NULL;
  LmSampler *s = calloc (1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->params = *params;
  if (s->params.repeat_last_n < 0)
    s->params.repeat_last_n = 0;
  s->n_vocab = n_vocab;
  s->cand = malloc ((size_t) n_vocab * sizeof *s->cand);
  s->prob = malloc ((size_t) n_vocab * sizeof *s->prob);
  s->seen = calloc ((size_t) n_vocab, 1);
  s->history = malloc (((size_t) s->params.repeat_last_n + 1) * sizeof *s->history);
  if (!s->cand || !s->prob || !s->seen || !s->history)
    {
      lm_sampler_free (s);
      return NULL;
    }
  lm_sampler_reset (s);
  return s;
}

void
lm_sampler_free (LmSampler *s)
{
  if (s == NULL)
    return;
  free (s->cand);
  free (s->prob);
  free (s->seen);
  free (s->history);
  free (s);
}

void
lm_sampler_reset (LmSampler *s)
{
  s->n_history = 0;
  s->history_pos = 0;
  lm_rng_seed (s->rng, s->params.seed);
}

void
lm_sampler_accept (LmSampler *s, int32_t id)
{
  if (s->params.repeat_last_n == 0 || id < 0 || id >= s->n_vocab)
    return;
  s->history[s->history_pos] = id;
  s->history_pos = (s->history_pos + 1) % s->params.repeat_last_n;
  if (s->n_history < s->params.repeat_last_n)
    s->n_history++;
}

/* ---- the chain ---- */

static int
by_logit_desc (const void *a, const void *b)
{
  const Candidate *x = a, *y = b;
  if (x->logit != y->logit)
    return x->logit > y->logit ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

static bool
worse (const Candidate *a, const Candidate *b)
{
  return by_logit_desc (a, b) > 0;
}

/* Restores the heap property below @i; @max_heap puts the best candidate at
 * the root, otherwise the worst. */
static void
sift_down (Candidate *h, int32_t n, int32_t i, bool max_heap)
{
  for (;;)
    {
      int32_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < n && worse (&h[l], &h[m]) != max_heap)
        m = l;
      if (r < n && worse (&h[r], &h[m]) != max_heap)
        m = r;
      if (m == i)
        return;
      Candidate t = h[i];
      h[i] = h[m];
      h[m] = t;
      i = m;
    }
}

/* Moves the @k best candidates to c[0..k) in O(n log k), with a min-heap whose
 * root is the worst of the best k seen so far. Returns k. */
static int32_t
select_top_k (Candidate *c, int32_t n, int32_t k)
{
  for (int32_t i = k / 2 - 1; i >= 0; i--)
    sift_down (c, k, i, false);
  for (int32_t i = k; i < n; i++)
    if (worse (&c[0], &c[i]))
      {
        c[0] = c[i];
        sift_down (c, k, 0, false);
      }
  return k;
}

/* CTRL-style penalty: positive logits divided, negative multiplied, once per
 * distinct token in the window. */
static void
apply_penalty (LmSampler *s, Candidate *c)
{
  float pen = s->params.repeat_penalty;
  if (pen == 1.0f || s->n_history == 0)
    return;
  for (int32_t i = 0; i < s->n_history; i++)
    {
      int32_t id = s->history[i];
      if (s->seen[id])
        continue;
      s->seen[id] = 1;
      c[id].logit = c[id].logit > 0 ? c[id].logit / pen : c[id].logit * pen;
    }
  for (int32_t i = 0; i < s->n_history; i++)
    s->seen[s->history[i]] = 0;
}

/* Softmax of the first @n candidates at temperature 1/@inv_temp into s->prob. */
static void
softmax (LmSampler *s, const Candidate *c, int32_t n, double inv_temp)
{
  float max = c[0].logit;
  for (int32_t i = 1; i < n; i++)
    max = c[i].logit > max ? c[i].logit : max;
  double sum = 0;
  for (int32_t i = 0; i < n; i++)
    sum += s->prob[i] = exp (((double) c[i].logit - max) * inv_temp);
  for (int32_t i = 0; i < n; i++)
    s->prob[i] /= sum;
}

/* top-p then min-p over candidates sorted best first; returns how many stay. */
static int32_t
filter_sorted (LmSampler *s, const Candidate *c, int32_t n)
{
  if (s->params.top_p < 1.0f)
    {
      softmax (s, c, n, 1.0);
      double cum = 0;
      for (int32_t i = 0; i < n; i++)
        if ((cum += s->prob[i]) >= s->params.top_p)
          {
            n = i + 1;
            break;
          }
    }
  if (s->params.min_p > 0.0f)
    {
      /* p_i >= min_p * p_max  <=>  logit_i >= logit_max + ln(min_p) */
      double floor_logit = (double) c[0].logit + log ((double) s->params.min_p);
      int32_t keep = 1;
      while (keep < n && (double) c[keep].logit >= floor_logit)
        keep++;
      n = keep;
    }
  return n;
}

/* The same as sorting and filter_sorted(), but pops candidates off a max-heap
 * only as far as top-p / min-p reach: a few hundred of a 250k vocabulary
 * instead of a full sort. The kept ones end up sorted at the front. */
static int32_t
filter_by_heap (LmSampler *s, Candidate *c, int32_t n)
{
  for (int32_t i = n / 2 - 1; i >= 0; i--)
    sift_down (c, n, i, true);
  double max = c[0].logit, z = 0;
  if (s->params.top_p < 1.0f)
    for (int32_t i = 0; i < n; i++)
      z += exp ((double) c[i].logit - max);
  double floor_logit = s->params.min_p > 0.0f ? max + log ((double) s->params.min_p) : -INFINITY;
  double cum = 0;
  int32_t h = n, kept = 0;
  while (h > 0)
    {
      Candidate top = c[0];
      if (kept > 0 && (double) top.logit < floor_logit)
        break;
      c[0] = c[h - 1];
      c[--h] = top;    /* popped ones collect at the end, best last */
      sift_down (c, h, 0, true);
      kept++;
      if (s->params.top_p < 1.0f && (cum += exp ((double) top.logit - max) / z) >= s->params.top_p)
        break;
    }
  /* c[n - kept .. n) holds them worst first: reverse, then move to the front */
  for (int32_t i = n - kept, j = n - 1; i < j; i++, j--)
    {
      Candidate t = c[i];
      c[i] = c[j];
      c[j] = t;
    }
  memmove (c, c + n - kept, (size_t) kept * sizeof *c);
  return kept;
}

/* Runs the filters; leaves the survivors in s->cand[0..n) with their
 * probabilities in s->prob (sorted best first whenever a filter ran). Returns
 * n; 0 means greedy (s->cand[0] wins). */
static int32_t
run_chain (LmSampler *s, const float *logits)
{
  Candidate *c = s->cand;
  int32_t n = s->n_vocab;
  bool penalty = s->params.repeat_penalty != 1.0f && s->n_history > 0;
  if (s->params.temperature <= 0 && !penalty)
    {
      /* plain argmax straight over the logits (NaN never wins) */
      int32_t best = 0;
      for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best] || isnan (logits[best]))
          best = i;
      c[0] = (Candidate) { best, logits[best] };
      return 0;
    }
  for (int32_t i = 0; i < n; i++)
    c[i] = (Candidate) { i, isnan (logits[i]) ? -INFINITY : logits[i] };
  apply_penalty (s, c);

  if (s->params.temperature <= 0)
    {
      int32_t best = 0;
      for (int32_t i = 1; i < n; i++)
        if (c[i].logit > c[best].logit)
          best = i;
      c[0] = c[best];
      return 0;
    }
  bool filter = s->params.top_p < 1.0f || s->params.min_p > 0.0f;
  if (s->params.top_k > 0 && s->params.top_k < n)
    {
      n = select_top_k (c, n, s->params.top_k);
      qsort (c, (size_t) n, sizeof *c, by_logit_desc);
      if (filter)
        n = filter_sorted (s, c, n);
    }
  else if (filter)
    n = filter_by_heap (s, c, n);
  softmax (s, c, n, 1.0 / s->params.temperature);
  return n;
}

int32_t
lm_sampler_sample (LmSampler *s, const float *logits)
{
  int32_t n = run_chain (s, logits);
  if (n == 0)
    return s->cand[0].id;
  double u = lm_rng_uniform (s->rng), cum = 0;
  for (int32_t i = 0; i < n; i++)
    if (u < (cum += s->prob[i]))
      return s->cand[i].id;
  return s->cand[n - 1].id;   /* rounding left u just above the total */
}

void
lm_sampler_probs (LmSampler *s, const float *logits, float *probs)
{
  int32_t n = run_chain (s, logits);
  memset (probs, 0, (size_t) s->n_vocab * sizeof *probs);
  if (n == 0)
    {
      probs[s->cand[0].id] = 1.0f;
      return;
    }
  for (int32_t i = 0; i < n; i++)
    probs[s->cand[i].id] = (float) s->prob[i];
}

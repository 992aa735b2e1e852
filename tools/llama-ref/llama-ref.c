/* llama-ref.c: reference logits from llama.cpp for the real-model tests.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Reads a UTF-8 prompt, tokenizes it with llama.cpp (special tokens parsed,
 * nothing added), runs it as one batch with F32 K/V, and prints JSON: the
 * prompt ids, per position the argmax and the top-K (id, logit) pairs, N
 * greedy continuation tokens, and for each the margin between the two
 * largest logits that chose it (small margins are near-ties that rounding
 * noise may decide either way). Built against a llama.cpp build that is
 * given, never part of the product; see tools/make-real-model-refs.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static char *
read_all (const char *path, long *len)
{
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    return NULL;
  fseek (f, 0, SEEK_END);
  *len = ftell (f);
  rewind (f);
  char *buf = malloc ((size_t) *len + 1);
  if (buf == NULL || fread (buf, 1, (size_t) *len, f) != (size_t) *len)
    exit (3);
  buf[*len] = 0;
  fclose (f);
  return buf;
}

/* Top @k entries of @logits (n values), by selection: k is small. */
static void
print_top (const float *logits, int n, int k)
{
  int *taken = calloc ((size_t) k, sizeof *taken);
  printf ("[");
  for (int i = 0; i < k; i++)
    {
      int best = -1;
      for (int j = 0; j < n; j++)
        {
          int used = 0;
          for (int t = 0; t < i; t++)
            used |= taken[t] == j;
          if (!used && (best < 0 || logits[j] > logits[best]))
            best = j;
        }
      taken[i] = best;
      printf ("%s[%d, %.6g]", i ? ", " : "", best, logits[best]);
    }
  printf ("]");
  free (taken);
}

static int
argmax (const float *x, int n)
{
  int best = 0;
  for (int j = 1; j < n; j++)
    if (x[j] > x[best])
      best = j;
  return best;
}

/* The largest logit minus the second largest. */
static float
top_margin (const float *x, int n)
{
  int best = argmax (x, n);
  float second = -INFINITY;
  for (int j = 0; j < n; j++)
    if (j != best && x[j] > second)
      second = x[j];
  return x[best] - second;
}

int
main (int argc, char **argv)
{
  if (argc != 6)
    {
      fprintf (stderr, "usage: llama-ref MODEL PROMPT_FILE N_GREEDY TOP_K THREADS\n");
      return 2;
    }
  int n_greedy = atoi (argv[3]), top_k = atoi (argv[4]), threads = atoi (argv[5]);
  long len;
  char *text = read_all (argv[2], &len);
  if (text == NULL)
    return 3;
  llama_backend_init ();
  struct llama_model *model = llama_model_load_from_file (argv[1], llama_model_default_params ());
  if (model == NULL)
    return 4;
  const struct llama_vocab *vocab = llama_model_get_vocab (model);
  int n_vocab = llama_vocab_n_tokens (vocab);
  llama_token *ids = malloc (((size_t) len + 16) * sizeof *ids);
  int n = llama_tokenize (vocab, text, (int32_t) len, ids, (int32_t) len + 16, false, true);
  if (n <= 0)
    return 5;
  struct llama_context_params cp = llama_context_default_params ();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t) (n + n_greedy + 8);
  cp.n_threads = cp.n_threads_batch = threads;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  struct llama_context *ctx = llama_init_from_model (model, cp);
  struct llama_batch batch = llama_batch_init (n, 0, 1);
  for (int i = 0; i < n; i++)
    {
      batch.token[i] = ids[i];
      batch.pos[i] = i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
  batch.n_tokens = n;
  if (llama_decode (ctx, batch) != 0)
    return 6;
  printf ("{\"prompt_ids\": [");
  for (int i = 0; i < n; i++)
    printf ("%s%d", i ? ", " : "", ids[i]);
  printf ("],\n \"argmax\": [");
  for (int i = 0; i < n; i++)
    printf ("%s%d", i ? ", " : "", argmax (llama_get_logits_ith (ctx, i), n_vocab));
  printf ("],\n \"top\": [");
  for (int i = 0; i < n; i++)
    {
      printf ("%s\n  ", i ? "," : "");
      print_top (llama_get_logits_ith (ctx, i), n_vocab, top_k);
    }
  float *margins = malloc ((size_t) (n_greedy > 0 ? n_greedy : 1) * sizeof *margins);
  printf ("],\n \"greedy\": [");
  const float *last = llama_get_logits_ith (ctx, n - 1);
  for (int k = 0; k < n_greedy; k++)
    {
      llama_token t = argmax (last, n_vocab);
      margins[k] = top_margin (last, n_vocab);
      printf ("%s%d", k ? ", " : "", t);
      if (llama_decode (ctx, llama_batch_get_one (&t, 1)) != 0)
        return 7;
      last = llama_get_logits_ith (ctx, -1);
    }
  printf ("],\n \"greedy_margin\": [");
  for (int k = 0; k < n_greedy; k++)
    printf ("%s%.5g", k ? ", " : "", margins[k]);
  printf ("]}\n");
  free (margins);
  llama_batch_free (batch);
  llama_free (ctx);
  llama_model_free (model);
  free (ids);
  free (text);
  return 0;
}

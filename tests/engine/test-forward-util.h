/* test-forward-util.h: golden-file helpers shared by the model/forward/LoRA/session tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "session-private.h"

/* The backend the golden tests run on: these sources are built once for the
 * CPU and once more with -DGOLDEN_BACKEND=LM_BACKEND_CUDA for the GPU. */
#ifndef GOLDEN_BACKEND
#define GOLDEN_BACKEND LM_BACKEND_CPU
#endif

/* For a GPU build of the tests on a machine where the GPU backend cannot run:
 * registers one test that is skipped with the probe's reason and returns
 * TRUE (main() then runs only that); FALSE otherwise. */
gboolean golden_backend_skip (void);

/* README pass criteria for an fp32 implementation. */
#define LOGITS_TOL 2e-3

/* Reads tests/data/qwen35/@model/@file as float32 / int32; *count = elements. */
float *golden_floats (const char *model, const char *file, gsize *count);
int32_t *golden_ints (const char *model, const char *file, gsize *count);
/* Loads tests/data/qwen35/@model/@model.gguf; fails the test on error. */
LmModel *golden_model (const char *model);
/* A session with @n_threads threads and @n_batch rows per step. */
LmSession *golden_session (const LmModel *model, uint32_t n_threads, uint32_t n_batch);
/* Largest |a - b| over @n values. */
double max_abs_diff (const float *a, const float *b, gsize n);
/* Index of the largest value. */
int32_t argmax (const float *x, gsize n);
/* Asserts max |a - b| <= @tol over @n values; logs the measured error under @what. */
void assert_close (const char *what, const float *a, const float *b, gsize n, double tol);
/* Prefills the prompt, then 32 argmax steps: the tokens must equal
 * @prefix greedy_tokens.bin and the logits @prefix greedy_logits.bin. */
void run_greedy (const LmModel *m, LmSession *s, const char *name, const char *prefix);
/* Prefills @tokens (n) in one call and returns the logits of every position
 * (n x n_vocab, g_free()). */
float *prefill_all (LmSession *s, const int32_t *tokens, gsize n);
/* The first @n_tokens tokens of @model's long golden prompt; fails the
 * test if it is shorter. */
int32_t *golden_prompt_prefix (const char *model, gsize n_tokens);
/* Prefills @prompt (all logits), then @n_decode steps fed with @a's argmax:
 * asserts the logits of @a and @b within @tol at every step, and logs the
 * worst decode difference under @what. */
void assert_sessions_agree (const char *what, const LmModel *m, LmSession *a, LmSession *b,
                            const int32_t *prompt, gsize n_prompt, int n_decode, double tol);
/* Loads the adapter at tests/data/@rel for @m at scale 1; fails the test
 * with the loader's message on error. */
LmLora *golden_lora_load (const LmModel *m, const char *rel);
/* u = A·h of a LoRA hook call: @call->n_tokens rows of h (d_in each) into
 * rows of u (rank each), summed in input order. */
void lora_hook_a_times_h (const LmLoraHookCall *call, const float *h, float *u);
/* Feeds @tokens one at a time; returns max |logits - @rows| over all steps
 * (row t of @rows, n_vocab wide, after token t). */
double decode_max_diff (LmSession *s, const int32_t *tokens, gsize n, const float *rows);

/* The residual stream of a prefill, laid out like the golden hidden files:
 * [n_layer][n_tok][n_embd] after each half of each layer, [n_tok][n_embd]
 * after the final norm. */
typedef struct {
  uint32_t n_embd, n_layer, n_tok;
  float *attn_residual, *l_out, *final_norm;
} Hidden;

/* Starts recording the first @n_tok positions of @s into @h. */
void hidden_capture (Hidden *h, LmSession *s, uint32_t n_tok);
void hidden_clear (Hidden *h);

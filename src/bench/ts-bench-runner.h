/* ts-bench-runner.h: HE-LoRA benchmark: the same greedy generation per configuration, timed per stage.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The one measurement path of HE-LoRA generation: the app's benchmark page
 * and `tensafe-cli bench helora` both run it. Loads a model and an adapter
 * once (optionally writing a random adapter first, and stacking others on
 * it), then for each rank asked for (the adapter resized, see
 * ts-bench-adapter.h) and each configuration (plaintext LoRA, HE-LoRA local
 * with a CKKS preset, HE-LoRA remote, remote in the adapter-private mode)
 * runs a fresh session: prefill of a fixed prompt, then @n_tokens greedy
 * decode steps, each timed per stage (DESIGN.md §2) into a TsTimingSeries.
 * HE statistics (bytes, encryptions, HE time, Δ error) count the decode
 * steps only. Every configuration sees the same prompt, so greedy texts
 * match when the encrypted path is exact enough. With several rounds the
 * whole list of configurations runs again, interleaved (plain, private,
 * plain, private, …), so that a busy machine's load falls on all alike.
 *
 * The adapter-private mode runs back to back (tokens right after the
 * prompt, pads made while they are served) or warm: the decode is timed
 * only once the evaluator's pad pools for the connection are full, as for
 * a chat turn after idle time (ts-bench-pads.h reads the server's /metrics
 * for that, and for the pads made inline during the timed decode).
 *
 * ts_bench_run() blocks (seconds to minutes): call it on a worker thread
 * (its progress callback runs there), or ts_bench_run_async() from a main
 * loop. Cancelling @cancellable stops
 * between two tokens with G_IO_ERROR_CANCELLED. Exports: ts-bench-export.h.
 */
#pragma once

#include <gio/gio.h>

#include "ts-helora-session.h"
#include "ts-timings.h"

G_BEGIN_DECLS

typedef struct {
  TsHeloraMode mode;
  char *preset;              /* CKKS preset (local, remote); NULL for plain */
  char *remote_url;          /* remote only */
  gboolean private_mode;     /* remote only: the adapter-private mode (docs/security.md) */
  guint private_lambda_s;    /* its flooding bits (TsHeloraOptions.private_lambda_s) */
  /* private only: time the decode once the evaluator's pad pools are full;
   * they must hold @n_tokens answers per module (--pad-pool-answers) */
  gboolean private_warm;
} TsBenchConfig;

typedef struct {
  char *model_path;
  char *adapter_path;        /* GGUF LoRA file or PEFT folder */
  /* > 0: first write a seeded random adapter of this rank to @adapter_path
   * (every full-attention output projection, ts_helora_adapter_write_synthetic()). */
  guint make_rank;
  /* Adapters stacked on @adapter_path (weight 1), with their weights
   * (ts_adapter_stack_load()); a remote evaluator stacks the same files. */
  GPtrArray *stack_paths;    /* of char *; NULL: none */
  GArray *stack_weights;     /* of float, one per path */
  /* > 0: also stack two random adapters of this rank (ts-bench-stack.h).
   * Their files go next to @adapter_path when a configuration is remote
   * (the evaluator must serve them: missing ones are written, and then the
   * run fails with G_IO_ERROR_NOT_FOUND saying so), else in a temporary folder. */
  guint random_stack_rank;
  char *prompt;              /* NULL: a fixed English sentence */
  GArray *prompt_tokens;     /* gint32 ids; overrides @prompt when set */
  /* > 0 (and no @prompt_tokens): a fixed prompt of this many ids spread over
   * the vocabulary, for models without a tokenizer; overrides @prompt. */
  guint n_prompt_ids;
  guint n_tokens;            /* decode steps per configuration (>= 1) */
  guint n_threads;           /* engine threads; 0: all cores */
  guint he_threads;          /* local evaluator threads; 0: as @n_threads (and 1 for 0) */
  gboolean public_key;       /* encrypt h with a public key instead of the secret key */
  gboolean thread_clock;     /* time local HE stages by thread CPU time (busy machines) */
  gboolean exact_activations; /* f32 activations, as the chat runs (LmSessionParams) */
  /* Remote: results in the real packing (TsHeloraOptions.real_packing);
   * by default the complex one where a module's layout has it. */
  gboolean remote_real_packing;
  /* Where the model runs and where local HE-LoRA computes; CPU for both
   * from ts_bench_options_new() (per-thread clocks time the CPU's stages).
   * With both on the GPU, h and u stay in device memory (engine/include/lm.h,
   * lm_session_set_lora_device_hook). */
  LmBackend engine_backend;
  TsHeloraBackend he_backend;
  GArray *configs;           /* of TsBenchConfig */
  GArray *ranks;             /* guint LoRA ranks to sweep (ts-bench-adapter.h);
                                NULL or empty: the adapter's own rank */
  guint n_rounds;            /* runs of the configurations, per rank; 0: 1 */
  /* warm private: longest wait for the evaluator to have no other private
   * connection, then for full pools (each); 0: 2 minutes */
  guint pad_wait_ms;
} TsBenchOptions;

TsBenchOptions *ts_bench_options_new (const char *model_path, const char *adapter_path,
                                      guint n_tokens);
void ts_bench_options_free (TsBenchOptions *options);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsBenchOptions, ts_bench_options_free)
/* Appends a configuration (strings copied). */
void ts_bench_options_add (TsBenchOptions *options, TsHeloraMode mode, const char *preset,
                           const char *remote_url);
/* Appends a remote configuration in the adapter-private mode. */
void ts_bench_options_add_private (TsBenchOptions *options, const char *preset,
                                   const char *remote_url, guint lambda_s);
/* The same, timed from full pad pools (TsBenchConfig.private_warm). */
void ts_bench_options_add_private_warm (TsBenchOptions *options, const char *preset,
                                        const char *remote_url, guint lambda_s);
/* Stacks the adapter at @path (copied) with @weight on the measured one. */
void ts_bench_options_add_stacked (TsBenchOptions *options, const char *path, float weight);

typedef struct {
  char *label;               /* "plaintext", "HE local · fast", … (" · stack" when stacked) */
  TsHeloraMode mode;
  gboolean private_mode;     /* remote in the adapter-private mode */
  gboolean stacked;          /* other adapters were stacked on the measured one */
  char *preset;
  guint rank;                /* largest rank among the adapter's modules */
  guint n_modules;           /* adapted modules */
  guint n_inputs;            /* distinct h among them: encryptions per token (0 plain) */
  TsTimingSeries *series;    /* one entry per generated token */
  guint n_tokens;
  double decode_ms;          /* wall time of the decode steps */
  double tokens_per_s;
  double he_ms_per_module;   /* encrypt … decrypt per adapted module and token */
  guint64 bytes_up, bytes_down;  /* ciphertext frames over the decode steps */
  guint64 encryptions;       /* of h, over the decode steps */
  double max_abs_delta_error;
  GArray *tokens;            /* gint32 generated ids */
  guint round;               /* from 0 (TsBenchOptions.n_rounds) */
  gboolean private_warm;     /* timed from full pad pools */
  /* Private: the evaluator's pads, from its /metrics (server-wide); FALSE
   * when it could not be read (the rest is then 0). */
  gboolean pads_known;
  guint64 pads_from_pool;    /* taken from a pool by the decode steps */
  guint64 pads_inline;       /* made inline by them, a pool being empty */
  guint64 pads_ready;        /* in the pools when the timed decode started */
  guint64 pads_refilled;     /* made by the refill thread while the decode ran */
  double pads_per_module;    /* pads one module answer spent */
  double pad_ms;             /* refill thread CPU ms per pad (this run's connection) */
  double pad_wait_ms;        /* warm: waiting for full pools before the decode */
} TsBenchResult;

void ts_bench_result_free (TsBenchResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsBenchResult, ts_bench_result_free)

/* (fraction in [0, 1], label of the running configuration, user data) */
typedef void (*TsBenchProgressFunc) (double fraction, const char *label, gpointer user_data);

/* Runs every configuration for every rank; a GPtrArray of TsBenchResult
 * (rank-major, then round by round, configurations in order; free with
 * g_ptr_array_unref), or NULL. */
GPtrArray *ts_bench_run (const TsBenchOptions *options, TsBenchProgressFunc progress,
                         gpointer user_data, GCancellable *cancellable, GError **error);

/* ts_bench_run() on a worker (ts-bench-runner-task.c); takes @options.
 * @progress (may be NULL) runs with @progress_data on the caller's
 * thread-default main context, never after @callback. */
void ts_bench_run_async (TsBenchOptions *options, TsBenchProgressFunc progress,
                         gpointer progress_data, GCancellable *cancellable,
                         GAsyncReadyCallback callback, gpointer user_data);
/* What ts_bench_run() returns, or NULL with @error. */
GPtrArray *ts_bench_run_finish (GAsyncResult *result, GError **error);
/* Once the run is over: the rows that finished (all of them, or those
 * before a failure or a stop), as a new reference; empty when none did. */
GPtrArray *ts_bench_run_get_finished (GAsyncResult *result);

G_END_DECLS

/* cli-bench-he-seal.h: the HE-LoRA token on SEAL, for `tensafe-cli bench he --seal`.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Runs tools/seal-bench's program (built by the user against their own SEAL)
 * for one configuration and reads the JSON object it prints. Main thread only.
 */
#pragma once

#include <glib.h>

typedef struct {
  char *library;           /* "SEAL 4.4.3" */
  gboolean hexl;           /* built with Intel HEXL */
  double median_ms, min_ms;  /* the token */
  double max_abs_error;
} CliSealResult;

/* Runs @program for a ring of @ring_degree, secret- (@pk FALSE) or
 * public-key encryption, @runs tokens, timed by the thread's CPU clock when
 * @thread_clock. Fails with a message naming the program when it cannot be
 * run, exits non-zero, or prints no valid result. */
gboolean cli_seal_bench_run (const char *program, size_t ring_degree, gboolean pk, int runs,
                             gboolean thread_clock, CliSealResult *out, GError **error);
void cli_seal_result_clear (CliSealResult *result);

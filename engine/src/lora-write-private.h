/* lora-write-private.h: shared pieces of the GGUF and PEFT adapter writers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdio.h>

#include "lora-write.h"

/* One reduced module: A' (rank × d_in) and B' (d_out × rank), malloc'ed. */
typedef struct {
  float *a, *b;
  uint32_t rank, d_in, d_out;
} LmReducedModule;

/* The loader's factor for a module of rank @rank: alpha/rank, alpha/sqrt(rank)
 * (rsLoRA), or 1 when alpha is 0. */
typedef struct {
  double alpha;
  bool rslora;
} LmLoraFactorRule;
double lm_lora_factor (const LmLoraFactorRule *rule, uint32_t rank);
/* lm_lora_factor as an LmLoraScaleFunc (@user_data: the rule). */
double lm_lora_factor_func (uint32_t rank, void *user_data);

/* Reduces one module and reports it; @old and @new are the rules before and
 * after. LM_ERR_CANCELLED when the report asks to stop (out's factors are
 * set all the same: the caller frees them). */
LmStatus lm_reduce_one (const char *name, const float *a, const float *b, uint32_t r,
                        uint32_t d_in, uint32_t d_out, const LmLoraFactorRule *old_rule,
                        LmLoraFactorRule *new_rule, uint32_t rank, LmReducedModule *out,
                        LmLoraReduceReportFunc report, void *user_data, char **error_out);

/* "PATH.tmp.XXXXXX" opened for writing, or NULL. *tmp_out: its name (free()). */
FILE *lm_open_temp (const char *path, char **tmp_out);
/* Closes @f (flushing) and renames @tmp to @path; removes @tmp on failure. */
LmStatus lm_commit_temp (FILE *f, char *tmp, const char *path, char **error_out);

LmStatus lm_lora_reduce_peft (const char *in, const char *out, uint32_t rank,
                              LmLoraReduceReportFunc report, void *user_data,
                              char **error_out);
LmStatus lm_lora_probe_peft (const char *dir, LmLoraShape *out, char **error_out);

/* Adds one module of rank @r to @shape. */
void lm_lora_shape_add (LmLoraShape *shape, uint64_t r, uint64_t d_in, uint64_t d_out);

/* model-hparams.h: reading LmModelInfo from GGUF metadata.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "model-private.h"

/* What the layers of an architecture contain. */
typedef struct {
  const char *name;      /* general.architecture */
  LmArch arch;
  bool hybrid;           /* Gated DeltaNet layers between attention layers */
  bool attn_gated, attn_qk_norm, attn_qkv_bias;   /* as in LmModelInfo */
  bool is_moe;
  bool shared_expert;    /* MoE layers add a gated shared expert */
} LmArchTraits;

/* The traits of @arch, or NULL if it is not an LmArch. */
const LmArchTraits *lm_arch_traits (LmArch arch);

/* Fills @info from @gguf's metadata and checks the sizes are consistent. */
LmStatus lm_read_hparams (const GgufFile *gguf, LmModelInfo *info, char **error_out);

/* model-hparams.h: reading LmModelInfo from GGUF metadata.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "model-private.h"

/* Fills @info from @gguf's metadata and checks the sizes are consistent. */
LmStatus lm_read_hparams (const GgufFile *gguf, LmModelInfo *info, char **error_out);

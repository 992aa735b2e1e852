/* helora-golden.h: greedy generation on the tiny golden model with its LoRA, per HE mode.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "lm.h"
#include "ts-helora-session.h"

G_BEGIN_DECLS

#define GOLDEN_DIR "qwen35/tiny-qwen35moe-f32/"
#define GOLDEN_MODEL GOLDEN_DIR "tiny-qwen35moe-f32.gguf"
#define GOLDEN_LORA GOLDEN_DIR "lora/tiny-qwen35moe-lora-f32.gguf"
#define GOLDEN_STEPS 32

typedef struct {
  LmModel *model;
  LmLora *lora;
  char *lora_path;
  gint32 *prompt;
  gsize n_prompt;
  gint32 *lora_greedy;         /* the golden 32 tokens with the adapter */
} Golden;

/* Loads model, adapter and golden tokens; fails the test on error. */
void golden_load (Golden *g);
void golden_clear (Golden *g);

/* Batched prefill of the golden prompt, then GOLDEN_STEPS argmax steps with
 * @helora attached (NULL: no adapter hooks, plain LoRA). Returns the tokens. */
gint32 *golden_greedy (Golden *g, TsHeloraSession *helora);
/* The same on an engine session of @n_threads threads. */
gint32 *golden_greedy_threads (Golden *g, TsHeloraSession *helora, guint n_threads);

G_END_DECLS

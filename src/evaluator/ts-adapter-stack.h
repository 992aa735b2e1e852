/* ts-adapter-stack.h: several LoRA adapters active at once, with weights.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A stack is an ordinary LmLora (engine/include/lm.h, lm_lora_stack()): the union
 * of the adapters' modules, where a module adapted by several of them sums
 * their weighted products as one module of the summed rank. Attach it like
 * any adapter (lm_session_set_lora(), ts_helora_session_new()); HE-LoRA then
 * packs each stacked module as one matrix and encrypts each distinct input h
 * once per token (ts_helora_session_n_inputs()).
 *
 * A remote evaluator stacks the same files itself: pass their paths and
 * weights as TsHeloraOptions.stacked_paths / stacked_weights (the hello then
 * names every adapter; docs/protocol.md).
 * Blocking; no shared state.
 */
#pragma once

#include <gio/gio.h>

#include "lm.h"

G_BEGIN_DECLS

/* Stacks already loaded adapters (borrowed) with @weights; free with lm_lora_free(). */
LmLora *ts_adapter_stack (const LmLora *const *loras, const float *weights, guint n,
                          GError **error);
/* Loads each of @paths (GGUF file or PEFT folder, user scale 1) for @model
 * and stacks them with @weights. */
LmLora *ts_adapter_stack_load (const LmModel *model, const char *const *paths,
                               const float *weights, guint n, GError **error);
/* "banking-qa ×0.70 + code-review ×0.30": for the chat header and logs.
 * @ids are adapter ids (ts_helora_adapter_id()). */
char *ts_adapter_stack_describe (const char *const *ids, const float *weights, guint n);

G_END_DECLS

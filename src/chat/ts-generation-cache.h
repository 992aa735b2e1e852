/* ts-generation-cache.h: a reply's engine session kept for the next reply.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each turn of a chat sends the whole conversation again; the tokens it
 * shares with the previous reply's (system prompt, earlier turns, that
 * reply) are already in that reply's K/V cache. A TsGenerationCache keeps
 * the session after a reply, and the next reply of the same pane takes it,
 * drops what it does not share (lm_session_rewind) and feeds only the new
 * tokens, as chat applications' prompt caches do. A session is only reused
 * for the same model, adapter and computation (the signature: evaluator,
 * CKKS parameters, key, threads), so a reply never continues state computed
 * in another way than it says.
 *
 * Ownership: reference-counted; the cache owns the kept session and a
 * reference on its model. A job holds a reference on its cache, takes the
 * session out while it runs and puts it back at its end.
 * Thread-safety: every function may be called from any thread.
 */
#pragma once

#include <glib.h>

#include "lm.h"
#include "ts-generation.h"

G_BEGIN_DECLS


TsGenerationCache *ts_generation_cache_new (void);
TsGenerationCache *ts_generation_cache_ref (TsGenerationCache *cache);
void ts_generation_cache_unref (TsGenerationCache *cache);
/* Frees the kept session (another model, memory wanted back). */
void ts_generation_cache_clear (TsGenerationCache *cache);
/* Tokens the last reply found already computed (0: it started afresh). */
guint ts_generation_cache_get_last_reused (TsGenerationCache *cache);

/* For ts-generation.c: the kept session if it was made for @model, @lora
 * and @signature, with its tokens in @ids (a GArray of gint32, caller
 * frees); NULL otherwise (the kept one, if any, is freed). */
LmSession *_ts_generation_cache_take (TsGenerationCache *cache, TsGenerationModel *model,
                                      const LmLora *lora, const char *signature, GArray **ids);
/* Keeps @session (owned) holding @ids (owned) for the next reply. */
void _ts_generation_cache_put (TsGenerationCache *cache, TsGenerationModel *model,
                               const LmLora *lora, const char *signature, LmSession *session,
                               GArray *ids);
void _ts_generation_cache_set_last_reused (TsGenerationCache *cache, guint n_tokens);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsGenerationCache, ts_generation_cache_unref)

G_END_DECLS

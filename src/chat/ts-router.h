/* ts-router.h: the routing rules: picks the adapter for a chat turn from the user's text.
 * (ts-chat-router.h applies them to the adapters installed for the chat.)
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Rules, in order:
 *  1. override: an adapter the user chose (ts_router_set_override()) wins;
 *  2. keyword: each adapter's keywords and tags (metadata.json "keywords",
 *     "tags") matched as whole words, case-insensitively; the adapter with
 *     strictly the most distinct matches wins, scored by its share of all
 *     matches (1.0 when no other adapter matched);
 *  3. embedding: the base model's own embedding of the text (mean over its
 *     tokens of the final-norm hidden state, lm_session_mean_hidden()) is
 *     compared by cosine similarity with each adapter's centroid (the mean
 *     embedding of its example prompts, metadata.json "examples"), both
 *     centred on the mean embedding of all examples; the best wins if its
 *     similarity reaches the threshold (default 0.3).
 * Otherwise no adapter is routed (the chat keeps its current one).
 *
 * The embedding rule is only as semantic as the base model: on a real
 * Qwen3.5 it groups texts by topic; on a tiny random test model it mostly
 * measures shared tokens.
 *
 * Threads: a TsRouter owns one engine session; use it from one thread at a
 * time (the chat's generation worker). The model is borrowed.
 */
#pragma once

#include <gio/gio.h>

#include "lm.h"

G_BEGIN_DECLS

typedef enum {
  TS_ROUTE_NONE,               /* nothing matched: keep the current adapter */
  TS_ROUTE_OVERRIDE,
  TS_ROUTE_KEYWORD,
  TS_ROUTE_EMBEDDING,
} TsRouteRule;

typedef struct {
  char *adapter_id;            /* NULL with TS_ROUTE_NONE */
  double score;                /* keyword share or cosine similarity, 1 for override */
  TsRouteRule rule;
} TsRoute;

typedef struct _TsRouter TsRouter;

#define TS_ROUTER_DEFAULT_MIN_SIMILARITY 0.3

/* @model may be NULL: keyword and override rules only. */
TsRouter *ts_router_new (const LmModel *model, GError **error);
void ts_router_free (TsRouter *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsRouter, ts_router_free)

/* Adds adapter @id with NULL-ended @keywords and @examples (either may be
 * NULL); the examples' centroid is computed here (needs the model). */
gboolean ts_router_add_adapter (TsRouter *self, const char *id, const char *const *keywords,
                                const char *const *examples, GError **error);
/* The same from an adapter's metadata.json ("id" unless @id is given;
 * "keywords" and "tags" as keywords, "examples" as example prompts). */
gboolean ts_router_add_metadata (TsRouter *self, const char *id, const char *metadata_path,
                                 GError **error);
guint ts_router_n_adapters (TsRouter *self);

/* The user's choice (NULL: back to automatic routing). */
void ts_router_set_override (TsRouter *self, const char *adapter_id);
void ts_router_set_min_similarity (TsRouter *self, double min_similarity);

/* Routes @text; fills @out (clear it with ts_route_clear()). FALSE only on
 * an engine failure. */
gboolean ts_router_route (TsRouter *self, const char *text, TsRoute *out, GError **error);
void ts_route_clear (TsRoute *route);
/* "override", "keyword", "embedding" or "none". */
const char *ts_route_rule_name (TsRouteRule rule);
/* "routed to: banking-qa, 0.82 (keyword)"; "not routed" for TS_ROUTE_NONE. */
char *ts_route_describe (const TsRoute *route);

G_END_DECLS

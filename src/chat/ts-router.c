/* ts-router.c: picks the adapter for a chat turn: override, keywords, embeddings.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "ts-router.h"

/* Texts longer than this many tokens are embedded by their beginning. */
#define MAX_EMBED_TOKENS 256

typedef struct {
  char *id;
  GPtrArray *keywords;         /* casefolded */
  float *centroid;             /* n_embd, or NULL without examples */
} RouterAdapter;

struct _TsRouter {
  const LmModel *model;
  LmTokenizer *tok;
  LmSession *session;
  guint n_embd;
  GPtrArray *adapters;         /* of RouterAdapter * */
  double *example_sum;         /* n_embd: sum of every example's embedding */
  guint n_examples;
  char *override_id;
  double min_similarity;
};

static GQuark
router_error_quark (void)
{
  return g_quark_from_static_string ("ts-router-error");
}

static gboolean
engine_failed (LmStatus st, char *msg, const char *what, GError **error)
{
  g_set_error (error, router_error_quark (), st, "%s: %s", what,
               msg != NULL ? msg : lm_status_message (st));
  free (msg);
  return FALSE;
}

static void
adapter_free (gpointer data)
{
  RouterAdapter *a = data;

  g_free (a->id);
  g_ptr_array_unref (a->keywords);
  g_free (a->centroid);
  g_free (a);
}

TsRouter *
ts_router_new (const LmModel *model, GError **error)
{
  g_autoptr (TsRouter) self = g_new0 (TsRouter, 1);
  LmSessionParams params = { .n_ctx = MAX_EMBED_TOKENS, .n_threads = 2 };
  char *msg = NULL;
  LmStatus st;

  self->adapters = g_ptr_array_new_with_free_func (adapter_free);
  self->min_similarity = TS_ROUTER_DEFAULT_MIN_SIMILARITY;
  self->model = model;
  if (model == NULL)
    return g_steal_pointer (&self);
  self->n_embd = lm_model_info (model)->n_embd;
  self->example_sum = g_new0 (double, self->n_embd);
  if ((st = lm_tokenizer_new_from_gguf (lm_model_gguf (model), &self->tok, &msg)) != LM_OK)
    {
      engine_failed (st, msg, "Tokenizer", error);
      return NULL;
    }
  if ((st = lm_session_new (model, &params, &self->session)) != LM_OK)
    {
      engine_failed (st, NULL, "Router session", error);
      return NULL;
    }
  return g_steal_pointer (&self);
}

void
ts_router_free (TsRouter *self)
{
  if (self == NULL)
    return;
  g_ptr_array_unref (self->adapters);
  lm_session_free (self->session);
  lm_tokenizer_free (self->tok);
  g_free (self->override_id);
  g_free (self->example_sum);
  g_free (self);
}

/* The base model's embedding of @text: mean final-norm hidden state. */
static gboolean
embed (TsRouter *self, const char *text, float *out, GError **error)
{
  int32_t *ids = NULL;
  size_t n = 0;
  LmStatus st = lm_tokenize (self->tok, text, strlen (text), false, &ids, &n);

  if (st == LM_OK && n == 0)
    {
      free (ids);
      g_set_error (error, router_error_quark (), LM_ERR_INVALID_ARGUMENT, "Empty text");
      return FALSE;
    }
  if (st != LM_OK)
    return engine_failed (st, NULL, "Tokenizing", error);
  lm_session_reset (self->session);
  st = lm_session_mean_hidden (self->session, ids, MIN (n, MAX_EMBED_TOKENS), out);
  free (ids);
  return st == LM_OK || engine_failed (st, NULL, "Embedding", error);
}

/* The mean embedding of @examples; also adds them to the global sum. */
static float *
centroid_of (TsRouter *self, const char *const *examples, GError **error)
{
  guint n = g_strv_length ((char **) examples);
  g_autofree float *sum = g_new0 (float, self->n_embd);
  g_autofree float *one = g_new (float, self->n_embd);

  for (guint i = 0; i < n; i++)
    {
      if (!embed (self, examples[i], one, error))
        return NULL;
      for (guint e = 0; e < self->n_embd; e++)
        {
          sum[e] += one[e] / (float) n;
          self->example_sum[e] += one[e];
        }
    }
  self->n_examples += n;
  return g_steal_pointer (&sum);
}

gboolean
ts_router_add_adapter (TsRouter *self, const char *id, const char *const *keywords,
                       const char *const *examples, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  RouterAdapter *a = g_new0 (RouterAdapter, 1);

  a->id = g_strdup (id);
  a->keywords = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; keywords != NULL && keywords[i] != NULL; i++)
    if (keywords[i][0] != '\0')
      g_ptr_array_add (a->keywords, g_utf8_casefold (keywords[i], -1));
  if (self->model != NULL && examples != NULL && examples[0] != NULL
      && (a->centroid = centroid_of (self, examples, error)) == NULL)
    {
      adapter_free (a);
      return FALSE;
    }
  g_ptr_array_add (self->adapters, a);
  return TRUE;
}

/* The strings of array member @name, appended to @out. */
static void
collect_strings (JsonObject *obj, const char *name, GPtrArray *out)
{
  JsonArray *arr = json_object_has_member (obj, name)
                   ? json_object_get_array_member (obj, name) : NULL;

  for (guint i = 0; arr != NULL && i < json_array_get_length (arr); i++)
    {
      JsonNode *node = json_array_get_element (arr, i);
      if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING)
        g_ptr_array_add (out, (gpointer) json_node_get_string (node));
    }
}

gboolean
ts_router_add_metadata (TsRouter *self, const char *id, const char *metadata_path,
                        GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (metadata_path != NULL, FALSE);

  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GPtrArray) keywords = g_ptr_array_new ();
  g_autoptr (GPtrArray) examples = g_ptr_array_new ();
  JsonNode *root;
  JsonObject *obj;

  if (!json_parser_load_from_file (parser, metadata_path, error))
    return FALSE;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, router_error_quark (), 0, "%s: not a JSON object", metadata_path);
      return FALSE;
    }
  obj = json_node_get_object (root);
  if (id == NULL && json_object_has_member (obj, "id"))
    id = json_object_get_string_member_with_default (obj, "id", NULL);
  if (id == NULL)
    {
      g_set_error (error, router_error_quark (), 0, "%s: no adapter id", metadata_path);
      return FALSE;
    }
  collect_strings (obj, "keywords", keywords);
  collect_strings (obj, "tags", keywords);
  collect_strings (obj, "examples", examples);
  g_ptr_array_add (keywords, NULL);
  g_ptr_array_add (examples, NULL);
  return ts_router_add_adapter (self, id, (const char *const *) keywords->pdata,
                                (const char *const *) examples->pdata, error);
}

guint
ts_router_n_adapters (TsRouter *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->adapters->len;
}

void
ts_router_set_override (TsRouter *self, const char *adapter_id)
{
  g_return_if_fail (self != NULL);

  g_free (self->override_id);
  self->override_id = g_strdup (adapter_id);
}

void
ts_router_set_min_similarity (TsRouter *self, double min_similarity)
{
  g_return_if_fail (self != NULL);

  self->min_similarity = min_similarity;
}

/* Words of @text: casefolded runs of letters, digits, '-' and '_'. */
static GHashTable *
words_of (const char *text)
{
  g_autofree char *folded = g_utf8_casefold (text, -1);
  GHashTable *words = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GString *word = g_string_new (NULL);

  for (const char *p = folded;; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);
      if (c != 0 && (g_unichar_isalnum (c) || c == '-' || c == '_'))
        {
          g_string_append_unichar (word, c);
          continue;
        }
      if (word->len > 0)
        g_hash_table_add (words, g_strdup (word->str));
      g_string_truncate (word, 0);
      if (c == 0)
        break;
    }
  g_string_free (word, TRUE);
  return words;
}

static gboolean
route_keywords (TsRouter *self, const char *text, TsRoute *out)
{
  g_autoptr (GHashTable) words = words_of (text);
  guint best = 0, second = 0, total = 0;
  RouterAdapter *winner = NULL;

  for (guint i = 0; i < self->adapters->len; i++)
    {
      RouterAdapter *a = g_ptr_array_index (self->adapters, i);
      guint hits = 0;
      for (guint k = 0; k < a->keywords->len; k++)
        hits += g_hash_table_contains (words, g_ptr_array_index (a->keywords, k));
      total += hits;
      if (hits > best)
        {
          second = best;
          best = hits;
          winner = a;
        }
      else if (hits > second)
        second = hits;
    }
  if (best == 0 || best == second)
    return FALSE;
  *out = (TsRoute) { g_strdup (winner->id), (double) best / total, TS_ROUTE_KEYWORD };
  return TRUE;
}

/* Cosine similarity of x − mu and y − mu. */
static double
centred_cosine (const float *x, const float *y, const double *mu, guint n)
{
  double xy = 0, xx = 0, yy = 0;

  for (guint i = 0; i < n; i++)
    {
      double a = x[i] - mu[i], b = y[i] - mu[i];
      xy += a * b;
      xx += a * a;
      yy += b * b;
    }
  return xx > 0 && yy > 0 ? xy / sqrt (xx * yy) : 0;
}

/* Final-norm states share a large common direction (every text looks
 * alike to plain cosine), so texts and centroids are compared after
 * subtracting the mean embedding of all examples. */
static gboolean
route_embedding (TsRouter *self, const char *text, TsRoute *out, GError **error)
{
  g_autofree float *e = NULL;
  g_autofree double *mu = NULL;
  RouterAdapter *winner = NULL;
  double best = -2;

  if (self->model == NULL || self->n_examples == 0)
    return TRUE;
  e = g_new (float, self->n_embd);
  if (!embed (self, text, e, error))
    return FALSE;
  mu = g_new (double, self->n_embd);
  for (guint i = 0; i < self->n_embd; i++)
    mu[i] = self->example_sum[i] / self->n_examples;
  for (guint i = 0; i < self->adapters->len; i++)
    {
      RouterAdapter *a = g_ptr_array_index (self->adapters, i);
      double sim = a->centroid != NULL ? centred_cosine (e, a->centroid, mu, self->n_embd) : -2;
      if (sim > best)
        {
          best = sim;
          winner = a;
        }
    }
  if (winner != NULL && best >= self->min_similarity)
    *out = (TsRoute) { g_strdup (winner->id), best, TS_ROUTE_EMBEDDING };
  return TRUE;
}

gboolean
ts_router_route (TsRouter *self, const char *text, TsRoute *out, GError **error)
{
  g_return_val_if_fail (self != NULL && out != NULL, FALSE);

  *out = (TsRoute) { NULL, 0, TS_ROUTE_NONE };
  if (self->override_id != NULL)
    {
      *out = (TsRoute) { g_strdup (self->override_id), 1.0, TS_ROUTE_OVERRIDE };
      return TRUE;
    }
  if (text == NULL || text[0] == '\0' || route_keywords (self, text, out))
    return TRUE;
  return route_embedding (self, text, out, error);
}

void
ts_route_clear (TsRoute *route)
{
  g_return_if_fail (route != NULL);

  g_clear_pointer (&route->adapter_id, g_free);
  route->rule = TS_ROUTE_NONE;
  route->score = 0;
}

const char *
ts_route_rule_name (TsRouteRule rule)
{
  switch (rule)
    {
    case TS_ROUTE_OVERRIDE: return "override";
    case TS_ROUTE_KEYWORD: return "keyword";
    case TS_ROUTE_EMBEDDING: return "embedding";
    case TS_ROUTE_NONE: default: return "none";
    }
}

char *
ts_route_describe (const TsRoute *route)
{
  g_return_val_if_fail (route != NULL, NULL);

  if (route->rule == TS_ROUTE_NONE || route->adapter_id == NULL)
    return g_strdup ("not routed");
  return g_strdup_printf ("routed to: %s, %.2f (%s)", route->adapter_id, route->score,
                          ts_route_rule_name (route->rule));
}

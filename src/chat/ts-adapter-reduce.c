/* ts-adapter-reduce.c: rank reduction of an installed adapter into a new adapter folder.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-adapter-reduce.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts-market-install.h"
#include "ts-market-json.h"
#include "ts-market-keyring.h"

/* Headers and small files above the factors themselves. */
#define SIZE_MARGIN (256 * 1024)

void
ts_adapter_reduction_free (TsAdapterReduction *self)
{
  if (self == NULL)
    return;
  g_free (self->id);
  g_free (self->path);
  g_clear_pointer (&self->modules, g_array_unref);
  g_free (self);
}

void
ts_adapter_origin_clear (TsAdapterOrigin *self)
{
  g_return_if_fail (self != NULL);

  g_clear_pointer (&self->id, g_free);
  g_clear_pointer (&self->version, g_free);
  g_clear_pointer (&self->name, g_free);
  memset (self, 0, sizeof *self);
}

static void
reduced_module_clear (gpointer data)
{
  g_free (((TsReducedModule *) data)->name);
}

gboolean
ts_adapter_probe (const char *source, LmLoraShape *shape, GError **error)
{
  g_return_val_if_fail (source != NULL, FALSE);
  g_return_val_if_fail (shape != NULL, FALSE);

  char *message = NULL;
  LmStatus st = lm_lora_probe_file (source, shape, &message);

  if (st != LM_OK)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "Cannot read the adapter: %s",
                 message ? message : lm_status_message (st));
  free (message);
  return st == LM_OK;
}

/* ---- metadata ------------------------------------------------------------ */

static JsonObject *
read_json_object (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr (JsonNode) root = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &text, &len, error)
      || (root = ts_json_parse_bounded (text, len, 8, error)) == NULL)
    return NULL;
  if (!JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s is not a JSON object", path);
      return NULL;
    }
  return json_object_ref (json_node_get_object (root));
}

/* The source's release record, or NULL (a plain file or folder). */
static JsonObject *
read_release (const char *source)
{
  g_autofree char *path = g_build_filename (source, TS_MARKET_RELEASE_FILE, NULL);

  return g_file_test (path, G_FILE_TEST_IS_REGULAR) ? read_json_object (path, NULL) : NULL;
}

static void
set_string_list (JsonObject *o, const char *member, const char *const *list)
{
  JsonArray *arr = json_array_new ();

  for (guint i = 0; list != NULL && list[i] != NULL; i++)
    json_array_add_string_element (arr, list[i]);
  json_object_set_array_member (o, member, arr);
}

static void
set_string (JsonObject *o, const char *member, const char *value)
{
  if (value != NULL)
    json_object_set_string_member (o, member, value);
}

static JsonObject *
metadata_from_catalogue (TsMarketAdapter *a)
{
  JsonObject *o = json_object_new ();
  JsonObject *publisher = json_object_new ();

  set_string (o, "id", a->id);
  set_string (o, "name", a->name);
  set_string (o, "description", a->description);
  set_string (publisher, "id", a->publisher_id);
  set_string (publisher, "name", a->publisher_name);
  json_object_set_object_member (o, "publisher", publisher);
  set_string (o, "version", a->latest_version);
  set_string (o, "base_model", a->base_model);
  set_string (o, "base_model_sha256", a->base_model_sha256);
  set_string (o, "license", a->license);
  set_string (o, "format", a->format);
  json_object_set_double_member (o, "price_per_1k_tokens", a->price_per_1k_tokens);
  json_object_set_int_member (o, "rank", a->rank);
  json_object_set_double_member (o, "alpha", a->alpha);
  set_string_list (o, "tags", (const char *const *) a->tags);
  /* what the chat's routing reads: a reduced copy routes as its source did */
  set_string_list (o, "keywords", (const char *const *) a->keywords);
  set_string_list (o, "examples", (const char *const *) a->examples);
  set_string_list (o, "target_modules", (const char *const *) a->target_modules);
  return o;
}

/* Copies member @name of @from into @to when it is there. */
static void
copy_member (JsonObject *to, JsonObject *from, const char *name)
{
  JsonNode *node = json_object_get_member (from, name);

  if (node != NULL)
    json_object_set_member (to, name, json_node_copy (node));
}

static JsonObject *
metadata_from_release (JsonObject *release)
{
  JsonObject *o = json_object_new ();

  set_string (o, "id", ts_json_get_string (release, "id"));
  set_string (o, "name", ts_json_get_string (release, "name"));
  set_string (o, "version", ts_json_get_string (release, "version"));
  set_string (o, "publisher", ts_json_get_string (release, "publisher"));
  set_string (o, "base_model", ts_json_get_string (release, "base_model"));
  copy_member (o, release, "tags");
  copy_member (o, release, "keywords");
  copy_member (o, release, "examples");
  return o;
}

/* The source's own metadata: its metadata.json, the catalogue's record,
 * its release record, or at least its file name. */
static JsonObject *
source_metadata (const TsAdapterReduceRequest *req, JsonObject *release, GError **error)
{
  g_autofree char *path = g_build_filename (req->source, TS_ADAPTER_METADATA_FILE, NULL);
  g_autofree char *base = NULL;
  JsonObject *o;

  if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return read_json_object (path, error);
  if (req->catalogue != NULL)
    return metadata_from_catalogue (req->catalogue);
  if (release != NULL)
    return metadata_from_release (release);
  base = g_path_get_basename (req->source);
  if (g_str_has_suffix (base, ".gguf"))
    base[strlen (base) - 5] = '\0';
  o = json_object_new ();
  set_string (o, "id", base);
  set_string (o, "name", base);
  return o;
}

static const char *
publisher_id (JsonObject *meta)
{
  JsonObject *p = ts_json_get_object (meta, "publisher");

  return p != NULL ? ts_json_get_string (p, "id") : ts_json_get_string (meta, "publisher");
}

/* The marketplace adapter a source descends from: itself for a signed
 * release, its own origin for a local one. */
static const char *
market_origin (JsonObject *release)
{
  JsonNode *local = release ? json_object_get_member (release, "local") : NULL;

  if (release == NULL)
    return NULL;
  if (local != NULL && JSON_NODE_HOLDS_VALUE (local)
      && json_node_get_value_type (local) == G_TYPE_BOOLEAN && json_node_get_boolean (local))
    return ts_json_get_string (release, "derived_from");
  return ts_json_get_string (release, "id");
}

/* The source's metadata with the new id, name, rank and "reduced_from". */
static void
derive_metadata (JsonObject *meta, const TsAdapterReduceRequest *req,
                 const TsAdapterReduction *red)
{
  g_autofree char *src_id = g_strdup (ts_json_get_string (meta, "id"));
  g_autofree char *src_name = g_strdup (ts_json_get_string (meta, "name"));
  g_autofree char *name = req->name ? g_strdup (req->name)
                                    : g_strdup_printf ("%s (rank %u)", src_name ? src_name
                                                       : src_id, red->rank_out);
  JsonObject *from = json_object_new ();
  double alpha = 1.0;

  set_string (from, "id", src_id);
  set_string (from, "version", ts_json_get_string (meta, "version"));
  set_string (from, "name", src_name);
  json_object_set_int_member (from, "rank", red->rank_in);
  json_object_set_int_member (from, "rank_out", red->rank_out);
  json_object_set_double_member (from, "energy_retained", red->retained_total);
  json_object_set_double_member (from, "energy_retained_min", red->retained_min);
  json_object_set_string_member (meta, "id", req->id);
  json_object_set_string_member (meta, "name", name);
  json_object_set_int_member (meta, "rank", red->rank_out);
  /* The writers set alpha to the new rank (an alpha of 0 stays 0). */
  if (!ts_json_get_number (meta, "alpha", &alpha) || alpha != 0.0)
    json_object_set_double_member (meta, "alpha", red->rank_out);
  json_object_set_object_member (meta, "reduced_from", from);
}

static gboolean
write_metadata (const char *dir, JsonObject *meta, GError **error)
{
  g_autofree char *path = g_build_filename (dir, TS_ADAPTER_METADATA_FILE, NULL);
  g_autoptr (JsonNode) root = json_node_init_object (json_node_alloc (), meta);
  g_autofree char *text = json_to_string (root, TRUE);

  return g_file_set_contents (path, text, -1, error);
}

/* ---- the reduction --------------------------------------------------------- */

typedef struct
{
  TsAdapterReduction *red;
  guint total;
  TsAdapterReduceProgress progress;
  gpointer progress_data;
  GCancellable *cancellable;
} Reporter;

static bool
report_module (const char *name, const LmLoraReduceInfo *info, void *user_data)
{
  Reporter *r = user_data;
  TsReducedModule m = { g_strdup (name), info->rank_in, info->rank_out, info->energy_total,
                        info->energy_kept };

  g_array_append_val (r->red->modules, m);
  if (r->progress != NULL)
    r->progress (r->red->modules->len, r->total, name, r->progress_data);
  return !g_cancellable_is_cancelled (r->cancellable);
}

static void
summarise (TsAdapterReduction *red)
{
  double kept = 0.0, total = 0.0, sum = 0.0;

  red->retained_min = 1.0;
  for (guint i = 0; i < red->modules->len; i++)
    {
      const TsReducedModule *m = &g_array_index (red->modules, TsReducedModule, i);
      double frac = m->energy_total > 0.0 ? m->energy_kept / m->energy_total : 1.0;

      red->rank_out = MAX (red->rank_out, m->rank_out);
      red->retained_min = MIN (red->retained_min, frac);
      sum += frac;
      kept += m->energy_kept;
      total += m->energy_total;
    }
  red->retained_mean = red->modules->len ? sum / red->modules->len : 1.0;
  red->retained_total = total > 0.0 ? kept / total : 1.0;
}

/* The adapter's own files (not the metadata or release record). */
static goffset
adapter_bytes (const char *path)
{
  g_autoptr (GDir) d = NULL;
  const char *name;
  GStatBuf st;
  goffset sum = 0;

  if (g_stat (path, &st) != 0)
    return 0;
  if (!S_ISDIR (st.st_mode))
    return st.st_size;
  d = g_dir_open (path, 0, NULL);
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      if (strcmp (name, TS_MARKET_RELEASE_FILE) != 0
          && strcmp (name, TS_ADAPTER_METADATA_FILE) != 0
          && g_stat (child, &st) == 0 && S_ISREG (st.st_mode))
        sum += st.st_size;
    }
  return sum;
}

static gboolean
check_request (const TsAdapterReduceRequest *req, const LmLoraShape *shape, GError **error)
{
  g_autofree char *target = g_build_filename (req->dest_dir, req->id, NULL);
  g_autofree char *a = g_canonicalize_filename (target, NULL);
  g_autofree char *b = g_canonicalize_filename (req->source, NULL);

  if (!ts_market_name_is_safe (req->id))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "“%s” is not a valid adapter name", req->id);
      return FALSE;
    }
  if (req->rank < 1 || req->rank >= shape->rank_max)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "The new rank must be between 1 and %u: the adapter has rank %u",
                   shape->rank_max - 1, shape->rank_max);
      return FALSE;
    }
  if (g_str_equal (a, b))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "The reduced adapter cannot replace the adapter it is made from");
      return FALSE;
    }
  if (!req->replace && g_file_test (target, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s already exists", target);
      return FALSE;
    }
  return TRUE;
}

/* A source with a release record passes the check it passes before use. */
static gboolean
verify_source (const TsAdapterReduceRequest *req, GCancellable *cancellable, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (req->source);
  g_autofree char *id = g_path_get_basename (req->source);
  g_autoptr (TsMarketKeyring) keyring = NULL;
  g_autoptr (GError) local = NULL;

  keyring = ts_market_keyring_new (req->keyring_path);
  if (ts_market_keyring_load (keyring, &local)
      && ts_market_verify_installed (dir, id, keyring, cancellable, &local))
    return TRUE;
  if (g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    g_propagate_error (error, g_steal_pointer (&local));
  else
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "The adapter failed its check: %s", local->message);
  return FALSE;
}

/* @dest_dir exists, and holds the reduced adapter's worth of free space. */
static gboolean
prepare_destination (const char *dest_dir, guint64 needed, GError **error)
{
  g_autoptr (GFile) dir = g_file_new_for_path (dest_dir);
  g_autoptr (GFileInfo) info = NULL;
  int saved;

  if (g_mkdir_with_parents (dest_dir, 0700) != 0)
    {
      saved = errno;
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "Cannot create %s: %s",
                   dest_dir, g_strerror (saved));
      return FALSE;
    }
  info = g_file_query_filesystem_info (dir, G_FILE_ATTRIBUTE_FILESYSTEM_FREE, NULL, NULL);
  if (info != NULL && g_file_info_has_attribute (info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE)
      && g_file_info_get_attribute_uint64 (info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE) < needed)
    {
      g_autofree char *need = g_format_size (needed);
      g_autofree char *free_space = g_format_size (
        g_file_info_get_attribute_uint64 (info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE));

      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                   "Not enough free space in %s: the reduced adapter needs about %s, %s are free",
                   dest_dir, need, free_space);
      return FALSE;
    }
  return TRUE;
}

/* Runs the engine's reduction into @staging. */
static gboolean
reduce_into (const TsAdapterReduceRequest *req, const LmLoraShape *shape, const char *staging,
             Reporter *reporter, GError **error)
{
  g_autofree char *file = g_strconcat (req->id, ".gguf", NULL);
  g_autofree char *out = shape->peft ? g_strdup (staging)
                                     : g_build_filename (staging, file, NULL);
  char *message = NULL;
  LmStatus st = lm_lora_reduce_file (req->source, out, req->rank, report_module, reporter,
                                     &message);

  if (st == LM_ERR_CANCELLED || g_cancellable_is_cancelled (reporter->cancellable))
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "The reduction was cancelled");
  else if (st != LM_OK)
    g_set_error (error, G_IO_ERROR,
                 st == LM_ERR_IO ? G_IO_ERROR_FAILED : G_IO_ERROR_INVALID_DATA,
                 "%s", message ? message : lm_status_message (st));
  free (message);
  return st == LM_OK && !g_cancellable_is_cancelled (reporter->cancellable);
}

/* The metadata and the release record next to the reduced files. */
static gboolean
describe (const TsAdapterReduceRequest *req, const char *staging, JsonObject *release,
          TsAdapterReduction *red, GCancellable *cancellable, GError **error)
{
  g_autoptr (JsonObject) meta = source_metadata (req, release, error);
  g_autofree char *version = NULL;

  if (meta == NULL)
    return FALSE;
  if (ts_json_get_string (meta, "version") == NULL && release != NULL)
    set_string (meta, "version", ts_json_get_string (release, "version"));
  version = g_strdup (ts_json_get_string (meta, "version"));
  if (!ts_market_name_is_safe (version))
    {
      g_free (version);
      version = g_strdup ("1");
      set_string (meta, "version", version);
    }
  if (publisher_id (meta) == NULL)
    set_string (meta, "publisher", "local");
  derive_metadata (meta, req, red);
  return write_metadata (staging, meta, error)
         && ts_market_write_local_release (staging, req->id, version, publisher_id (meta),
                                           ts_json_get_string (meta, "name"),
                                           ts_json_get_string (meta, "base_model"),
                                           market_origin (release), cancellable, error);
}

TsAdapterReduction *
ts_adapter_reduce (const TsAdapterReduceRequest *req, TsAdapterReduceProgress progress,
                   gpointer progress_data, GCancellable *cancellable, GError **error)
{
  g_autoptr (TsAdapterReduction) red = g_new0 (TsAdapterReduction, 1);
  g_autoptr (JsonObject) release = NULL;
  g_autofree char *prefix = NULL, *staging = NULL;
  LmLoraShape shape;
  Reporter reporter = { red, 0, progress, progress_data, cancellable };
  gboolean ok;
  int saved;

  g_return_val_if_fail (req != NULL && req->source != NULL && req->dest_dir != NULL
                        && req->id != NULL, NULL);

  if (!ts_adapter_probe (req->source, &shape, error) || !check_request (req, &shape, error))
    return NULL;
  release = read_release (req->source);
  if (release != NULL && req->keyring_path != NULL && !verify_source (req, cancellable, error))
    return NULL;
  if (!prepare_destination (req->dest_dir,
                            (guint64) 4 * req->rank * shape.dims_total + SIZE_MARGIN, error))
    return NULL;
  prefix = g_strdup_printf (".reducing-%s-XXXXXX", req->id);
  staging = g_build_filename (req->dest_dir, prefix, NULL);
  if (g_mkdtemp_full (staging, 0755) == NULL)
    {
      saved = errno;
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "Cannot write to %s: %s",
                   req->dest_dir, g_strerror (saved));
      return NULL;
    }
  red->id = g_strdup (req->id);
  red->path = g_build_filename (req->dest_dir, req->id, NULL);
  red->rank_in = shape.rank_max;
  red->modules = g_array_new (FALSE, TRUE, sizeof (TsReducedModule));
  g_array_set_clear_func (red->modules, reduced_module_clear);
  reporter.total = shape.n_modules;
  ok = reduce_into (req, &shape, staging, &reporter, error);
  if (ok)
    {
      summarise (red);
      red->bytes_in = adapter_bytes (req->source);
      red->bytes_out = adapter_bytes (staging);
      ok = describe (req, staging, release, red, cancellable, error)
           && !g_cancellable_set_error_if_cancelled (cancellable, error)
           && ts_market_swap_into_place (staging, red->path, req->replace, error);
    }
  /* After a swap the staging name holds the replaced copy, if any. */
  ts_market_remove_flat_dir (staging);
  return ok ? g_steal_pointer (&red) : NULL;
}

/* ---- reading it back ------------------------------------------------------- */

static void
read_origin (JsonObject *meta, TsAdapterOrigin *origin)
{
  JsonObject *from = ts_json_get_object (meta, "reduced_from");
  gint64 rank = 0, rank_out = 0;

  memset (origin, 0, sizeof *origin);
  if (from == NULL)
    return;
  origin->id = g_strdup (ts_json_get_string (from, "id"));
  origin->version = g_strdup (ts_json_get_string (from, "version"));
  origin->name = g_strdup (ts_json_get_string (from, "name"));
  ts_json_get_int (from, "rank", &rank);
  ts_json_get_int (from, "rank_out", &rank_out);
  origin->rank_in = (guint) CLAMP (rank, 0, G_MAXUINT);
  origin->rank_out = (guint) CLAMP (rank_out, 0, G_MAXUINT);
  ts_json_get_number (from, "energy_retained", &origin->retained_total);
  ts_json_get_number (from, "energy_retained_min", &origin->retained_min);
}

TsMarketAdapter *
ts_adapter_read_metadata (const char *dir, TsAdapterOrigin *origin, GError **error)
{
  g_return_val_if_fail (dir != NULL, NULL);

  g_autofree char *path = g_build_filename (dir, TS_ADAPTER_METADATA_FILE, NULL);
  g_autoptr (JsonObject) meta = read_json_object (path, error);
  g_autoptr (JsonNode) node = NULL;
  g_autoptr (GError) local = NULL;
  JsonObject *record;
  TsMarketAdapter *adapter;

  if (meta == NULL)
    return NULL;
  /* The catalogue's shape: the publisher as an object, the version as the
   * latest one, no versions to install. */
  node = json_node_init_object (json_node_alloc (), meta);
  record = json_node_get_object (node);
  if (ts_json_get_object (record, "publisher") == NULL)
    {
      JsonObject *publisher = json_object_new ();

      set_string (publisher, "id", ts_json_get_string (record, "publisher"));
      json_object_set_object_member (record, "publisher", publisher);
    }
  if (ts_json_get_string (record, "version") != NULL)
    set_string (record, "latest_version", ts_json_get_string (record, "version"));
  json_object_remove_member (record, "versions");
  adapter = ts_market_adapter_from_json (node, &local);
  if (adapter == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: %s", path, local->message);
      return NULL;
    }
  if (origin != NULL)
    read_origin (record, origin);
  return adapter;
}

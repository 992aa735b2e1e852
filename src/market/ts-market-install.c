/* ts-market-install.c: verify, download, stage and swap an adapter release into adapters/<id>/.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-install.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ts-market-download.h"
#include "ts-market-json.h"

typedef struct
{
  TsMarketClient       *client;
  TsMarketAdapter      *adapter;
  TsMarketVersion      *version;    /* borrowed from adapter */
  char                 *adapters_dir;
  char                 *cache_dir;
  guint                 next_file;
  gint64                done_bytes;
  gint64                total_bytes;
  TsMarketProgressFunc  progress;
  gpointer              progress_data;
  GDestroyNotify        progress_destroy;
} Install;

static void
install_free (Install *in)
{
  if (in->progress_destroy)
    in->progress_destroy (in->progress_data);
  g_clear_object (&in->client);
  g_clear_pointer (&in->adapter, ts_market_adapter_unref);
  g_free (in->adapters_dir);
  g_free (in->cache_dir);
  g_free (in);
}

static char *
cache_path (Install *in, const TsMarketFile *f)
{
  return g_build_filename (in->cache_dir, f->sha256, NULL);
}

void
ts_market_remove_flat_dir (const char *path)
{
  g_autoptr(GDir) d = g_dir_open (path, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      g_unlink (child);
    }
  g_rmdir (path);
}

static void
add_string_list (JsonBuilder *b, const char *member, GStrv list)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  for (guint i = 0; list != NULL && list[i] != NULL; i++)
    json_builder_add_string_value (b, list[i]);
  json_builder_end_array (b);
}

static gboolean
write_release_file (Install *in, const char *dir, GError **error)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *canonical = ts_market_manifest_to_canonical (in->version->manifest);
  g_autofree char *path = g_build_filename (dir, TS_MARKET_RELEASE_FILE, NULL);
  g_autofree char *text = NULL;

  json_builder_begin_object (b);
  ts_json_add_string (b, "id", in->adapter->id);
  ts_json_add_string (b, "version", in->version->version);
  ts_json_add_string (b, "publisher", in->adapter->publisher_id);
  ts_json_add_string (b, "name", in->adapter->name);
  ts_json_add_string (b, "base_model", in->adapter->base_model);
  /* The catalogue's routing hints: the chat's adapter routing reads tags and
   * keywords as keywords and embeds the examples (ts_router_add_metadata()
   * on this file).  Outside the signed manifest, as the catalogue serves them. */
  add_string_list (b, "tags", in->adapter->tags);
  add_string_list (b, "keywords", in->adapter->keywords);
  add_string_list (b, "examples", in->adapter->examples);
  ts_json_add_string (b, "key_id", in->version->key_id);
  ts_json_add_string (b, "signature", in->version->signature);
  ts_json_add_string (b, "manifest", canonical);
  ts_json_add_string (b, "source", ts_market_client_get_base_url (in->client));
  ts_json_add_int (b, "installed_at", g_get_real_time () / G_USEC_PER_SEC);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  text = json_to_string (root, TRUE);
  return g_file_set_contents (path, text, -1, error);
}

/* Links (or copies) each verified cache file into the staging folder. */
static gboolean
stage_files (Install *in, const char *staging, GCancellable *cancellable, GError **error)
{
  GPtrArray *files = in->version->manifest->files;

  for (guint i = 0; i < files->len; i++)
    {
      const TsMarketFile *f = g_ptr_array_index (files, i);
      g_autofree char *src = cache_path (in, f);
      g_autofree char *dst = g_build_filename (staging, f->name, NULL);
      g_autofree char *sha = NULL;
      goffset size = -1;

      sha = ts_sha256_file (src, &size, cancellable, error);
      if (sha == NULL)
        return FALSE;
      if (g_strcmp0 (sha, f->sha256) != 0 || size != f->size)
        {
          g_unlink (src);
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM,
                       "%s changed on disk before it could be installed", f->name);
          return FALSE;
        }
      if (link (src, dst) != 0)
        {
          g_autoptr(GFile) s = g_file_new_for_path (src), d = g_file_new_for_path (dst);
          if (!g_file_copy (s, d, G_FILE_COPY_NONE, cancellable, NULL, NULL, error))
            return FALSE;
        }
    }
  return write_release_file (in, staging, error);
}

gboolean
ts_market_swap_into_place (const char *staging, const char *target, gboolean replace,
                           GError **error)
{
  g_return_val_if_fail (staging != NULL, FALSE);
  g_return_val_if_fail (target != NULL, FALSE);

  int saved;

  if (!g_file_test (target, G_FILE_TEST_EXISTS))
    {
      /* No replacing a copy that appeared meanwhile unless asked to. */
      if (renameat2 (AT_FDCWD, staging, AT_FDCWD, target, RENAME_NOREPLACE) == 0)
        return TRUE;
      if ((errno == EINVAL || errno == ENOSYS) && g_rename (staging, target) == 0)
        return TRUE;
      goto fail;
    }
  if (!replace)
    {
      errno = EEXIST;
      goto fail;
    }
  if (renameat2 (AT_FDCWD, staging, AT_FDCWD, target, RENAME_EXCHANGE) == 0)
    return TRUE;
  if (errno != EINVAL && errno != ENOSYS)
    goto fail;
  /* No exchange on this file system: move the old copy aside first. */
  {
    g_autofree char *aside = g_strconcat (staging, ".old", NULL);
    if (g_rename (target, aside) != 0)
      goto fail;
    if (g_rename (staging, target) != 0)
      {
        saved = errno;
        g_rename (aside, target);
        errno = saved;
        goto fail;
      }
    /* The old copy takes the staging name, to be deleted with it. */
    g_rename (aside, staging);
    return TRUE;
  }
fail:
  saved = errno;
  g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "Cannot write %s: %s", target,
               g_strerror (saved));
  return FALSE;
}

static void
finalize_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  Install *in = task_data;
  g_autofree char *prefix = g_strdup_printf (".staging-%s-XXXXXX", in->adapter->id);
  g_autofree char *staging = g_build_filename (in->adapters_dir, prefix, NULL);
  g_autofree char *target = g_build_filename (in->adapters_dir, in->adapter->id, NULL);
  g_autoptr(GError) swap_error = NULL;
  GError *error = NULL;

  if (g_mkdtemp_full (staging, 0755) == NULL)
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                               "Cannot create %s", staging);
      return;
    }
  if (stage_files (in, staging, cancellable, &error)
      && !ts_market_swap_into_place (staging, target, TRUE, &swap_error))
    /* In the install's own error domain, as documented. */
    error = g_error_new_literal (TS_MARKET_ERROR, TS_MARKET_ERROR_IO, swap_error->message);
  if (error != NULL)
    {
      ts_market_remove_flat_dir (staging);
      g_task_return_error (task, error);
      return;
    }
  ts_market_remove_flat_dir (staging);
  for (guint i = 0; i < in->version->manifest->files->len; i++)
    {
      g_autofree char *cached = cache_path (in, g_ptr_array_index (in->version->manifest->files, i));
      g_unlink (cached);
    }
  g_task_return_pointer (task, g_steal_pointer (&target), g_free);
}

static void download_next (GTask *task);

static void
file_progress_cb (goffset received, goffset total, gpointer user_data)
{
  Install *in = user_data;

  if (in->progress)
    in->progress (in->done_bytes + received, in->total_bytes, in->progress_data);
}

static void
file_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  GTask *task = user_data;
  Install *in = g_task_get_task_data (task);
  GError *error = NULL;
  g_autofree char *sha = ts_market_download_finish (result, NULL, &error);
  const TsMarketFile *f = g_ptr_array_index (in->version->manifest->files, in->next_file);

  if (sha == NULL)
    {
      g_prefix_error (&error, "%s: ", f->name);
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  in->done_bytes += f->size;
  in->next_file++;
  download_next (task);
}

/* Downloads the files one after the other, skipping those already cached. */
static void
download_next (GTask *task)
{
  Install *in = g_task_get_task_data (task);
  GPtrArray *files = in->version->manifest->files;
  const TsMarketFile *f = NULL;
  g_autofree char *dest = NULL, *url = NULL;
  GStatBuf st;

  for (; in->next_file < files->len; in->next_file++)
    {
      f = g_ptr_array_index (files, in->next_file);
      g_free (dest);
      dest = cache_path (in, f);
      if (g_stat (dest, &st) != 0 || st.st_size != f->size)
        break;
      in->done_bytes += f->size;
    }
  if (in->next_file == files->len)
    {
      g_task_run_in_thread (task, finalize_thread);
      g_object_unref (task);
      return;
    }
  url = ts_market_client_build_url (in->client,
                                    g_ptr_array_index (in->version->file_urls, in->next_file));
  ts_market_download_async (ts_market_client_get_session (in->client), url, dest, f->sha256,
                            f->size, file_progress_cb, in, NULL,
                            g_task_get_cancellable (task), file_done_cb, task);
}

static gboolean
prepare (Install *in, const char *version, TsMarketKeyring *keyring, GError **error)
{
  in->version = ts_market_adapter_find_version (in->adapter, version);
  if (in->version == NULL)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "%s has no version %s", in->adapter->id, version ? version : "(latest)");
      return FALSE;
    }
  /* Checks every name and digest too, before any of them touches the disk. */
  if (!ts_market_keyring_verify (keyring, in->version->manifest, in->version->key_id,
                                 in->version->signature, error))
    return FALSE;
  for (guint i = 0; i < in->version->manifest->files->len; i++)
    in->total_bytes += ((TsMarketFile *) g_ptr_array_index (in->version->manifest->files, i))->size;
  in->cache_dir = g_build_filename (in->adapters_dir, ".downloads", NULL);
  if (g_mkdir_with_parents (in->cache_dir, 0700) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO, "Cannot create %s: %s",
                   in->cache_dir, g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

void
ts_market_client_install_async (TsMarketClient *self, TsMarketAdapter *adapter,
                                const char *version, TsMarketKeyring *keyring,
                                const char *adapters_dir, TsMarketProgressFunc progress,
                                gpointer progress_data, GDestroyNotify progress_destroy,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data)
{
  g_return_if_fail (TS_IS_MARKET_CLIENT (self));
  g_return_if_fail (adapter != NULL);
  g_return_if_fail (adapters_dir != NULL);

  GTask *task = g_task_new (self, cancellable, callback, user_data);
  Install *in = g_new0 (Install, 1);
  GError *error = NULL;

  g_task_set_source_tag (task, ts_market_client_install_async);
  in->client = g_object_ref (self);
  in->adapter = ts_market_adapter_ref (adapter);
  in->adapters_dir = g_strdup (adapters_dir);
  in->progress = progress;
  in->progress_data = progress_data;
  in->progress_destroy = progress_destroy;
  g_task_set_task_data (task, in, (GDestroyNotify) install_free);
  if (!prepare (in, version, keyring, &error))
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  download_next (task);
}

char *
ts_market_client_install_finish (TsMarketClient *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

void
ts_market_installed_free (TsMarketInstalled *self)
{
  if (self == NULL)
    return;
  g_free (self->id);
  g_free (self->version);
  g_free (self->publisher);
  g_free (self->key_id);
  g_free (self->path);
  g_free (self->name);
  g_free (self->derived_from);
  g_clear_pointer (&self->manifest, ts_market_manifest_free);
  g_free (self);
}

/* A release made on this computer: no signature, only recorded digests. */
static gboolean
is_local_release (JsonObject *o)
{
  JsonNode *local = json_object_get_member (o, "local");

  return local != NULL && JSON_NODE_HOLDS_VALUE (local)
         && json_node_get_value_type (local) == G_TYPE_BOOLEAN && json_node_get_boolean (local);
}

static TsMarketInstalled *
read_installed (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, TS_MARKET_RELEASE_FILE, NULL);
  g_autofree char *text = NULL;
  g_autoptr(JsonNode) root = NULL;
  TsMarketInstalled *out;
  JsonObject *o;
  gsize len = 0;

  if (!g_file_get_contents (path, &text, &len, NULL)
      || (root = ts_json_parse_bounded (text, len, 8, NULL)) == NULL
      || !JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  o = json_node_get_object (root);
  if (!ts_market_name_is_safe (ts_json_get_string (o, "id")))
    return NULL;
  out = g_new0 (TsMarketInstalled, 1);
  out->id = g_strdup (ts_json_get_string (o, "id"));
  out->version = g_strdup (ts_json_get_string (o, "version"));
  out->publisher = g_strdup (ts_json_get_string (o, "publisher"));
  out->key_id = g_strdup (ts_json_get_string (o, "key_id"));
  out->path = g_strdup (dir);
  out->name = g_strdup (ts_json_get_string (o, "name"));
  out->local = is_local_release (o);
  if (out->local && ts_market_name_is_safe (ts_json_get_string (o, "derived_from")))
    out->derived_from = g_strdup (ts_json_get_string (o, "derived_from"));
  if (ts_json_get_string (o, "manifest") != NULL)
    out->manifest = ts_market_manifest_from_json (ts_json_get_string (o, "manifest"), NULL);
  return out;
}

TsMarketInstalled *
ts_market_read_installed (const char *adapters_dir, const char *id)
{
  g_return_val_if_fail (adapters_dir != NULL, NULL);
  g_return_val_if_fail (id != NULL, NULL);

  g_autofree char *dir = NULL;

  if (!ts_market_name_is_safe (id))
    return NULL;
  dir = g_build_filename (adapters_dir, id, NULL);
  return read_installed (dir);
}

static int
compare_installed (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 ((*(TsMarketInstalled * const *) a)->id,
                    (*(TsMarketInstalled * const *) b)->id);
}

GPtrArray *
ts_market_list_installed (const char *adapters_dir, GError **error)
{
  g_return_val_if_fail (adapters_dir != NULL, NULL);

  g_autoptr(GPtrArray) out =
      g_ptr_array_new_with_free_func ((GDestroyNotify) ts_market_installed_free);
  g_autoptr(GDir) d = NULL;
  const char *name;

  if (!g_file_test (adapters_dir, G_FILE_TEST_IS_DIR))
    return g_steal_pointer (&out);
  d = g_dir_open (adapters_dir, 0, error);
  if (d == NULL)
    return NULL;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *dir = g_build_filename (adapters_dir, name, NULL);
      TsMarketInstalled *inst = name[0] != '.' ? read_installed (dir) : NULL;
      if (inst != NULL)
        g_ptr_array_add (out, inst);
    }
  g_ptr_array_sort (out, compare_installed);
  return g_steal_pointer (&out);
}

static gboolean
verify_files_on_disk (const char *dir, TsMarketManifest *m, GCancellable *cancellable,
                      GError **error)
{
  for (guint i = 0; i < m->files->len; i++)
    {
      const TsMarketFile *f = g_ptr_array_index (m->files, i);
      g_autofree char *path = g_build_filename (dir, f->name, NULL);
      g_autofree char *sha = NULL;
      goffset size = -1;

      sha = ts_sha256_file (path, &size, cancellable, error);
      if (sha == NULL)
        return FALSE;
      if (size != f->size || strcmp (sha, f->sha256) != 0)
        {
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM,
                       "%s of %s no longer matches its signed digest", f->name, m->id);
          return FALSE;
        }
    }
  return TRUE;
}

gboolean
ts_market_verify_installed (const char *adapters_dir, const char *id,
                            TsMarketKeyring *keyring, GCancellable *cancellable,
                            GError **error)
{
  g_return_val_if_fail (adapters_dir != NULL, FALSE);
  g_return_val_if_fail (id != NULL, FALSE);

  g_autofree char *dir = NULL, *release = NULL, *text = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autoptr(TsMarketManifest) m = NULL;
  JsonObject *o;
  gsize len = 0;

  if (!ts_market_name_is_safe (id))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID, "Invalid adapter id");
      return FALSE;
    }
  dir = g_build_filename (adapters_dir, id, NULL);
  release = g_build_filename (dir, TS_MARKET_RELEASE_FILE, NULL);
  if (!g_file_get_contents (release, &text, &len, error)
      || (root = ts_json_parse_bounded (text, len, 8, error)) == NULL)
    return FALSE;
  o = JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  if (ts_json_get_string (o, "manifest") == NULL
      || (m = ts_market_manifest_from_json (ts_json_get_string (o, "manifest"), error)) == NULL)
    {
      if (error != NULL && *error == NULL)
        g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID, "%s has no manifest",
                     release);
      return FALSE;
    }
  if (g_strcmp0 (m->id, id) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "%s holds the release of %s", dir, m->id);
      return FALSE;
    }
  if (!is_local_release (o)
      && !ts_market_keyring_verify (keyring, m, ts_json_get_string (o, "key_id"),
                                    ts_json_get_string (o, "signature"), error))
    return FALSE;
  return verify_files_on_disk (dir, m, cancellable, error);
}

gboolean
ts_market_remove_installed (const char *adapters_dir, const char *id, GError **error)
{
  g_return_val_if_fail (adapters_dir != NULL, FALSE);
  g_return_val_if_fail (id != NULL, FALSE);

  g_autofree char *target = NULL, *prefix = NULL, *aside = NULL;

  if (!ts_market_name_is_safe (id))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID, "Invalid adapter id");
      return FALSE;
    }
  target = g_build_filename (adapters_dir, id, NULL);
  prefix = g_strdup_printf (".removing-%s-%u", id, g_random_int ());
  aside = g_build_filename (adapters_dir, prefix, NULL);
  if (g_rename (target, aside) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, errno == ENOENT ? TS_MARKET_ERROR_NOT_FOUND
                   : TS_MARKET_ERROR_IO, "Cannot remove %s: %s", target, g_strerror (errno));
      return FALSE;
    }
  ts_market_remove_flat_dir (aside);
  return TRUE;
}

/* The manifest of every regular file in @dir but the release file. */
static TsMarketManifest *
hash_local_files (const char *dir, const char *id, const char *version, const char *publisher,
                  GCancellable *cancellable, GError **error)
{
  g_autoptr(TsMarketManifest) m = ts_market_manifest_new (id, version, publisher, "");
  g_autoptr(GDir) d = g_dir_open (dir, 0, error);
  const char *name;

  if (d == NULL)
    return NULL;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_autofree char *sha = NULL;
      goffset size = -1;

      if (strcmp (name, TS_MARKET_RELEASE_FILE) == 0 || !g_file_test (path, G_FILE_TEST_IS_REGULAR))
        continue;
      sha = ts_sha256_file (path, &size, cancellable, error);
      if (sha == NULL)
        return NULL;
      ts_market_manifest_add_file (m, name, sha, size);
    }
  return g_steal_pointer (&m);
}

gboolean
ts_market_write_local_release (const char *dir, const char *id, const char *version,
                               const char *publisher, const char *name,
                               const char *base_model, const char *derived_from,
                               GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (dir != NULL, FALSE);
  g_return_val_if_fail (id != NULL, FALSE);
  g_return_val_if_fail (version != NULL, FALSE);

  g_autoptr(TsMarketManifest) m = NULL;
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *canonical = NULL, *text = NULL;
  g_autofree char *path = g_build_filename (dir, TS_MARKET_RELEASE_FILE, NULL);

  m = hash_local_files (dir, id, version, publisher ? publisher : "", cancellable, error);
  if (m == NULL)
    return FALSE;
  canonical = ts_market_manifest_to_canonical (m);
  json_builder_begin_object (b);
  ts_json_add_string (b, "id", id);
  ts_json_add_string (b, "version", version);
  ts_json_add_string (b, "publisher", publisher ? publisher : "");
  if (name != NULL)
    ts_json_add_string (b, "name", name);
  if (base_model != NULL)
    ts_json_add_string (b, "base_model", base_model);
  ts_json_add_boolean (b, "local", TRUE);
  if (derived_from != NULL)
    ts_json_add_string (b, "derived_from", derived_from);
  ts_json_add_string (b, "manifest", canonical);
  ts_json_add_int (b, "installed_at", g_get_real_time () / G_USEC_PER_SEC);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  text = json_to_string (root, TRUE);
  return g_file_set_contents (path, text, -1, error);
}

/* ts-market-install.h: verified, atomic installation of marketplace adapters into adapters/<id>/.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-market-client.h"
#include "ts-market-keyring.h"

G_BEGIN_DECLS

/* Name of the file written next to an installed adapter's files. */
#define TS_MARKET_RELEASE_FILE "tensafe-release.json"

/* Installs @version (NULL: the latest) of @adapter (from
 * ts_market_client_get_adapter_finish) into "@adapters_dir/<id>/":
 *  1. the release signature is checked against the key pinned in @keyring
 *     for the adapter's publisher (TS_MARKET_ERROR_UNKNOWN_KEY, _SIGNATURE);
 *  2. each file is downloaded (resumable, into @adapters_dir/.downloads/) and
 *     checked against the signed size and SHA-256 (_TRUNCATED, _CHECKSUM);
 *  3. the files are hashed again in a staging folder on a worker thread and
 *     swapped into place atomically (renameat2 RENAME_EXCHANGE when an older
 *     copy exists), with TS_MARKET_RELEASE_FILE recording the signed manifest.
 * On any error nothing under "<id>/" changes.  A cancel keeps partial
 * downloads, so calling again resumes.  @progress gets bytes over all files. */
void ts_market_client_install_async (TsMarketClient *self, TsMarketAdapter *adapter,
                                     const char *version, TsMarketKeyring *keyring,
                                     const char *adapters_dir, TsMarketProgressFunc progress,
                                     gpointer progress_data, GDestroyNotify progress_destroy,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data);
/* Returns the installed folder (newly allocated). */
char *ts_market_client_install_finish (TsMarketClient *self, GAsyncResult *result,
                                       GError **error);

/* An installed adapter, as recorded in its TS_MARKET_RELEASE_FILE. */
typedef struct
{
  char *id;
  char *version;
  char *publisher;
  char *key_id;        /* NULL for a local release */
  char *path;
  char *name;          /* the display name recorded at install, or NULL */
  gboolean local;      /* made on this computer (ts_market_write_local_release()) */
  char *derived_from;  /* local: the marketplace adapter it was made from, or NULL */
  TsMarketManifest *manifest;  /* the files as recorded (signed or not), or NULL */
} TsMarketInstalled;

void ts_market_installed_free (TsMarketInstalled *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsMarketInstalled, ts_market_installed_free)

/* The record of "@adapters_dir/@id/", or NULL when there is no readable one. */
TsMarketInstalled *ts_market_read_installed (const char *adapters_dir, const char *id);

/* Lists installed adapters (GPtrArray of TsMarketInstalled*, sorted by id);
 * folders without a readable release file are skipped.  Synchronous, small. */
GPtrArray *ts_market_list_installed (const char *adapters_dir, GError **error);
/* Checks an installed adapter before use: the release file's signature
 * against @keyring (as at install), and every listed file's size and SHA-256
 * on disk.  A local release has no signature: only its files are checked,
 * against the digests recorded when it was made.  Synchronous (hashes the
 * files): call it from a worker thread for large adapters.  Errors as for
 * ts_market_client_install_async(). */
gboolean ts_market_verify_installed (const char *adapters_dir, const char *id,
                                     TsMarketKeyring *keyring, GCancellable *cancellable,
                                     GError **error);
/* ts_market_verify_installed() on a worker (ts-market-verify-task.c), with
 * the keyring read there from @keyring_path (ts_market_keyring_new()). */
void ts_market_verify_installed_async (const char *adapters_dir, const char *id,
                                       const char *keyring_path, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_market_verify_installed_finish (GAsyncResult *result, GError **error);
/* Removes "@adapters_dir/@id/" (renamed aside first, so it vanishes at once). */
gboolean ts_market_remove_installed (const char *adapters_dir, const char *id, GError **error);

/* A local release: writes TS_MARKET_RELEASE_FILE into @dir for an adapter
 * made on this computer from files already there (a rank reduction,
 * ts-adapter-reduce.h).  Its manifest holds the size and SHA-256 of every
 * other regular file of @dir, unsigned; @derived_from names the marketplace
 * adapter it descends from (NULL: none).  Any of @publisher, @name,
 * @base_model may be NULL.  Synchronous (hashes the files). */
gboolean ts_market_write_local_release (const char *dir, const char *id, const char *version,
                                        const char *publisher, const char *name,
                                        const char *base_model, const char *derived_from,
                                        GCancellable *cancellable, GError **error);

/* Puts the folder @staging at @target in one step; an older copy at @target
 * ends up at @staging (delete it with ts_market_remove_flat_dir()).  With
 * @replace FALSE an existing @target is an error (G_IO_ERROR_EXISTS). */
gboolean ts_market_swap_into_place (const char *staging, const char *target, gboolean replace,
                                    GError **error);
/* Deletes a folder without subfolders and its files. */
void ts_market_remove_flat_dir (const char *path);

G_END_DECLS

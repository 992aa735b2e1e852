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
  char *key_id;
  char *path;
} TsMarketInstalled;

void ts_market_installed_free (TsMarketInstalled *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsMarketInstalled, ts_market_installed_free)

/* Lists installed adapters (GPtrArray of TsMarketInstalled*, sorted by id);
 * folders without a readable release file are skipped.  Synchronous, small. */
GPtrArray *ts_market_list_installed (const char *adapters_dir, GError **error);
/* Checks an installed adapter before use: the release file's signature
 * against @keyring (as at install), and every listed file's size and SHA-256
 * on disk.  Synchronous (hashes the files): call it from a worker thread for
 * large adapters.  Errors as for ts_market_client_install_async(). */
gboolean ts_market_verify_installed (const char *adapters_dir, const char *id,
                                     TsMarketKeyring *keyring, GCancellable *cancellable,
                                     GError **error);
/* Removes "@adapters_dir/@id/" (renamed aside first, so it vanishes at once). */
gboolean ts_market_remove_installed (const char *adapters_dir, const char *id, GError **error);

G_END_DECLS

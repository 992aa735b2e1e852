/* market-test-util.h: a real tensafe-marketd for tests, and helpers to wait on async calls.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "ts-market-client.h"
#include "ts-market-keyring.h"

G_BEGIN_DECLS

/* A tensafe-marketd process on 127.0.0.1, port 0, with its own temporary
 * database, blobs and keys under dir. */
typedef struct
{
  GSubprocess *proc;
  char        *dir;
  char        *url;      /* "http://127.0.0.1:PORT/" */
  char        *db_path;  /* an SQLite file, or a postgresql:// URL */
  char        *blobs_dir;
  char        *keys_dir;
} MarketServer;

/* TRUE when TS_MARKET_DB=postgresql: servers then keep their catalogue in a
 * new database of a throwaway PostgreSQL server (market-pg.h), one per test
 * program, and a test program skips whole where PostgreSQL is missing. */
gboolean market_use_postgresql (void);

/* Starts the server importing each of @imports (NULL-terminated, may be NULL)
 * and, when @tokens_text is not NULL, with a tokens file of that content. */
MarketServer *market_server_start (const char * const *imports, const char *tokens_text);
/* The same with more command-line options (e.g. --tls-cert). */
MarketServer *market_server_start_with_args (const char * const *imports,
                                             const char *tokens_text,
                                             const char * const *extra_args);
/* The same on PostgreSQL, whatever TS_MARKET_DB says. */
MarketServer *market_server_start_on_postgresql (const char * const *imports,
                                                 const char *tokens_text,
                                                 const char * const *extra_args);
/* @n more servers on @first's database, blobs and keys (each with its own
 * temporary folder for the tokens file), all started before any is waited
 * for; a GPtrArray of MarketServer*, each to be stopped. */
GPtrArray *market_servers_start_sharing (MarketServer *first, guint n,
                                         const char * const *imports, const char *tokens_text,
                                         const char * const *extra_args);
/* Sends SIGTERM, checks the exit status is 0, and deletes the temporary tree. */
void market_server_stop (MarketServer *server);
/* Stops the server (checking a clean exit) and starts it again on the same
 * database, blobs and keys, importing @imports. */
void market_server_restart (MarketServer *server, const char * const *imports);
/* Runs a second server process on the same store that is expected to exit
 * (an import that must fail); returns its exit status, stderr in @stderr_out. */
int market_server_run_once (MarketServer *server, const char * const *imports,
                            char **stderr_out);
char *market_server_blob_path (MarketServer *server, const char *sha256);

/* The source folder of the demo catalogue (data/market). */
const char *market_demo_dir (void);
/* A new temporary folder (delete with market_rm_rf). */
char *market_tmpdir (void);
void market_rm_rf (const char *path);

/* Runs the default main context until *@result is set by market_store_result. */
void market_store_result (GObject *source, GAsyncResult *result, gpointer user_data);
void market_wait (GAsyncResult **result);

/* A thread-per-connection TCP service on 127.0.0.1, port 0, whose "run"
 * signal goes to @run_cb; its URL ("http://127.0.0.1:PORT/") in @url_out. */
GThreadedSocketService *market_start_tcp_service (GCallback run_cb, char **url_out);

/* A server on the demo catalogue plus the adapter folders under @extra_dir. */
MarketServer *market_server_start_demo_plus (const char *extra_dir);

/* Asserts that two files hold the same bytes. */
void market_assert_same_file (const char *a, const char *b);

/* Synchronous wrappers for tests. */
TsMarketPage *market_search (TsMarketClient *client, const TsMarketSearch *search,
                             GError **error);
TsMarketAdapter *market_get_adapter (TsMarketClient *client, const char *id, GError **error);
/* Fetches the publisher's keys from the server and pins all of them. */
void market_pin_publisher (TsMarketClient *client, TsMarketKeyring *keyring,
                           const char *publisher);
/* Writes an adapter folder (PEFT, from the generator) with a metadata.json. */
void market_write_adapter (const char *dir, const char *id, const char *publisher,
                           const char *version, gsize extra_file_bytes);

/* For each module of the adapter at @adapter (loaded for the model at
 * @model_path), the fraction of ‖scale·B·A‖_F² its @rank largest singular
 * values hold, from the engine's own SVD; sorted ascending (GArray of
 * double).  @max_rank_out (may be NULL): the largest module rank. */
GArray *market_lora_kept_fractions (const char *model_path, const char *adapter, guint rank,
                                    guint *max_rank_out);

G_END_DECLS

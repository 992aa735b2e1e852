/* marketd-main.c: tensafe-marketd, the adapter marketplace server (options, listen, signals).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>

#include "ts-config.h"
#include "marketd.h"
#include "marketd-resources.h"
#include "server-deadline.h"
#include "server-listen.h"
#include "ts-core.h"
#include "ts-market-error.h"

typedef struct
{
  char  *listen;
  char  *db;
  char  *blobs;
  char  *keys;
  char **imports;
  char  *tokens;
  char  *tls_cert;
  char  *tls_key;
  int    io_timeout;
  int    max_conns_per_address;   /* -1: not given */
  gboolean version;
} Options;

static gboolean
parse_options (int *argc, char ***argv, Options *o, GError **error)
{
  GOptionEntry entries[] = {
    { "listen", 0, 0, G_OPTION_ARG_STRING, &o->listen,
      "Address to listen on (default 127.0.0.1:8088; port 0 picks one)", "ADDR:PORT" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &o->db,
      "SQLite database file (created if missing), or a postgresql:// URL", "FILE|URL" },
    { "blobs", 0, 0, G_OPTION_ARG_FILENAME, &o->blobs, "Content-addressed file store", "DIR" },
    { "keys", 0, 0, G_OPTION_ARG_FILENAME, &o->keys, "Publisher signing keys", "DIR" },
    { "import", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->imports,
      "Publish the adapter folder(s) under DIR, then serve", "DIR" },
    { "tokens", 0, 0, G_OPTION_ARG_FILENAME, &o->tokens,
      "Bearer tokens for usage metering, lines of “ACCOUNT TOKEN”", "FILE" },
    { "tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &o->tls_cert, "PEM certificate for HTTPS", "FILE" },
    { "tls-key", 0, 0, G_OPTION_ARG_FILENAME, &o->tls_key, "PEM private key for HTTPS", "FILE" },
    { "io-timeout", 0, 0, G_OPTION_ARG_INT, &o->io_timeout,
      "Close connections idle this long (default 30)", "SECONDS" },
    { "max-connections-per-address", 0, 0, G_OPTION_ARG_INT, &o->max_conns_per_address,
      "Connections one client address may hold open (default 64; 0: no cap, as behind a proxy)",
      "N" },
    { "version", 0, 0, G_OPTION_ARG_NONE, &o->version, "Print the version and exit", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new ("— TenSafe adapter marketplace");

  g_option_context_set_description (ctx, "tensafe-marketd migrate --from FILE --to URL copies "
                                    "an SQLite marketplace into PostgreSQL (see migrate --help).");

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, argc, argv, error))
    return FALSE;
  if (!o->version && (o->db == NULL || o->blobs == NULL || o->keys == NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                   "--db, --blobs and --keys are required");
      return FALSE;
    }
  if (o->io_timeout < 0 || o->io_timeout > 3600)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--io-timeout must be 1 to 3600 seconds");
      return FALSE;
    }
  if (o->max_conns_per_address < -1 || o->max_conns_per_address > 1000000)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--max-connections-per-address must be 0 to 1000000");
      return FALSE;
    }
  if ((o->tls_cert == NULL) != (o->tls_key == NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                   "--tls-cert and --tls-key go together");
      return FALSE;
    }
  return TRUE;
}

static GSocketAddress *
parse_listen (const char *text, GError **error)
{
  g_autoptr(GNetworkAddress) na = NULL;
  g_autoptr(GInetAddress) ip = NULL;

  na = G_NETWORK_ADDRESS (g_network_address_parse (text ? text : "127.0.0.1:8088", 8088,
                                                   error));
  if (na == NULL)
    return NULL;
  ip = g_inet_address_new_from_string (g_network_address_get_hostname (na));
  if (ip == NULL)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "--listen wants a numeric address, not “%s”",
                   g_network_address_get_hostname (na));
      return NULL;
    }
  return g_inet_socket_address_new (ip, g_network_address_get_port (na));
}

static gboolean
start_server (Marketd *self, Options *o, GError **error)
{
  g_autoptr(GSocketAddress) addr = parse_listen (o->listen, error);
  ServerListenLimits limits = {
    .max_per_address = o->max_conns_per_address < 0 ? SERVER_DEFAULT_MAX_PER_ADDRESS
                                                    : (guint) o->max_conns_per_address,
  };
  GSList *uris;

  if (addr == NULL)
    return FALSE;
  self->server = soup_server_new ("server-header", "tensafe-marketd/" TS_VERSION " ",
                                  NULL);
  if (o->tls_cert != NULL)
    {
      g_autoptr(GTlsCertificate) cert = g_tls_certificate_new_from_files (o->tls_cert,
                                                                          o->tls_key, error);
      if (cert == NULL)
        return FALSE;
      soup_server_set_tls_certificate (self->server, cert);
    }
  marketd_routes_install (self);
  /* headers within the I/O timeout, not one line per timeout */
  server_set_request_deadline (self->server, self->io_timeout_s * 1000);
  if (!server_listen (self->server, addr, &limits, error))
    return FALSE;
  uris = server_listen_get_uris (self->server);
  for (GSList *l = uris; l; l = l->next)
    {
      g_autofree char *s = g_uri_to_string (l->data);
      /* The first line of stdout is read by scripts and tests. */
      printf ("listening on %s\n", s);
    }
  fflush (stdout);
  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  return TRUE;
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static gboolean
open_store (Marketd *self, Options *o, GError **error)
{
  self->io_timeout_s = o->io_timeout > 0 ? (guint) o->io_timeout : MARKETD_IO_TIMEOUT_S;
  self->blobs_dir = g_strdup (o->blobs);
  self->keys_dir = g_strdup (o->keys);
  self->tokens = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (g_mkdir_with_parents (o->blobs, 0755) != 0 || g_mkdir_with_parents (o->keys, 0700) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                   "Cannot create the blob or key directory");
      return FALSE;
    }
  self->store = marketd_store_open (o->db, error);
  if (self->store == NULL || !marketd_store_migrate (self->store, error))
    return FALSE;
  if (o->tokens != NULL && !marketd_tokens_load (self, o->tokens, error))
    return FALSE;
  for (char **dir = o->imports; dir && *dir; dir++)
    {
      guint n = 0;
      if (!marketd_import_dir (self, *dir, &n, error))
        return FALSE;
      g_printerr ("tensafe-marketd: published %u adapter(s) from %s\n", n, *dir);
    }
  return TRUE;
}

static void
marketd_clear (Marketd *self)
{
  if (self->server != NULL)
    {
      server_listen_stop (self->server);
      soup_server_disconnect (self->server);
    }
  g_clear_object (&self->server);
  g_clear_pointer (&self->store, marketd_store_close);
  g_clear_pointer (&self->tokens, g_hash_table_unref);
  g_free (self->blobs_dir);
  g_free (self->keys_dir);
}

static void
options_clear (Options *o)
{
  g_free (o->listen);
  g_free (o->db);
  g_free (o->blobs);
  g_free (o->keys);
  g_strfreev (o->imports);
  g_free (o->tokens);
  g_free (o->tls_cert);
  g_free (o->tls_key);
}

int
main (int argc, char **argv)
{
  Options o = { .max_conns_per_address = -1 };
  Marketd self = { 0 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  int status = 1;

  g_resources_register (marketd_get_resource ());
  if (argc > 1 && strcmp (argv[1], "migrate") == 0)
    return marketd_migrate_main (argc - 1, argv + 1);
  if (!parse_options (&argc, &argv, &o, &error))
    goto out;
  if (o.version)
    {
      printf ("tensafe-marketd %s\n", ts_version ());
      status = 0;
      goto out;
    }
  /* Handlers go in before the URL is printed: whoever reads it may stop us
   * at once, and that must still be a clean shutdown. */
  g_unix_signal_add (SIGTERM, quit_cb, loop);
  g_unix_signal_add (SIGINT, quit_cb, loop);
  if (!open_store (&self, &o, &error) || !start_server (&self, &o, &error))
    goto out;
  g_main_loop_run (loop);
  status = 0;
out:
  if (error != NULL)
    g_printerr ("tensafe-marketd: %s\n", error->message);
  marketd_clear (&self);
  options_clear (&o);
  return status;
}

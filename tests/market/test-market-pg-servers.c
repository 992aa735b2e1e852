/* test-market-pg-servers.c: several tensafe-marketd on one PostgreSQL database under load
 * (exactly-once usage, consistent installs, no 5xx), and migrate from SQLite.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "market-pg.h"
#include "market-test-util.h"

#define TOKEN "tok-load-0123456789abcdef"
#define TOKENS_FILE "loader " TOKEN "\n"
#define N_SERVERS 3
#define N_CLIENTS 200
/* Files above this are left out of the installs, so the load is requests, not bytes. */
#define MAX_INSTALL_BYTES (128 * 1024)

static char *no_postgresql;   /* why the tests skip, or NULL */
static char *work;

/* ---- reading the catalogue ---- */

static JsonNode *
get_json (SoupSession *session, const char *url)
{
  g_autoptr(SoupMessage) msg = soup_message_new ("GET", url);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) body = soup_session_send_and_read (session, msg, NULL, &error);
  JsonNode *root;

  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, 200);
  root = json_from_string (g_bytes_get_data (body, NULL), &error);
  g_assert_no_error (error);
  return root;
}

/* Adapter ids, in name order, through every page of @limit. */
static GPtrArray *
list_ids (SoupSession *session, const char *base, guint limit)
{
  GPtrArray *ids = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *cursor = NULL;

  do
    {
      g_autofree char *url = g_strdup_printf ("%sv1/adapters?sort=name&limit=%u%s%s", base,
                                              limit, cursor ? "&cursor=" : "",
                                              cursor ? cursor : "");
      g_autoptr(JsonNode) root = get_json (session, url);
      JsonObject *o = json_node_get_object (root);
      JsonArray *a = json_object_get_array_member (o, "adapters");
      for (guint i = 0; i < json_array_get_length (a); i++)
        g_ptr_array_add (ids, g_strdup (json_object_get_string_member (
            json_array_get_object_element (a, i), "id")));
      g_clear_pointer (&cursor, g_free);
      if (!json_object_get_null_member (o, "next_cursor"))
        cursor = g_strdup (json_object_get_string_member (o, "next_cursor"));
    }
  while (cursor != NULL);
  return ids;
}

/* "path sha256" of every file of every version of @ids, sorted, with sizes. */
static GPtrArray *
list_files (SoupSession *session, const char *base, GPtrArray *ids, GPtrArray *sizes)
{
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);

  for (guint i = 0; i < ids->len; i++)
    {
      g_autofree char *url = g_strdup_printf ("%sv1/adapters/%s", base,
                                              (char *) ids->pdata[i]);
      g_autoptr(JsonNode) root = get_json (session, url);
      JsonArray *versions = json_object_get_array_member (json_node_get_object (root),
                                                          "versions");
      for (guint v = 0; v < json_array_get_length (versions); v++)
        {
          JsonArray *f = json_object_get_array_member (
              json_array_get_object_element (versions, v), "files");
          for (guint k = 0; k < json_array_get_length (f); k++)
            {
              JsonObject *file = json_array_get_object_element (f, k);
              g_ptr_array_add (files, g_strdup_printf (
                  "%s %s", json_object_get_string_member (file, "url") + 1,
                  json_object_get_string_member (file, "sha256")));
              if (sizes != NULL)
                g_ptr_array_add (sizes, GINT_TO_POINTER (
                    (gint) json_object_get_int_member (file, "size")));
            }
        }
    }
  return files;
}

static char *
sha256_of (GBytes *bytes)
{
  return g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, bytes);
}

/* ---- the load ---- */

typedef enum { OP_BROWSE, OP_DETAILS, OP_INSTALL, OP_USAGE, N_OPS } Op;
static const char *op_names[] = { "browse", "details", "install", "usage" };

typedef struct
{
  SoupSession *session;
  char        *urls[N_SERVERS];
  GPtrArray   *ids;
  GPtrArray   *files;        /* "path sha256" of files small enough to install */
  gint64       deadline;
  guint        active;
  guint        requests, per_server[N_SERVERS], per_op[N_OPS];
  guint        unanswered, status_5xx, wrong_answers;
  guint        unique_keys, duplicates_sent, accepted, duplicates_seen;
  gint64       expected_tokens;
} Load;

typedef struct
{
  Load    *load;
  guint    id, n, pending;
  GRand   *rand;
  guint    pages_seen;
} Client;

typedef void (*DoneFunc) (Client *c, guint server, SoupMessage *msg, GBytes *body);

typedef struct
{
  Client     *client;
  guint       server;
  SoupMessage *msg;
  DoneFunc    done;
} Request;

static void client_step (Client *c);

static void
request_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  Request *r = user_data;
  Client *c = r->client;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) body = soup_session_send_and_read_finish (SOUP_SESSION (source), result,
                                                              &error);

  if (body == NULL)
    {
      if (c->load->unanswered++ < 5)
        g_test_message ("unanswered on server %u: %s", r->server, error->message);
    }
  else if (soup_message_get_status (r->msg) >= 500)
    {
      if (c->load->status_5xx++ < 5)
        g_test_message ("%u from server %u: %.*s", soup_message_get_status (r->msg), r->server,
                        (int) MIN (200, g_bytes_get_size (body)),
                        (const char *) g_bytes_get_data (body, NULL));
    }
  c->pending--;
  r->done (c, r->server, r->msg, body);
  g_object_unref (r->msg);
  g_free (r);
  if (c->pending == 0)
    client_step (c);
}

static void
send_request (Client *c, guint server, SoupMessage *msg, DoneFunc done)
{
  Request *r = g_new0 (Request, 1);

  r->client = c;
  r->server = server;
  r->msg = msg;
  r->done = done;
  c->pending++;
  c->load->requests++;
  c->load->per_server[server]++;
  soup_session_send_and_read_async (c->load->session, msg, G_PRIORITY_DEFAULT, NULL,
                                    request_cb, r);
}

static SoupMessage *
get_message (Load *load, guint server, const char *path)
{
  g_autofree char *url = g_strconcat (load->urls[server], path, NULL);

  return soup_message_new ("GET", url);
}

static JsonObject *
answer_object (GBytes *body, JsonNode **root)
{
  *root = body ? json_from_string (g_bytes_get_data (body, NULL), NULL) : NULL;
  return *root && JSON_NODE_HOLDS_OBJECT (*root) ? json_node_get_object (*root) : NULL;
}

static void
wrong (Client *c, const char *what)
{
  if (c->load->wrong_answers++ < 5)
    g_test_message ("client %u: %s", c->id, what);
}

/* Browsing walks every page of 3 by name; the pages must add up to the catalogue. */
static void
browse_done (Client *c, guint server, SoupMessage *msg, GBytes *body)
{
  g_autoptr(JsonNode) root = NULL;
  JsonObject *o = answer_object (body, &root);
  const char *cursor;

  if (o == NULL || soup_message_get_status (msg) != 200)
    return wrong (c, "a page of the catalogue failed");
  c->pages_seen += json_array_get_length (json_object_get_array_member (o, "adapters"));
  if (json_object_get_null_member (o, "next_cursor"))
    {
      if (c->pages_seen != c->load->ids->len)
        wrong (c, "the pages did not cover the catalogue");
      return;
    }
  cursor = json_object_get_string_member (o, "next_cursor");
  {
    /* the next page from another server: cursors hold no server state */
    g_autofree char *path = g_strdup_printf ("v1/adapters?sort=name&limit=3&cursor=%s", cursor);
    guint next = (server + 1) % N_SERVERS;
    send_request (c, next, get_message (c->load, next, path), browse_done);
  }
}

static void
search_done (Client *c, guint server, SoupMessage *msg, GBytes *body)
{
  g_autoptr(JsonNode) root = NULL;
  JsonObject *o = answer_object (body, &root);

  if (o == NULL || soup_message_get_status (msg) != 200
      || json_array_get_length (json_object_get_array_member (o, "adapters")) == 0)
    wrong (c, "a search found nothing");
}

static void
details_done (Client *c, guint server, SoupMessage *msg, GBytes *body)
{
  g_autoptr(JsonNode) root = NULL;
  JsonObject *o = answer_object (body, &root);

  if (o == NULL || soup_message_get_status (msg) != 200
      || json_array_get_length (json_object_get_array_member (o, "versions")) == 0)
    wrong (c, "adapter details failed");
}

static void
install_done (Client *c, guint server, SoupMessage *msg, GBytes *body)
{
  const char *want = g_object_get_data (G_OBJECT (msg), "sha256");
  g_autofree char *got = body ? sha256_of (body) : NULL;

  if (soup_message_get_status (msg) != 200 || g_strcmp0 (got, want) != 0)
    wrong (c, "an installed file did not match its sha256");
}

static void
usage_done (Client *c, guint server, SoupMessage *msg, GBytes *body)
{
  g_autoptr(JsonNode) root = NULL;
  JsonObject *o = answer_object (body, &root);

  if (o == NULL || soup_message_get_status (msg) != 200)
    return wrong (c, "usage was refused");
  c->load->accepted += json_object_get_int_member (o, "accepted");
  c->load->duplicates_seen += json_object_get_int_member (o, "duplicates");
}

static SoupMessage *
usage_message (Load *load, guint server, const char *body)
{
  g_autofree char *url = g_strconcat (load->urls[server], "v1/usage", NULL);
  SoupMessage *msg = soup_message_new ("POST", url);
  g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));

  soup_message_headers_replace (soup_message_get_request_headers (msg), "Authorization",
                                "Bearer " TOKEN);
  soup_message_set_request_body_from_bytes (msg, "application/json", bytes);
  return msg;
}

/* The answer was "lost": the same record goes again, to another server. */
static void
usage_retry_done (Client *c, guint server, SoupMessage *msg, GBytes *body)
{
  guint other = (server + 1) % N_SERVERS;
  const char *record = g_object_get_data (G_OBJECT (msg), "record");

  usage_done (c, server, msg, body);
  c->load->duplicates_sent++;
  send_request (c, other, usage_message (c->load, other, record), usage_done);
}

static void
post_usage (Client *c, guint server)
{
  Load *load = c->load;
  gint64 tokens = 1 + g_rand_int_range (c->rand, 0, 5000);
  g_autofree char *record = g_strdup_printf (
      "{\"adapter\":\"%s\",\"version\":\"1.0.0\",\"tokens\":%" G_GINT64_FORMAT ","
      "\"idempotency_key\":\"load-%u-%u\"}", "tiny-pirate", tokens, c->id, c->n);
  guint mode = g_rand_int_range (c->rand, 0, 4);
  SoupMessage *msg = usage_message (load, server, record);

  load->unique_keys++;
  load->expected_tokens += tokens;
  if (mode == 0)
    {
      /* two servers receive the same record at once: one records it */
      guint other = (server + 1) % N_SERVERS;
      load->duplicates_sent++;
      send_request (c, server, msg, usage_done);
      send_request (c, other, usage_message (load, other, record), usage_done);
    }
  else if (mode == 1)
    {
      g_object_set_data_full (G_OBJECT (msg), "record", g_strdup (record), g_free);
      send_request (c, server, msg, usage_retry_done);
    }
  else
    send_request (c, server, msg, usage_done);
}

static void
start_op (Client *c, Op op, guint server)
{
  static const char *queries[] = { "adapter", "pirate", "poe", "formal tone", "tiny", "demo" };
  Load *load = c->load;

  load->per_op[op]++;
  if (op == OP_BROWSE && g_rand_boolean (c->rand))
    {
      c->pages_seen = 0;
      send_request (c, server, get_message (load, server, "v1/adapters?sort=name&limit=3"),
                    browse_done);
    }
  else if (op == OP_BROWSE)
    {
      g_autofree char *escaped = g_uri_escape_string (
          queries[g_rand_int_range (c->rand, 0, G_N_ELEMENTS (queries))], NULL, FALSE);
      g_autofree char *path = g_strdup_printf ("v1/adapters?q=%s", escaped);
      send_request (c, server, get_message (load, server, path), search_done);
    }
  else if (op == OP_DETAILS)
    {
      g_autofree char *path = g_strdup_printf (
          "v1/adapters/%s", (char *) load->ids->pdata[g_rand_int_range (c->rand, 0,
                                                                       load->ids->len)]);
      send_request (c, server, get_message (load, server, path), details_done);
    }
  else if (op == OP_INSTALL)
    {
      g_auto(GStrv) f = g_strsplit (load->files->pdata[g_rand_int_range (c->rand, 0,
                                                                         load->files->len)],
                                    " ", 2);
      SoupMessage *msg = get_message (load, server, f[0]);
      g_object_set_data_full (G_OBJECT (msg), "sha256", g_strdup (f[1]), g_free);
      send_request (c, server, msg, install_done);
    }
  else
    post_usage (c, server);
}

static void
client_step (Client *c)
{
  if (g_get_monotonic_time () >= c->load->deadline)
    {
      c->load->active--;
      return;
    }
  c->n++;
  start_op (c, (Op) g_rand_int_range (c->rand, 0, N_OPS), (c->id + c->n) % N_SERVERS);
}

static guint
load_seconds (void)
{
  const char *env = g_getenv ("TS_MARKET_LOAD_SECONDS");

  return env ? (guint) CLAMP (g_ascii_strtoull (env, NULL, 10), 1, 600) : 10;
}

static void
run_load (Load *load, guint seconds)
{
  g_autofree Client *clients = g_new0 (Client, N_CLIENTS);

  load->deadline = g_get_monotonic_time () + seconds * G_USEC_PER_SEC;
  load->active = N_CLIENTS;
  for (guint i = 0; i < N_CLIENTS; i++)
    {
      clients[i] = (Client) { .load = load, .id = i, .rand = g_rand_new_with_seed (i) };
      client_step (&clients[i]);
    }
  while (load->active > 0)
    g_main_context_iteration (NULL, TRUE);
  for (guint i = 0; i < N_CLIENTS; i++)
    g_rand_free (clients[i].rand);
}

static void
report (Load *load, guint seconds)
{
  g_test_message ("%u clients, %u s: %u requests (%u/%u/%u per server); operations: "
                  "%s %u, %s %u, %s %u, %s %u", N_CLIENTS, seconds, load->requests,
                  load->per_server[0], load->per_server[1], load->per_server[2],
                  op_names[0], load->per_op[0], op_names[1], load->per_op[1],
                  op_names[2], load->per_op[2], op_names[3], load->per_op[3]);
  g_test_message ("usage: %u keys, %u sent again, %u accepted, %u duplicates; "
                  "unanswered %u, 5xx %u, wrong answers %u", load->unique_keys,
                  load->duplicates_sent, load->accepted, load->duplicates_seen,
                  load->unanswered, load->status_5xx, load->wrong_answers);
}

static void
stop_all (GPtrArray *servers)
{
  for (guint i = 0; i < servers->len; i++)
    market_server_stop (g_ptr_array_index (servers, i));
}

/* Three servers on one database: two publish the same new folder at once,
 * then 200 clients browse, install and post usage (some of it twice, some
 * to two servers at the same moment) against all three. */
static void
test_three_servers (void)
{
  g_autofree char *racing = g_build_filename (work, "racing", NULL);
  const char *extra[] = { "--max-connections-per-address=0", NULL };
  const char *demo[] = { market_demo_dir (), NULL }, *both[] = { market_demo_dir (), racing, NULL };
  g_autoptr(GPtrArray) servers = g_ptr_array_new ();
  g_autoptr(GPtrArray) others = NULL, ids = NULL, all_files = NULL, sizes = NULL;
  g_autoptr(SoupSession) session = NULL;
  MarketServer *first;
  Load load = { 0 };
  guint seconds = load_seconds ();
  gint64 stored[2] = { 0, 0 };

  if (no_postgresql != NULL)
    {
      g_test_skip (no_postgresql);
      return;
    }
  market_write_adapter (racing, "racing", "acme", "1.0.0", 1000);
  first = market_server_start_on_postgresql (demo, TOKENS_FILE, extra);
  g_ptr_array_add (servers, first);
  others = market_servers_start_sharing (first, N_SERVERS - 1, both, TOKENS_FILE, extra);
  g_ptr_array_extend (servers, others, NULL, NULL);
  market_sql_ints (first->db_path, "SELECT count(*) FROM versions WHERE adapter_id = ?1",
                   "racing", stored, 1);
  g_assert_cmpint (stored[0], ==, 1);

  session = soup_session_new_with_options ("max-conns", 4 * N_CLIENTS,
                                           "max-conns-per-host", N_CLIENTS, "timeout", 60, NULL);
  ids = list_ids (session, first->url, 100);
  sizes = g_ptr_array_new ();
  all_files = list_files (session, first->url, ids, sizes);
  load.session = session;
  load.ids = ids;
  load.files = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < all_files->len; i++)
    if (GPOINTER_TO_INT (sizes->pdata[i]) <= MAX_INSTALL_BYTES)
      g_ptr_array_add (load.files, g_strdup (all_files->pdata[i]));
  g_assert_cmpuint (load.files->len, >, 0);
  for (guint i = 0; i < N_SERVERS; i++)
    {
      g_autoptr(GPtrArray) seen = list_ids (session, ((MarketServer *) servers->pdata[i])->url, 7);
      g_assert_cmpuint (seen->len, ==, ids->len);
      load.urls[i] = ((MarketServer *) servers->pdata[i])->url;
    }

  run_load (&load, seconds);
  report (&load, seconds);
  g_assert_cmpuint (load.unanswered, ==, 0);
  g_assert_cmpuint (load.status_5xx, ==, 0);
  g_assert_cmpuint (load.wrong_answers, ==, 0);
  g_assert_cmpuint (load.requests, >, N_CLIENTS);
  /* exactly once: each key accepted by one server, every copy a duplicate */
  g_assert_cmpuint (load.accepted, ==, load.unique_keys);
  g_assert_cmpuint (load.duplicates_seen, ==, load.duplicates_sent);
  market_sql_ints (first->db_path, "SELECT count(*), coalesce(sum(tokens), 0) FROM usage "
                   "WHERE idempotency_key LIKE ?1", "load-%", stored, 2);
  g_assert_cmpint (stored[0], ==, load.unique_keys);
  g_assert_cmpint (stored[1], ==, load.expected_tokens);
  g_ptr_array_unref (load.files);
  stop_all (servers);
}

/* ---- migrate ---- */

static void
test_migrate (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *s;
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autoptr(GPtrArray) ids_before = NULL, ids_after = NULL, files_before = NULL;
  g_autoptr(GPtrArray) files_after = NULL;
  g_autofree char *url = NULL, *out = NULL, *err = NULL, *sqlite_path = NULL;
  static const char *tables[] = { "publishers", "publisher_keys", "adapters",
                                  "adapter_target_modules", "versions", "files", "usage" };
  Load load = { .session = session };
  Client client = { .load = &load, .rand = g_rand_new_with_seed (7) };

  if (no_postgresql != NULL)
    {
      g_test_skip (no_postgresql);
      g_rand_free (client.rand);
      return;
    }
  s = market_server_start (imports, TOKENS_FILE);
  g_assert_false (g_str_has_prefix (s->db_path, "postgresql://"));
  load.urls[0] = load.urls[1] = load.urls[2] = s->url;
  for (guint i = 0; i < 3; i++, client.n++)
    post_usage (&client, 0);
  while (client.pending > 0)
    g_main_context_iteration (NULL, TRUE);
  g_rand_free (client.rand);
  g_assert_cmpuint (load.wrong_answers + load.unanswered, ==, 0);
  g_assert_cmpuint (load.accepted, ==, 3);
  ids_before = list_ids (session, s->url, 2);
  files_before = list_files (session, s->url, ids_before, NULL);

  url = market_pg_create_database (market_pg_shared ());
  {
    const char *argv[] = { g_getenv ("TENSAFE_MARKETD") ? g_getenv ("TENSAFE_MARKETD")
                                                         : MARKETD_PATH,
                           "migrate", "--from", s->db_path, "--to", url, "--blobs",
                           s->blobs_dir, NULL };
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) proc = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                     | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
    g_assert_no_error (error);
    g_subprocess_communicate_utf8 (proc, NULL, NULL, &out, &err, &error);
    g_assert_no_error (error);
    g_test_message ("migrate: %s%s", out, err);
    g_assert_true (g_subprocess_get_if_exited (proc));
    g_assert_cmpint (g_subprocess_get_exit_status (proc), ==, 0);
    /* a second copy into the same database is refused */
    g_clear_object (&proc);
    g_clear_pointer (&err, g_free);
    proc = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_SILENCE
                              | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
    g_assert_no_error (error);
    g_subprocess_communicate_utf8 (proc, NULL, NULL, NULL, &err, &error);
    g_assert_cmpint (g_subprocess_get_exit_status (proc), !=, 0);
    g_assert_nonnull (strstr (err, "already holds a marketplace"));
  }
  /* The same counts in both databases, read by each one's own client. */
  for (guint i = 0; i < G_N_ELEMENTS (tables); i++)
    {
      g_autofree char *sql = g_strdup_printf ("SELECT count(*) FROM %s", tables[i]);
      gint64 a = -1, b = -2;
      market_sql_ints (s->db_path, sql, NULL, &a, 1);
      market_sql_ints (url, sql, NULL, &b, 1);
      g_assert_cmpint (a, ==, b);
      g_assert_nonnull (strstr (out, tables[i]));
    }

  /* Served from PostgreSQL: the same pages, the same files, whole. */
  sqlite_path = g_steal_pointer (&s->db_path);
  s->db_path = g_strdup (url);
  market_server_restart (s, NULL);
  ids_after = list_ids (session, s->url, 2);
  files_after = list_files (session, s->url, ids_after, NULL);
  g_assert_cmpuint (ids_after->len, ==, ids_before->len);
  for (guint i = 0; i < ids_before->len; i++)
    g_assert_cmpstr (ids_after->pdata[i], ==, ids_before->pdata[i]);
  g_assert_cmpuint (files_after->len, ==, files_before->len);
  for (guint i = 0; i < files_before->len; i++)
    {
      g_auto(GStrv) f = g_strsplit (files_after->pdata[i], " ", 2);
      g_autofree char *file_url = g_strconcat (s->url, f[0], NULL);
      g_autoptr(SoupMessage) msg = soup_message_new ("GET", file_url);
      g_autoptr(GBytes) body = soup_session_send_and_read (session, msg, NULL, NULL);
      g_autofree char *digest = body ? sha256_of (body) : NULL;
      g_assert_cmpstr (files_after->pdata[i], ==, files_before->pdata[i]);
      g_assert_cmpstr (digest, ==, f[1]);
    }
  {
    /* full-text search works on the copied rows */
    g_autofree char *search = g_strconcat (s->url, "v1/adapters?q=pirat", NULL);
    g_autoptr(JsonNode) root = get_json (session, search);
    g_assert_cmpuint (json_array_get_length (json_object_get_array_member (
        json_node_get_object (root), "adapters")), ==, 2);
  }
  market_server_stop (s);
}

int
main (int argc, char **argv)
{
  g_autofree char *bindir = NULL;
  int rc;

  g_test_init (&argc, &argv, NULL);
  bindir = market_pg_bindir (&no_postgresql);
  work = market_tmpdir ();
  g_test_add_func ("/market/postgresql/migrate-from-sqlite", test_migrate);
  g_test_add_func ("/market/postgresql/three-servers-under-load", test_three_servers);
  rc = g_test_run ();
  market_rm_rf (work);
  g_free (work);
  g_free (no_postgresql);
  return rc;
}

/* market-pg.c: a throwaway PostgreSQL server for the market tests, and SQL on either dialect.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "market-pg.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "market-test-util.h"

struct MarketPg
{
  GSubprocess *postmaster;
  char        *dir;        /* data/ and the socket live here */
  char        *admin_url;
  guint        n_databases;
};

static gboolean
has_server (const char *dir)
{
  g_autofree char *initdb = g_build_filename (dir, "initdb", NULL);
  g_autofree char *postgres = g_build_filename (dir, "postgres", NULL);

  return g_file_test (initdb, G_FILE_TEST_IS_EXECUTABLE)
         && g_file_test (postgres, G_FILE_TEST_IS_EXECUTABLE);
}

char *
market_pg_bindir (char **why_not)
{
  const char *env = g_getenv ("TS_POSTGRESQL_BINDIR");
  g_autoptr(GDir) versions = NULL;
  g_autofree char *best = NULL, *on_path = NULL;
  const char *name;
  int best_version = 0;

  if (env != NULL)
    {
      if (has_server (env))
        return g_strdup (env);
      *why_not = g_strdup_printf ("TS_POSTGRESQL_BINDIR=%s holds no initdb and postgres", env);
      return NULL;
    }
  /* Debian keeps each major version's server in /usr/lib/postgresql/N/bin. */
  versions = g_dir_open ("/usr/lib/postgresql", 0, NULL);
  while (versions != NULL && (name = g_dir_read_name (versions)) != NULL)
    {
      g_autofree char *dir = g_build_filename ("/usr/lib/postgresql", name, "bin", NULL);
      if (has_server (dir) && atoi (name) > best_version)
        {
          g_free (best);
          best = g_steal_pointer (&dir);
          best_version = atoi (name);
        }
    }
  if (best != NULL)
    return g_steal_pointer (&best);
  on_path = g_find_program_in_path ("initdb");
  if (on_path != NULL)
    {
      char *dir = g_path_get_dirname (on_path);
      if (has_server (dir))
        return dir;
      g_free (dir);
    }
  *why_not = g_strdup ("PostgreSQL's server (initdb, postgres) is not installed: "
                       "apt-get install postgresql");
  return NULL;
}

/* postgres refuses to run as root: as root, the server runs as nobody. */
typedef struct
{
  uid_t uid;
  gid_t gid;
} RunAs;

static void
child_setup (gpointer user_data)
{
  RunAs *as = user_data;

  if (as->uid != 0 && getuid () == 0)
    {
      if (setgroups (0, NULL) != 0 || setgid (as->gid) != 0 || setuid (as->uid) != 0)
        _exit (126);
    }
  /* After the uid change, which would clear it: the server dies with the test. */
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static RunAs
server_user (void)
{
  RunAs as = { 0, 0 };
  struct passwd *pw;

  if (getuid () != 0)
    return as;
  pw = getpwnam ("nobody");
  g_assert_nonnull (pw);
  as.uid = pw->pw_uid;
  as.gid = pw->pw_gid;
  return as;
}

static GSubprocess *
spawn_as (RunAs *as, GSubprocessFlags flags, const char * const *argv)
{
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new (flags);
  g_autoptr(GError) error = NULL;
  GSubprocess *proc;

  g_subprocess_launcher_set_child_setup (launcher, child_setup, as, NULL);
  g_subprocess_launcher_unsetenv (launcher, "LD_PRELOAD");
  proc = g_subprocess_launcher_spawnv (launcher, argv, &error);
  g_assert_no_error (error);
  return proc;
}

static void
run_initdb (const char *bindir, const char *data, RunAs *as)
{
  g_autofree char *initdb = g_build_filename (bindir, "initdb", NULL);
  g_autofree char *out = NULL;
  const char *argv[] = { initdb, "-D", data, "-U", "marketd", "--auth=trust", "--no-locale",
                         "-E", "UTF8", "--no-sync", NULL };
  g_autoptr(GSubprocess) proc = spawn_as (as, G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                              | G_SUBPROCESS_FLAGS_STDERR_MERGE, argv);
  g_autoptr(GError) error = NULL;

  g_subprocess_communicate_utf8 (proc, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0)
    g_error ("initdb failed:\n%s", out);
}

/* Fast and throwaway: no fsync, no TCP, the socket in the temporary folder. */
static GSubprocess *
start_postmaster (const char *bindir, const char *dir, RunAs *as)
{
  g_autofree char *postgres = g_build_filename (bindir, "postgres", NULL);
  g_autofree char *data = g_build_filename (dir, "data", NULL);
  g_autofree char *socket_dir = g_strconcat ("unix_socket_directories=", dir, NULL);
  const char *argv[] = { postgres, "-D", data, "-c", "listen_addresses=", "-c", socket_dir,
                         "-c", "fsync=off", "-c", "synchronous_commit=off",
                         "-c", "full_page_writes=off", "-c", "max_connections=200",
                         "-c", "log_min_messages=fatal", NULL };

  return spawn_as (as, G_SUBPROCESS_FLAGS_STDOUT_SILENCE, argv);
}

static void
wait_until_ready (MarketPg *pg)
{
  for (int i = 0; i < 600; i++)
    {
      if (PQping (pg->admin_url) == PQPING_OK)
        return;
      g_usleep (50 * 1000);
    }
  g_error ("PostgreSQL did not start within 30 s in %s", pg->dir);
}

static MarketPg *shared;

static void
stop_shared (void)
{
  if (shared == NULL)
    return;
  /* SIGINT: the fast shutdown, which ends the sessions still open. */
  g_subprocess_send_signal (shared->postmaster, SIGINT);
  g_subprocess_wait (shared->postmaster, NULL, NULL);
  g_clear_object (&shared->postmaster);
  market_rm_rf (shared->dir);
  g_free (shared->dir);
  g_free (shared->admin_url);
  g_clear_pointer (&shared, g_free);
}

static char *
database_url (MarketPg *pg, const char *name)
{
  return g_strdup_printf ("postgresql:///%s?host=%s&user=marketd", name, pg->dir);
}

MarketPg *
market_pg_shared (void)
{
  g_autofree char *why_not = NULL, *bindir = market_pg_bindir (&why_not);
  g_autofree char *data = NULL;
  RunAs as = server_user ();
  static RunAs run_as;

  if (shared != NULL)
    return shared;
  g_assert_nonnull (bindir);
  run_as = as;
  shared = g_new0 (MarketPg, 1);
  shared->dir = market_tmpdir ();
  g_assert_cmpint (chown (shared->dir, as.uid, as.gid), ==, 0);
  data = g_build_filename (shared->dir, "data", NULL);
  run_initdb (bindir, data, &run_as);
  shared->postmaster = start_postmaster (bindir, shared->dir, &run_as);
  shared->admin_url = database_url (shared, "postgres");
  wait_until_ready (shared);
  atexit (stop_shared);
  return shared;
}

static PGconn *
connect_or_die (const char *url)
{
  PGconn *conn = PQconnectdb (url);

  if (PQstatus (conn) != CONNECTION_OK)
    g_error ("%s: %s", url, PQerrorMessage (conn));
  return conn;
}

char *
market_pg_create_database (MarketPg *pg)
{
  g_autofree char *name = g_strdup_printf ("market%u", ++pg->n_databases);
  g_autofree char *sql = g_strdup_printf ("CREATE DATABASE %s", name);
  PGconn *conn = connect_or_die (pg->admin_url);
  PGresult *res = PQexec (conn, sql);

  if (PQresultStatus (res) != PGRES_COMMAND_OK)
    g_error ("%s: %s", sql, PQresultErrorMessage (res));
  PQclear (res);
  PQfinish (conn);
  return database_url (pg, name);
}

static void
pg_ints (const char *url, const char *sql, const char *param, gint64 *values, guint n)
{
  PGconn *conn = connect_or_die (url);
  g_autofree char *pg_sql = g_strdup (sql);
  char *mark = strstr (pg_sql, "?1");
  PGresult *res;

  if (mark != NULL)
    *mark = '$';
  res = PQexecParams (conn, pg_sql, param ? 1 : 0, NULL, &param, NULL, NULL, 0);
  if (PQresultStatus (res) != PGRES_TUPLES_OK || PQntuples (res) < 1 || PQnfields (res) < (int) n)
    g_error ("%s: %s", sql, PQresultErrorMessage (res));
  for (guint i = 0; i < n; i++)
    values[i] = g_ascii_strtoll (PQgetvalue (res, 0, i), NULL, 10);
  PQclear (res);
  PQfinish (conn);
}

static void
sqlite_ints (const char *path, const char *sql, const char *param, gint64 *values, guint n)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;

  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &s, NULL), ==, SQLITE_OK);
  if (param != NULL)
    sqlite3_bind_text (s, 1, param, -1, SQLITE_TRANSIENT);
  g_assert_cmpint (sqlite3_step (s), ==, SQLITE_ROW);
  for (guint i = 0; i < n; i++)
    values[i] = sqlite3_column_int64 (s, i);
  sqlite3_finalize (s);
  sqlite3_close (db);
}

void
market_sql_ints (const char *location, const char *sql, const char *text_param,
                 gint64 *values, guint n_values)
{
  if (g_str_has_prefix (location, "postgresql://"))
    pg_ints (location, sql, text_param, values, n_values);
  else
    sqlite_ints (location, sql, text_param, values, n_values);
}

static void
pg_exec (const char *url, const char *sql)
{
  PGconn *conn = connect_or_die (url);
  PGresult *res = PQexec (conn, sql);

  if (PQresultStatus (res) != PGRES_COMMAND_OK)
    g_error ("%s: %s", sql, PQresultErrorMessage (res));
  PQclear (res);
  PQfinish (conn);
}

static void
sqlite_exec (const char *path, const char *sql)
{
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
}

void
market_sql_exec (const char *location, const char *sql)
{
  if (g_str_has_prefix (location, "postgresql://"))
    pg_exec (location, sql);
  else
    sqlite_exec (location, sql);
}

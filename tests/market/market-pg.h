/* market-pg.h: a throwaway PostgreSQL server for tests (initdb in a temporary folder,
 * a Unix socket there, no TCP), and SQL helpers that speak either dialect.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The folder holding initdb and postgres; NULL, with the reason in @why_not,
 * when PostgreSQL's server is not installed.  TS_POSTGRESQL_BINDIR, when set,
 * names it. */
char *market_pg_bindir (char **why_not);

/* The process's PostgreSQL server, started on first use and stopped at exit
 * (killed with the test if it aborts).  When the test runs as root the
 * server runs as "nobody", since postgres refuses root. */
typedef struct MarketPg MarketPg;
MarketPg *market_pg_shared (void);
/* A new empty database on it; its postgresql:// URL. */
char *market_pg_create_database (MarketPg *pg);

/* The integer columns of the first row @sql returns on @location (an SQLite
 * file or a postgresql:// URL); "?1" in @sql is @text_param. */
void market_sql_ints (const char *location, const char *sql, const char *text_param,
                      gint64 *values, guint n_values);
/* Runs @sql (no parameters, no answer) on @location. */
void market_sql_exec (const char *location, const char *sql);

G_END_DECLS

/* cli-models.c: tensafe-cli models list | pull NAME | import FILE | rm NAME | verify [NAME].
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli-models-progress.h"
#include "cli.h"
#include "ts-models-catalog.h"
#include "ts-models-error.h"
#include "ts-models-files.h"
#include "ts-models-import.h"
#include "ts-models-installed.h"
#include "ts-models-pull.h"

#define USAGE \
  "Usage: tensafe-cli models [--dir DIR] [--catalogue FILE] COMMAND\n" \
  "  list            the catalogue and imports: installed or not, size, RAM needed\n" \
  "  pull NAME       download NAME (resumable; checked before it is installed)\n" \
  "  import FILE [--name NAME]  copy a GGUF file the engine can run into the folder\n" \
  "  rm NAME         remove NAME and any unfinished download of it\n" \
  "  verify [NAME]   re-hash installed models against their digests\n" \
  "DIR defaults to $TENSAFE_MODEL_DIR, else $XDG_CACHE_HOME/tensafe/models.\n"

typedef struct
{
  char           *dir;
  TsModelCatalog *catalog;
  TsModelIndex   *index;
} Models;

static void
models_clear (Models *m)
{
  g_free (m->dir);
  ts_model_catalog_free (m->catalog);
  ts_model_index_free (m->index);
}

static int
fail (const char *command, const GError *error)
{
  fprintf (stderr, "tensafe-cli models %s: %s\n", command, error->message);
  return 1;
}

static void
format_size (char *buf, size_t size, gint64 bytes, gboolean approx)
{
  if (bytes < 0)
    g_snprintf (buf, size, "?");
  else if (bytes < 1000000000)
    g_snprintf (buf, size, "%s%.0f MB", approx ? "~" : "", bytes / 1e6);
  else
    g_snprintf (buf, size, "%s%.2f GB", approx ? "~" : "", bytes / 1e9);
}

static void
print_state (const TsModelState *s, guint context)
{
  const TsModelEntry *e = s->entry;
  char size[32], ram[32];
  gboolean approx = e != NULL && e->bytes < 0 && s->sha256 == NULL;

  format_size (size, sizeof size, s->bytes, approx);
  format_size (ram, sizeof ram, e ? ts_model_entry_ram_bytes (e, context) : -1, approx);
  printf ("%-36s %-10s %-7s %-7s %-10s %-10s %s%s\n", s->name,
          s->architecture ? s->architecture : "?", e ? e->parameters : "?",
          e ? e->quantisation : "?", size, ram,
          s->installed ? "yes" : "no",
          s->partial ? " (partial)" : e == NULL ? " (imported)" : "");
}

static int
cmd_list (Models *m)
{
  g_autoptr(GArray) list = ts_models_list (m->catalog, m->index, m->dir);

  printf ("%-36s %-10s %-7s %-7s %-10s %-10s %s\n", "NAME", "ARCH", "PARAMS", "QUANT", "SIZE",
          "RAM", "INSTALLED");
  for (guint i = 0; i < list->len; i++)
    print_state (&g_array_index (list, TsModelState, i), m->catalog->default_context);
  printf ("\nModels folder: %s\nRAM: the file plus a float32 KV cache of %u tokens; "
          "~: an estimate (not verified)\n", m->dir, m->catalog->default_context);
  return 0;
}

/* The long operations run on a worker, so that Ctrl-C can cancel them cleanly. */
typedef struct
{
  Models             *models;
  const TsModelEntry *entry;
  const char         *path;   /* import */
  const char         *name;   /* import */
  CliProgress        *progress;
  GCancellable       *cancellable;
  GMainLoop          *loop;
  char               *result;
  GError             *error;
} Job;

static void
pull_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  TsModelsPullOptions options = { NULL, 0, cli_progress_report, job->progress, cancellable,
                                  cli_progress_source_failed };

  job->result = ts_models_pull (job->entry, job->models->dir, &options, &job->error);
  g_task_return_boolean (task, TRUE);
}

static void
import_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  TsModelsMeter meter = { { 0 }, cli_progress_report, job->progress };

  job->result = ts_models_import (job->path, job->models->dir, job->name, &meter, cancellable,
                                  &job->error);
  g_task_return_boolean (task, TRUE);
}

static void
job_done (GObject *source, GAsyncResult *result, gpointer data)
{
  g_main_loop_quit (((Job *) data)->loop);
}

static gboolean
interrupted (gpointer data)
{
  g_cancellable_cancel (((Job *) data)->cancellable);
  return G_SOURCE_CONTINUE;
}

static void
run_job (Job *job, GTaskThreadFunc func)
{
  g_autoptr(GTask) task = NULL;
  guint sigint, sigterm;

  job->cancellable = g_cancellable_new ();
  job->loop = g_main_loop_new (NULL, FALSE);
  job->progress = cli_progress_new (stdout);
  sigint = g_unix_signal_add (SIGINT, interrupted, job);
  sigterm = g_unix_signal_add (SIGTERM, interrupted, job);
  task = g_task_new (NULL, job->cancellable, job_done, job);
  g_task_set_task_data (task, job, NULL);
  g_task_run_in_thread (task, func);
  g_main_loop_run (job->loop);
  g_source_remove (sigint);
  g_source_remove (sigterm);
  cli_progress_free (job->progress);
  g_clear_object (&job->cancellable);
  g_main_loop_unref (job->loop);
}

static int
report_cancel (const char *command, const char *what)
{
  fprintf (stderr, "tensafe-cli models %s: interrupted; %s\n", command, what);
  return 130;
}

static int
cmd_pull (Models *m, const char *name)
{
  const TsModelEntry *entry = ts_model_catalog_find (m->catalog, name);
  Job job = { m, entry };

  if (entry == NULL)
    {
      fprintf (stderr, "tensafe-cli models pull: no model \"%s\" in the catalogue "
               "(see `tensafe-cli models list`)\n", name);
      return 1;
    }
  if (!entry->verified)
    printf ("%s: its size and SHA-256 are not verified; the digest of the first download "
            "is recorded and later ones must match it\n", entry->name);
  run_job (&job, pull_thread);
  if (g_error_matches (job.error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_error_free (job.error);
      return report_cancel ("pull", "run the same pull again to resume");
    }
  /* Pulling what is there already succeeds, as build-aux/fetch-model.sh does. */
  if (g_error_matches (job.error, TS_MODELS_ERROR, TS_MODELS_ERROR_EXISTS))
    {
      printf ("%s; `tensafe-cli models verify %s` checks it\n", job.error->message,
              entry->name);
      g_error_free (job.error);
      return 0;
    }
  if (job.result == NULL)
    {
      int rc = fail ("pull", job.error);
      g_error_free (job.error);
      return rc;
    }
  printf ("%s installed: %s\n", entry->name, job.result);
  g_free (job.result);
  return 0;
}

static int
cmd_import (Models *m, const char *path, const char *name)
{
  g_autofree char *chosen = name ? g_strdup (name) : ts_models_import_name (path);
  Job job = { m, NULL, path, chosen };

  if (ts_model_catalog_find (m->catalog, chosen) != NULL)
    {
      fprintf (stderr, "tensafe-cli models import: \"%s\" is a catalogue model's name; "
               "choose another with --name\n", chosen);
      return 1;
    }
  run_job (&job, import_thread);
  if (g_error_matches (job.error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_error_free (job.error);
      return report_cancel ("import", "nothing was installed");
    }
  if (job.result == NULL)
    {
      int rc = fail ("import", job.error);
      g_error_free (job.error);
      return rc;
    }
  printf ("imported %s as %s\n", path, job.result);
  g_free (job.result);
  return 0;
}

static int
cmd_rm (Models *m, const char *name)
{
  g_autoptr(GError) error = NULL;
  g_autofree TsModelState *s = ts_models_lookup (m->catalog, m->index, m->dir, name, &error);

  g_autofree char *removed = NULL;

  if (s == NULL)
    return fail ("rm", error);
  /* The state borrows from the index, which forgets an import. */
  removed = g_strdup (s->name);
  if (!ts_models_remove (s, m->dir, m->index, &error))
    return fail ("rm", error);
  printf ("removed %s\n", removed);
  return 0;
}

static gboolean
verify_one (Models *m, const TsModelState *s)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *sha = NULL;
  CliProgress *progress = cli_progress_new (stdout);
  TsModelsMeter meter = { { 0 }, cli_progress_report, progress };
  gboolean ok = ts_models_verify (s, m->dir, &meter, NULL, &sha, &error);

  cli_progress_free (progress);
  if (ok)
    {
      if (s->sha256 != NULL)
        printf ("%-36s OK\n", s->name);
      else
        printf ("%-36s no digest to check against (SHA-256 %s)\n", s->name, sha);
      return TRUE;
    }
  printf ("%-36s FAILED: %s\n", s->name, error->message);
  return FALSE;
}

static int
cmd_verify (Models *m, const char *name)
{
  g_autoptr(GArray) list = ts_models_list (m->catalog, m->index, m->dir);
  g_autoptr(GError) error = NULL;
  g_autofree TsModelState *one = NULL;
  guint failed = 0, checked = 0;

  if (name != NULL)
    {
      one = ts_models_lookup (m->catalog, m->index, m->dir, name, &error);
      if (one == NULL)
        return fail ("verify", error);
      return verify_one (m, one) ? 0 : 1;
    }
  for (guint i = 0; i < list->len; i++)
    {
      const TsModelState *s = &g_array_index (list, TsModelState, i);
      if (s->installed)
        {
          checked++;
          failed += !verify_one (m, s);
        }
    }
  printf ("%u checked, %u failed\n", checked, failed);
  return failed ? 1 : 0;
}

static gboolean
load (Models *m, const char *dir, const char *catalogue, GError **error)
{
  m->dir = dir ? g_strdup (dir) : ts_models_dir ();
  m->catalog = ts_model_catalog_load (catalogue, error);
  if (m->catalog == NULL)
    return FALSE;
  m->index = ts_model_index_load (m->dir, error);
  return m->index != NULL;
}

static int
dispatch (Models *m, char **args, const char *name_option)
{
  guint n = g_strv_length (args);
  const char *cmd = args[0];

  if (strcmp (cmd, "list") == 0 && n == 1)
    return cmd_list (m);
  if (strcmp (cmd, "pull") == 0 && n == 2)
    return cmd_pull (m, args[1]);
  if (strcmp (cmd, "import") == 0 && n == 2)
    return cmd_import (m, args[1], name_option);
  if (strcmp (cmd, "rm") == 0 && n == 2)
    return cmd_rm (m, args[1]);
  if (strcmp (cmd, "verify") == 0 && n <= 2)
    return cmd_verify (m, args[1]);
  fputs (USAGE, stderr);
  return 2;
}

int
cli_models (int argc, char **argv)
{
  g_autofree char *dir = NULL, *catalogue = NULL, *name = NULL;
  g_auto (GStrv) args = NULL;
  GOptionEntry entries[] = {
    { "dir", 'd', 0, G_OPTION_ARG_FILENAME, &dir, "Models folder", "DIR" },
    { "catalogue", 0, 0, G_OPTION_ARG_FILENAME, &catalogue, "Model catalogue (JSON)", "FILE" },
    { "name", 'n', 0, G_OPTION_ARG_STRING, &name, "import: the name to give the model", "NAME" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &args, NULL, "COMMAND [ARG]" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- list, download, import, remove "
                                                         "and verify models");
  g_autoptr (GError) error = NULL;
  Models m = { 0 };
  int rc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli models: %s\n\n%s", error->message, USAGE);
      return 2;
    }
  if (args == NULL)
    {
      fputs (USAGE, stderr);
      return 2;
    }
  if (!load (&m, dir, catalogue, &error))
    rc = fail (args[0], error);
  else
    rc = dispatch (&m, args, name);
  models_clear (&m);
  return rc;
}

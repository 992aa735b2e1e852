/* cli-models-progress.c: percentage, MB/s and ETA, in place on a terminal, periodic otherwise.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli-models-progress.h"

#include <unistd.h>

#define TTY_INTERVAL_US   (200 * 1000)
#define PLAIN_INTERVAL_US (5 * 1000 * 1000)

struct CliProgress
{
  FILE          *out;
  gboolean       tty;
  gboolean       line_open;    /* a tty line is waiting for its newline */
  TsModelsStage  stage;
  const char    *what;
  gint64         stage_start;  /* monotonic µs */
  gint64         download_start; /* downloads of several files count as one */
  gint64         last_print;
};

static const char *
stage_name (TsModelsStage stage)
{
  switch (stage)
    {
    case TS_MODELS_STAGE_DOWNLOAD: return "downloading";
    case TS_MODELS_STAGE_EXTRACT: return "extracting";
    case TS_MODELS_STAGE_VERIFY: return "verifying";
    case TS_MODELS_STAGE_COPY: return "copying";
    default: return "working";
    }
}

CliProgress *
cli_progress_new (FILE *out)
{
  CliProgress *p = g_new0 (CliProgress, 1);

  p->out = out;
  p->tty = isatty (fileno (out));
  p->stage = (TsModelsStage) -1;
  return p;
}

void
cli_progress_free (CliProgress *p)
{
  if (p->line_open)
    fputc ('\n', p->out);
  g_free (p);
}

static void
format_eta (char *buf, size_t size, double seconds)
{
  if (seconds < 0 || seconds > 99 * 3600)
    g_snprintf (buf, size, "--:--");
  else if (seconds >= 3600)
    g_snprintf (buf, size, "%d:%02d:%02d", (int) seconds / 3600, (int) seconds / 60 % 60,
                (int) seconds % 60);
  else
    g_snprintf (buf, size, "%02d:%02d", (int) seconds / 60, (int) seconds % 60);
}

static void
print_line (CliProgress *p, const TsModelsProgress *s, gint64 now)
{
  double elapsed = (now - p->stage_start) / 1e6;
  double speed = elapsed > 0.05 ? (s->done - s->resumed) / elapsed : 0;
  char eta[32];

  format_eta (eta, sizeof eta, speed > 0 && s->total > 0 ? (s->total - s->done) / speed : -1);
  if (p->tty)
    fputs ("\r\033[K", p->out);
  if (s->total > 0)
    fprintf (p->out, "%s %5.1f%%  %.1f of %.1f MB  %.1f MB/s  ETA %s", stage_name (s->stage),
             100.0 * s->done / s->total, s->done / 1e6, s->total / 1e6, speed / 1e6, eta);
  else
    fprintf (p->out, "%s %.1f MB  %.1f MB/s", stage_name (s->stage), s->done / 1e6,
             speed / 1e6);
  if (p->tty)
    p->line_open = TRUE;
  else
    fputc ('\n', p->out);
  fflush (p->out);
}

static gboolean
stage_changed (CliProgress *p, const TsModelsProgress *s)
{
  return s->stage != p->stage || s->what != p->what || s->done == s->resumed;
}

void
cli_progress_source_failed (const char *source, const GError *error, gpointer user_data)
{
  CliProgress *p = user_data;

  if (p->line_open)
    fputc ('\n', p->out);
  p->line_open = FALSE;
  fflush (p->out);
  /* The message names the URL; @source is the first one of the source. */
  fprintf (stderr, "%s; trying the next source\n", error->message);
}

void
cli_progress_report (const TsModelsProgress *s, gpointer user_data)
{
  CliProgress *p = user_data;
  gint64 now = g_get_monotonic_time ();
  gboolean finished = s->total > 0 && s->done >= s->total;

  if (stage_changed (p, s))
    {
      if (p->line_open)
        fputc ('\n', p->out);
      p->line_open = FALSE;
      p->stage = s->stage;
      p->what = s->what;
      p->stage_start = now;
      if (s->stage == TS_MODELS_STAGE_DOWNLOAD)
        {
          if (p->download_start == 0)
            p->download_start = now;
          p->stage_start = p->download_start;
        }
      /* The first line waits one interval: its speed would mean nothing. */
      p->last_print = now;
      if (s->what != NULL)
        fprintf (p->out, "%s %s%s\n", stage_name (s->stage), s->what,
                 s->resumed > 0 ? " (resuming)" : "");
      return;
    }
  if (!finished && now - p->last_print < (p->tty ? TTY_INTERVAL_US : PLAIN_INTERVAL_US))
    return;
  p->last_print = now;
  print_line (p, s, now);
}

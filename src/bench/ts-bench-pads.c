/* ts-bench-pads.c: an evaluator's privacy-pad pools, as its /metrics shows them, for the benchmark.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include <libsoup/soup.h>

#include "ts-bench-pads.h"

/* Between two readings while waiting: short against a pad (about 0.5 ms)
 * times the pads of a run, long enough not to keep the server busy. */
#define POLL_INTERVAL_US 20000
#define HTTP_TIMEOUT_S 10

/* http://HOST:PORT/metrics for ws://HOST:PORT/…, https for wss. */
static char *
metrics_url (const char *ws_url, GError **error)
{
  g_autoptr (GUri) uri = g_uri_parse (ws_url, G_URI_FLAGS_NONE, error);
  g_autoptr (GUri) metrics = NULL;
  const char *scheme;

  if (uri == NULL)
    return NULL;
  scheme = g_uri_get_scheme (uri);
  if (g_strcmp0 (scheme, "ws") != 0 && g_strcmp0 (scheme, "wss") != 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "“%s” is not a ws:// or wss:// address", ws_url);
      return NULL;
    }
  metrics = g_uri_build (G_URI_FLAGS_NONE, scheme[2] == 's' ? "https" : "http", NULL,
                         g_uri_get_host (uri), g_uri_get_port (uri), "/metrics", NULL, NULL);
  return g_uri_to_string (metrics);
}

static char *
fetch (SoupSession *session, const char *url, GCancellable *cancellable, GError **error)
{
  g_autoptr (SoupMessage) msg = soup_message_new ("GET", url);
  g_autoptr (GBytes) body = NULL;
  g_autoptr (GError) why = NULL;

  if (msg == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Not an address: %s", url);
      return NULL;
    }
  body = soup_session_send_and_read (session, msg, cancellable, &why);
  if (body == NULL)
    {
      if (g_error_matches (why, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_propagate_error (error, g_steal_pointer (&why));
      else
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                     "Cannot read the evaluator's pad pools at %s: %s", url, why->message);
      return NULL;
    }
  if (soup_message_get_status (msg) != SOUP_STATUS_OK)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "Cannot read the evaluator's pad pools at %s: HTTP %u", url,
                   soup_message_get_status (msg));
      return NULL;
    }
  return g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));
}

/* Stores one sample "NAME VALUE" if NAME is one of ours; whether it was. */
static gboolean
take_sample (const char *name, double value, TsBenchPads *out)
{
  static const struct {
    const char *name;
    gsize offset;
  } counters[] = {
    { "tensafe_he_pad_pool_pads", G_STRUCT_OFFSET (TsBenchPads, pooled) },
    { "tensafe_he_pad_pool_target", G_STRUCT_OFFSET (TsBenchPads, target) },
    { "tensafe_he_pads_made_total{by=\"refill\"}", G_STRUCT_OFFSET (TsBenchPads, made_refill) },
    { "tensafe_he_pads_made_total{by=\"inline\"}", G_STRUCT_OFFSET (TsBenchPads, made_inline) },
    { "tensafe_he_pads_from_pool_total", G_STRUCT_OFFSET (TsBenchPads, from_pool) },
  };

  for (guint i = 0; i < G_N_ELEMENTS (counters); i++)
    if (strcmp (name, counters[i].name) == 0)
      {
        G_STRUCT_MEMBER (guint64, out, counters[i].offset) = (guint64) value;
        return TRUE;
      }
  if (strcmp (name, "tensafe_he_pad_refill_seconds_total") == 0)
    out->refill_seconds = value;
  else if (strcmp (name, "tensafe_he_pad_pool_answers") == 0)
    {
      out->answers = (guint) value;
      out->has_answers = TRUE;
    }
  else if (strcmp (name, "tensafe_he_pad_pool_answers_configured") == 0)
    out->answers_configured = (guint) value;
  else
    return FALSE;
  return TRUE;
}

gboolean
ts_bench_pads_parse (const char *text, TsBenchPads *out, GError **error)
{
  g_return_val_if_fail (text != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  gboolean any = FALSE;

  memset (out, 0, sizeof *out);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char *space = strrchr (lines[i], ' ');
      char *end;
      double value;

      if (lines[i][0] == '#' || space == NULL)
        continue;
      *space = '\0';
      value = g_ascii_strtod (space + 1, &end);
      if (end != space + 1 && value >= 0)
        any |= take_sample (lines[i], value, out);
    }
  if (!any)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                 "The evaluator reports no privacy pads: it does not serve the adapter-private mode");
  return any;
}

static gboolean
read_with (SoupSession *session, const char *url, GCancellable *cancellable, TsBenchPads *out,
           GError **error)
{
  g_autofree char *text = fetch (session, url, cancellable, error);

  return text != NULL && ts_bench_pads_parse (text, out, error);
}

static SoupSession *
session_new (void)
{
  return soup_session_new_with_options ("timeout", HTTP_TIMEOUT_S, NULL);
}

gboolean
ts_bench_pads_read (const char *ws_url, TsBenchPads *out, GError **error)
{
  g_return_val_if_fail (ws_url != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  g_autofree char *url = metrics_url (ws_url, error);
  g_autoptr (SoupSession) session = NULL;

  if (url == NULL)
    return FALSE;
  session = session_new ();
  return read_with (session, url, NULL, out, error);
}

/* Why a reading is not yet what a wait wants: NULL when it is. *code: the
 * error when waiting cannot help (-1: it can); at the deadline, *code if
 * set, else G_IO_ERROR_TIMED_OUT. */
typedef char *(*NotReadyFunc) (const TsBenchPads *p, guint answers, int *code);

/* A full pool of @answers per module. */
static char *
not_full (const TsBenchPads *p, guint answers, int *code)
{
  *code = -1;
  if (!p->has_answers)
    {
      *code = G_IO_ERROR_NOT_SUPPORTED;
      return g_strdup ("The evaluator does not report its pad pools per answer (a "
                       "tensafe-he-server before this version): a warm private run cannot "
                       "check them");
    }
  if (p->answers_configured < answers)
    {
      *code = G_IO_ERROR_NO_SPACE;
      return g_strdup_printf ("The evaluator keeps pads ready for only %u of the %u timed tokens "
                              "(--pad-pool-answers %u): start tensafe-he-server with "
                              "--pad-pool-answers %u or more", p->answers_configured, answers,
                              p->answers_configured, answers);
    }
  if (p->answers < answers)
    return g_strdup_printf ("The evaluator's memory cap leaves room for pads for only %u of the "
                            "%u timed tokens: start tensafe-he-server with a larger "
                            "--pad-pool-mib (or time fewer tokens)", p->answers, answers);
  if (p->target == 0 || p->pooled < p->target)
    return g_strdup_printf ("The evaluator's pad pools did not fill: %" G_GUINT64_FORMAT
                            " of %" G_GUINT64_FORMAT " pads ready", p->pooled, p->target);
  return NULL;
}

/* No private connection keeps pools (a target of 0). */
static char *
not_alone (const TsBenchPads *p, guint answers, int *code)
{
  *code = -1;
  if (p->target == 0)
    return NULL;
  return g_strdup_printf ("Other clients of the evaluator keep privacy pads (%" G_GUINT64_FORMAT
                          " pads): a warm private run needs the evaluator to itself", p->target);
}

static gboolean
wait_until (const char *ws_url, NotReadyFunc not_ready, guint answers, guint timeout_ms,
            GCancellable *cancellable, TsBenchPads *out, GError **error)
{
  g_autofree char *url = metrics_url (ws_url, error);
  g_autoptr (SoupSession) session = NULL;
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * G_TIME_SPAN_MILLISECOND;

  if (url == NULL)
    return FALSE;
  session = session_new ();
  for (;;)
    {
      g_autofree char *why = NULL;
      int code;

      if (!read_with (session, url, cancellable, out, error))
        return FALSE;
      if ((why = not_ready (out, answers, &code)) == NULL)
        return TRUE;
      if (code >= 0)
        {
          g_set_error_literal (error, G_IO_ERROR, code, why);
          return FALSE;
        }
      if (g_get_monotonic_time () >= deadline)
        {
          /* too few answers at the end (the memory cap) is a lack of room */
          if (not_ready == not_full && out->answers < answers)
            g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, why);
          else
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "%s (waited %.1f s)", why,
                         timeout_ms / 1000.0);
          return FALSE;
        }
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      g_usleep (POLL_INTERVAL_US);
    }
}

gboolean
ts_bench_pads_wait_full (const char *ws_url, guint answers, guint timeout_ms,
                         GCancellable *cancellable, TsBenchPads *out, GError **error)
{
  g_return_val_if_fail (ws_url != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  return wait_until (ws_url, not_full, answers, timeout_ms, cancellable, out, error);
}

gboolean
ts_bench_pads_wait_alone (const char *ws_url, guint timeout_ms, GCancellable *cancellable,
                          TsBenchPads *out, GError **error)
{
  g_return_val_if_fail (ws_url != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  return wait_until (ws_url, not_alone, 0, timeout_ms, cancellable, out, error);
}

double
ts_bench_pads_refill_ms_per_pad (const TsBenchPads *before, const TsBenchPads *after)
{
  g_return_val_if_fail (before != NULL, 0.0);

  guint64 made = after->made_refill - before->made_refill;

  return made > 0 && after->made_refill > before->made_refill
           ? 1000.0 * (after->refill_seconds - before->refill_seconds) / (double) made
           : 0.0;
}

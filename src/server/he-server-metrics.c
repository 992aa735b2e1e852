/* he-server-metrics.c: counters and latency histograms in Prometheus text format.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "he-server-metrics.h"
#include "ts-helora-proto.h"

/* Upper bounds in seconds: sub-millisecond products up to slow adapters. */
static const double bucket_bounds[] = {
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
};
#define N_BUCKETS G_N_ELEMENTS (bucket_bounds)

static const char *const stage_names[HE_N_STAGES] = {
  "decode", "evaluate", "encode", "total",
};

typedef struct {
  guint64 counts[N_BUCKETS + 1];  /* last one: +Inf */
  guint64 n;
  double sum;
} Histogram;

struct _HeMetrics {
  GMutex lock;
  Histogram stages[HE_N_STAGES];
  guint64 requests;
  guint64 errors[TS_HELORA_ERROR_LAST + 1];
  guint64 bytes_received;
  guint64 bytes_sent;
  int clients;
  guint64 swaps;
  guint64 unread_closes;
  guint64 pads_refill, pads_from_pool, pads_inline;
  double pads_refill_seconds;
  HeMetricsSource source;
  gpointer source_data;
};

HeMetrics *
he_metrics_new (void)
{
  HeMetrics *self = g_new0 (HeMetrics, 1);

  g_mutex_init (&self->lock);
  return self;
}

void
he_metrics_free (HeMetrics *self)
{
  if (self == NULL)
    return;
  g_mutex_clear (&self->lock);
  g_free (self);
}

void
he_metrics_observe (HeMetrics *self, HeStage stage, double seconds)
{
  Histogram *h = &self->stages[stage];
  guint i = 0;

  while (i < N_BUCKETS && seconds > bucket_bounds[i])
    i++;
  g_mutex_lock (&self->lock);
  h->counts[i]++;
  h->n++;
  h->sum += seconds;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_count_request (HeMetrics *self)
{
  g_mutex_lock (&self->lock);
  self->requests++;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_count_error (HeMetrics *self, guint code)
{
  g_mutex_lock (&self->lock);
  self->errors[code <= TS_HELORA_ERROR_LAST ? code : TS_HELORA_ERROR_INTERNAL]++;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_count_bytes (HeMetrics *self, guint64 received, guint64 sent)
{
  g_mutex_lock (&self->lock);
  self->bytes_received += received;
  self->bytes_sent += sent;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_count_unread_close (HeMetrics *self)
{
  g_mutex_lock (&self->lock);
  self->unread_closes++;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_clients_changed (HeMetrics *self, int delta)
{
  g_mutex_lock (&self->lock);
  self->clients += delta;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_count_swap (HeMetrics *self)
{
  g_mutex_lock (&self->lock);
  self->swaps++;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_count_pads (HeMetrics *self, guint64 refill_made, double refill_seconds,
                       guint64 from_pool, guint64 made_inline)
{
  g_mutex_lock (&self->lock);
  self->pads_refill += refill_made;
  self->pads_refill_seconds += refill_seconds;
  self->pads_from_pool += from_pool;
  self->pads_inline += made_inline;
  g_mutex_unlock (&self->lock);
}

void
he_metrics_add_source (HeMetrics *self, HeMetricsSource source, gpointer data)
{
  g_mutex_lock (&self->lock);
  self->source = source;
  self->source_data = data;
  g_mutex_unlock (&self->lock);
}

int
he_metrics_clients (HeMetrics *self)
{
  int n;

  g_mutex_lock (&self->lock);
  n = self->clients;
  g_mutex_unlock (&self->lock);
  return n;
}

static void
render_histograms (HeMetrics *self, GString *out)
{
  g_string_append (out,
                   "# HELP tensafe_he_stage_seconds Server time per evaluate request by stage.\n"
                   "# TYPE tensafe_he_stage_seconds histogram\n");
  for (guint s = 0; s < HE_N_STAGES; s++)
    {
      const Histogram *h = &self->stages[s];
      guint64 cumulative = 0;

      for (guint b = 0; b < N_BUCKETS; b++)
        {
          char le[32];
          cumulative += h->counts[b];
          g_ascii_formatd (le, sizeof le, "%g", bucket_bounds[b]);
          g_string_append_printf (out,
                                  "tensafe_he_stage_seconds_bucket{stage=\"%s\",le=\"%s\"} %"
                                  G_GUINT64_FORMAT "\n", stage_names[s], le, cumulative);
        }
      g_string_append_printf (out,
                              "tensafe_he_stage_seconds_bucket{stage=\"%s\",le=\"+Inf\"} %"
                              G_GUINT64_FORMAT "\n", stage_names[s], h->n);
      g_string_append_printf (out, "tensafe_he_stage_seconds_sum{stage=\"%s\"} %.9f\n",
                              stage_names[s], h->sum);
      g_string_append_printf (out, "tensafe_he_stage_seconds_count{stage=\"%s\"} %"
                              G_GUINT64_FORMAT "\n", stage_names[s], h->n);
    }
}

static void
render_counters (HeMetrics *self, GString *out)
{
  g_string_append_printf (out,
                          "# HELP tensafe_he_requests_total Evaluate requests received.\n"
                          "# TYPE tensafe_he_requests_total counter\n"
                          "tensafe_he_requests_total %" G_GUINT64_FORMAT "\n",
                          self->requests);
  g_string_append (out, "# HELP tensafe_he_errors_total Error frames sent, by code.\n"
                        "# TYPE tensafe_he_errors_total counter\n");
  for (guint c = 1; c <= TS_HELORA_ERROR_LAST; c++)
    g_string_append_printf (out, "tensafe_he_errors_total{code=\"%s\"} %" G_GUINT64_FORMAT "\n",
                            ts_helora_error_name (c), self->errors[c]);
  g_string_append_printf (out,
                          "# HELP tensafe_he_bytes_received_total Bytes of frames received.\n"
                          "# TYPE tensafe_he_bytes_received_total counter\n"
                          "tensafe_he_bytes_received_total %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_bytes_sent_total Bytes of frames sent.\n"
                          "# TYPE tensafe_he_bytes_sent_total counter\n"
                          "tensafe_he_bytes_sent_total %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_connected_clients Open evaluator connections.\n"
                          "# TYPE tensafe_he_connected_clients gauge\n"
                          "tensafe_he_connected_clients %d\n"
                          "# HELP tensafe_he_adapter_swaps_total Adapter loads, replacements and unloads.\n"
                          "# TYPE tensafe_he_adapter_swaps_total counter\n"
                          "tensafe_he_adapter_swaps_total %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_unread_closes_total Clients closed for leaving their answers unread.\n"
                          "# TYPE tensafe_he_unread_closes_total counter\n"
                          "tensafe_he_unread_closes_total %" G_GUINT64_FORMAT "\n",
                          self->bytes_received, self->bytes_sent, self->clients, self->swaps,
                          self->unread_closes);
}

static void
render_pads (HeMetrics *self, GString *out)
{
  double rate = self->pads_refill_seconds > 0.0
                ? (double) self->pads_refill / self->pads_refill_seconds : 0.0;
  g_string_append_printf (out,
                          "# HELP tensafe_he_pads_made_total Privacy pads made, by the refill "
                          "thread or inline by an answer whose pool was empty.\n"
                          "# TYPE tensafe_he_pads_made_total counter\n"
                          "tensafe_he_pads_made_total{by=\"refill\"} %" G_GUINT64_FORMAT "\n"
                          "tensafe_he_pads_made_total{by=\"inline\"} %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_pads_from_pool_total Pads answers took from a pool.\n"
                          "# TYPE tensafe_he_pads_from_pool_total counter\n"
                          "tensafe_he_pads_from_pool_total %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_pad_refill_seconds_total CPU time the refill thread "
                          "spent making pads.\n"
                          "# TYPE tensafe_he_pad_refill_seconds_total counter\n"
                          "tensafe_he_pad_refill_seconds_total %.6f\n"
                          "# HELP tensafe_he_pads_per_second Pads the refill thread makes per "
                          "second of its CPU time.\n"
                          "# TYPE tensafe_he_pads_per_second gauge\n"
                          "tensafe_he_pads_per_second %.1f\n",
                          self->pads_refill, self->pads_inline, self->pads_from_pool,
                          self->pads_refill_seconds, rate);
}

char *
he_metrics_render (HeMetrics *self)
{
  GString *out = g_string_new (NULL);

  g_mutex_lock (&self->lock);
  render_histograms (self, out);
  render_counters (self, out);
  render_pads (self, out);
  HeMetricsSource source = self->source;
  gpointer source_data = self->source_data;
  g_mutex_unlock (&self->lock);
  if (source != NULL)        /* it takes its own locks: not under ours */
    source (out, source_data);
  return g_string_free (out, FALSE);
}

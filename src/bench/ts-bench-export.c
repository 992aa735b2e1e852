/* ts-bench-export.c: benchmark results as CSV and JSON, for the app's export and the CLI.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/utsname.h>

#include "ts-bench-export.h"
#include "ts-core.h"
#include "ts-json-builder.h"

const char *
ts_bench_result_mode_name (const TsBenchResult *r)
{
  g_return_val_if_fail (r != NULL, NULL);

  switch (r->mode)
    {
    case TS_HELORA_MODE_LOCAL:
      return "local";
    case TS_HELORA_MODE_REMOTE:
      if (r->private_warm)
        return "remote-private-warm";
      return r->private_mode ? "remote-private" : "remote";
    case TS_HELORA_MODE_PLAIN:
    default:
      return "plain";
    }
}

guint64
ts_bench_result_per_token (const TsBenchResult *r, guint64 total)
{
  g_return_val_if_fail (r != NULL, 0);

  return total / MAX (r->n_tokens, 1);
}

double
ts_bench_result_encryptions_per_token (const TsBenchResult *r)
{
  g_return_val_if_fail (r != NULL, 0.0);

  return (double) r->encryptions / MAX (r->n_tokens, 1);
}

static void
append_double (GString *out, const char *format, double value)
{
  char num[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append_printf (out, ",%s", g_ascii_formatd (num, sizeof num, format, value));
}

char *
ts_bench_results_to_csv (GPtrArray *results)
{
  g_return_val_if_fail (results != NULL, NULL);

  GString *out = g_string_new ("configuration,mode,preset,rank,tokens,decode_tok_s,he_ms_per_module");

  for (int s = 0; s < TS_N_STAGES; s++)
    g_string_append_printf (out, ",%s_ms", ts_stage_name ((TsStage) s));
  g_string_append (out, ",bytes_up,bytes_down,modules,distinct_inputs,encryptions_per_token,"
                        "max_abs_delta_error\n");
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      g_string_append_printf (out, "\"%s\",%s,%s,%u,%u", r->label, ts_bench_result_mode_name (r),
                              r->preset ? r->preset : "", r->rank, r->n_tokens);
      append_double (out, "%.3f", r->tokens_per_s);
      append_double (out, "%.4f", r->he_ms_per_module);
      for (int s = 0; s < TS_N_STAGES; s++)
        append_double (out, "%.4f", ts_timing_series_median_ms (r->series, (TsStage) s));
      g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%u,%u",
                              ts_bench_result_per_token (r, r->bytes_up),
                              ts_bench_result_per_token (r, r->bytes_down),
                              r->n_modules, r->n_inputs);
      append_double (out, "%.3f", ts_bench_result_encryptions_per_token (r));
      append_double (out, "%.3e", r->max_abs_delta_error);
      g_string_append_c (out, '\n');
    }
  return g_string_free (out, FALSE);
}

/* "pads": the evaluator's pads over the decode steps (private rows whose
 * server's /metrics was read), else null. */
static void
build_pads (JsonBuilder *b, const TsBenchResult *r)
{
  json_builder_set_member_name (b, "pads");
  if (!r->pads_known)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  ts_json_builder_add_int (b, "from_pool", (gint64) r->pads_from_pool);
  ts_json_builder_add_int (b, "made_inline", (gint64) r->pads_inline);
  ts_json_builder_add_int (b, "ready_at_start", (gint64) r->pads_ready);
  ts_json_builder_add_int (b, "refilled_during", (gint64) r->pads_refilled);
  ts_json_builder_add_double (b, "per_module", r->pads_per_module);
  ts_json_builder_add_double (b, "refill_ms_per_pad", r->pad_ms);
  ts_json_builder_add_double (b, "cpu_ms_per_module", r->pads_per_module * r->pad_ms);
  ts_json_builder_add_double (b, "wait_ms", r->pad_wait_ms);
  json_builder_end_object (b);
}

static void
build_result (JsonBuilder *b, const TsBenchResult *r)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "label");
  json_builder_add_string_value (b, r->label);
  json_builder_set_member_name (b, "mode");
  json_builder_add_string_value (b, ts_bench_result_mode_name (r));
  json_builder_set_member_name (b, "preset");
  if (r->preset != NULL)
    json_builder_add_string_value (b, r->preset);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "stacked");
  json_builder_add_boolean_value (b, r->stacked);
  ts_json_builder_add_int (b, "rank", r->rank);
  ts_json_builder_add_int (b, "tokens", r->n_tokens);
  ts_json_builder_add_double (b, "decode_tok_s", r->tokens_per_s);
  ts_json_builder_add_double (b, "he_ms_per_module", r->he_ms_per_module);
  ts_timing_series_build_medians (r->series, b);
  ts_json_builder_add_int (b, "bytes_up", (gint64) ts_bench_result_per_token (r, r->bytes_up));
  ts_json_builder_add_int (b, "bytes_down", (gint64) ts_bench_result_per_token (r, r->bytes_down));
  ts_json_builder_add_int (b, "modules", r->n_modules);
  ts_json_builder_add_int (b, "distinct_inputs", r->n_inputs);
  ts_json_builder_add_double (b, "encryptions_per_token", ts_bench_result_encryptions_per_token (r));
  ts_json_builder_add_double (b, "max_abs_delta_error", r->max_abs_delta_error);
  ts_json_builder_add_int (b, "round", r->round);
  build_pads (b, r);
  json_builder_end_object (b);
}

char *
ts_bench_results_to_json (GPtrArray *results)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;

  g_return_val_if_fail (results != NULL, NULL);

  json_builder_begin_array (b);
  for (guint i = 0; i < results->len; i++)
    build_result (b, g_ptr_array_index (results, i));
  json_builder_end_array (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  return json_generator_to_data (gen, NULL);
}

/* The CPU's model name from /proc/cpuinfo, or NULL. */
static char *
cpu_name (void)
{
  g_autofree char *text = NULL;
  const char *line, *colon, *end;

  if (!g_file_get_contents ("/proc/cpuinfo", &text, NULL, NULL)
      || (line = strstr (text, "model name")) == NULL || (colon = strchr (line, ':')) == NULL)
    return NULL;
  end = strchr (colon, '\n');
  return g_strstrip (g_strndup (colon + 1, end != NULL ? (gsize) (end - colon - 1) : strlen (colon + 1)));
}

/* MemTotal in bytes, or -1. */
static gint64
memory_bytes (void)
{
  g_autofree char *text = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/meminfo", &text, NULL, NULL)
      || (line = strstr (text, "MemTotal:")) == NULL)
    return -1;
  return g_ascii_strtoll (line + strlen ("MemTotal:"), NULL, 10) * 1024;
}

static void
add_machine (JsonBuilder *b)
{
  g_autofree char *cpu = cpu_name ();
  struct utsname u;
  g_autofree char *os = uname (&u) == 0 ? g_strdup_printf ("%s %s %s", u.sysname, u.release,
                                                           u.machine) : NULL;

  json_builder_set_member_name (b, "machine");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "cpu");
  json_builder_add_string_value (b, cpu);
  json_builder_set_member_name (b, "cores");
  json_builder_add_int_value (b, g_get_num_processors ());
  json_builder_set_member_name (b, "memory_bytes");
  json_builder_add_int_value (b, memory_bytes ());
  json_builder_set_member_name (b, "os");
  json_builder_add_string_value (b, os);
  json_builder_end_object (b);
}

static void
add_file_name (JsonBuilder *b, const char *member, const char *path)
{
  g_autofree char *name = path != NULL && *path != '\0' ? g_path_get_basename (path) : NULL;

  json_builder_set_member_name (b, member);
  if (name != NULL)
    json_builder_add_string_value (b, name);
  else
    json_builder_add_null_value (b);
}

char *
ts_bench_results_to_json_document (GPtrArray *results, const char *model_path,
                                   const char *adapter_path)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
  g_autofree char *date = g_date_time_format_iso8601 (now);

  g_return_val_if_fail (results != NULL, NULL);

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "tensafe_version");
  json_builder_add_string_value (b, ts_version ());
  json_builder_set_member_name (b, "date");
  json_builder_add_string_value (b, date);
  add_machine (b);
  add_file_name (b, "model", model_path);
  add_file_name (b, "adapter", adapter_path);
  json_builder_set_member_name (b, "results");
  json_builder_begin_array (b);
  for (guint i = 0; i < results->len; i++)
    build_result (b, g_ptr_array_index (results, i));
  json_builder_end_array (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  return json_generator_to_data (gen, NULL);
}

/* cli-bench-he-seal.c: runs tools/seal-bench's program and reads its result.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "cli-bench-he-seal.h"

static gboolean
read_total (JsonObject *obj, const char *member, double *out)
{
  JsonNode *stages = json_object_get_member (obj, member);
  JsonNode *total;

  if (stages == NULL || !JSON_NODE_HOLDS_OBJECT (stages))
    return FALSE;
  total = json_object_get_member (json_node_get_object (stages), "total");
  if (total == NULL || json_node_get_value_type (total) != G_TYPE_DOUBLE)
    return FALSE;
  *out = json_node_get_double (total);
  return isfinite (*out) && *out > 0;
}

/* The one JSON object the program prints, checked against what was asked. */
static gboolean
parse_result (const char *text, size_t ring_degree, gboolean pk, CliSealResult *out)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *obj;
  JsonNode *error;

  if (!json_parser_load_from_data (parser, text, -1, NULL)
      || json_parser_get_root (parser) == NULL
      || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    return FALSE;
  obj = json_node_get_object (json_parser_get_root (parser));
  if (json_object_get_int_member_with_default (obj, "ring_degree", 0) != (gint64) ring_degree
      || g_strcmp0 (json_object_get_string_member_with_default (obj, "encrypt", ""),
                    pk ? "pk" : "sk") != 0)
    return FALSE;
  error = json_object_get_member (obj, "max_abs_error");
  if (!read_total (obj, "median_ms", &out->median_ms) || !read_total (obj, "min_ms", &out->min_ms)
      || error == NULL || json_node_get_value_type (error) != G_TYPE_DOUBLE)
    return FALSE;
  out->max_abs_error = json_node_get_double (error);
  out->library = g_strdup (json_object_get_string_member_with_default (obj, "library", "SEAL"));
  out->hexl = json_object_get_boolean_member_with_default (obj, "hexl", FALSE);
  return TRUE;
}

gboolean
cli_seal_bench_run (const char *program, size_t ring_degree, gboolean pk, int runs,
                    gboolean thread_clock, CliSealResult *out, GError **error)
{
  g_autofree char *n = g_strdup_printf ("%zu", ring_degree);
  g_autofree char *r = g_strdup_printf ("%d", runs);
  const char *argv[] = { program, "--ring-degree", n, "--encrypt", pk ? "pk" : "sk",
                         "--runs", r, "--clock", thread_clock ? "thread" : "wall", NULL };
  g_autofree char *out_text = NULL, *err_text = NULL;
  g_autoptr (GError) failure = NULL;
  int status = 0;

  memset (out, 0, sizeof *out);
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out_text,
                     &err_text, &status, error))
    {
      g_prefix_error (error, "--seal %s: ", program);
      return FALSE;
    }
  if (!g_spawn_check_wait_status (status, &failure))
    {
      g_strstrip (err_text);
      g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "--seal %s failed at N = %zu: %s",
                   program, ring_degree, *err_text != '\0' ? err_text : failure->message);
      return FALSE;
    }
  if (!parse_result (out_text, ring_degree, pk, out))
    {
      g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                   "--seal %s printed no result for N = %zu, %s (is it tools/seal-bench's "
                   "helora-seal-bench?)", program, ring_degree, pk ? "pk" : "sk");
      return FALSE;
    }
  return TRUE;
}

void
cli_seal_result_clear (CliSealResult *result)
{
  g_clear_pointer (&result->library, g_free);
}

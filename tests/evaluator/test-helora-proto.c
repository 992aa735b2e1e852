/* test-helora-proto.c: evaluator protocol frames round-trip and bad input is refused.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ts-helora-proto.h"
#include "ts-test-util.h"

#define MAX_FRAME (1u << 20)

static GBytes *
random_blob (GRand *rng, gsize len)
{
  guint8 *data = g_malloc (len);

  for (gsize i = 0; i < len; i++)
    data[i] = (guint8) g_rand_int (rng);
  return g_bytes_new_take (data, len);
}

static TsHeloraFrame *
make_hello (void)
{
  TsHeloraFrame *f = ts_helora_frame_new (TS_HELORA_FRAME_HELLO, 7);

  f->u.hello.params_id = g_strdup ("default");
  memset (f->u.hello.params_sha256, 0xab, TS_HELORA_HASH_SIZE);
  f->u.hello.adapter_id = g_strdup ("tiny-lora");
  for (int i = 0; i < TS_HELORA_HASH_SIZE; i++)
    f->u.hello.adapter_sha256[i] = (guint8) i;
  g_ptr_array_add (f->u.hello.modules, g_strdup ("blk.3.attn_output"));
  g_ptr_array_add (f->u.hello.modules, g_strdup ("blk.0.ssm_out"));
  return f;
}

static TsHeloraFrame *
make_ack (void)
{
  TsHeloraFrame *f = ts_helora_frame_new (TS_HELORA_FRAME_HELLO_ACK, 7);
  TsHeloraModuleShape s1 = { 2048, 32, 8 }, s2 = { 128, 8, 1 };

  f->u.ack.max_frame_bytes = 64u << 20;
  f->u.ack.max_in_flight = 8;
  f->u.ack.idle_timeout_ms = 120000;
  g_array_append_val (f->u.ack.modules, s1);
  g_array_append_val (f->u.ack.modules, s2);
  return f;
}

static TsHeloraFrame *
make_evaluate (GRand *rng)
{
  TsHeloraFrame *f = ts_helora_frame_new (TS_HELORA_FRAME_EVALUATE, G_MAXUINT64 - 3);
  guint16 m[] = { 0, 1 };

  f->u.evaluate.token_index = 31;
  g_array_append_vals (f->u.evaluate.modules, m, 2);
  g_ptr_array_add (f->u.evaluate.ciphertexts, random_blob (rng, 300));
  g_ptr_array_add (f->u.evaluate.ciphertexts, random_blob (rng, 5));
  return f;
}

static TsHeloraFrame *
make_result (GRand *rng)
{
  TsHeloraFrame *f = ts_helora_frame_new (TS_HELORA_FRAME_RESULT, 99);
  TsHeloraModuleResult *mr;

  f->u.result.token_index = 4;
  mr = ts_helora_result_add_module (f, 1);
  g_ptr_array_add (mr->blobs, random_blob (rng, 17));
  mr = ts_helora_result_add_module (f, 0);
  for (int i = 0; i < 3; i++)
    g_ptr_array_add (mr->blobs, random_blob (rng, 40 + i));
  return f;
}

static void
assert_blobs_equal (GPtrArray *a, GPtrArray *b)
{
  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    g_assert_true (g_bytes_equal (g_ptr_array_index (a, i), g_ptr_array_index (b, i)));
}

static void
assert_hello_equal (const TsHeloraHello *a, const TsHeloraHello *b)
{
  g_assert_cmpstr (a->params_id, ==, b->params_id);
  g_assert_cmpmem (a->params_sha256, 32, b->params_sha256, 32);
  g_assert_cmpstr (a->adapter_id, ==, b->adapter_id);
  g_assert_cmpmem (a->adapter_sha256, 32, b->adapter_sha256, 32);
  g_assert_cmpuint (a->modules->len, ==, b->modules->len);
  for (guint i = 0; i < a->modules->len; i++)
    g_assert_cmpstr (g_ptr_array_index (a->modules, i), ==, g_ptr_array_index (b->modules, i));
  g_assert_cmpint (a->private_mode, ==, b->private_mode);
  g_assert_cmpint (a->dp, ==, b->dp);
  g_assert_cmpint (a->split_scales, ==, b->split_scales);
  g_assert_cmpuint (a->lambda_s, ==, b->lambda_s);
  g_assert_cmpfloat (a->rho_per_answer, ==, b->rho_per_answer);
  g_assert_true (a->public_key == b->public_key
                 || (a->public_key && b->public_key && g_bytes_equal (a->public_key, b->public_key)));
  g_assert_cmpuint (a->stack->len, ==, b->stack->len);
  for (guint i = 0; i < a->stack->len; i++)
    {
      const TsHeloraStackMember *x = &g_array_index (a->stack, TsHeloraStackMember, i);
      const TsHeloraStackMember *y = &g_array_index (b->stack, TsHeloraStackMember, i);
      g_assert_cmpstr (x->id, ==, y->id);
      g_assert_cmpmem (x->sha256, 32, y->sha256, 32);
      g_assert_cmpfloat (x->weight, ==, y->weight);
    }
}

/* A hello naming a stack of @n adapters "a0", "a1", … with weights 0.5 k − 1. */
static TsHeloraFrame *
make_stack_hello (guint n)
{
  TsHeloraFrame *f = make_hello ();

  for (guint k = 0; k < n; k++)
    {
      g_autofree char *id = g_strdup_printf ("a%u", k);
      guint8 sha[TS_HELORA_HASH_SIZE];
      memset (sha, 0x10 + (int) k, sizeof sha);
      ts_helora_hello_add_stacked (&f->u.hello, id, sha, 0.5f * (float) k - 1.0f);
    }
  return f;
}

/* A hello with the adapter-private request (flag in the header). */
static TsHeloraFrame *
make_private_hello (GRand *rng)
{
  TsHeloraFrame *f = make_hello ();
  guint8 key[300];
  for (gsize i = 0; i < sizeof key; i++)
    key[i] = (guint8) g_rand_int (rng);
  f->u.hello.private_mode = TRUE;
  f->u.hello.lambda_s = 40;
  f->u.hello.split_scales = TRUE;
  f->u.hello.dp = TRUE;
  f->u.hello.rho_per_answer = 0.125;
  f->u.hello.public_key = g_bytes_new (key, sizeof key);
  return f;
}

/* What a server with a budget answers after some private answers. */
static TsHeloraFrame *
make_privacy_status (void)
{
  TsHeloraFrame *f = ts_helora_frame_new (TS_HELORA_FRAME_PRIVACY_STATUS, 12);

  f->u.privacy.flags = TS_HELORA_PRIVACY_BUDGET;
  f->u.privacy.rho_spent = 0.0625;
  f->u.privacy.epsilon_spent = 1.5;
  f->u.privacy.epsilon_budget = 8.0;
  f->u.privacy.delta = 1e-6;
  return f;
}

static void
assert_ack_equal (const TsHeloraHelloAck *a, const TsHeloraHelloAck *b)
{
  g_assert_cmpuint (a->max_frame_bytes, ==, b->max_frame_bytes);
  g_assert_cmpuint (a->max_in_flight, ==, b->max_in_flight);
  g_assert_cmpuint (a->idle_timeout_ms, ==, b->idle_timeout_ms);
  g_assert_cmpuint (a->modules->len, ==, b->modules->len);
  for (guint i = 0; i < a->modules->len; i++)
    {
      TsHeloraModuleShape *x = &g_array_index (a->modules, TsHeloraModuleShape, i);
      TsHeloraModuleShape *y = &g_array_index (b->modules, TsHeloraModuleShape, i);
      g_assert_cmpuint (x->d_in, ==, y->d_in);
      g_assert_cmpuint (x->rank, ==, y->rank);
      g_assert_cmpuint (x->n_results, ==, y->n_results);
    }
}

static void
assert_result_equal (const TsHeloraResult *a, const TsHeloraResult *b)
{
  g_assert_cmpuint (a->token_index, ==, b->token_index);
  g_assert_cmpuint (a->modules->len, ==, b->modules->len);
  for (guint i = 0; i < a->modules->len; i++)
    {
      TsHeloraModuleResult *x = &g_array_index (a->modules, TsHeloraModuleResult, i);
      TsHeloraModuleResult *y = &g_array_index (b->modules, TsHeloraModuleResult, i);
      g_assert_cmpuint (x->module, ==, y->module);
      assert_blobs_equal (x->blobs, y->blobs);
    }
}

static void
assert_frames_equal (const TsHeloraFrame *a, const TsHeloraFrame *b)
{
  g_assert_cmpint (a->type, ==, b->type);
  g_assert_cmpuint (a->request_id, ==, b->request_id);
  switch (a->type)
    {
    case TS_HELORA_FRAME_HELLO:
      assert_hello_equal (&a->u.hello, &b->u.hello);
      break;
    case TS_HELORA_FRAME_HELLO_ACK:
      assert_ack_equal (&a->u.ack, &b->u.ack);
      break;
    case TS_HELORA_FRAME_EVALUATE:
      g_assert_cmpuint (a->u.evaluate.token_index, ==, b->u.evaluate.token_index);
      g_assert_cmpmem (a->u.evaluate.modules->data, a->u.evaluate.modules->len * 2,
                       b->u.evaluate.modules->data, b->u.evaluate.modules->len * 2);
      assert_blobs_equal (a->u.evaluate.ciphertexts, b->u.evaluate.ciphertexts);
      break;
    case TS_HELORA_FRAME_RESULT:
      assert_result_equal (&a->u.result, &b->u.result);
      break;
    case TS_HELORA_FRAME_PRIVACY_QUERY:
      break;
    case TS_HELORA_FRAME_PRIVACY_STATUS:
      g_assert_cmpuint (a->u.privacy.flags, ==, b->u.privacy.flags);
      g_assert_cmpfloat (a->u.privacy.rho_spent, ==, b->u.privacy.rho_spent);
      g_assert_cmpfloat (a->u.privacy.epsilon_spent, ==, b->u.privacy.epsilon_spent);
      g_assert_cmpfloat (a->u.privacy.epsilon_budget, ==, b->u.privacy.epsilon_budget);
      g_assert_cmpfloat (a->u.privacy.delta, ==, b->u.privacy.delta);
      break;
    default:
      g_assert_cmpuint (a->u.status.code, ==, b->u.status.code);
      g_assert_cmpstr (a->u.status.text, ==, b->u.status.text);
      break;
    }
}

/* One frame of every type, freshly built. */
static GPtrArray *
all_frames (GRand *rng)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_helora_frame_free);

  g_ptr_array_add (frames, make_hello ());
  g_ptr_array_add (frames, make_private_hello (rng));
  g_ptr_array_add (frames, make_stack_hello (3));
  {
    TsHeloraFrame *both = make_private_hello (rng);     /* stack and private request */
    guint8 sha[TS_HELORA_HASH_SIZE] = { 9 };
    ts_helora_hello_add_stacked (&both->u.hello, "first", sha, 1.0f);
    ts_helora_hello_add_stacked (&both->u.hello, "second", sha, 0.25f);
    g_ptr_array_add (frames, both);
  }
  g_ptr_array_add (frames, make_ack ());
  g_ptr_array_add (frames, make_evaluate (rng));
  g_ptr_array_add (frames, make_result (rng));
  g_ptr_array_add (frames, ts_helora_frame_new_status (TS_HELORA_FRAME_ERROR, 3,
                                                       TS_HELORA_ERROR_PARAMS, "wrong «params»"));
  g_ptr_array_add (frames, ts_helora_frame_new_status (TS_HELORA_FRAME_CLOSE, 0, 0, ""));
  g_ptr_array_add (frames, make_privacy_status ());
  return frames;
}

static GBytes *
encode_ok (const TsHeloraFrame *frame)
{
  g_autoptr (GError) error = NULL;
  GBytes *bytes = ts_helora_frame_encode (frame, &error);

  g_assert_no_error (error);
  g_assert_nonnull (bytes);
  return bytes;
}

static void
assert_rejected (GBytes *msg, gsize max_frame, int code)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_decode (msg, max_frame, &error);

  g_assert_null (frame);
  g_assert_error (error, TS_HELORA_ERROR, code);
}

static void
test_round_trip (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (GPtrArray) frames = all_frames (rng);

  for (guint i = 0; i < frames->len; i++)
    {
      TsHeloraFrame *frame = g_ptr_array_index (frames, i);
      g_autoptr (GBytes) bytes = encode_ok (frame);
      g_autoptr (GError) error = NULL;
      g_autoptr (TsHeloraFrame) back = ts_helora_frame_decode (bytes, MAX_FRAME, &error);

      g_assert_no_error (error);
      assert_frames_equal (frame, back);
      g_assert_cmpuint (ts_helora_peek_request_id (bytes), ==, frame->request_id);
    }
}

static GBytes *
patch (GBytes *bytes, gsize offset, guint8 value)
{
  gsize len;
  guint8 *copy = g_bytes_unref_to_data (g_bytes_ref (bytes), &len);

  g_assert_cmpuint (offset, <, len);
  copy[offset] = value;
  return g_bytes_new_take (copy, len);
}

/* Every prefix of every frame is refused as truncated, both as it is and with
 * the header's payload length rewritten to match the shorter message. */
static void
test_truncations (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (GPtrArray) frames = all_frames (rng);

  for (guint i = 0; i < frames->len; i++)
    {
      g_autoptr (GBytes) bytes = encode_ok (g_ptr_array_index (frames, i));
      gsize len = g_bytes_get_size (bytes);

      for (gsize cut = 0; cut < len; cut++)
        {
          g_autoptr (GBytes) prefix = g_bytes_new_from_bytes (bytes, 0, cut);
          assert_rejected (prefix, MAX_FRAME, TS_HELORA_ERROR_TRUNCATED);
          if (cut >= TS_HELORA_HEADER_SIZE)
            {
              guint32 pl = (guint32) (cut - TS_HELORA_HEADER_SIZE);
              g_autoptr (GBytes) a = patch (prefix, 16, pl & 0xff);
              g_autoptr (GBytes) b = patch (a, 17, (pl >> 8) & 0xff);
              g_autoptr (GBytes) c = patch (b, 18, (pl >> 16) & 0xff);
              assert_rejected (c, MAX_FRAME, TS_HELORA_ERROR_TRUNCATED);
            }
        }
    }
}

static void
test_header_errors (void)
{
  g_autoptr (TsHeloraFrame) frame = make_hello ();
  g_autoptr (GBytes) bytes = encode_ok (frame);
  g_autoptr (GBytes) bad_magic = patch (bytes, 0, 'X');
  g_autoptr (GBytes) v2 = patch (bytes, 4, 2);
  g_autoptr (GBytes) type0 = patch (bytes, 5, 0);
  g_autoptr (GBytes) type9 = patch (bytes, 5, 9);
  g_autoptr (GBytes) flags = patch (bytes, 7, 1);
  g_autoptr (GBytes) huge_len = patch (bytes, 19, 0x7f);
  g_autoptr (GByteArray) longer = g_byte_array_new ();
  g_autoptr (GBytes) trailing = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) none = NULL;

  assert_rejected (bad_magic, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  assert_rejected (v2, MAX_FRAME, TS_HELORA_ERROR_VERSION);
  assert_rejected (type0, MAX_FRAME, TS_HELORA_ERROR_UNKNOWN_TYPE);
  assert_rejected (type9, MAX_FRAME, TS_HELORA_ERROR_UNKNOWN_TYPE);
  assert_rejected (flags, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  assert_rejected (huge_len, MAX_FRAME, TS_HELORA_ERROR_TOO_LARGE);
  /* The whole message over the limit, and just at it. */
  assert_rejected (bytes, g_bytes_get_size (bytes) - 1, TS_HELORA_ERROR_TOO_LARGE);
  none = ts_helora_frame_decode (bytes, g_bytes_get_size (bytes), &error);
  g_assert_no_error (error);
  g_assert_nonnull (none);

  g_byte_array_append (longer, g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  g_byte_array_append (longer, (const guint8 *) "x", 1);
  trailing = g_byte_array_free_to_bytes (g_steal_pointer (&longer));
  assert_rejected (trailing, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
}

/* Length and count fields inside payloads that claim too much. */
static void
test_oversized_fields (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (1);
  g_autoptr (TsHeloraFrame) eval = make_evaluate (rng);
  g_autoptr (GBytes) bytes = encode_ok (eval);
  /* Evaluate payload: token u32 @20, count u16 @24, 2 indices @26, ct count @30,
   * first blob length @32. */
  g_autoptr (GBytes) blob_len = patch (bytes, 35, 0xff);
  g_autoptr (GBytes) mod_count = patch (bytes, 25, 0xff);
  g_autoptr (GBytes) zero_count = patch (bytes, 24, 0);
  g_autoptr (GBytes) ct_count = patch (bytes, 30, 65);
  g_autoptr (TsHeloraFrame) hello = make_hello ();
  g_autoptr (GBytes) hb = encode_ok (hello);
  /* Hello payload starts with the params id length u16 @20. */
  g_autoptr (GBytes) str_len = patch (hb, 20, 65);
  g_autoptr (GBytes) bad_utf8 = patch (hb, 22, 0xff);

  assert_rejected (blob_len, MAX_FRAME, TS_HELORA_ERROR_TRUNCATED);
  assert_rejected (mod_count, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  assert_rejected (zero_count, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  assert_rejected (ct_count, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  assert_rejected (str_len, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  assert_rejected (bad_utf8, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
}

/* The encoder refuses what the decoder would refuse. */
static void
test_encode_limits (void)
{
  g_autoptr (TsHeloraFrame) hello = make_hello ();
  g_autoptr (TsHeloraFrame) eval = ts_helora_frame_new (TS_HELORA_FRAME_EVALUATE, 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = NULL;

  g_free (hello->u.hello.adapter_id);
  hello->u.hello.adapter_id = g_strnfill (TS_HELORA_MAX_NAME + 1, 'a');
  bytes = ts_helora_frame_encode (hello, &error);
  g_assert_null (bytes);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_clear_error (&error);

  /* No modules and no ciphertext. */
  bytes = ts_helora_frame_encode (eval, &error);
  g_assert_null (bytes);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
}

static void
test_error_names (void)
{
  g_assert_cmpstr (ts_helora_error_name (TS_HELORA_ERROR_PARAMS), ==, "params");
  g_assert_cmpstr (ts_helora_error_name (TS_HELORA_ERROR_CLOSED), ==, "closed");
  g_assert_cmpstr (ts_helora_error_name (0), ==, "ok");
  g_assert_cmpstr (ts_helora_error_name (999), ==, "unknown");
}

/* The private flag belongs to hellos only; a bad request is malformed. */
static void
test_private_hello (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (7);
  g_autoptr (TsHeloraFrame) hello = make_private_hello (rng);
  g_autoptr (GBytes) bytes = encode_ok (hello);
  gsize len = 0;
  const guint8 *p = g_bytes_get_data (bytes, &len);
  g_assert_cmpuint (p[6], ==, TS_HELORA_FLAG_PRIVATE);
  g_autofree guint8 *copy = g_memdup2 (p, len);
  copy[5] = TS_HELORA_FRAME_CLOSE;     /* the flag on another type */
  g_autoptr (GBytes) other = g_bytes_new (copy, len);
  g_autoptr (GError) error = NULL;
  g_assert_null (ts_helora_frame_decode (other, 1 << 20, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_clear_error (&error);
  hello->u.hello.rho_per_answer = -1.0;      /* DP asked with no cost */
  g_assert_null (ts_helora_frame_encode (hello, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_clear_error (&error);
  memcpy (copy, p, len);
  for (gsize i = 0; i < 8; i++)               /* the same on the wire */
    copy[len - 300 - 4 - 8 + i] = i == 7 ? 0xbf : 0;
  g_autoptr (GBytes) neg = g_bytes_new (copy, len);
  g_assert_null (ts_helora_frame_decode (neg, 1 << 20, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_clear_error (&error);
  /* the private request's flags: DP and split scales known, others refused */
  gsize flags_at = len - 300 - 4 - 8 - 2 - 2;
  g_assert_cmpuint (p[flags_at], ==, TS_HELORA_PRIVACY_DP | TS_HELORA_PRIVACY_SPLIT_SCALES);
  memcpy (copy, p, len);
  copy[flags_at] = TS_HELORA_PRIVACY_DP;          /* an older client: 48/48 */
  g_autoptr (GBytes) old = g_bytes_new (copy, len);
  g_autoptr (TsHeloraFrame) decoded = ts_helora_frame_decode (old, 1 << 20, &error);
  g_assert_no_error (error);
  g_assert_false (decoded->u.hello.split_scales);
  g_assert_true (decoded->u.hello.dp);
  copy[flags_at] = 0x04;
  g_autoptr (GBytes) unknown = g_bytes_new (copy, len);
  g_assert_null (ts_helora_frame_decode (unknown, 1 << 20, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_assert_cmpstr (ts_helora_error_name (TS_HELORA_ERROR_PRIVACY_BUDGET), ==, "privacy-budget");
}

static GBytes *
patch_f64 (GBytes *bytes, gsize offset, double value)
{
  union { double d; guint64 u; } bits = { .d = value };
  g_autoptr (GBytes) out = g_bytes_ref (bytes);

  for (gsize i = 0; i < 8; i++)
    {
      GBytes *next = patch (out, offset + i, (guint8) (bits.u >> (8 * i)));
      g_bytes_unref (out);
      out = next;
    }
  return g_steal_pointer (&out);
}

/* The privacy query has no body; a status carries finite amounts, and the
 * budget's numbers exactly when its flag says the server keeps one. */
static void
test_privacy_frames (void)
{
  g_autoptr (TsHeloraFrame) query = ts_helora_frame_new (TS_HELORA_FRAME_PRIVACY_QUERY, 5);
  g_autoptr (GBytes) qb = encode_ok (query);
  g_autoptr (TsHeloraFrame) status = make_privacy_status ();
  g_autoptr (GBytes) sb = encode_ok (status);
  g_autoptr (GByteArray) longer = g_byte_array_new ();
  g_autoptr (GBytes) query_body = NULL;
  g_autoptr (GError) error = NULL;
  /* Status payload: flags u16 @20, rho @22, epsilon spent @30, budget @38,
   * delta @46; 54 bytes in all. */
  struct { gsize offset; double value; } bad[] = {
    { 22, -0.5 }, { 22, NAN }, { 30, INFINITY }, { 38, 0.0 }, { 46, 1.0 }, { 46, -1e-9 },
  };

  g_assert_cmpuint (g_bytes_get_size (qb), ==, TS_HELORA_HEADER_SIZE);
  g_assert_cmpuint (g_bytes_get_size (sb), ==, TS_HELORA_HEADER_SIZE + 34);
  g_byte_array_append (longer, g_bytes_get_data (qb, NULL), g_bytes_get_size (qb));
  g_byte_array_append (longer, (const guint8 *) "\0", 1);
  longer->data[16] = 1;               /* payload length 1 */
  query_body = g_byte_array_free_to_bytes (g_steal_pointer (&longer));
  assert_rejected (query_body, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GBytes) b = patch_f64 (sb, bad[i].offset, bad[i].value);
      assert_rejected (b, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
    }
  {
    g_autoptr (GBytes) unknown_flag = patch (sb, 20, 0x03);
    g_autoptr (GBytes) no_budget = patch (sb, 20, 0x00);  /* numbers of a budget without its flag */
    g_autoptr (GBytes) header_flag = patch (sb, 6, 0x01);
    assert_rejected (unknown_flag, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
    assert_rejected (no_budget, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
    assert_rejected (header_flag, MAX_FRAME, TS_HELORA_ERROR_MALFORMED);
  }

  /* Without a budget only rho is reported. */
  status->u.privacy = (TsHeloraPrivacyStatus) { .rho_spent = 0.25 };
  {
    g_autoptr (GBytes) plain = encode_ok (status);
    g_autoptr (TsHeloraFrame) back = ts_helora_frame_decode (plain, MAX_FRAME, &error);
    g_assert_no_error (error);
    assert_frames_equal (status, back);
  }
  /* The encoder refuses what the decoder would. */
  status->u.privacy.epsilon_budget = 8.0;
  g_assert_null (ts_helora_frame_encode (status, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_clear_error (&error);
  status->u.privacy = (TsHeloraPrivacyStatus) { TS_HELORA_PRIVACY_BUDGET, NAN, 0, 8.0, 1e-6 };
  g_assert_null (ts_helora_frame_encode (status, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
}

/* Bytes of @frame's encoding, as a new array to patch. */
static GByteArray *
encoded_copy (const TsHeloraFrame *frame)
{
  g_autoptr (GBytes) bytes = encode_ok (frame);
  GByteArray *copy = g_byte_array_new ();

  g_byte_array_append (copy, g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  return copy;
}

static void
assert_array_rejected (GByteArray *message, int code)
{
  g_autoptr (GBytes) bytes = g_bytes_new (message->data, message->len);

  assert_rejected (bytes, MAX_FRAME, code);
}

/* The stack request's layout, its flag, and every malformed variant. */
static void
test_stack_hello (void)
{
  g_autoptr (TsHeloraFrame) single = make_stack_hello (2);
  g_autoptr (TsHeloraFrame) stack = make_stack_hello (2);
  g_autoptr (GByteArray) s = NULL;
  g_autoptr (GByteArray) m = encoded_copy (stack);
  /* after the single hello's payload: size u16, 2 × f32, then "a1" and its hash */
  gsize block, id1;
  union { float f; guint32 u; } bits;

  g_array_set_size (single->u.hello.stack, 0);              /* the same as a plain hello */
  s = encoded_copy (single);
  block = s->len;
  id1 = block + 2 + 8;
  /* An old-style hello is unchanged: no flag, nothing after the modules. */
  g_assert_cmpuint (s->data[6] | s->data[7] << 8, ==, 0);
  g_assert_cmpuint (m->data[6] | m->data[7] << 8, ==, TS_HELORA_FLAG_STACK);
  g_assert_cmpuint (m->len, ==, s->len + 2 + 2 * 4 + 2 + 2 + TS_HELORA_HASH_SIZE);
  g_assert_cmpstr (stack->u.hello.adapter_id, ==, "a0");     /* the first member */
  g_assert_cmpuint (m->data[block] | m->data[block + 1] << 8, ==, 2);
  memcpy (&bits.u, m->data + block + 2, 4);
  bits.u = GUINT32_FROM_LE (bits.u);
  g_assert_cmpfloat (bits.f, ==, -1.0f);
  g_assert_cmpmem (m->data + id1, 4, "\x02\x00" "a1", 4);
  /* the plain hello's fields come first, unchanged */
  g_assert_cmpmem (m->data + TS_HELORA_HEADER_SIZE, block - TS_HELORA_HEADER_SIZE,
                   s->data + TS_HELORA_HEADER_SIZE, block - TS_HELORA_HEADER_SIZE);

  {
    g_autoptr (GByteArray) one = encoded_copy (stack);      /* size 1 */
    g_autoptr (GByteArray) many = encoded_copy (stack);     /* size 17 */
    g_autoptr (GByteArray) nan = encoded_copy (stack);      /* a NaN weight */
    g_autoptr (GByteArray) inf = encoded_copy (stack);      /* an infinite weight */
    g_autoptr (GByteArray) flagged = encoded_copy (single); /* flag, no request */
    g_autoptr (GByteArray) unknown_bit = encoded_copy (stack);
    g_autoptr (GByteArray) on_close = NULL;
    g_autoptr (TsHeloraFrame) close = ts_helora_frame_new_status (TS_HELORA_FRAME_CLOSE, 1, 0, "");
    g_autoptr (GByteArray) bad_id = encoded_copy (stack);
    g_autoptr (GByteArray) long_id = encoded_copy (stack);

    one->data[block] = 1;
    many->data[block] = TS_HELORA_MAX_STACK + 1;
    memcpy (nan->data + block + 6, "\x00\x00\xc0\x7f", 4);
    memcpy (inf->data + block + 2, "\x00\x00\x80\xff", 4);
    flagged->data[6] = TS_HELORA_FLAG_STACK;
    unknown_bit->data[6] |= 0x08;
    on_close = encoded_copy (close);
    on_close->data[6] = TS_HELORA_FLAG_STACK;
    bad_id->data[id1 + 2] = 0xff;                            /* not UTF-8 */
    long_id->data[id1] = TS_HELORA_MAX_NAME + 1;
    assert_array_rejected (one, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (many, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (nan, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (inf, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (flagged, TS_HELORA_ERROR_TRUNCATED);
    assert_array_rejected (unknown_bit, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (on_close, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (bad_id, TS_HELORA_ERROR_MALFORMED);
    assert_array_rejected (long_id, TS_HELORA_ERROR_MALFORMED);
  }
}

/* The complex-packing request: a header flag with no payload, on hellos
 * (with a stack too) and not with the adapter-private request. */
static void
test_complex_hello (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (11);
  g_autoptr (TsHeloraFrame) hello = make_stack_hello (3);
  g_autoptr (TsHeloraFrame) plain = make_stack_hello (3);
  g_autoptr (GError) error = NULL;

  hello->u.hello.complex_packing = TRUE;
  g_autoptr (GBytes) bytes = encode_ok (hello), plain_bytes = encode_ok (plain);
  gsize len = 0, plain_len = 0;
  const guint8 *p = g_bytes_get_data (bytes, &len), *q = g_bytes_get_data (plain_bytes, &plain_len);
  g_assert_cmpuint (p[6], ==, TS_HELORA_FLAG_STACK | TS_HELORA_FLAG_COMPLEX);
  g_assert_cmpuint (len, ==, plain_len);       /* no payload of its own */
  g_assert_cmpmem (p + TS_HELORA_HEADER_SIZE, len - TS_HELORA_HEADER_SIZE,
                   q + TS_HELORA_HEADER_SIZE, plain_len - TS_HELORA_HEADER_SIZE);
  g_autoptr (TsHeloraFrame) back = ts_helora_frame_decode (bytes, 1 << 20, &error);
  g_assert_no_error (error);
  g_assert_true (back->u.hello.complex_packing);
  g_assert_cmpuint (back->u.hello.stack->len, ==, 3);
  g_autoptr (TsHeloraFrame) plain_back = ts_helora_frame_decode (plain_bytes, 1 << 20, &error);
  g_assert_no_error (error);
  g_assert_false (plain_back->u.hello.complex_packing);

  /* the flag on another frame type is malformed */
  g_autofree guint8 *copy = g_memdup2 (p, len);
  copy[5] = TS_HELORA_FRAME_CLOSE;
  g_autoptr (GBytes) other = g_bytes_new (copy, len);
  assert_rejected (other, 1 << 20, TS_HELORA_ERROR_MALFORMED);

  /* with the private request: refused when encoding and on the wire */
  g_autoptr (TsHeloraFrame) private_hello = make_private_hello (rng);
  g_autoptr (GBytes) private_bytes = encode_ok (private_hello);
  private_hello->u.hello.complex_packing = TRUE;
  g_assert_null (ts_helora_frame_encode (private_hello, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
  g_clear_error (&error);
  gsize private_len = 0;
  g_autofree guint8 *both = g_memdup2 (g_bytes_get_data (private_bytes, &private_len),
                                       g_bytes_get_size (private_bytes));
  both[6] |= TS_HELORA_FLAG_COMPLEX;
  g_autoptr (GBytes) both_bytes = g_bytes_new (both, private_len);
  assert_rejected (both_bytes, 1 << 20, TS_HELORA_ERROR_MALFORMED);
}

/* The encoder refuses stacks the decoder would refuse. */
static void
test_stack_encode_limits (void)
{
  g_autoptr (TsHeloraFrame) alone = make_stack_hello (1);
  g_autoptr (TsHeloraFrame) many = make_stack_hello (TS_HELORA_MAX_STACK + 1);
  g_autoptr (TsHeloraFrame) nan = make_stack_hello (2);
  g_autoptr (TsHeloraFrame) other_first = make_stack_hello (2);
  g_autoptr (TsHeloraFrame) most = make_stack_hello (TS_HELORA_MAX_STACK);
  g_autoptr (GBytes) ok = encode_ok (most);
  TsHeloraFrame *bad[] = { alone, many, nan, other_first };

  g_array_index (nan->u.hello.stack, TsHeloraStackMember, 1).weight = NAN;
  g_free (other_first->u.hello.adapter_id);
  other_first->u.hello.adapter_id = g_strdup ("not-a0");
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GBytes) bytes = ts_helora_frame_encode (bad[i], &error);
      g_assert_null (bytes);
      g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED);
    }
}

/* Random corruptions of stacked hellos: each decodes to a frame that
 * encodes to the very same bytes, or fails with a protocol error (the
 * fuzz target's property, on every build). */
static void
test_stack_mutations (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (TsHeloraFrame) stack = make_stack_hello (4);
  g_autoptr (GByteArray) base = encoded_copy (stack);
  guint decoded = 0;

  for (guint round = 0; round < 20000; round++)
    {
      g_autoptr (GByteArray) m = g_byte_array_new ();
      g_autoptr (GError) error = NULL;
      g_autoptr (GBytes) bytes = NULL, again = NULL;
      g_autoptr (TsHeloraFrame) frame = NULL;
      guint flips = g_rand_int_range (rng, 1, 4);

      g_byte_array_append (m, base->data, base->len);
      for (guint k = 0; k < flips; k++)
        m->data[g_rand_int_range (rng, 6, (gint32) m->len)] = (guint8) g_rand_int (rng);
      if (g_rand_boolean (rng))
        g_byte_array_set_size (m, g_rand_int_range (rng, TS_HELORA_HEADER_SIZE, (gint32) m->len));
      bytes = g_bytes_new (m->data, m->len);
      frame = ts_helora_frame_decode (bytes, MAX_FRAME, &error);
      if (frame == NULL)
        {
          g_assert_true (error->domain == TS_HELORA_ERROR);
          continue;
        }
      decoded++;
      again = encode_ok (frame);
      g_assert_true (g_bytes_equal (again, bytes));
      if (frame->type == TS_HELORA_FRAME_HELLO && frame->u.hello.stack->len > 0)
        g_assert_cmpstr (g_array_index (frame->u.hello.stack, TsHeloraStackMember, 0).id, ==,
                         frame->u.hello.adapter_id);
    }
  g_assert_cmpuint (decoded, >, 0);      /* some corruptions keep a valid frame */
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/helora/proto/round-trip", test_round_trip);
  g_test_add_func ("/helora/proto/truncations", test_truncations);
  g_test_add_func ("/helora/proto/header-errors", test_header_errors);
  g_test_add_func ("/helora/proto/oversized-fields", test_oversized_fields);
  g_test_add_func ("/helora/proto/encode-limits", test_encode_limits);
  g_test_add_func ("/helora/proto/error-names", test_error_names);
  g_test_add_func ("/helora/proto/private-hello", test_private_hello);
  g_test_add_func ("/helora/proto/privacy-frames", test_privacy_frames);
  g_test_add_func ("/helora/proto/stack-hello", test_stack_hello);
  g_test_add_func ("/helora/proto/stack-encode-limits", test_stack_encode_limits);
  g_test_add_func ("/helora/proto/stack-mutations", test_stack_mutations);
  g_test_add_func ("/helora/proto/complex-hello", test_complex_hello);
  return g_test_run ();
}

/* ts-helora-proto.c: encoding and strict decoding of evaluator protocol frames.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ts-helora-proto.h"

static const guint8 magic[4] = { 'T', 'S', 'H', 'L' };

G_DEFINE_QUARK (ts-helora-error-quark, ts_helora_error)

static const char *const error_names[] = {
  [TS_HELORA_ERROR_MALFORMED] = "malformed",
  [TS_HELORA_ERROR_TRUNCATED] = "truncated",
  [TS_HELORA_ERROR_TOO_LARGE] = "too-large",
  [TS_HELORA_ERROR_VERSION] = "version",
  [TS_HELORA_ERROR_UNKNOWN_TYPE] = "unknown-type",
  [TS_HELORA_ERROR_NOT_READY] = "not-ready",
  [TS_HELORA_ERROR_UNKNOWN_ADAPTER] = "unknown-adapter",
  [TS_HELORA_ERROR_ADAPTER_HASH] = "adapter-hash",
  [TS_HELORA_ERROR_PARAMS] = "params",
  [TS_HELORA_ERROR_UNKNOWN_MODULE] = "unknown-module",
  [TS_HELORA_ERROR_BAD_CIPHERTEXT] = "bad-ciphertext",
  [TS_HELORA_ERROR_BUSY] = "busy",
  [TS_HELORA_ERROR_TIMEOUT] = "timeout",
  [TS_HELORA_ERROR_UNAVAILABLE] = "unavailable",
  [TS_HELORA_ERROR_INTERNAL] = "internal",
  [TS_HELORA_ERROR_SHUTTING_DOWN] = "shutting-down",
  [TS_HELORA_ERROR_CLOSED] = "closed",
  [TS_HELORA_ERROR_PRIVACY_BUDGET] = "privacy-budget",
};

const char *
ts_helora_error_name (guint code)
{
  if (code == 0)
    return "ok";
  if (code < G_N_ELEMENTS (error_names) && error_names[code] != NULL)
    return error_names[code];
  return "unknown";
}

/* ---- frames in memory ---- */

static void
module_result_clear (gpointer data)
{
  TsHeloraModuleResult *mr = data;

  g_clear_pointer (&mr->blobs, g_ptr_array_unref);
}

static void
stack_member_clear (gpointer data)
{
  TsHeloraStackMember *m = data;

  g_clear_pointer (&m->id, g_free);
}

TsHeloraFrame *
ts_helora_frame_new (TsHeloraFrameType type, guint64 request_id)
{
  TsHeloraFrame *frame = g_new0 (TsHeloraFrame, 1);

  frame->type = type;
  frame->request_id = request_id;
  switch (type)
    {
    case TS_HELORA_FRAME_HELLO:
      frame->u.hello.modules = g_ptr_array_new_with_free_func (g_free);
      frame->u.hello.stack = g_array_new (FALSE, TRUE, sizeof (TsHeloraStackMember));
      g_array_set_clear_func (frame->u.hello.stack, stack_member_clear);
      break;
    case TS_HELORA_FRAME_HELLO_ACK:
      frame->u.ack.modules = g_array_new (FALSE, TRUE, sizeof (TsHeloraModuleShape));
      break;
    case TS_HELORA_FRAME_EVALUATE:
      frame->u.evaluate.modules = g_array_new (FALSE, TRUE, sizeof (guint16));
      frame->u.evaluate.ciphertexts =
        g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      break;
    case TS_HELORA_FRAME_RESULT:
      frame->u.result.modules = g_array_new (FALSE, TRUE, sizeof (TsHeloraModuleResult));
      g_array_set_clear_func (frame->u.result.modules, module_result_clear);
      break;
    case TS_HELORA_FRAME_ERROR:
    case TS_HELORA_FRAME_CLOSE:
    default:
      break;
    }
  return frame;
}

TsHeloraFrame *
ts_helora_frame_new_status (TsHeloraFrameType type, guint64 request_id,
                            guint16 code, const char *text)
{
  TsHeloraFrame *frame = ts_helora_frame_new (type, request_id);

  frame->u.status.code = code;
  frame->u.status.text = g_strdup (text != NULL ? text : "");
  return frame;
}

void
ts_helora_frame_free (TsHeloraFrame *frame)
{
  if (frame == NULL)
    return;
  switch (frame->type)
    {
    case TS_HELORA_FRAME_HELLO:
      g_free (frame->u.hello.params_id);
      g_free (frame->u.hello.adapter_id);
      g_clear_pointer (&frame->u.hello.modules, g_ptr_array_unref);
      g_clear_pointer (&frame->u.hello.stack, g_array_unref);
      g_clear_pointer (&frame->u.hello.public_key, g_bytes_unref);
      break;
    case TS_HELORA_FRAME_HELLO_ACK:
      g_clear_pointer (&frame->u.ack.modules, g_array_unref);
      break;
    case TS_HELORA_FRAME_EVALUATE:
      g_clear_pointer (&frame->u.evaluate.modules, g_array_unref);
      g_clear_pointer (&frame->u.evaluate.ciphertexts, g_ptr_array_unref);
      break;
    case TS_HELORA_FRAME_RESULT:
      g_clear_pointer (&frame->u.result.modules, g_array_unref);
      break;
    case TS_HELORA_FRAME_ERROR:
    case TS_HELORA_FRAME_CLOSE:
      g_free (frame->u.status.text);
      break;
    default:
      break;
    }
  g_free (frame);
}

void
ts_helora_hello_add_stacked (TsHeloraHello *hello, const char *id,
                             const guint8 sha256[TS_HELORA_HASH_SIZE], float weight)
{
  g_return_if_fail (hello != NULL);

  TsHeloraStackMember m = { .id = g_strdup (id), .weight = weight };

  memcpy (m.sha256, sha256, TS_HELORA_HASH_SIZE);
  if (hello->stack->len == 0)
    {
      /* @id and @sha256 may be the hello's own fields (the decoder's case) */
      g_free (hello->adapter_id);
      hello->adapter_id = g_strdup (m.id);
      memcpy (hello->adapter_sha256, m.sha256, TS_HELORA_HASH_SIZE);
    }
  g_array_append_val (hello->stack, m);
}

TsHeloraModuleResult *
ts_helora_result_add_module (TsHeloraFrame *frame, guint16 module)
{
  TsHeloraModuleResult mr = {
    .module = module,
    .blobs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref),
  };

  g_return_val_if_fail (frame->type == TS_HELORA_FRAME_RESULT, NULL);
  g_array_append_val (frame->u.result.modules, mr);
  return &g_array_index (frame->u.result.modules, TsHeloraModuleResult,
                         frame->u.result.modules->len - 1);
}

/* ---- writer ---- */

typedef struct {
  GByteArray *buf;
  gboolean failed;
  const char *why;             /* first limit broken, static */
} Writer;

static void
put_bytes (Writer *w, const void *data, gsize len)
{
  g_byte_array_append (w->buf, data, len);
}

static void
put_u8 (Writer *w, guint8 v)
{
  put_bytes (w, &v, 1);
}

static void
put_u16 (Writer *w, guint16 v)
{
  guint8 b[2] = { v & 0xff, v >> 8 };
  put_bytes (w, b, 2);
}

static void
put_u32 (Writer *w, guint32 v)
{
  guint8 b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };
  put_bytes (w, b, 4);
}

static void
put_u64 (Writer *w, guint64 v)
{
  put_u32 (w, (guint32) v);
  put_u32 (w, (guint32) (v >> 32));
}

static void
put_f64 (Writer *w, double v)
{
  union { double d; guint64 u; } bits = { .d = v };

  put_u64 (w, bits.u);
}

static void
fail (Writer *w, const char *why)
{
  if (!w->failed)
    w->why = why;
  w->failed = TRUE;
}

static void
put_str (Writer *w, const char *s, gsize max, const char *field)
{
  gsize len = s != NULL ? strlen (s) : 0;

  if (len > max || (s != NULL && !g_utf8_validate (s, len, NULL)))
    {
      fail (w, field);
      return;
    }
  put_u16 (w, (guint16) len);
  put_bytes (w, s, len);
}

static void
put_count (Writer *w, guint count, guint min, guint max, const char *field)
{
  if (count < min || count > max)
    fail (w, field);
  put_u16 (w, (guint16) MIN (count, G_MAXUINT16));
}

static void
put_blob (Writer *w, GBytes *blob)
{
  gsize len = 0;
  const guint8 *data = g_bytes_get_data (blob, &len);

  if (len == 0 || len > G_MAXUINT32)
    {
      fail (w, "blob length");
      return;
    }
  put_u32 (w, (guint32) len);
  put_bytes (w, data, len);
}

static void
put_blobs (Writer *w, GPtrArray *blobs, guint max, const char *field)
{
  put_count (w, blobs->len, 1, max, field);
  for (guint i = 0; i < blobs->len; i++)
    put_blob (w, g_ptr_array_index (blobs, i));
}

static void
put_f32 (Writer *w, float v)
{
  union { float f; guint32 u; } bits = { .f = v };

  if (!isfinite (v))
    fail (w, "stack weight");
  put_u32 (w, bits.u);
}

/* The stack request: size, every weight, then the members after the first
 * (the first is the hello's adapter id and hash). */
static void
encode_hello_stack (Writer *w, const TsHeloraHello *h)
{
  const TsHeloraStackMember *first = &g_array_index (h->stack, TsHeloraStackMember, 0);

  if (g_strcmp0 (first->id, h->adapter_id) != 0
      || memcmp (first->sha256, h->adapter_sha256, TS_HELORA_HASH_SIZE) != 0)
    fail (w, "first stack member");
  put_count (w, h->stack->len, 2, TS_HELORA_MAX_STACK, "stack size");
  for (guint i = 0; i < h->stack->len; i++)
    put_f32 (w, g_array_index (h->stack, TsHeloraStackMember, i).weight);
  for (guint i = 1; i < h->stack->len; i++)
    {
      const TsHeloraStackMember *m = &g_array_index (h->stack, TsHeloraStackMember, i);
      put_str (w, m->id, TS_HELORA_MAX_NAME, "stack adapter id");
      put_bytes (w, m->sha256, TS_HELORA_HASH_SIZE);
    }
}

static void
encode_hello (Writer *w, const TsHeloraHello *h)
{
  put_str (w, h->params_id, TS_HELORA_MAX_PARAMS_ID, "params id");
  put_bytes (w, h->params_sha256, TS_HELORA_HASH_SIZE);
  put_str (w, h->adapter_id, TS_HELORA_MAX_NAME, "adapter id");
  put_bytes (w, h->adapter_sha256, TS_HELORA_HASH_SIZE);
  put_count (w, h->modules->len, 1, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < h->modules->len; i++)
    put_str (w, g_ptr_array_index (h->modules, i), TS_HELORA_MAX_NAME, "module name");
  if (h->stack->len > 0)
    encode_hello_stack (w, h);
  if (h->private_mode && h->complex_packing)
    fail (w, "packing for the private mode");
  if (!h->private_mode)
    return;
  union { double d; guint64 u; } rho = { .d = h->rho_per_answer };
  put_u16 (w, (h->dp ? TS_HELORA_PRIVACY_DP : 0)
              | (h->split_scales ? TS_HELORA_PRIVACY_SPLIT_SCALES : 0));
  put_u16 (w, h->lambda_s);
  put_u64 (w, rho.u);
  if (h->public_key == NULL || g_bytes_get_size (h->public_key) > TS_HELORA_MAX_PUBLIC_KEY
      || (h->dp && !(h->rho_per_answer > 0.0 && h->rho_per_answer < 1e6)) || h->lambda_s > 100)
    fail (w, "private-mode request");
  else
    put_blob (w, h->public_key);
}

static void
encode_ack (Writer *w, const TsHeloraHelloAck *a)
{
  put_u32 (w, a->max_frame_bytes);
  put_u16 (w, a->max_in_flight);
  put_u16 (w, 0);
  put_u32 (w, a->idle_timeout_ms);
  put_count (w, a->modules->len, 0, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < a->modules->len; i++)
    {
      const TsHeloraModuleShape *s = &g_array_index (a->modules, TsHeloraModuleShape, i);
      put_u32 (w, s->d_in);
      put_u32 (w, s->rank);
      put_u16 (w, s->n_results);
    }
}

static void
encode_evaluate (Writer *w, const TsHeloraEvaluate *e)
{
  put_u32 (w, e->token_index);
  put_count (w, e->modules->len, 1, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < e->modules->len; i++)
    put_u16 (w, g_array_index (e->modules, guint16, i));
  put_blobs (w, e->ciphertexts, TS_HELORA_MAX_CIPHERTEXTS, "ciphertext count");
}

static void
encode_result (Writer *w, const TsHeloraResult *r)
{
  put_u32 (w, r->token_index);
  put_count (w, r->modules->len, 1, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < r->modules->len; i++)
    {
      const TsHeloraModuleResult *mr = &g_array_index (r->modules, TsHeloraModuleResult, i);
      put_u16 (w, mr->module);
      put_blobs (w, mr->blobs, TS_HELORA_MAX_RESULT_BLOBS, "result blob count");
    }
}

/* The one check of a privacy status, for both directions: finite amounts,
 * and a budget's numbers exactly when the flag says there is one. */
static gboolean
privacy_status_valid (const TsHeloraPrivacyStatus *p)
{
  const double v[] = { p->rho_spent, p->epsilon_spent, p->epsilon_budget, p->delta };

  for (gsize i = 0; i < G_N_ELEMENTS (v); i++)
    if (!(v[i] >= 0.0) || !isfinite (v[i]))
      return FALSE;
  if ((p->flags & ~TS_HELORA_PRIVACY_BUDGET) != 0)
    return FALSE;
  if (p->flags & TS_HELORA_PRIVACY_BUDGET)
    return p->epsilon_budget > 0.0 && p->delta > 0.0 && p->delta < 1.0;
  return p->epsilon_spent == 0.0 && p->epsilon_budget == 0.0 && p->delta == 0.0;
}

static void
encode_privacy_status (Writer *w, const TsHeloraPrivacyStatus *p)
{
  if (!privacy_status_valid (p))
    fail (w, "privacy status");
  put_u16 (w, p->flags);
  put_f64 (w, p->rho_spent);
  put_f64 (w, p->epsilon_spent);
  put_f64 (w, p->epsilon_budget);
  put_f64 (w, p->delta);
}

static guint16
hello_flags (const TsHeloraFrame *frame)
{
  if (frame->type != TS_HELORA_FRAME_HELLO)
    return 0;
  return (frame->u.hello.private_mode ? TS_HELORA_FLAG_PRIVATE : 0)
         | (frame->u.hello.stack->len > 0 ? TS_HELORA_FLAG_STACK : 0)
         | (frame->u.hello.complex_packing ? TS_HELORA_FLAG_COMPLEX : 0);
}

GBytes *
ts_helora_frame_encode (const TsHeloraFrame *frame, GError **error)
{
  g_return_val_if_fail (frame != NULL, NULL);

  Writer w = { .buf = g_byte_array_new () };
  gsize payload_len;

  put_bytes (&w, magic, sizeof magic);
  put_u8 (&w, TS_HELORA_VERSION);
  put_u8 (&w, (guint8) frame->type);
  put_u16 (&w, hello_flags (frame));
  put_u64 (&w, frame->request_id);
  put_u32 (&w, 0);             /* payload length, patched below */
  switch (frame->type)
    {
    case TS_HELORA_FRAME_HELLO:
      encode_hello (&w, &frame->u.hello);
      break;
    case TS_HELORA_FRAME_HELLO_ACK:
      encode_ack (&w, &frame->u.ack);
      break;
    case TS_HELORA_FRAME_EVALUATE:
      encode_evaluate (&w, &frame->u.evaluate);
      break;
    case TS_HELORA_FRAME_RESULT:
      encode_result (&w, &frame->u.result);
      break;
    case TS_HELORA_FRAME_ERROR:
    case TS_HELORA_FRAME_CLOSE:
      put_u16 (&w, frame->u.status.code);
      put_str (&w, frame->u.status.text, TS_HELORA_MAX_TEXT, "status text");
      break;
    case TS_HELORA_FRAME_PRIVACY_QUERY:
      break;
    case TS_HELORA_FRAME_PRIVACY_STATUS:
      encode_privacy_status (&w, &frame->u.privacy);
      break;
    default:
      fail (&w, "frame type");
      break;
    }
  payload_len = w.buf->len - TS_HELORA_HEADER_SIZE;
  if (payload_len > G_MAXUINT32)
    fail (&w, "payload length");
  if (w.failed)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED,
                   "Cannot encode frame: %s out of range", w.why);
      g_byte_array_unref (w.buf);
      return NULL;
    }
  for (int i = 0; i < 4; i++)
    w.buf->data[16 + i] = (payload_len >> (8 * i)) & 0xff;
  return g_byte_array_free_to_bytes (w.buf);
}

/* ---- reader ---- */

typedef struct {
  GBytes *message;
  const guint8 *base;
  gsize pos;
  gsize end;
  GError **error;
  gboolean failed;
} Reader;

static gboolean
reader_fail (Reader *r, TsHeloraError code, const char *fmt, const char *field)
{
  if (!r->failed)
    g_set_error (r->error, TS_HELORA_ERROR, code, fmt, field);
  r->failed = TRUE;
  return FALSE;
}

static gboolean
take (Reader *r, gsize len, const char *field, const guint8 **out)
{
  if (r->failed)
    return FALSE;
  if (len > r->end - r->pos)
    return reader_fail (r, TS_HELORA_ERROR_TRUNCATED, "Frame truncated in %s", field);
  *out = r->base + r->pos;
  r->pos += len;
  return TRUE;
}

static guint32
get_le (Reader *r, guint size, const char *field)
{
  const guint8 *p;
  guint32 v = 0;

  if (!take (r, size, field, &p))
    return 0;
  for (guint i = 0; i < size; i++)
    v |= (guint32) p[i] << (8 * i);
  return v;
}

static guint16
get_u16 (Reader *r, const char *field)
{
  return (guint16) get_le (r, 2, field);
}

static guint32
get_u32 (Reader *r, const char *field)
{
  return get_le (r, 4, field);
}

static double
get_f64 (Reader *r, const char *field)
{
  guint64 lo = get_u32 (r, field), hi = get_u32 (r, field);
  union { guint64 u; double d; } bits = { .u = lo | hi << 32 };

  return bits.d;
}

static guint
get_count (Reader *r, guint min, guint max, const char *field)
{
  guint count = get_u16 (r, field);

  if (!r->failed && (count < min || count > max))
    reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has %s out of range", field);
  return r->failed ? 0 : count;
}

static char *
get_str (Reader *r, gsize max, const char *field)
{
  guint16 len = get_u16 (r, field);
  const guint8 *p;

  if (r->failed)
    return NULL;
  if (len > max)
    {
      reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has %s too long", field);
      return NULL;
    }
  if (!take (r, len, field, &p))
    return NULL;
  if (!g_utf8_validate ((const char *) p, len, NULL) || memchr (p, 0, len) != NULL)
    {
      reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has %s that is not valid UTF-8", field);
      return NULL;
    }
  return g_strndup ((const char *) p, len);
}

static void
get_hash (Reader *r, guint8 out[TS_HELORA_HASH_SIZE], const char *field)
{
  const guint8 *p;

  if (take (r, TS_HELORA_HASH_SIZE, field, &p))
    memcpy (out, p, TS_HELORA_HASH_SIZE);
}

static GBytes *
get_blob (Reader *r, const char *field)
{
  guint32 len = get_u32 (r, field);
  const guint8 *p;

  if (r->failed)
    return NULL;
  if (len == 0)
    {
      reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has an empty %s", field);
      return NULL;
    }
  if (!take (r, len, field, &p))
    return NULL;
  return g_bytes_new_from_bytes (r->message, p - r->base, len);
}

static void
get_blobs (Reader *r, GPtrArray *out, guint max, const char *field)
{
  guint count = get_count (r, 1, max, field);

  for (guint i = 0; i < count && !r->failed; i++)
    {
      GBytes *blob = get_blob (r, field);
      if (blob != NULL)
        g_ptr_array_add (out, blob);
    }
}

static void
decode_hello (Reader *r, TsHeloraHello *h)
{
  guint count;

  h->params_id = get_str (r, TS_HELORA_MAX_PARAMS_ID, "params id");
  get_hash (r, h->params_sha256, "params hash");
  h->adapter_id = get_str (r, TS_HELORA_MAX_NAME, "adapter id");
  get_hash (r, h->adapter_sha256, "adapter hash");
  count = get_count (r, 1, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < count && !r->failed; i++)
    {
      char *name = get_str (r, TS_HELORA_MAX_NAME, "module name");
      if (name != NULL)
        g_ptr_array_add (h->modules, name);
    }
}

static float
get_f32 (Reader *r, const char *field)
{
  union { guint32 u; float f; } bits = { .u = get_u32 (r, field) };

  if (!r->failed && !isfinite (bits.f))
    reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has a %s that is not finite", field);
  return bits.f;
}

/* The stack request after a flagged hello's module list. */
static void
decode_hello_stack (Reader *r, TsHeloraHello *h)
{
  guint count = get_count (r, 2, TS_HELORA_MAX_STACK, "stack size");
  float weights[TS_HELORA_MAX_STACK] = { 0 };

  for (guint i = 0; i < count && !r->failed; i++)
    weights[i] = get_f32 (r, "stack weight");
  if (r->failed)
    return;
  ts_helora_hello_add_stacked (h, h->adapter_id, h->adapter_sha256, weights[0]);
  for (guint i = 1; i < count && !r->failed; i++)
    {
      g_autofree char *id = get_str (r, TS_HELORA_MAX_NAME, "stack adapter id");
      guint8 sha[TS_HELORA_HASH_SIZE];

      get_hash (r, sha, "stack adapter hash");
      if (!r->failed)
        ts_helora_hello_add_stacked (h, id, sha, weights[i]);
    }
}

/* The adapter-private request after a flagged hello's module list. */
static void
decode_hello_private (Reader *r, TsHeloraHello *h)
{
  guint16 flags = get_u16 (r, "private flags");
  h->private_mode = TRUE;
  h->lambda_s = get_u16 (r, "lambda_s");
  guint64 lo = get_u32 (r, "rho"), hi = get_u32 (r, "rho");
  union { guint64 u; double d; } rho = { .u = lo | hi << 32 };
  h->dp = (flags & TS_HELORA_PRIVACY_DP) != 0;
  h->split_scales = (flags & TS_HELORA_PRIVACY_SPLIT_SCALES) != 0;
  h->rho_per_answer = rho.d;
  if (r->failed)
    return;
  if ((flags & ~(guint) (TS_HELORA_PRIVACY_DP | TS_HELORA_PRIVACY_SPLIT_SCALES)) != 0
      || h->lambda_s > 100
      || (h->dp && !(rho.d > 0.0 && rho.d < 1e6)) || (!h->dp && rho.u != 0))
    {
      reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has a bad %s", "private-mode request");
      return;
    }
  h->public_key = get_blob (r, "public key");
  if (h->public_key != NULL && g_bytes_get_size (h->public_key) > TS_HELORA_MAX_PUBLIC_KEY)
    reader_fail (r, TS_HELORA_ERROR_TOO_LARGE, "Frame has a too large %s", "public key");
}

static void
decode_ack (Reader *r, TsHeloraHelloAck *a)
{
  guint count;

  a->max_frame_bytes = get_u32 (r, "max frame bytes");
  a->max_in_flight = get_u16 (r, "max in flight");
  if (get_u16 (r, "reserved") != 0 && !r->failed)
    reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has non-zero %s field", "reserved");
  a->idle_timeout_ms = get_u32 (r, "idle timeout");
  count = get_count (r, 0, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < count && !r->failed; i++)
    {
      TsHeloraModuleShape s;
      s.d_in = get_u32 (r, "module d_in");
      s.rank = get_u32 (r, "module rank");
      s.n_results = get_u16 (r, "module result count");
      g_array_append_val (a->modules, s);
    }
}

static void
decode_evaluate (Reader *r, TsHeloraEvaluate *e)
{
  guint count;

  e->token_index = get_u32 (r, "token index");
  count = get_count (r, 1, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < count && !r->failed; i++)
    {
      guint16 m = get_u16 (r, "module index");
      g_array_append_val (e->modules, m);
    }
  get_blobs (r, e->ciphertexts, TS_HELORA_MAX_CIPHERTEXTS, "ciphertext");
}

static void
decode_result (Reader *r, TsHeloraFrame *frame)
{
  guint count;

  frame->u.result.token_index = get_u32 (r, "token index");
  count = get_count (r, 1, TS_HELORA_MAX_MODULES, "module count");
  for (guint i = 0; i < count && !r->failed; i++)
    {
      guint16 m = get_u16 (r, "module index");
      TsHeloraModuleResult *mr = ts_helora_result_add_module (frame, m);
      get_blobs (r, mr->blobs, TS_HELORA_MAX_RESULT_BLOBS, "result blob");
    }
}

static void
decode_privacy_status (Reader *r, TsHeloraPrivacyStatus *p)
{
  p->flags = get_u16 (r, "privacy flags");
  p->rho_spent = get_f64 (r, "rho spent");
  p->epsilon_spent = get_f64 (r, "epsilon spent");
  p->epsilon_budget = get_f64 (r, "epsilon budget");
  p->delta = get_f64 (r, "delta");
  if (!r->failed && !privacy_status_valid (p))
    reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has a bad %s", "privacy status");
}

/* Reads and checks the header; on success r->end is the payload's end. */
static gboolean
decode_header (Reader *r, gsize max_frame_bytes, guint8 *type, guint64 *request_id,
               guint16 *flags)
{
  const guint8 *p;
  guint32 payload_len;

  if (r->end > max_frame_bytes)
    return reader_fail (r, TS_HELORA_ERROR_TOO_LARGE,
                        "Frame exceeds the %s", "size limit");
  if (!take (r, 4, "header", &p))
    return FALSE;
  if (memcmp (p, magic, sizeof magic) != 0)
    return reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has a bad %s", "magic");
  if (!take (r, TS_HELORA_HEADER_SIZE - 4, "header", &p))
    return FALSE;
  if (p[0] != TS_HELORA_VERSION)
    {
      g_set_error (r->error, TS_HELORA_ERROR, TS_HELORA_ERROR_VERSION,
                   "Protocol version %u is not supported (this side speaks %u)",
                   p[0], TS_HELORA_VERSION);
      r->failed = TRUE;
      return FALSE;
    }
  *type = p[1];
  *flags = (guint16) (p[2] | p[3] << 8);
  /* the only flags: a hello's adapter-private, stack and packing requests,
   * the last two not together with the first */
  const guint16 hello_flags = TS_HELORA_FLAG_PRIVATE | TS_HELORA_FLAG_STACK | TS_HELORA_FLAG_COMPLEX;
  if (*flags != 0 && !(*type == TS_HELORA_FRAME_HELLO && (*flags & ~hello_flags) == 0))
    return reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has non-zero %s", "flags");
  if ((*flags & TS_HELORA_FLAG_PRIVATE) && (*flags & TS_HELORA_FLAG_COMPLEX))
    return reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame asks for the complex packing "
                        "in the %s", "adapter-private mode");
  *request_id = 0;
  for (int i = 7; i >= 0; i--)
    *request_id = (*request_id << 8) | p[4 + i];
  payload_len = p[12] | p[13] << 8 | p[14] << 16 | (guint32) p[15] << 24;
  if (payload_len > max_frame_bytes - TS_HELORA_HEADER_SIZE)
    return reader_fail (r, TS_HELORA_ERROR_TOO_LARGE,
                        "Frame payload length exceeds the %s", "size limit");
  if (payload_len > r->end - r->pos)
    return reader_fail (r, TS_HELORA_ERROR_TRUNCATED, "Frame truncated in %s", "payload");
  if (payload_len < r->end - r->pos)
    return reader_fail (r, TS_HELORA_ERROR_MALFORMED,
                        "Frame has %s after its payload", "trailing bytes");
  return TRUE;
}

static gboolean
decode_payload (Reader *r, TsHeloraFrame *frame, guint16 flags)
{
  switch (frame->type)
    {
    case TS_HELORA_FRAME_HELLO:
      decode_hello (r, &frame->u.hello);
      frame->u.hello.complex_packing = (flags & TS_HELORA_FLAG_COMPLEX) != 0;
      if (flags & TS_HELORA_FLAG_STACK)
        decode_hello_stack (r, &frame->u.hello);
      if (flags & TS_HELORA_FLAG_PRIVATE)
        decode_hello_private (r, &frame->u.hello);
      break;
    case TS_HELORA_FRAME_HELLO_ACK:
      decode_ack (r, &frame->u.ack);
      break;
    case TS_HELORA_FRAME_EVALUATE:
      decode_evaluate (r, &frame->u.evaluate);
      break;
    case TS_HELORA_FRAME_RESULT:
      decode_result (r, frame);
      break;
    case TS_HELORA_FRAME_ERROR:
    case TS_HELORA_FRAME_CLOSE:
      frame->u.status.code = get_u16 (r, "status code");
      frame->u.status.text = get_str (r, TS_HELORA_MAX_TEXT, "status text");
      break;
    case TS_HELORA_FRAME_PRIVACY_QUERY:
      break;
    case TS_HELORA_FRAME_PRIVACY_STATUS:
      decode_privacy_status (r, &frame->u.privacy);
      break;
    default:
      return reader_fail (r, TS_HELORA_ERROR_UNKNOWN_TYPE, "Unknown %s", "frame type");
    }
  if (!r->failed && r->pos != r->end)
    reader_fail (r, TS_HELORA_ERROR_MALFORMED, "Frame has %s after its fields",
                 "trailing bytes");
  return !r->failed;
}

TsHeloraFrame *
ts_helora_frame_decode (GBytes *message, gsize max_frame_bytes, GError **error)
{
  g_return_val_if_fail (message != NULL, NULL);

  Reader r = { .message = message, .error = error };
  g_autoptr (TsHeloraFrame) frame = NULL;
  guint8 type = 0;
  guint64 request_id = 0;
  guint16 flags = 0;

  r.base = g_bytes_get_data (message, &r.end);
  max_frame_bytes = MAX (max_frame_bytes, TS_HELORA_HEADER_SIZE);
  if (!decode_header (&r, max_frame_bytes, &type, &request_id, &flags))
    return NULL;
  if (type < TS_HELORA_FRAME_HELLO || type > TS_HELORA_FRAME_LAST)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_TYPE,
                   "Unknown frame type %u", type);
      return NULL;
    }
  frame = ts_helora_frame_new (type, request_id);
  if (!decode_payload (&r, frame, flags))
    return NULL;
  return g_steal_pointer (&frame);
}

guint64
ts_helora_peek_request_id (GBytes *message)
{
  g_return_val_if_fail (message != NULL, 0);

  gsize len = 0;
  const guint8 *p = g_bytes_get_data (message, &len);
  guint64 id = 0;

  if (len < TS_HELORA_HEADER_SIZE || memcmp (p, magic, sizeof magic) != 0)
    return 0;
  for (int i = 7; i >= 0; i--)
    id = (id << 8) | p[8 + i];
  return id;
}

/* ts-helora-proto.h: frames of the HE-LoRA evaluator protocol (docs/protocol.md).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Encoding and strict, bounds-checked decoding of every frame. Pure functions
 * on caller-owned data: safe from any thread. No frame type can carry key
 * material; see docs/protocol.md.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_HELORA_PATH "/v1/helora"
#define TS_HELORA_VERSION 1
#define TS_HELORA_HEADER_SIZE 20
#define TS_HELORA_HASH_SIZE 32

/* Field limits of version 1. */
#define TS_HELORA_MAX_PARAMS_ID 64
#define TS_HELORA_MAX_NAME 128
#define TS_HELORA_MAX_TEXT 1024
#define TS_HELORA_MAX_MODULES 1024
#define TS_HELORA_MAX_CIPHERTEXTS 64
#define TS_HELORA_MAX_RESULT_BLOBS 4096

typedef enum {
  TS_HELORA_FRAME_HELLO = 1,
  TS_HELORA_FRAME_HELLO_ACK = 2,
  TS_HELORA_FRAME_EVALUATE = 3,
  TS_HELORA_FRAME_RESULT = 4,
  TS_HELORA_FRAME_ERROR = 5,
  TS_HELORA_FRAME_CLOSE = 6,
  TS_HELORA_FRAME_PRIVACY_QUERY = 7,   /* client: how much budget have I spent? */
  TS_HELORA_FRAME_PRIVACY_STATUS = 8,  /* server: the answer */
} TsHeloraFrameType;
#define TS_HELORA_FRAME_LAST TS_HELORA_FRAME_PRIVACY_STATUS

/* Error codes; the same numbers travel in error and close frames. */
#define TS_HELORA_ERROR (ts_helora_error_quark ())
typedef enum {
  TS_HELORA_ERROR_MALFORMED = 1,
  TS_HELORA_ERROR_TRUNCATED = 2,
  TS_HELORA_ERROR_TOO_LARGE = 3,
  TS_HELORA_ERROR_VERSION = 4,
  TS_HELORA_ERROR_UNKNOWN_TYPE = 5,
  TS_HELORA_ERROR_NOT_READY = 6,
  TS_HELORA_ERROR_UNKNOWN_ADAPTER = 7,
  TS_HELORA_ERROR_ADAPTER_HASH = 8,
  TS_HELORA_ERROR_PARAMS = 9,
  TS_HELORA_ERROR_UNKNOWN_MODULE = 10,
  TS_HELORA_ERROR_BAD_CIPHERTEXT = 11,
  TS_HELORA_ERROR_BUSY = 12,
  TS_HELORA_ERROR_TIMEOUT = 13,
  TS_HELORA_ERROR_UNAVAILABLE = 14,
  TS_HELORA_ERROR_INTERNAL = 15,
  TS_HELORA_ERROR_SHUTTING_DOWN = 16,
  TS_HELORA_ERROR_CLOSED = 17,
  TS_HELORA_ERROR_PRIVACY_BUDGET = 18,   /* adapter-private mode: budget spent */
} TsHeloraError;
#define TS_HELORA_ERROR_LAST TS_HELORA_ERROR_PRIVACY_BUDGET

/* Header flag of a hello that carries the adapter-private request. */
#define TS_HELORA_FLAG_PRIVATE 0x0001
/* Bits of the private request's own flags: DP noise; split scales (the
 * client encrypts h at 2^72 and wants A at 2^24: the private layout of
 * he/include/ckks-helora.h; a server that predates the bit refuses the hello). */
#define TS_HELORA_PRIVACY_DP 0x0001
#define TS_HELORA_PRIVACY_SPLIT_SCALES 0x0002
#define TS_HELORA_MAX_PUBLIC_KEY (8u << 20)
/* Header flag of a hello that names a stack of adapters with weights. */
#define TS_HELORA_FLAG_STACK 0x0002
#define TS_HELORA_MAX_STACK 16
/* Header flag of a hello that asks for the complex packing of results
 * (ckks-helora.h: two rows of A per slot, so half the results, products
 * and bytes down), for every module whose layout has it. No payload; not
 * with the adapter-private request. A server that predates the flag
 * refuses the hello as malformed, and the client says hello again
 * without it. */
#define TS_HELORA_FLAG_COMPLEX 0x0004

GQuark ts_helora_error_quark (void);

/* Returns the short name of @code ("malformed", ...) or "unknown" (static). */
const char *ts_helora_error_name (guint code);

/* One adapter of a stacked hello. */
typedef struct {
  char *id;
  guint8 sha256[TS_HELORA_HASH_SIZE];
  float weight;                /* finite */
} TsHeloraStackMember;

typedef struct {
  char *params_id;
  guint8 params_sha256[TS_HELORA_HASH_SIZE];
  char *adapter_id;
  guint8 adapter_sha256[TS_HELORA_HASH_SIZE];
  GPtrArray *modules;          /* of char *, owned */
  /* Stacked adapters (header flag TS_HELORA_FLAG_STACK): 2 … TS_HELORA_MAX_STACK
   * members in stacking order, the first being adapter_id / adapter_sha256.
   * Empty for a hello that opens one adapter. Fill it with
   * ts_helora_hello_add_stacked(), which keeps the first member and the
   * adapter fields the same. */
  GArray *stack;               /* of TsHeloraStackMember, cleared on free */
  /* Results in the complex packing (header flag TS_HELORA_FLAG_COMPLEX). */
  gboolean complex_packing;
  /* Adapter-private mode (header flag TS_HELORA_FLAG_PRIVATE), see
   * docs/security.md: the client's CKKS public key and what it asks for. */
  gboolean private_mode;
  gboolean split_scales;       /* h at 2^72, A at 2^24 (the private layout); else 48/48 */
  guint16 lambda_s;            /* flooding bits */
  gboolean dp;                 /* DP noise on every answer */
  double rho_per_answer;       /* zCDP cost of one module answer (> 0 when dp) */
  GBytes *public_key;          /* owned; ckks_public_key_serialize output */
} TsHeloraHello;

typedef struct {
  guint32 d_in;
  guint32 rank;
  guint16 n_results;
} TsHeloraModuleShape;

typedef struct {
  guint32 max_frame_bytes;
  guint16 max_in_flight;
  guint32 idle_timeout_ms;
  GArray *modules;             /* of TsHeloraModuleShape */
} TsHeloraHelloAck;

typedef struct {
  guint32 token_index;
  GArray *modules;             /* of guint16 module indices */
  GPtrArray *ciphertexts;      /* of GBytes *, owned */
} TsHeloraEvaluate;

typedef struct {
  guint16 module;
  GPtrArray *blobs;            /* of GBytes *, owned */
} TsHeloraModuleResult;

typedef struct {
  guint32 token_index;
  GArray *modules;             /* of TsHeloraModuleResult, cleared on free */
} TsHeloraResult;

/* Body of a privacy-status frame: what the server's accountant has charged
 * the client of this connection (the SHA-256 of its public key) so far. */
#define TS_HELORA_PRIVACY_BUDGET 0x0001  /* flags: the server keeps a DP budget */
typedef struct {
  guint16 flags;
  double rho_spent;            /* zCDP rho */
  double epsilon_spent;        /* at delta; 0 without a budget */
  double epsilon_budget;       /* 0 without a budget */
  double delta;                /* 0 without a budget */
} TsHeloraPrivacyStatus;

/* Body of error and close frames. */
typedef struct {
  guint16 code;
  char *text;
} TsHeloraStatus;

typedef struct {
  TsHeloraFrameType type;
  guint64 request_id;
  union {
    TsHeloraHello hello;
    TsHeloraHelloAck ack;
    TsHeloraEvaluate evaluate;
    TsHeloraResult result;
    TsHeloraStatus status;     /* error and close */
    TsHeloraPrivacyStatus privacy;  /* privacy-status (privacy-query has no body) */
  } u;
} TsHeloraFrame;

/* Returns a new, empty frame of @type with its arrays allocated. */
TsHeloraFrame *ts_helora_frame_new (TsHeloraFrameType type, guint64 request_id);
void ts_helora_frame_free (TsHeloraFrame *frame);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHeloraFrame, ts_helora_frame_free)

/* Returns a new error (or close) frame with @code and a copy of @text. */
TsHeloraFrame *ts_helora_frame_new_status (TsHeloraFrameType type, guint64 request_id,
                                           guint16 code, const char *text);

/* Appends a stack member (a copy of @id) to @hello; the first one also
 * becomes the hello's adapter id and hash. */
void ts_helora_hello_add_stacked (TsHeloraHello *hello, const char *id,
                                  const guint8 sha256[TS_HELORA_HASH_SIZE], float weight);

/* Appends a module result with no blobs yet; returns it for filling in. */
TsHeloraModuleResult *ts_helora_result_add_module (TsHeloraFrame *frame, guint16 module);

/* Serialises @frame. Fails (TS_HELORA_ERROR_MALFORMED) when a field breaks
 * the limits above, so a sender can never produce a frame its peer rejects. */
GBytes *ts_helora_frame_encode (const TsHeloraFrame *frame, GError **error);

/* Parses one message. @max_frame_bytes bounds the whole message. Every
 * truncation, oversized length, unknown type or version, trailing byte and
 * out-of-range count is an error in TS_HELORA_ERROR. Blobs of the returned
 * frame are slices of @message (no copy). */
TsHeloraFrame *ts_helora_frame_decode (GBytes *message, gsize max_frame_bytes,
                                       GError **error);

/* Returns the request id of a message that has at least a header's worth of
 * bytes, 0 otherwise; lets a peer address an error to a frame it rejected. */
guint64 ts_helora_peek_request_id (GBytes *message);

G_END_DECLS

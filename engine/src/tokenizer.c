/* tokenizer.c: byte-level BPE over the GGUF vocabulary, special tokens, detokenisation.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Text goes through the steps of the models' Hugging Face tokenizers: the
 * special tokens are cut out first, then every plain fragment is normalised
 * to NFC (tokenizer-nfc.c), split by the pre-tokenizer rule that
 * tokenizer.ggml.pre names (tokenizer-pre.c) and each piece merged by BPE.
 */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io-util.h"
#include "tokenizer-private.h"

typedef struct {
  uint64_t key;     /* left id << 32 | right id; 0 marks an empty slot (key + 1 stored) */
  int32_t rank;
  int32_t result;
} MergeSlot;

struct LmTokenizer {
  int32_t n_vocab;
  uint8_t *type;
  /* GGUF token text (GPT-2 unicode form) and the bytes it stands for. */
  char **text;
  uint32_t *text_len;
  char **piece;
  uint32_t *piece_len;
  size_t max_piece;
  /* text -> id */
  int32_t *text_slots;       /* id + 1, 0 = empty */
  uint64_t text_mask;
  /* (left, right) -> merge */
  MergeSlot *merges;
  uint64_t merge_mask;
  int32_t byte_token[256];
  /* CONTROL and USER_DEFINED ids, longest text first */
  int32_t *specials;
  size_t n_specials;
  int32_t bos, eos, pad, im_end, endoftext;
  TokPreRule pre;
  char *chat_template;       /* tokenizer.chat_template, or NULL */
};

/* ---- GPT-2 byte <-> unicode mapping ---- */

static bool
byte_is_printable (unsigned b)
{
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

static uint32_t
byte_to_cp (unsigned b)
{
  if (byte_is_printable (b))
    return b;
  uint32_t n = 0;   /* rank of b among the non-printable bytes */
  for (unsigned x = 0; x < b; x++)
    n += !byte_is_printable (x);
  return 256 + n;
}

/* Returns the byte that code point @cp stands for, or -1. */
static int
cp_to_byte (uint32_t cp)
{
  if (cp < 256)
    return byte_is_printable (cp) ? (int) cp : -1;
  if (cp >= 256 + 68)
    return -1;
  uint32_t n = cp - 256;
  for (unsigned b = 0; b < 256; b++)
    if (!byte_is_printable (b) && n-- == 0)
      return (int) b;
  return -1;
}

/* ---- hashing ---- */

static uint64_t
hash_bytes (const char *s, size_t n)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint8_t) s[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t
hash_u64 (uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static uint64_t
table_mask (uint64_t n)
{
  uint64_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  return cap - 1;
}

static int32_t
find_text (const LmTokenizer *tok, const char *s, size_t n)
{
  uint64_t h = hash_bytes (s, n) & tok->text_mask;
  for (; tok->text_slots[h]; h = (h + 1) & tok->text_mask)
    {
      int32_t id = tok->text_slots[h] - 1;
      if (tok->text_len[id] == n && memcmp (tok->text[id], s, n) == 0)
        return id;
    }
  return -1;
}

static const MergeSlot *
find_merge (const LmTokenizer *tok, int32_t left, int32_t right)
{
  uint64_t key = ((uint64_t) (uint32_t) left << 32 | (uint32_t) right) + 1;
  for (uint64_t h = hash_u64 (key) & tok->merge_mask; tok->merges[h].key;
       h = (h + 1) & tok->merge_mask)
    if (tok->merges[h].key == key)
      return &tok->merges[h];
  return NULL;
}

/* ---- loading ---- */

/* Decodes a NORMAL token's GPT-2 text into the bytes it stands for; code
 * points outside the mapping, and malformed bytes, are kept as they are, so
 * the result is never longer than @len. */
static size_t
decode_gpt2_text (const char *text, size_t len, char *out)
{
  size_t o = 0;
  for (size_t i = 0; i < len;)
    {
      uint32_t cp;
      size_t k = lm_tok_utf8_decode ((const uint8_t *) text + i, len - i, &cp);
      int b = cp_to_byte (cp);
      if (b >= 0)
        out[o++] = (char) b;
      else
        {
          memcpy (out + o, text + i, k);
          o += k;
        }
      i += k;
    }
  return o;
}

/* "<0xAB>" -> 0xAB, else -1. */
static int
parse_byte_token (const char *s, size_t n)
{
  if (n != 6 || memcmp (s, "<0x", 3) != 0 || s[5] != '>')
    return -1;
  unsigned v;
  char hex[3] = { s[3], s[4], 0 };
  char *end;
  v = (unsigned) strtoul (hex, &end, 16);
  return *end == 0 ? (int) v : -1;
}

static LmStatus
load_tokens (LmTokenizer *tok, const GgufFile *file, char **error_out)
{
  GgufValueType et;
  uint64_t n;
  if (!lm_gguf_get_array (file, "tokenizer.ggml.tokens", &et, &n, NULL) || et != LM_GGUF_TYPE_STRING)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tokenizer.ggml.tokens is missing or not a string array");
  if (n == 0 || n > INT32_MAX - 1)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries", (unsigned long long) n);
  tok->n_vocab = (int32_t) n;

  const void *types = NULL;
  uint64_t n_types = 0;
  bool have_types = lm_gguf_get_array (file, "tokenizer.ggml.token_type", &et, &n_types, &types);
  if (have_types && (et != LM_GGUF_TYPE_INT32 || n_types != n))
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tokenizer.ggml.token_type must be %llu i32 values",
                       (unsigned long long) n);

  tok->type = malloc (n);
  tok->text = calloc (n, sizeof *tok->text);
  tok->text_len = calloc (n, sizeof *tok->text_len);
  tok->piece = calloc (n, sizeof *tok->piece);
  tok->piece_len = calloc (n, sizeof *tok->piece_len);
  tok->text_mask = table_mask (n);
  tok->text_slots = calloc (tok->text_mask + 1, sizeof *tok->text_slots);
  if (!tok->type || !tok->text || !tok->text_len || !tok->piece || !tok->piece_len
      || !tok->text_slots)
    return LM_ERR_NO_MEMORY;

  for (int32_t id = 0; id < tok->n_vocab; id++)
    {
      GgufString s;
      lm_gguf_get_array_string (file, "tokenizer.ggml.tokens", (uint64_t) id, &s);
      if (s.len > UINT32_MAX / 2)
        return lm_io_fail (error_out, LM_ERR_FORMAT, "token %d is too long", id);
      int32_t t = have_types ? ((const int32_t *) types)[id] : LM_TOKEN_NORMAL;
      if (t < LM_TOKEN_NORMAL || t > LM_TOKEN_BYTE)
        return lm_io_fail (error_out, LM_ERR_FORMAT, "token %d has unknown type %d", id, t);
      tok->type[id] = (uint8_t) t;
      tok->text[id] = malloc (s.len + 1);
      tok->piece[id] = malloc (s.len + 1);   /* a decoded piece is never longer */
      if (!tok->text[id] || !tok->piece[id])
        return LM_ERR_NO_MEMORY;
      memcpy (tok->text[id], s.data, s.len);
      tok->text[id][s.len] = 0;
      tok->text_len[id] = (uint32_t) s.len;
      int byte;
      if (t == LM_TOKEN_NORMAL)
        tok->piece_len[id] = (uint32_t) decode_gpt2_text (s.data, s.len, tok->piece[id]);
      else if (t == LM_TOKEN_BYTE && (byte = parse_byte_token (s.data, s.len)) >= 0)
        {
          tok->piece[id][0] = (char) byte;
          tok->piece_len[id] = 1;
        }
      else if (t == LM_TOKEN_CONTROL || t == LM_TOKEN_USER_DEFINED)
        {
          memcpy (tok->piece[id], s.data, s.len);
          tok->piece_len[id] = (uint32_t) s.len;
        }
      if (tok->piece_len[id] > tok->max_piece)
        tok->max_piece = tok->piece_len[id];
      if (find_text (tok, s.data, s.len) < 0)   /* first one wins on duplicates */
        {
          uint64_t h = hash_bytes (s.data, s.len) & tok->text_mask;
          while (tok->text_slots[h])
            h = (h + 1) & tok->text_mask;
          tok->text_slots[h] = id + 1;
        }
    }
  for (unsigned b = 0; b < 256; b++)
    {
      char buf[4];
      size_t k = lm_tok_utf8_encode (byte_to_cp (b), buf);
      tok->byte_token[b] = find_text (tok, buf, k);
    }
  return LM_OK;
}

static LmStatus
load_merges (LmTokenizer *tok, const GgufFile *file, char **error_out)
{
  GgufValueType et;
  uint64_t n = 0;
  if (!lm_gguf_get_array (file, "tokenizer.ggml.merges", &et, &n, NULL))
    n = 0;
  else if (et != LM_GGUF_TYPE_STRING)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tokenizer.ggml.merges is not a string array");
  if (n > INT32_MAX)
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tokenizer.ggml.merges has too many entries");
  tok->merge_mask = table_mask (n);
  tok->merges = calloc (tok->merge_mask + 1, sizeof *tok->merges);
  if (!tok->merges)
    return LM_ERR_NO_MEMORY;
  for (uint64_t r = 0; r < n; r++)
    {
      GgufString s;
      lm_gguf_get_array_string (file, "tokenizer.ggml.merges", r, &s);
      const char *space = s.len > 1 ? memchr (s.data + 1, ' ', s.len - 1) : NULL;
      if (space == NULL)
        return lm_io_fail (error_out, LM_ERR_FORMAT, "merge %llu '%.*s' has no space", (unsigned long long) r,
                           (int) (s.len > 64 ? 64 : s.len), s.data);
      size_t ln = (size_t) (space - s.data);
      int32_t left = find_text (tok, s.data, ln);
      int32_t right = find_text (tok, space + 1, s.len - ln - 1);
      if (left < 0 || right < 0)
        continue;   /* merge of tokens not in the vocabulary: never applicable */
      /* The merged text is the two texts joined. */
      size_t rn = tok->text_len[left] + tok->text_len[right];
      char *joined = malloc (rn ? rn : 1);
      if (!joined)
        return LM_ERR_NO_MEMORY;
      memcpy (joined, tok->text[left], tok->text_len[left]);
      memcpy (joined + tok->text_len[left], tok->text[right], tok->text_len[right]);
      int32_t result = find_text (tok, joined, rn);
      free (joined);
      if (result < 0 || find_merge (tok, left, right))
        continue;
      uint64_t key = ((uint64_t) (uint32_t) left << 32 | (uint32_t) right) + 1;
      uint64_t h = hash_u64 (key) & tok->merge_mask;
      while (tok->merges[h].key)
        h = (h + 1) & tok->merge_mask;
      tok->merges[h] = (MergeSlot) { key, (int32_t) r, result };
    }
  return LM_OK;
}

static LmStatus
load_specials (LmTokenizer *tok)
{
  tok->specials = malloc ((size_t) tok->n_vocab * sizeof *tok->specials);
  if (!tok->specials)
    return LM_ERR_NO_MEMORY;
  for (int32_t id = 0; id < tok->n_vocab; id++)
    if ((tok->type[id] == LM_TOKEN_CONTROL || tok->type[id] == LM_TOKEN_USER_DEFINED)
        && tok->text_len[id] > 0)
      tok->specials[tok->n_specials++] = id;
  /* Longest text first (ties by id); insertion sort needs no global state for
   * the comparison, and the list is short: tens to a few hundred ids. */
  for (size_t i = 1; i < tok->n_specials; i++)
    {
      int32_t v = tok->specials[i];
      size_t j = i;
      while (j > 0 && (tok->text_len[tok->specials[j - 1]] < tok->text_len[v]
                       || (tok->text_len[tok->specials[j - 1]] == tok->text_len[v]
                           && tok->specials[j - 1] > v)))
        {
          tok->specials[j] = tok->specials[j - 1];
          j--;
        }
      tok->specials[j] = v;
    }
  return LM_OK;
}

/* Kept as it is: chat.c reads what it needs from it. */
static LmStatus
load_chat_template (LmTokenizer *tok, const GgufFile *file)
{
  GgufString s;
  if (!lm_gguf_get_string (file, "tokenizer.chat_template", &s))
    return LM_OK;
  tok->chat_template = malloc (s.len + 1);
  if (tok->chat_template == NULL)
    return LM_ERR_NO_MEMORY;
  memcpy (tok->chat_template, s.data, s.len);
  tok->chat_template[s.len] = 0;
  return LM_OK;
}

static int32_t
special_id (const LmTokenizer *tok, const GgufFile *file, const char *key)
{
  uint32_t id;
  if (lm_gguf_get_u32 (file, key, &id) && id < (uint32_t) tok->n_vocab)
    return (int32_t) id;
  return -1;
}

LmStatus
lm_tokenizer_new_from_gguf (const GgufFile *file, LmTokenizer **out, char **error_out)
{
  GgufString s;
  if (file == NULL || out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (!lm_gguf_get_string (file, "tokenizer.ggml.model", &s))
    return lm_io_fail (error_out, LM_ERR_FORMAT, "tokenizer.ggml.model is missing");
  if (!lm_gguf_string_eq (s, "gpt2"))
    return lm_io_fail (error_out, LM_ERR_UNSUPPORTED, "tokenizer model '%.*s' is not supported (only gpt2)",
                       (int) (s.len > 64 ? 64 : s.len), s.data);
  TokPreRule pre;
  if (!lm_gguf_get_string (file, "tokenizer.ggml.pre", &s))
    return lm_io_fail (error_out, LM_ERR_FORMAT,
                       "tokenizer.ggml.pre is missing (the pre-tokenizer: qwen2 or qwen35)");
  if (!lm_tok_pre_rule_from_name (s.data, s.len, &pre))
    return lm_io_fail (error_out, LM_ERR_UNSUPPORTED,
                       "pre-tokenizer '%.*s' is not supported (only qwen2 and qwen35)",
                       (int) (s.len > 64 ? 64 : s.len), s.data);

  LmTokenizer *tok = calloc (1, sizeof *tok);
  if (tok == NULL)
    return LM_ERR_NO_MEMORY;
  tok->pre = pre;
  LmStatus st = load_tokens (tok, file, error_out);
  if (st == LM_OK)
    st = load_chat_template (tok, file);
  if (st == LM_OK)
    st = load_merges (tok, file, error_out);
  if (st == LM_OK)
    st = load_specials (tok);
  if (st != LM_OK)
    {
      lm_tokenizer_free (tok);
      return st;
    }
  tok->bos = special_id (tok, file, "tokenizer.ggml.bos_token_id");
  tok->eos = special_id (tok, file, "tokenizer.ggml.eos_token_id");
  tok->pad = special_id (tok, file, "tokenizer.ggml.padding_token_id");
  tok->im_end = lm_tokenizer_find (tok, "<|im_end|>");
  tok->endoftext = lm_tokenizer_find (tok, "<|endoftext|>");
  *out = tok;
  return LM_OK;
}

void
lm_tokenizer_free (LmTokenizer *tok)
{
  if (tok == NULL)
    return;
  for (int32_t id = 0; tok->text && id < tok->n_vocab; id++)
    {
      free (tok->text[id]);
      free (tok->piece[id]);
    }
  free (tok->type);
  free (tok->text);
  free (tok->text_len);
  free (tok->piece);
  free (tok->piece_len);
  free (tok->text_slots);
  free (tok->merges);
  free (tok->specials);
  free (tok->chat_template);
  free (tok);
}

int32_t lm_tokenizer_n_vocab (const LmTokenizer *tok) { return tok->n_vocab; }
int32_t lm_tokenizer_bos (const LmTokenizer *tok) { return tok->bos; }
int32_t lm_tokenizer_eos (const LmTokenizer *tok) { return tok->eos; }
int32_t lm_tokenizer_pad (const LmTokenizer *tok) { return tok->pad; }
size_t lm_tokenizer_max_piece (const LmTokenizer *tok) { return tok->max_piece; }
const char *lm_tokenizer_chat_template (const LmTokenizer *tok) { return tok->chat_template; }

int32_t
lm_tokenizer_find (const LmTokenizer *tok, const char *text)
{
  return find_text (tok, text, strlen (text));
}

LmTokenType
lm_tokenizer_token_type (const LmTokenizer *tok, int32_t id)
{
  if (id < 0 || id >= tok->n_vocab)
    return LM_TOKEN_UNUSED;
  return (LmTokenType) tok->type[id];
}

bool
lm_tokenizer_is_end (const LmTokenizer *tok, int32_t id)
{
  return id >= 0 && (id == tok->eos || id == tok->im_end || id == tok->endoftext);
}

/* ---- tokenisation ---- */

typedef struct {
  const LmTokenizer *tok;
  const uint8_t *text;
  int32_t *ids;
  size_t n_ids, cap_ids;
  /* BPE scratch, grown as needed */
  int32_t *sym_id, *sym_prev, *sym_next;
  struct HeapEntry { int32_t rank, left, left_id, right_id; } *heap;
  size_t n_heap, cap_sym, cap_heap;
  bool oom;
} TokenizeCtx;

static void
push_id (TokenizeCtx *c, int32_t id)
{
  if (c->n_ids == c->cap_ids)
    {
      size_t cap = c->cap_ids ? 2 * c->cap_ids : 64;
      int32_t *ids = realloc (c->ids, cap * sizeof *ids);
      if (!ids)
        {
          c->oom = true;
          return;
        }
      c->ids = ids;
      c->cap_ids = cap;
    }
  c->ids[c->n_ids++] = id;
}

static bool
heap_less (const struct HeapEntry *a, const struct HeapEntry *b)
{
  return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void
heap_push (TokenizeCtx *c, struct HeapEntry e)
{
  size_t i = c->n_heap++;
  c->heap[i] = e;
  while (i > 0 && heap_less (&c->heap[i], &c->heap[(i - 1) / 2]))
    {
      struct HeapEntry t = c->heap[i];
      c->heap[i] = c->heap[(i - 1) / 2];
      c->heap[(i - 1) / 2] = t;
      i = (i - 1) / 2;
    }
}

static struct HeapEntry
heap_pop (TokenizeCtx *c)
{
  struct HeapEntry top = c->heap[0];
  c->heap[0] = c->heap[--c->n_heap];
  for (size_t i = 0;;)
    {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < c->n_heap && heap_less (&c->heap[l], &c->heap[m]))
        m = l;
      if (r < c->n_heap && heap_less (&c->heap[r], &c->heap[m]))
        m = r;
      if (m == i)
        break;
      struct HeapEntry t = c->heap[i];
      c->heap[i] = c->heap[m];
      c->heap[m] = t;
      i = m;
    }
  return top;
}

static void
try_pair (TokenizeCtx *c, int32_t left)
{
  if (left < 0 || c->sym_next[left] < 0)
    return;
  int32_t right = c->sym_next[left];
  const MergeSlot *m = find_merge (c->tok, c->sym_id[left], c->sym_id[right]);
  if (m)
    heap_push (c, (struct HeapEntry) { m->rank, left, c->sym_id[left], c->sym_id[right] });
}

static bool
grow_scratch (TokenizeCtx *c, size_t n)
{
  if (n <= c->cap_sym)
    return true;
  size_t cap = n < 64 ? 64 : n;
  int32_t *a = realloc (c->sym_id, cap * sizeof *a);
  if (a) c->sym_id = a;
  int32_t *b = realloc (c->sym_prev, cap * sizeof *b);
  if (b) c->sym_prev = b;
  int32_t *d = realloc (c->sym_next, cap * sizeof *d);
  if (d) c->sym_next = d;
  /* every merge adds at most two pairs to the n - 1 initial ones */
  struct HeapEntry *h = realloc (c->heap, 3 * cap * sizeof *h);
  if (h) c->heap = h;
  if (!a || !b || !d || !h)
    return false;
  c->cap_sym = cap;
  return true;
}

/* Byte-level BPE of one pre-tokenized piece. Symbols are indexed by the
 * position of their first byte, so "leftmost" is "smallest index". */
static void
bpe_piece (void *user_data, size_t start, size_t end)
{
  TokenizeCtx *c = user_data;
  size_t n = end - start;
  if (c->oom || n == 0)
    return;
  if (n > INT32_MAX || !grow_scratch (c, n))
    {
      c->oom = true;
      return;
    }
  for (size_t i = 0; i < n; i++)
    {
      c->sym_id[i] = c->tok->byte_token[c->text[start + i]];
      c->sym_prev[i] = (int32_t) i - 1;
      c->sym_next[i] = i + 1 < n ? (int32_t) i + 1 : -1;
    }
  c->n_heap = 0;
  for (size_t i = 0; i + 1 < n; i++)
    try_pair (c, (int32_t) i);
  while (c->n_heap > 0)
    {
      struct HeapEntry e = heap_pop (c);
      int32_t right = c->sym_next[e.left];
      /* Skip entries made stale by an earlier merge. */
      if (c->sym_id[e.left] != e.left_id || right < 0 || c->sym_id[right] != e.right_id)
        continue;
      c->sym_id[e.left] = find_merge (c->tok, e.left_id, e.right_id)->result;
      c->sym_id[right] = -2;   /* dead */
      c->sym_next[e.left] = c->sym_next[right];
      if (c->sym_next[right] >= 0)
        c->sym_prev[c->sym_next[right]] = e.left;
      try_pair (c, c->sym_prev[e.left]);
      try_pair (c, e.left);
    }
  for (int32_t i = 0; i >= 0; i = c->sym_next[i])
    if (c->sym_id[i] >= 0)
      push_id (c, c->sym_id[i]);
}

/* NFC, pre-tokenizer split and BPE of one fragment without special tokens. */
static void
tokenize_plain (TokenizeCtx *c, const uint8_t *text, size_t len)
{
  uint8_t *normal = NULL;
  size_t normal_len = len;
  if (!lm_tok_nfc (text, len, &normal, &normal_len))
    {
      c->oom = true;
      return;
    }
  c->text = normal ? normal : text;   /* pieces are relative to it */
  if (!lm_tok_pre_split (c->tok->pre, c->text, normal_len, bpe_piece, c))
    c->oom = true;
  free (normal);
}

typedef struct {
  size_t start, len;
  int32_t special;   /* -1 for plain text */
} Fragment;

/* Splits every plain fragment around each occurrence of special token @id. */
static Fragment *
split_on_special (const LmTokenizer *tok, const char *text, Fragment *frags, size_t *n_frags,
                  int32_t id)
{
  const char *needle = tok->text[id];
  size_t nl = tok->text_len[id];
  size_t count = 0;
  for (size_t f = 0; f < *n_frags; f++)
    if (frags[f].special < 0)
      for (const char *p = text + frags[f].start, *end = p + frags[f].len;
           (p = memmem (p, (size_t) (end - p), needle, nl)) != NULL; p += nl)
        count++;
  if (count == 0)
    return frags;
  Fragment *out = malloc ((*n_frags + 2 * count) * sizeof *out);
  if (!out)
    {
      free (frags);
      return NULL;
    }
  size_t n = 0;
  for (size_t f = 0; f < *n_frags; f++)
    {
      if (frags[f].special >= 0)
        {
          out[n++] = frags[f];
          continue;
        }
      size_t pos = frags[f].start, end = pos + frags[f].len;
      const char *hit;
      while ((hit = memmem (text + pos, end - pos, needle, nl)) != NULL)
        {
          size_t at = (size_t) (hit - text);
          if (at > pos)
            out[n++] = (Fragment) { pos, at - pos, -1 };
          out[n++] = (Fragment) { at, nl, id };
          pos = at + nl;
        }
      if (pos < end)
        out[n++] = (Fragment) { pos, end - pos, -1 };
    }
  free (frags);
  *n_frags = n;
  return out;
}

LmStatus
lm_tokenize (const LmTokenizer *tok, const char *text, size_t len, bool parse_special,
             int32_t **ids_out, size_t *n_out)
{
  if (tok == NULL || (text == NULL && len > 0) || ids_out == NULL || n_out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *ids_out = NULL;
  *n_out = 0;
  if (len == 0)
    return LM_OK;
  size_t n_frags = 1;
  Fragment *frags = malloc (sizeof *frags);
  if (!frags)
    return LM_ERR_NO_MEMORY;
  frags[0] = (Fragment) { 0, len, -1 };
  for (size_t s = 0; s < tok->n_specials && frags; s++)
    {
      int32_t id = tok->specials[s];
      if (tok->type[id] == LM_TOKEN_CONTROL && !parse_special)
        continue;
      frags = split_on_special (tok, text, frags, &n_frags, id);
    }
  if (!frags)
    return LM_ERR_NO_MEMORY;

  TokenizeCtx c = { .tok = tok };
  for (size_t f = 0; f < n_frags && !c.oom; f++)
    {
      if (frags[f].special >= 0)
        push_id (&c, frags[f].special);
      else
        tokenize_plain (&c, (const uint8_t *) text + frags[f].start, frags[f].len);
    }
  free (frags);
  free (c.sym_id);
  free (c.sym_prev);
  free (c.sym_next);
  free (c.heap);
  if (c.oom)
    {
      free (c.ids);
      return LM_ERR_NO_MEMORY;
    }
  *ids_out = c.ids;
  *n_out = c.n_ids;
  return LM_OK;
}

/* ---- detokenisation ---- */

bool
lm_tok_piece (const LmTokenizer *tok, int32_t id, bool render_special, const char **p, size_t *n)
{
  if (id < 0 || id >= tok->n_vocab)
    return false;
  if (tok->type[id] == LM_TOKEN_CONTROL && !render_special)
    return false;
  *p = tok->piece[id];
  *n = tok->piece_len[id];
  return true;
}

size_t
lm_token_piece (const LmTokenizer *tok, int32_t id, bool render_special, char *buf, size_t cap)
{
  const char *p;
  size_t n;
  if (!lm_tok_piece (tok, id, render_special, &p, &n))
    return 0;
  memcpy (buf, p, n < cap ? n : cap);
  return n;
}

LmStatus
lm_detokenize (const LmTokenizer *tok, const int32_t *ids, size_t n, bool render_special,
               char **text_out, size_t *len_out)
{
  if (tok == NULL || (ids == NULL && n > 0) || text_out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    {
      const char *p;
      size_t k;
      if (lm_tok_piece (tok, ids[i], render_special, &p, &k))
        total += k;
    }
  char *out = malloc (total + 1);
  if (!out)
    return LM_ERR_NO_MEMORY;
  size_t o = 0;
  for (size_t i = 0; i < n; i++)
    {
      const char *p;
      size_t k;
      if (lm_tok_piece (tok, ids[i], render_special, &p, &k))
        {
          memcpy (out + o, p, k);
          o += k;
        }
    }
  out[o] = 0;
  *text_out = out;
  if (len_out)
    *len_out = o;
  return LM_OK;
}

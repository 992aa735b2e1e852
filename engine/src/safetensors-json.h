/* safetensors-json.h: a small, bounds-checked JSON reader (safetensors headers,
 * PEFT adapter_config.json).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Parses a complete JSON text into a tree. Strings are unescaped to UTF-8
 * (\uXXXX with surrogate pairs) and NUL-terminated; a string that contains
 * \u0000 keeps it, so use len when that matters. Nesting is limited to
 * LM_JSON_MAX_DEPTH levels.
 * Ownership: lm_json_parse() returns a tree freed with lm_json_free(); every
 * pointer into it lives as long as the root.
 * Thread-safety: a parsed tree is read-only and may be shared.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LM_JSON_MAX_DEPTH 64

typedef enum {
  LM_JSON_NULL, LM_JSON_BOOL, LM_JSON_NUMBER, LM_JSON_STRING, LM_JSON_ARRAY, LM_JSON_OBJECT,
} LmJsonType;

typedef struct LmJson LmJson;
struct LmJson {
  LmJsonType type;
  bool boolean;
  double number;
  bool is_uint;          /* a number written as plain digits that fits in uint64_t */
  uint64_t uint;
  char *string;          /* strings */
  size_t len;
  LmJson *items;         /* array elements / object values */
  char **keys;           /* object keys (NUL-terminated) */
  size_t *key_lens;
  size_t n_items;
};

/* NULL on error, with a malloc()ed message naming the byte offset in
 * *error_out when that is non-NULL. Duplicate object keys are an error. */
LmJson *lm_json_parse (const char *text, size_t len, char **error_out);
void lm_json_free (LmJson *root);

/* Object member by key, or NULL (also when @obj is not an object). */
const LmJson *lm_json_get (const LmJson *obj, const char *key);
/* The member's string / unsigned integer / number; false if absent or of another type. */
bool lm_json_get_string (const LmJson *obj, const char *key, const char **out);
bool lm_json_get_uint (const LmJson *obj, const char *key, uint64_t *out);
bool lm_json_get_number (const LmJson *obj, const char *key, double *out);

#ifdef __cplusplus
}
#endif

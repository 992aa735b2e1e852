/* fuzz-safetensors.c: libFuzzer target for the safetensors reader and its JSON parser.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>

#include "safetensors-json.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  SafetensorsFile *f = NULL;
  char *err = NULL;
  if (lm_safetensors_open_memory (data, size, &f, &err) == LM_OK)
    {
      for (size_t i = 0; i < lm_safetensors_n_tensors (f); i++)
        {
          const SafetensorsTensor *t = lm_safetensors_tensor (f, i);
          if (lm_safetensors_find (f, t->name) == NULL)
            abort ();   /* every listed tensor can be found by name */
          if (t->n_elements > 0 && t->n_elements < (1u << 20))
            {
              float *buf = malloc (t->n_elements * sizeof *buf);
              if (buf)
                lm_safetensors_read_f32 (t, buf);
              free (buf);
            }
        }
      lm_safetensors_metadata (f, "format");
      lm_safetensors_close (f);
    }
  free (err);
  /* The JSON parser on its own, over the raw bytes. */
  LmJson *j = lm_json_parse ((const char *) data, size, NULL);
  lm_json_free (j);
  return 0;
}

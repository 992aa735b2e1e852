/* lora-peft.c: Hugging Face PEFT LoRA adapters (FORMAT.md 7.3).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "lora-private.h"

LmStatus
lm_lora_load_peft (const LmModel *model, const char *dir, float user_scale, LmLora **out,
                   char **error_out)
{
  return lm_fail (error_out, LM_ERR_UNSUPPORTED, "PEFT adapters are not supported yet");
}

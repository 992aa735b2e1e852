/* test-lora-util.h: writes small LoRA adapter files for the rejection tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdint.h>

/* A llama.cpp-style GGUF LoRA (qwen35moe, alpha 16) adapting @target with
 * A: rank x d_in and B: d_out x rank, filled with small values. */
void write_lora_gguf (const char *path, const char *target, uint32_t d_in, uint32_t rank,
                      uint32_t d_out);
/* A PEFT folder in @dir (adapter_config.json r = @rank, alpha 16, and
 * adapter_model.safetensors) adapting HF module path @module ("layers.3.self_attn.o_proj"). */
void write_lora_peft (const char *dir, const char *module, uint32_t d_in, uint32_t rank,
                      uint32_t d_out);

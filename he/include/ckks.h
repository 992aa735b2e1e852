/* ckks.h: public API of libtensafe-he, an RNS-CKKS engine for HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Plain C17 + OpenSSL; no GLib. Every function returns a CkksStatus (or a
 * plain value for getters); ckks_status_message() turns a status into text.
 *
 *   ckks-params.h   parameters, presets, security bound, contexts
 *   ckks-cipher.h   plaintexts, ciphertexts, encoding, key-free operations
 *   ckks-keys.h     secret/public keys, encryption, decryption, sealing
 *   ckks-serial.h   versioned binary formats (params, pk, ct, pt)
 *   ckks-helora.h   the HE-LoRA packed product (client and evaluator sides)
 *
 * An evaluator that must hold no secret-key code includes ckks-params.h,
 * ckks-cipher.h, ckks-serial.h and ckks-helora.h only and calls no function
 * of ckks-keys.h; a static link then pulls no secret-key object.
 */
#pragma once

#include "ckks-status.h"
#include "ckks-params.h"
#include "ckks-cipher.h"
#include "ckks-keys.h"
#include "ckks-helora.h"
#include "ckks-serial.h"

/* helora-seal-bench.cpp: the HE-LoRA token of `tensafe-cli bench he` on Microsoft SEAL.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The same work as our token (d = 2048, r = 32, |h| <= 1, |A| <= 0.1, a
 * fresh random h per token, one thread), done the cheapest correct way SEAL
 * offers: coefficient moduli {60, 40, 40, 60}, scale 2^40, h copied into
 * every d-slot block of one ciphertext, A packed row by row into r / copies
 * plaintexts (encoded once, as an evaluator holds its adapter), then per
 * token
 *   encode h, encrypt (secret or public key),
 *   one ct x pt per packed plaintext,
 *   rescale and drop to one limb (so decryption and decoding are cheap),
 *   decrypt, decode and sum each block -> u.
 * No rotations: like ours, the key holder sums the blocks.
 *
 *   helora-seal-bench --ring-degree N --encrypt sk|pk [--runs R] [--clock wall|thread]
 *
 * prints one JSON object: the median and min ms of each stage and of the
 * token, and max |u - A h| against a double-precision product. Exit status
 * 2 for bad arguments, 1 when SEAL refuses.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <seal/seal.h>

static_assert (SEAL_VERSION_MAJOR >= 4, "SEAL 4.0 or newer");

namespace {

constexpr std::size_t kD = 2048;
constexpr std::size_t kR = 32;
constexpr int kWarmup = 5;

enum Stage { ENCODE, ENCRYPT, MULTIPLY, RESCALE, DECRYPT, DECODE, TOTAL, N_STAGES };
const char *const kStageNames[N_STAGES] = { "encode", "encrypt", "multiply", "rescale",
                                            "decrypt", "decode", "total" };

struct Options {
  std::size_t ring_degree = 16384;
  bool public_key = false;
  int runs = 50;
  clockid_t clock = CLOCK_MONOTONIC;
};

double
now_ms (clockid_t clock)
{
  timespec ts;
  clock_gettime (clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

bool
parse_options (int argc, char **argv, Options *o)
{
  for (int i = 1; i < argc; i++)
    {
      const char *arg = argv[i];
      const char *value = i + 1 < argc ? argv[i + 1] : nullptr;
      if (value == nullptr)
        return false;
      if (std::strcmp (arg, "--ring-degree") == 0)
        o->ring_degree = std::strtoul (value, nullptr, 10);
      else if (std::strcmp (arg, "--encrypt") == 0 && std::strcmp (value, "sk") == 0)
        o->public_key = false;
      else if (std::strcmp (arg, "--encrypt") == 0 && std::strcmp (value, "pk") == 0)
        o->public_key = true;
      else if (std::strcmp (arg, "--runs") == 0)
        o->runs = std::atoi (value);
      else if (std::strcmp (arg, "--clock") == 0 && std::strcmp (value, "wall") == 0)
        o->clock = CLOCK_MONOTONIC;
      else if (std::strcmp (arg, "--clock") == 0 && std::strcmp (value, "thread") == 0)
        o->clock = CLOCK_THREAD_CPUTIME_ID;
      else
        return false;
      i++;
    }
  /* Each d-slot block holds one copy of h: N / 2 slots must hold whole
   * blocks and r rows must fill whole plaintexts. */
  std::size_t slots = o->ring_degree / 2;
  return o->runs >= 1 && o->ring_degree >= 2 * kD && slots % kD == 0 && kR % (slots / kD) == 0;
}

/* Everything that does not change from token to token: keys, the packed
 * adapter, the tools. */
struct Setup {
  seal::SEALContext context;
  seal::KeyGenerator keygen;
  seal::PublicKey public_key;
  seal::Encryptor encryptor;
  seal::Evaluator evaluator;
  seal::Decryptor decryptor;
  seal::CKKSEncoder encoder;
  double scale;
  std::size_t copies;
  std::vector<std::vector<double>> a;       /* r rows of d */
  std::vector<seal::Plaintext> packed_a;    /* r / copies plaintexts */

  static seal::EncryptionParameters
  parameters (std::size_t n)
  {
    seal::EncryptionParameters p (seal::scheme_type::ckks);
    p.set_poly_modulus_degree (n);
    p.set_coeff_modulus (seal::CoeffModulus::Create (n, { 60, 40, 40, 60 }));
    return p;
  }

  Setup (std::size_t n, std::mt19937_64 &rng)
    : context (parameters (n), true, seal::sec_level_type::tc128), keygen (context),
      public_key (make_public_key (keygen)),
      encryptor (context, public_key, keygen.secret_key ()), evaluator (context),
      decryptor (context, keygen.secret_key ()), encoder (context), scale (std::pow (2.0, 40)),
      copies (encoder.slot_count () / kD)
  {
    std::uniform_real_distribution<double> weight (-0.1, 0.1);
    a.assign (kR, std::vector<double> (kD));
    for (auto &row : a)
      for (double &x : row)
        x = weight (rng);
    for (std::size_t first = 0; first < kR; first += copies)
      {
        std::vector<double> slots (encoder.slot_count ());
        for (std::size_t c = 0; c < copies; c++)
          std::copy (a[first + c].begin (), a[first + c].end (), slots.begin () + c * kD);
        packed_a.emplace_back ();
        encoder.encode (slots, scale, packed_a.back ());
      }
  }

  static seal::PublicKey
  make_public_key (seal::KeyGenerator &kg)
  {
    seal::PublicKey pk;
    kg.create_public_key (pk);
    return pk;
  }
};

/* One token; adds each stage's ms to @t and returns max |u - A h|. */
double
run_token (Setup &s, const Options &o, std::mt19937_64 &rng, double t[N_STAGES])
{
  std::uniform_real_distribution<double> unit (-1.0, 1.0);
  std::vector<double> h (kD), slots (s.encoder.slot_count ());
  for (double &x : h)
    x = unit (rng);
  for (std::size_t c = 0; c < s.copies; c++)
    std::copy (h.begin (), h.end (), slots.begin () + c * kD);

  seal::Plaintext pt;
  seal::Ciphertext ct;
  std::vector<seal::Ciphertext> products (s.packed_a.size ());
  std::vector<double> u (kR, 0.0), decoded;

  double start = now_ms (o.clock), mark = start, at;
  auto lap = [&] (Stage stage) { at = now_ms (o.clock); t[stage] = at - mark; mark = at; };

  s.encoder.encode (slots, s.scale, pt);
  lap (ENCODE);
  if (o.public_key)
    s.encryptor.encrypt (pt, ct);
  else
    s.encryptor.encrypt_symmetric (pt, ct);
  lap (ENCRYPT);
  for (std::size_t j = 0; j < products.size (); j++)
    s.evaluator.multiply_plain (ct, s.packed_a[j], products[j]);
  lap (MULTIPLY);
  for (auto &product : products)
    {
      s.evaluator.rescale_to_next_inplace (product);
      s.evaluator.mod_switch_to_next_inplace (product);
    }
  lap (RESCALE);
  std::vector<seal::Plaintext> plains (products.size ());
  for (std::size_t j = 0; j < products.size (); j++)
    s.decryptor.decrypt (products[j], plains[j]);
  lap (DECRYPT);
  for (std::size_t j = 0; j < plains.size (); j++)
    {
      s.encoder.decode (plains[j], decoded);
      for (std::size_t c = 0; c < s.copies; c++)
        {
          double sum = 0.0;
          for (std::size_t i = 0; i < kD; i++)
            sum += decoded[c * kD + i];
          u[j * s.copies + c] = sum;
        }
    }
  lap (DECODE);
  t[TOTAL] = mark - start;

  double max_error = 0.0;
  for (std::size_t row = 0; row < kR; row++)
    {
      double exact = 0.0;
      for (std::size_t i = 0; i < kD; i++)
        exact += s.a[row][i] * h[i];
      max_error = std::max (max_error, std::fabs (u[row] - exact));
    }
  return max_error;
}

void
print_stages (const char *name, const std::vector<double> (&times)[N_STAGES], bool use_min)
{
  std::printf ("\"%s\": {", name);
  for (int k = 0; k < N_STAGES; k++)
    {
      std::vector<double> v = times[k];
      std::sort (v.begin (), v.end ());
      double value = use_min ? v.front () : v[v.size () / 2];
      std::printf ("\"%s\": %.4f%s", kStageNames[k], value, k + 1 < N_STAGES ? ", " : "");
    }
  std::printf ("}");
}

}  // namespace

int
main (int argc, char **argv)
{
  Options o;
  if (!parse_options (argc, argv, &o))
    {
      std::fprintf (stderr, "usage: helora-seal-bench --ring-degree N --encrypt sk|pk "
                            "[--runs R] [--clock wall|thread]\n"
                            "  N: 4096 .. 65536, a power of two; R >= 1\n");
      return 2;
    }
  try
    {
      std::mt19937_64 rng (20261127);
      Setup s (o.ring_degree, rng);
      std::vector<double> times[N_STAGES];
      double max_error = 0.0, t[N_STAGES];
      for (int i = -kWarmup; i < o.runs; i++)
        {
          double error = run_token (s, o, rng, t);
          if (i < 0)
            continue;
          max_error = std::max (max_error, error);
          for (int k = 0; k < N_STAGES; k++)
            times[k].push_back (t[k]);
        }
      std::printf ("{\"library\": \"SEAL %d.%d.%d\", \"hexl\": %s, \"ring_degree\": %zu, "
                   "\"encrypt\": \"%s\", \"d\": %zu, \"r\": %zu, \"runs\": %d, ",
                   SEAL_VERSION_MAJOR, SEAL_VERSION_MINOR, SEAL_VERSION_PATCH,
#ifdef SEAL_USE_INTEL_HEXL
                   "true",
#else
                   "false",
#endif
                   o.ring_degree, o.public_key ? "pk" : "sk", kD, kR, o.runs);
      print_stages ("median_ms", times, false);
      std::printf (", ");
      print_stages ("min_ms", times, true);
      std::printf (", \"max_abs_error\": %.3g}\n", max_error);
    }
  catch (const std::exception &e)
    {
      std::fprintf (stderr, "helora-seal-bench: SEAL: %s\n", e.what ());
      return 1;
    }
  return 0;
}

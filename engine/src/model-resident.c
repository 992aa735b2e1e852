/* model-resident.c: the weights decode reads whole for every token, copied
 * out of the file into anonymous memory in transparent huge pages.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A decode step streams these weights once per token. Through the file
 * mapping, in 4 KiB pages, the stream takes a TLB miss and a page walk every
 * 4 KiB; in 2 MiB pages the same kernels read 10-20 % faster (the output head
 * of Qwen2.5-Coder-0.5B, Q8_0 151936x896, one thread, Zen 5: 28.5-31.9 ->
 * 34.7-37.0 GB/s). The page cache can hold a file in 2 MiB folios as well,
 * but only where the file system supports them and only for pages not yet
 * cached (a file just downloaded or copied sits in 4 KiB pages), so the
 * engine does not count on it.
 *
 * Not copied: the token embeddings (decode reads one row per token) and the
 * experts of MoE layers (a few per token), which stay mapped; so the process
 * holds no more memory than decode touches anyway. The copy is read with
 * pread(), not through the mapping, so its pages are not also mapped into
 * the process. The copy is anonymous memory, which the kernel cannot drop
 * under pressure the way it drops clean file pages: it is made only when
 * it takes at most half of the memory available, and TENSAFE_WEIGHTS=mapped
 * keeps every weight in the mapping. Without transparent huge pages there
 * is nothing to gain and nothing is copied.
 *
 * The copy is made when the first session that runs a layer or the head on
 * the CPU is created, not at load: a session with every layer on the GPU
 * reads the host weights once, to upload them, and a copy would only hold
 * the dense part of the model (1.2 GB for Qwen3.5-35B-A3B in Q4_K_M) in
 * memory that cannot be dropped. It is read from the descriptor opened at
 * load, so a file replaced on disk meanwhile does not mix in. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model-private.h"

#define HUGE_PAGE ((size_t) 2 << 20)
/* Each tensor starts on its own cache line. */
#define TENSOR_ALIGN ((size_t) 64)

static size_t
round_up (size_t n, size_t to)
{
  return (n + to - 1) / to * to;
}

/* False where the kernel's transparent huge pages are off ("[never]"). */
static bool
huge_pages_usable (void)
{
  FILE *f = fopen ("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == NULL)
    return false;
  char line[128] = "";
  bool usable = fgets (line, sizeof line, f) != NULL && strstr (line, "[never]") == NULL;
  fclose (f);
  return usable;
}

static bool
copy_wanted (void)
{
  const char *mode = getenv ("TENSAFE_WEIGHTS");
  return !(mode != NULL && strcmp (mode, "mapped") == 0) && huge_pages_usable ();
}

/* The kernel's estimate of the memory available without swapping, in
 * bytes; SIZE_MAX where it gives none. */
static size_t
memory_available (void)
{
  FILE *f = fopen ("/proc/meminfo", "r");
  if (f == NULL)
    return SIZE_MAX;
  char line[128];
  unsigned long long kib = 0;
  bool found = false;
  while (!found && fgets (line, sizeof line, f) != NULL)
    found = sscanf (line, "MemAvailable: %llu kB", &kib) == 1;
  fclose (f);
  return found ? (size_t) kib * 1024 : SIZE_MAX;
}

/* The dense weights of @m with data, into @list (room for all of them). */
static size_t
collect (LmModel *m, LmWeight **list)
{
  size_t n = 0;
  if (m->output.data != NULL)
    list[n++] = &m->output;
  for (uint32_t il = 0; il < m->info.n_layer; il++)
    {
      LmWeight *dense[] = LM_LAYER_DENSE_WEIGHTS (&m->layers[il]);
      for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++)
        if (dense[i]->data != NULL)
          list[n++] = dense[i];
    }
  return n;
}

static size_t
bytes_of (const LmWeight *w)
{
  return w->mat_stride * w->n_mat;
}

/* @size bytes at @offset of @fd into @dst; errno on failure. */
static bool
read_fully (int fd, void *dst, size_t size, uint64_t offset)
{
  size_t got = 0;
  while (got < size)
    {
      ssize_t n = pread (fd, (uint8_t *) dst + got, size - got, (off_t) (offset + got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          if (n == 0)
            errno = EIO;   /* the file shrank under us */
          return false;
        }
      got += (size_t) n;
    }
  return true;
}

/* A region of @size bytes (a multiple of HUGE_PAGE) starting on a huge page,
 * or NULL. */
static uint8_t *
map_aligned (size_t size)
{
  uint8_t *raw = mmap (NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return NULL;
  uint8_t *start = (uint8_t *) round_up ((uintptr_t) raw, HUGE_PAGE);
  if (start > raw)
    munmap (raw, (size_t) (start - raw));
  if (start + size < raw + size + HUGE_PAGE)
    munmap (start + size, (size_t) (raw + size + HUGE_PAGE - (start + size)));
  madvise (start, size, MADV_HUGEPAGE);
  return start;
}

/* Reads every weight of @list into @region, in order, and records where. */
static LmStatus
read_all (int fd, const GgufFile *gguf, LmWeight **list, size_t n, uint8_t *region,
          const void **placed, const char *path, char **error_out)
{
  size_t at = 0;
  for (size_t i = 0; i < n; i++)
    {
      uint64_t offset;
      if (!lm_gguf_file_offset (gguf, list[i]->data, &offset))
        return LM_ERR_INVALID_ARGUMENT;
      if (!read_fully (fd, region + at, bytes_of (list[i]), offset))
        return lm_fail (error_out, LM_ERR_IO, "cannot read %s: %s", path, strerror (errno));
      placed[i] = region + at;
      at += round_up (bytes_of (list[i]), TENSOR_ALIGN);
    }
  return LM_OK;
}

static LmStatus
make_resident (LmModel *m, char **error_out)
{
  const char *path = m->path;
  int fd = m->fd;
  if (fd < 0 || !copy_wanted ())
    return LM_OK;
  LmWeight **list = calloc (1 + (size_t) m->info.n_layer * LM_LAYER_DENSE_COUNT, sizeof *list);
  const void **placed = calloc (1 + (size_t) m->info.n_layer * LM_LAYER_DENSE_COUNT,
                                sizeof *placed);
  LmStatus st = LM_OK;
  uint8_t *region = NULL;
  size_t n = 0, total = 0;
  if (list == NULL || placed == NULL)
    goto out;   /* an optimisation: without memory for it, the mapping serves */
  n = collect (m, list);
  for (size_t i = 0; i < n; i++)
    total += round_up (bytes_of (list[i]), TENSOR_ALIGN);
  total = round_up (total, HUGE_PAGE);
  /* Anonymous memory cannot be dropped under pressure as file pages can:
   * where the copy would take more than half of what is available, the
   * mapping serves, and the system keeps its slack. */
  if (n == 0 || total > memory_available () / 2 || (region = map_aligned (total)) == NULL)
    goto out;
  st = read_all (fd, m->gguf, list, n, region, placed, path, error_out);
  if (st != LM_OK)
    {
      munmap (region, total);
      region = NULL;
      /* a weight outside the file mapping: nothing to copy, no error */
      if (st == LM_ERR_INVALID_ARGUMENT)
        st = LM_OK;
      goto out;
    }
  /* Tied embeddings: the token lookups read the head's copy. */
  if (m->info.tied_embeddings)
    m->tok_embd.data = placed[0];
  for (size_t i = 0; i < n; i++)
    list[i]->data = placed[i];
  m->resident = region;
  m->resident_bytes = total;
out:
  free (list);
  free (placed);
  return st;
}

LmStatus
lm_model_host_weights_needed (const LmModel *model, char **error_out)
{
  LmModel *m = (LmModel *) model;   /* a cache: see model-private.h */
  LmStatus st = LM_OK;
  pthread_mutex_lock (&m->resident_lock);
  if (!m->resident_decided)
    {
      /* no upload to the GPU reads the pointers while they move */
      pthread_mutex_lock (&m->gpu_lock);
      st = make_resident (m, error_out);
      pthread_mutex_unlock (&m->gpu_lock);
      m->resident_decided = st == LM_OK;
    }
  pthread_mutex_unlock (&m->resident_lock);
  return st;
}

void
lm_model_free_resident (LmModel *m)
{
  if (m->resident != NULL)
    munmap (m->resident, m->resident_bytes);
  m->resident = NULL;
  m->resident_bytes = 0;
}

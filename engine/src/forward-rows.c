/* forward-rows.c: several matrix-vector products of one decode step in one pool job.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "forward-rows.h"

#define ROW_TILE 16
#define TASKS_PER_THREAD 4
/* Groups with more weight bytes get tasks of about this size, so that the
 * thread finishing last is never more than a short task behind. */
#define TASK_BYTES (512 * 1024)
#define MAX_FUSED_N_IN 16384   /* longer rows: lm_matvec sums them in segments */
#define ACT_ALIGN 64

typedef LmRowsJob RowsJob;

size_t
lm_rows_scratch_bytes (size_t max_n_in)
{
  /* f32 activations are the largest form (4 bytes a value), plus alignment. */
  return LM_ROWS_MAX_ITEMS * (max_n_in * sizeof (float) + ACT_ALIGN);
}

static void
rows_task_cb (void *ctx, uint32_t task)
{
  const RowsJob *job = ctx;
  LmSession *s = job->s;
  uint32_t t0 = task * job->tiles_per_task;
  uint32_t t1 = t0 + job->tiles_per_task < job->n_tiles ? t0 + job->tiles_per_task : job->n_tiles;
  uint32_t i = 0;
  /* the task's tiles of one item in one call: the row kernels prepare the
   * activation once a call (a 16-row tile of an 896-wide Q5_0 matrix spent
   * 7 % of its instructions on it) */
  for (uint32_t t = t0, t_end; t < t1; t = t_end)
    {
      while (t >= job->first_tile[i + 1])
        i++;
      t_end = t1 < job->first_tile[i + 1] ? t1 : job->first_tile[i + 1];
      const LmRowsItem *it = &job->items[i];
      const LmWeight *w = it->w;
      uint32_t r0 = (t - job->first_tile[i]) * ROW_TILE;
      uint32_t r1 = (t_end - job->first_tile[i]) * ROW_TILE;
      uint32_t rows = (w->n_out < r1 ? w->n_out : r1) - r0;
      size_t row_bytes = lm_row_bytes (w->type, w->n_in);
      const char *rows_ptr = (const char *) w->data + (size_t) it->mat * w->mat_stride
                             + (size_t) r0 * row_bytes;
      (job->alone ? lm_dot_rows_alone : lm_dot_rows) (s->kernels, w->type, s->act_mode,
                                                      rows_ptr, row_bytes, rows, job->act[i],
                                                      w->n_in, it->y + r0);
    }
}

/* Converts each item's input to the activation form its weight type takes,
 * once per distinct (input, form). */
static void
prepare_acts (RowsJob *job)
{
  LmSession *s = job->s;
  size_t used = 0;
  for (uint32_t i = 0; i < job->n_items; i++)
    {
      const LmRowsItem *it = &job->items[i];
      LmTensorType form = lm_act_type (it->w->type, s->act_mode);
      job->act[i] = NULL;
      if (form == LM_TYPE_F32)
        job->act[i] = it->x;
      for (uint32_t j = 0; j < i && job->act[i] == NULL; j++)
        if (job->items[j].x == it->x && lm_act_type (job->items[j].w->type, s->act_mode) == form)
          job->act[i] = job->act[j];
      if (job->act[i] != NULL)
        continue;
      uint8_t *act = s->act_buf + used;
      lm_quantize_act (s->kernels, it->w->type, s->act_mode, it->x, act, it->w->n_in);
      used += (lm_act_row_bytes (it->w->type, s->act_mode, it->w->n_in) + ACT_ALIGN - 1)
              / ACT_ALIGN * ACT_ALIGN;
      job->act[i] = act;
    }
}

/* Tiles, activations and tasks of one job; false when it has nothing to do. */
static bool
setup_group (RowsJob *job, LmSession *s, const LmRowsItem *items, uint32_t n_items,
             uint32_t *n_tasks)
{
  *job = (RowsJob) { .s = s, .items = items, .n_items = n_items };
  for (uint32_t i = 0; i < n_items; i++)
    job->first_tile[i + 1] = job->first_tile[i] + (items[i].w->n_out + ROW_TILE - 1) / ROW_TILE;
  job->n_tiles = job->first_tile[n_items];
  prepare_acts (job);
  uint32_t threads = (uint32_t) lm_thread_pool_size (s->pool);
  uint32_t tasks = threads <= 1 ? 1 : threads * TASKS_PER_THREAD;
  size_t bytes = 0;
  for (uint32_t i = 0; i < n_items; i++)
    bytes += lm_row_bytes (items[i].w->type, items[i].w->n_in) * items[i].w->n_out;
  if (threads > 1 && bytes / TASK_BYTES > tasks)
    tasks = (uint32_t) (bytes / TASK_BYTES);
  job->tiles_per_task = (job->n_tiles + tasks - 1) / tasks;
  if (job->tiles_per_task == 0)
    return false;
  *n_tasks = (job->n_tiles + job->tiles_per_task - 1) / job->tiles_per_task;
  job->alone = *n_tasks == 1;
  return true;
}

static void
run_group (LmSession *s, const LmRowsItem *items, uint32_t n_items)
{
  RowsJob job;
  uint32_t tasks;
  if (setup_group (&job, s, items, n_items, &tasks))
    lm_parallel_for (s->pool, tasks, rows_task_cb, &job);
}

static void
rows_task_index (void *ctx, int index, int n)
{
  (void) n;
  rows_task_cb (ctx, (uint32_t) index);
}

bool
lm_rows_fit_one_job (const LmSession *s, const LmRowsItem *items, uint32_t n_items)
{
  if (s->pool == NULL || n_items > LM_ROWS_MAX_ITEMS)
    return false;
  for (uint32_t i = 0; i < n_items; i++)
    if (items[i].w->n_in > MAX_FUSED_N_IN)
      return false;
  return true;
}

void
lm_rows_start (LmSession *s, LmRowsJob *job, const LmRowsItem *items, uint32_t n_items)
{
  uint32_t tasks = 0;   /* stays 0 when there is nothing to do */
  setup_group (job, s, items, n_items, &tasks);
  /* a lone task runs on a worker here, with the many-thread kernel */
  job->alone = false;
  lm_thread_pool_start (s->pool, rows_task_index, job, (int) tasks);
}

void
lm_rows_finish (LmSession *s, LmRowsJob *job)
{
  (void) job;
  lm_thread_pool_finish (s->pool);
}

void
lm_rows_run (LmSession *s, const LmRowsItem *items, uint32_t n_items)
{
  LmRowsItem group[LM_ROWS_MAX_ITEMS];
  uint32_t n = 0;
  for (uint32_t i = 0; i < n_items; i++)
    {
      if (items[i].w->n_in > MAX_FUSED_N_IN)
        {
          lm_linear (s, items[i].w, items[i].mat, items[i].x, 1, items[i].y);
          continue;
        }
      group[n++] = items[i];
      if (n == LM_ROWS_MAX_ITEMS)
        {
          run_group (s, group, n);
          n = 0;
        }
    }
  if (n > 0)
    run_group (s, group, n);
}

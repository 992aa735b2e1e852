/* ts-chat-panes.c: the chat's two panes, side by side when there is room, else one above the other.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The choice is made where the width is known, in size_allocate, and the
 * minimum width asked for is that of the stacked panes whatever the
 * current arrangement: so a narrow window never has to grow before the
 * panes can stack, and switching never changes what the window may be.
 */
#include "ts-chat-panes.h"

struct _TsChatPanes
{
  GtkWidget parent_instance;

  int breakpoint;
  GtkOrientation orientation;
};

G_DEFINE_FINAL_TYPE (TsChatPanes, ts_chat_panes, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_BREAKPOINT,
  PROP_ORIENTATION,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* Each pane's share of the width side by side: the first gets the floor. */
#define HALF(width) ((width) / 2)
/* Stacked, each pane keeps this much height above its minimum for its
 * messages (a pane's minimum leaves them almost none: its chart and footer
 * take the rest); the page scrolls when the window is shorter. */
#define STACKED_MESSAGE_ROOM 160

/* The widest of the panes' minimum widths. */
static int
widest_minimum (TsChatPanes *self)
{
  int widest = 0;

  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self)); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      int min = 0;

      if (!gtk_widget_should_layout (child))
        continue;
      gtk_widget_measure (child, GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
      widest = MAX (widest, min);
    }
  return widest;
}

/* Stacked below the breakpoint, or when half the width is less than a
 * pane needs; unknown widths (-1) count as narrow. */
static gboolean
stacks_at (TsChatPanes *self, int width)
{
  return width < self->breakpoint || HALF (width) < widest_minimum (self);
}

static void
measure_width (TsChatPanes *self, int *minimum, int *natural)
{
  *minimum = *natural = 0;
  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self)); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      int min = 0, nat = 0;

      if (!gtk_widget_should_layout (child))
        continue;
      gtk_widget_measure (child, GTK_ORIENTATION_HORIZONTAL, -1, &min, &nat, NULL, NULL);
      *minimum = MAX (*minimum, min);    /* stacked */
      *natural += nat;                   /* side by side */
    }
  *natural = MAX (*natural, *minimum);
}

/* Heights for @width: one above the other they add up; side by side, each
 * pane half as wide, the taller counts. */
static void
measure_height (TsChatPanes *self, int width, int *minimum, int *natural)
{
  gboolean stacked = stacks_at (self, width);
  int first_half = HALF (width);

  *minimum = *natural = 0;
  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self)); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      int min = 0, nat = 0;
      int for_width = stacked ? width : child == gtk_widget_get_first_child (GTK_WIDGET (self))
                                        ? first_half : width - first_half;

      if (!gtk_widget_should_layout (child))
        continue;
      gtk_widget_measure (child, GTK_ORIENTATION_VERTICAL, for_width, &min, &nat, NULL, NULL);
      if (stacked)
        *minimum += min + STACKED_MESSAGE_ROOM, *natural += MAX (nat, min + STACKED_MESSAGE_ROOM);
      else
        *minimum = MAX (*minimum, min), *natural = MAX (*natural, nat);
    }
}

static void
ts_chat_panes_measure (GtkWidget *widget, GtkOrientation orientation, int for_size,
                       int *minimum, int *natural, int *min_baseline, int *nat_baseline)
{
  TsChatPanes *self = TS_CHAT_PANES (widget);

  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    measure_width (self, minimum, natural);
  else
    measure_height (self, for_size, minimum, natural);
}

/* The panes' heights one above the other: halves when both fit in one, else
 * each at least its minimum and room for its messages. */
static void
stacked_heights (GtkWidget *first, GtkWidget *second, int width, int height, int *first_height)
{
  int min_first = 0, min_second = 0;

  gtk_widget_measure (first, GTK_ORIENTATION_VERTICAL, width, &min_first, NULL, NULL, NULL);
  gtk_widget_measure (second, GTK_ORIENTATION_VERTICAL, width, &min_second, NULL, NULL, NULL);
  min_first += STACKED_MESSAGE_ROOM;
  min_second += STACKED_MESSAGE_ROOM;
  *first_height = MAX (HALF (height), min_first);
  if (height - *first_height < min_second)
    *first_height = MAX (height - min_second, min_first);
}

static void
allocate_pair (TsChatPanes *self, GtkWidget *first, GtkWidget *second, int width, int height)
{
  int first_height;

  if (self->orientation == GTK_ORIENTATION_HORIZONTAL)
    {
      gtk_widget_size_allocate (first, &(GtkAllocation) { 0, 0, HALF (width), height }, -1);
      gtk_widget_size_allocate (second, &(GtkAllocation) { HALF (width), 0, width - HALF (width),
                                                           height }, -1);
      return;
    }
  stacked_heights (first, second, width, height, &first_height);
  gtk_widget_size_allocate (first, &(GtkAllocation) { 0, 0, width, first_height }, -1);
  gtk_widget_size_allocate (second, &(GtkAllocation) { 0, first_height, width,
                                                       MAX (height - first_height, 0) }, -1);
}

/* The panes' style says how they stand (the HE pane's dividing line). */
static gboolean
notify_orientation_idle (gpointer data)
{
  TsChatPanes *self = data;
  gboolean stacked = self->orientation == GTK_ORIENTATION_VERTICAL;

  if (stacked)
    gtk_widget_add_css_class (GTK_WIDGET (self), "stacked");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self), "stacked");
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ORIENTATION]);
  return G_SOURCE_REMOVE;
}

static void
ts_chat_panes_size_allocate (GtkWidget *widget, int width, int height, int baseline)
{
  TsChatPanes *self = TS_CHAT_PANES (widget);
  GtkOrientation orientation = stacks_at (self, width) ? GTK_ORIENTATION_VERTICAL
                                                       : GTK_ORIENTATION_HORIZONTAL;
  GtkWidget *first = gtk_widget_get_first_child (widget);
  GtkWidget *second = first != NULL ? gtk_widget_get_next_sibling (first) : NULL;

  if (orientation != self->orientation)
    {
      self->orientation = orientation;
      /* not during the allocation: a handler may change sizes */
      g_idle_add_full (G_PRIORITY_HIGH_IDLE, notify_orientation_idle, g_object_ref (self),
                       g_object_unref);
    }
  if (first != NULL && second != NULL)
    allocate_pair (self, first, second, width, height);
  else if (first != NULL)
    gtk_widget_size_allocate (first, &(GtkAllocation) { 0, 0, width, height }, -1);
}

static GtkSizeRequestMode
ts_chat_panes_get_request_mode (GtkWidget *widget)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

GtkOrientation
ts_chat_panes_get_orientation (TsChatPanes *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANES (self), GTK_ORIENTATION_HORIZONTAL);
  return self->orientation;
}

int
ts_chat_panes_get_breakpoint (TsChatPanes *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANES (self), 0);
  return self->breakpoint;
}

void
ts_chat_panes_set_breakpoint (TsChatPanes *self, int breakpoint)
{
  g_return_if_fail (TS_IS_CHAT_PANES (self));
  g_return_if_fail (breakpoint >= 0);

  if (self->breakpoint == breakpoint)
    return;
  self->breakpoint = breakpoint;
  gtk_widget_queue_allocate (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BREAKPOINT]);
}

static void
ts_chat_panes_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsChatPanes *self = TS_CHAT_PANES (object);

  switch (prop_id)
    {
    case PROP_BREAKPOINT:
      g_value_set_int (value, self->breakpoint);
      break;
    case PROP_ORIENTATION:
      g_value_set_enum (value, self->orientation);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_panes_set_property (GObject *object, guint prop_id, const GValue *value,
                            GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_BREAKPOINT:
      ts_chat_panes_set_breakpoint (TS_CHAT_PANES (object), g_value_get_int (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_panes_dispose (GObject *object)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (object))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (ts_chat_panes_parent_class)->dispose (object);
}

static void
ts_chat_panes_class_init (TsChatPanesClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_chat_panes_get_property;
  object_class->set_property = ts_chat_panes_set_property;
  object_class->dispose = ts_chat_panes_dispose;
  widget_class->measure = ts_chat_panes_measure;
  widget_class->size_allocate = ts_chat_panes_size_allocate;
  widget_class->get_request_mode = ts_chat_panes_get_request_mode;
  properties[PROP_BREAKPOINT] =
    g_param_spec_int ("breakpoint", NULL, NULL, 0, G_MAXINT, 640,
                      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_ORIENTATION] =
    g_param_spec_enum ("orientation", NULL, NULL, GTK_TYPE_ORIENTATION,
                       GTK_ORIENTATION_HORIZONTAL,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  gtk_widget_class_set_css_name (widget_class, "ts-chat-panes");
}

static void
ts_chat_panes_init (TsChatPanes *self)
{
  self->breakpoint = 640;
  self->orientation = GTK_ORIENTATION_HORIZONTAL;
}

/* ts-prompt-view.c: the chat's prompt: several lines, Enter sends.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-prompt-view.h"

/* It grows up to this many lines, then scrolls; the page's messages keep
 * the rest of the height. */
#define MAX_LINES 6
/* As high as a GtkEntry with one line of text, and indented as one. */
#define MARGIN_X 9
#define MARGIN_Y 8

struct _TsPromptView
{
  AdwBin parent_instance;

  GtkScrolledWindow *scroller;
  GtkTextView *text_view;
  GtkLabel *placeholder;
  GtkEventController *keys;
  char *text;
  guint scrollbar_idle;
};

G_DEFINE_FINAL_TYPE (TsPromptView, ts_prompt_view, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_PLACEHOLDER_TEXT,
  N_PROPS
};

enum {
  SIGNAL_ACTIVATE,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

static int
text_height (TsPromptView *self, const char *sample)
{
  g_autoptr (PangoLayout) layout = gtk_widget_create_pango_layout (GTK_WIDGET (self->text_view),
                                                                   sample);
  int height = 0;

  pango_layout_get_pixel_size (layout, NULL, &height);
  return height + gtk_text_view_get_top_margin (self->text_view)
         + gtk_text_view_get_bottom_margin (self->text_view);
}

/* The bounds follow the font, which is only known once the view is on
 * screen (and changes with the desktop's font settings). */
static void
update_height_bounds (TsPromptView *self)
{
  GString *lines = g_string_new ("X");

  for (int i = 1; i < MAX_LINES; i++)
    g_string_append (lines, "\nX");
  gtk_scrolled_window_set_min_content_height (self->scroller, -1);
  gtk_scrolled_window_set_max_content_height (self->scroller, text_height (self, lines->str));
  gtk_scrolled_window_set_min_content_height (self->scroller, text_height (self, "X"));
  g_string_free (lines, TRUE);
}

static void
text_view_realize_cb (TsPromptView *self)
{
  GtkSettings *settings = gtk_widget_get_settings (GTK_WIDGET (self->text_view));

  g_signal_connect_object (settings, "notify::gtk-font-name",
                           G_CALLBACK (update_height_bounds), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (settings, "notify::gtk-xft-dpi",
                           G_CALLBACK (update_height_bounds), self, G_CONNECT_SWAPPED);
  update_height_bounds (self);
}

static void
buffer_changed_cb (TsPromptView *self, GtkTextBuffer *buffer)
{
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  g_free (self->text);
  self->text = gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
  gtk_widget_set_visible (GTK_WIDGET (self->placeholder), *self->text == '\0');
}

/* A scroll bar asks for more height than a line (about three): it is
 * there only once the text is longer than the view. */
static gboolean
update_scrollbar_cb (gpointer data)
{
  TsPromptView *self = data;
  GtkAdjustment *v = gtk_scrollable_get_vadjustment (GTK_SCROLLABLE (self->text_view));
  gboolean overflows = gtk_adjustment_get_upper (v) - gtk_adjustment_get_lower (v)
                       > gtk_adjustment_get_page_size (v) + 0.5;

  self->scrollbar_idle = 0;
  gtk_scrolled_window_set_policy (self->scroller, GTK_POLICY_NEVER,
                                  overflows ? GTK_POLICY_AUTOMATIC : GTK_POLICY_EXTERNAL);
  return G_SOURCE_REMOVE;
}

/* The adjustment changes while the view is laid out: showing a scroll bar
 * then would draw it unallocated; it waits for the frame to end. */
static void
vadjustment_changed_cb (TsPromptView *self)
{
  if (self->scrollbar_idle == 0)
    self->scrollbar_idle = g_idle_add (update_scrollbar_cb, self);
}

static gboolean
is_enter (guint keyval)
{
  return keyval == GDK_KEY_Return || keyval == GDK_KEY_KP_Enter || keyval == GDK_KEY_ISO_Enter;
}

static void
insert_newline (TsPromptView *self)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (self->text_view);

  gtk_text_buffer_insert_interactive_at_cursor (buffer, "\n", 1,
                                                gtk_text_view_get_editable (self->text_view));
  gtk_text_view_scroll_mark_onscreen (self->text_view, gtk_text_buffer_get_insert (buffer));
}

/* Runs before the text view's own key handling (capture phase), which
 * would insert a newline for Enter. */
static gboolean
key_pressed_cb (GtkEventControllerKey *keys, guint keyval, guint keycode,
                GdkModifierType state, TsPromptView *self)
{
  GdkEvent *event = gtk_event_controller_get_current_event (GTK_EVENT_CONTROLLER (keys));

  if (!is_enter (keyval))
    return FALSE;
  /* An input method composing a word takes Enter to commit it; it leaves
   * Enter alone otherwise. */
  if (event != NULL && gtk_text_view_im_context_filter_keypress (self->text_view, event))
    return TRUE;
  if ((state & GDK_SHIFT_MASK) && !(state & GDK_CONTROL_MASK))
    insert_newline (self);
  else
    g_signal_emit (self, signals[SIGNAL_ACTIVATE], 0);
  return TRUE;
}

static gboolean
ts_prompt_view_grab_focus (GtkWidget *widget)
{
  return gtk_widget_grab_focus (GTK_WIDGET (TS_PROMPT_VIEW (widget)->text_view));
}

static void
ts_prompt_view_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsPromptView *self = TS_PROMPT_VIEW (object);

  switch (prop_id)
    {
    case PROP_PLACEHOLDER_TEXT:
      g_value_set_string (value, ts_prompt_view_get_placeholder_text (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_prompt_view_set_property (GObject *object, guint prop_id, const GValue *value,
                             GParamSpec *pspec)
{
  TsPromptView *self = TS_PROMPT_VIEW (object);

  switch (prop_id)
    {
    case PROP_PLACEHOLDER_TEXT:
      ts_prompt_view_set_placeholder_text (self, g_value_get_string (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_prompt_view_dispose (GObject *object)
{
  TsPromptView *self = TS_PROMPT_VIEW (object);

  g_clear_handle_id (&self->scrollbar_idle, g_source_remove);
  G_OBJECT_CLASS (ts_prompt_view_parent_class)->dispose (object);
}

static void
ts_prompt_view_finalize (GObject *object)
{
  TsPromptView *self = TS_PROMPT_VIEW (object);

  g_free (self->text);
  G_OBJECT_CLASS (ts_prompt_view_parent_class)->finalize (object);
}

static void
ts_prompt_view_class_init (TsPromptViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_prompt_view_get_property;
  object_class->set_property = ts_prompt_view_set_property;
  object_class->dispose = ts_prompt_view_dispose;
  object_class->finalize = ts_prompt_view_finalize;
  widget_class->grab_focus = ts_prompt_view_grab_focus;
  properties[PROP_PLACEHOLDER_TEXT] =
    g_param_spec_string ("placeholder-text", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  signals[SIGNAL_ACTIVATE] = g_signal_new ("activate", G_TYPE_FROM_CLASS (klass),
                                           G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                           G_TYPE_NONE, 0);
  gtk_widget_class_set_css_name (widget_class, "ts-prompt-view");
}

static void
init_text_view (TsPromptView *self)
{
  self->text_view = GTK_TEXT_VIEW (gtk_text_view_new ());
  gtk_text_view_set_wrap_mode (self->text_view, GTK_WRAP_WORD_CHAR);
  gtk_text_view_set_accepts_tab (self->text_view, FALSE);
  gtk_text_view_set_left_margin (self->text_view, MARGIN_X);
  gtk_text_view_set_right_margin (self->text_view, MARGIN_X);
  gtk_text_view_set_top_margin (self->text_view, MARGIN_Y);
  gtk_text_view_set_bottom_margin (self->text_view, MARGIN_Y);
  /* Screen readers name the text by the view's own label ("Prompt"). */
  gtk_accessible_update_relation (GTK_ACCESSIBLE (self->text_view),
                                  GTK_ACCESSIBLE_RELATION_LABELLED_BY, self, NULL, -1);
  g_signal_connect_swapped (self->text_view, "realize", G_CALLBACK (text_view_realize_cb), self);
  g_signal_connect_swapped (gtk_text_view_get_buffer (self->text_view), "changed",
                            G_CALLBACK (buffer_changed_cb), self);
  self->keys = gtk_event_controller_key_new ();
  gtk_event_controller_set_propagation_phase (self->keys, GTK_PHASE_CAPTURE);
  g_signal_connect (self->keys, "key-pressed", G_CALLBACK (key_pressed_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self->text_view), self->keys);
}

static void
ts_prompt_view_init (TsPromptView *self)
{
  GtkWidget *overlay = gtk_overlay_new ();

  init_text_view (self);
  self->text = g_strdup ("");
  self->scroller = GTK_SCROLLED_WINDOW (gtk_scrolled_window_new ());
  gtk_scrolled_window_set_policy (self->scroller, GTK_POLICY_NEVER, GTK_POLICY_EXTERNAL);
  gtk_scrolled_window_set_propagate_natural_height (self->scroller, TRUE);
  gtk_scrolled_window_set_child (self->scroller, GTK_WIDGET (self->text_view));
  g_signal_connect_swapped (gtk_scrollable_get_vadjustment (GTK_SCROLLABLE (self->text_view)),
                            "changed", G_CALLBACK (vadjustment_changed_cb), self);
  self->placeholder = GTK_LABEL (gtk_label_new (NULL));
  gtk_widget_set_halign (GTK_WIDGET (self->placeholder), GTK_ALIGN_START);
  gtk_widget_set_valign (GTK_WIDGET (self->placeholder), GTK_ALIGN_START);
  gtk_widget_set_margin_start (GTK_WIDGET (self->placeholder), MARGIN_X);
  gtk_widget_set_margin_top (GTK_WIDGET (self->placeholder), MARGIN_Y);
  gtk_widget_set_can_target (GTK_WIDGET (self->placeholder), FALSE);
  gtk_widget_add_css_class (GTK_WIDGET (self->placeholder), "dim-label");
  gtk_overlay_set_child (GTK_OVERLAY (overlay), GTK_WIDGET (self->scroller));
  gtk_overlay_add_overlay (GTK_OVERLAY (overlay), GTK_WIDGET (self->placeholder));
  adw_bin_set_child (ADW_BIN (self), overlay);
}

GtkWidget *
ts_prompt_view_new (void)
{
  return g_object_new (TS_TYPE_PROMPT_VIEW, NULL);
}

const char *
ts_prompt_view_get_text (TsPromptView *self)
{
  g_return_val_if_fail (TS_IS_PROMPT_VIEW (self), NULL);
  return self->text;
}

void
ts_prompt_view_set_text (TsPromptView *self, const char *text)
{
  GtkTextBuffer *buffer;
  GtkTextIter end;

  g_return_if_fail (TS_IS_PROMPT_VIEW (self));
  buffer = gtk_text_view_get_buffer (self->text_view);
  gtk_text_buffer_set_text (buffer, text != NULL ? text : "", -1);
  gtk_text_buffer_get_end_iter (buffer, &end);
  gtk_text_buffer_place_cursor (buffer, &end);
  gtk_text_view_scroll_mark_onscreen (self->text_view, gtk_text_buffer_get_insert (buffer));
}

const char *
ts_prompt_view_get_placeholder_text (TsPromptView *self)
{
  g_return_val_if_fail (TS_IS_PROMPT_VIEW (self), NULL);
  return gtk_label_get_text (self->placeholder);
}

void
ts_prompt_view_set_placeholder_text (TsPromptView *self, const char *text)
{
  g_return_if_fail (TS_IS_PROMPT_VIEW (self));
  if (g_strcmp0 (text, gtk_label_get_text (self->placeholder)) == 0)
    return;
  gtk_label_set_text (self->placeholder, text != NULL ? text : "");
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PLACEHOLDER_TEXT]);
}

GtkTextView *
ts_prompt_view_get_text_view (TsPromptView *self)
{
  g_return_val_if_fail (TS_IS_PROMPT_VIEW (self), NULL);
  return self->text_view;
}

GtkEventController *
ts_prompt_view_get_key_controller (TsPromptView *self)
{
  g_return_val_if_fail (TS_IS_PROMPT_VIEW (self), NULL);
  return self->keys;
}

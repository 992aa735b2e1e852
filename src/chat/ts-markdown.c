/* ts-markdown.c: Markdown of a reply, as blocks and Pango markup.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ts-markdown.h"

/* ---- inline spans ------------------------------------------------------ */

typedef struct {
  const char *end;
  GString *out;
  gboolean in_link;    /* links do not nest */
} Inline;

static void inline_run (Inline *in, const char *p, const char *end);

static gboolean
is_space (const char *p, const char *end)
{
  return p >= end || *p == ' ' || *p == '\t' || *p == '\n';
}

static void
append_escaped_char (GString *out, char c)
{
  if (c == '<')
    g_string_append (out, "&lt;");
  else if (c == '>')
    g_string_append (out, "&gt;");
  else if (c == '&')
    g_string_append (out, "&amp;");
  else if (c == '"')
    g_string_append (out, "&quot;");
  else if ((guchar) c < 0x20 && c != '\t' && c != '\n')
    g_string_append (out, "\357\277\275");  /* U+FFFD: markup has no control characters */
  else
    g_string_append_c (out, c);
}

static void
append_escaped (GString *out, const char *p, const char *end)
{
  for (; p < end; p++)
    append_escaped_char (out, *p);
}

static gsize
run_length (const char *p, const char *end)
{
  const char *q = p;

  while (q < end && *q == *p)
    q++;
  return (gsize) (q - p);
}

/* The next run of exactly @n backticks from @p, or NULL. */
static const char *
find_backticks (const char *p, const char *end, gsize n)
{
  while (p < end)
    {
      gsize len = run_length (p, end);

      if (*p == '`' && len == n)
        return p;
      p += len;
    }
  return NULL;
}

/* The closing run of exactly @n @c for an emphasis opened before @p: one
 * that ends a word (not preceded by a space; for '_', not followed by a
 * letter). Escapes and code spans are skipped. NULL if there is none yet. */
static const char *
find_closer (const char *p, const char *end, char c, gsize n)
{
  while (p < end)
    {
      gsize len = run_length (p, end);

      if (*p == '\\' && p + 1 < end)
        len = 2;
      else if (*p == '`')
        {
          const char *close = find_backticks (p + len, end, len);

          if (close != NULL)
            len = (gsize) (close + len - p);
        }
      else if (*p == c && len == n && !is_space (p - 1, end)
               && (c != '_' || p + len >= end || !g_ascii_isalnum (p[len])))
        return p;
      p += len;
    }
  return NULL;
}

static gboolean
link_allowed (const char *url, gsize len)
{
  static const char *const schemes[] = { "http://", "https://", "mailto:" };

  for (gsize i = 0; i < G_N_ELEMENTS (schemes); i++)
    {
      gsize n = strlen (schemes[i]);

      if (len > n && g_ascii_strncasecmp (url, schemes[i], n) == 0)
        return TRUE;
    }
  return FALSE;
}

static void
append_link_open (GString *out, const char *url, gsize len)
{
  g_string_append (out, "<a href=\"");
  append_escaped (out, url, url + len);
  g_string_append (out, "\">");
}

/* `code`: the span runs to the next run of as many backticks, or to the end
 * while the reply is still arriving. */
static const char *
inline_code (Inline *in, const char *p)
{
  gsize n = run_length (p, in->end);
  const char *close = find_backticks (p + n, in->end, n);
  const char *stop = close != NULL ? close : in->end;

  g_string_append (in->out, "<tt>");
  append_escaped (in->out, p + n, stop);
  g_string_append (in->out, "</tt>");
  return close != NULL ? close + n : in->end;
}

/* *, **, ***, _, __, ___ and ~~ that open a span (followed by a non-space;
 * '_' not inside a word). Returns where the text goes on, or NULL when
 * @p opens nothing. */
static const char *
inline_emphasis (Inline *in, const char *start, const char *p)
{
  static const char *const open[] = { "", "<i>", "<b>", "<b><i>" };
  static const char *const close[] = { "", "</i>", "</b>", "</i></b>" };
  gsize n = run_length (p, in->end);
  const char *inner = p + n, *closer;

  if ((*p == '~' && n != 2) || n > 3 || is_space (inner, in->end))
    return NULL;
  if (*p == '_' && p > start && g_ascii_isalnum (p[-1]))
    return NULL;
  closer = find_closer (inner, in->end, *p, n);
  g_string_append (in->out, *p == '~' ? "<s>" : open[n]);
  inline_run (in, inner, closer != NULL ? closer : in->end);
  g_string_append (in->out, *p == '~' ? "</s>" : close[n]);
  return closer != NULL ? closer + n : in->end;
}

/* The ']' closing the '[' at @p (brackets may nest), or NULL. */
static const char *
find_bracket (const char *p, const char *end)
{
  int depth = 0;

  for (; p < end; p++)
    {
      if (*p == '\\' && p + 1 < end)
        p++;
      else if (*p == '[')
        depth++;
      else if (*p == ']' && --depth == 0)
        return p;
    }
  return NULL;
}

/* [text](url "title"): a link for an allowed scheme, the source as text
 * for any other. NULL while it is incomplete (then '[' is text). */
static const char *
inline_link (Inline *in, const char *p)
{
  const char *bracket = find_bracket (p, in->end), *url, *url_end, *paren;

  if (in->in_link || bracket == NULL || bracket + 1 >= in->end || bracket[1] != '(')
    return NULL;
  url = bracket + 2;
  paren = memchr (url, ')', (gsize) (in->end - url));
  if (paren == NULL)
    return NULL;
  for (url_end = url; url_end < paren && *url_end != ' '; url_end++)
    ;
  if (!link_allowed (url, (gsize) (url_end - url)))
    {
      append_escaped (in->out, p, paren + 1);
      return paren + 1;
    }
  append_link_open (in->out, url, (gsize) (url_end - url));
  in->in_link = TRUE;
  inline_run (in, p + 1, bracket);
  in->in_link = FALSE;
  g_string_append (in->out, "</a>");
  return paren + 1;
}

/* <https://…> and <mailto:…>; anything else in angle brackets is text. */
static const char *
inline_autolink (Inline *in, const char *p)
{
  const char *q = p + 1;

  while (q < in->end && *q != '>' && *q != '<' && *q != ' ' && *q != '\n')
    q++;
  if (in->in_link || q >= in->end || *q != '>' || !link_allowed (p + 1, (gsize) (q - p - 1)))
    return NULL;
  append_link_open (in->out, p + 1, (gsize) (q - p - 1));
  append_escaped (in->out, p + 1, q);
  g_string_append (in->out, "</a>");
  return q + 1;
}

static void
inline_run (Inline *in, const char *p, const char *end)
{
  const char *start = p, *saved_end = in->end;

  in->end = end;
  while (p < end)
    {
      const char *next = NULL;

      if (*p == '\\' && p + 1 < end && g_ascii_ispunct (p[1]))
        {
          append_escaped_char (in->out, p[1]);
          next = p + 2;
        }
      else if (*p == '`')
        next = inline_code (in, p);
      else if (*p == '*' || *p == '_' || *p == '~')
        next = inline_emphasis (in, start, p);
      else if (*p == '[')
        next = inline_link (in, p);
      else if (*p == '<')
        next = inline_autolink (in, p);
      if (next == NULL)
        {
          /* A delimiter that opens nothing is text, its whole run at once. */
          gsize n = strchr ("*_~`", *p) != NULL && *p != '\0' ? run_length (p, end) : 1;

          append_escaped (in->out, p, p + n);
          next = p + n;
        }
      p = next;
    }
  in->end = saved_end;
}

char *
ts_markdown_inline (const char *text)
{
  GString *out = g_string_new (NULL);
  Inline in = { NULL, out, FALSE };

  g_return_val_if_fail (text != NULL, g_string_free (out, FALSE));
  in.end = text + strlen (text);
  inline_run (&in, text, in.end);
  return g_string_free (out, FALSE);
}

/* ---- blocks ------------------------------------------------------------- */

#define MAX_LIST_DEPTH 8

typedef struct {
  GPtrArray *blocks;
  TsMdBlock *current;     /* the block later lines may continue, or NULL */
  TsMdBlock *code;        /* an open fence */
  char fence_char;
  gsize fence_len, fence_indent;
  guint code_lines;       /* lines inside the open fence so far */
  guint list_indents[MAX_LIST_DEPTH];
  guint list_depth;       /* open list levels */
} Parser;

static void
block_free (gpointer data)
{
  TsMdBlock *b = data;

  g_free (b->marker);
  g_free (b->language);
  g_free (b->align);
  if (b->cells != NULL)
    g_ptr_array_unref (b->cells);
  g_string_free (b->text, TRUE);
  g_free (b);
}

static TsMdBlock *
block_add (Parser *ps, TsMdKind kind, const char *text, gsize len)
{
  TsMdBlock *b = g_new0 (TsMdBlock, 1);

  b->kind = kind;
  b->text = g_string_new_len (text, (gssize) len);
  g_ptr_array_add (ps->blocks, b);
  return b;
}

static guint
indent_of (const char *line)
{
  guint col = 0;

  for (; *line == ' ' || *line == '\t'; line++)
    col = *line == '\t' ? (col / 4 + 1) * 4 : col + 1;
  return col;
}

static const char *
skip_blanks (const char *p)
{
  return p + strspn (p, " \t");
}

static char *
strip_trailing (const char *p)
{
  return g_strchomp (g_strdup (p));
}

/* ``` or ~~~ (three or more) at the start of @p: its length, else 0. */
static gsize
fence_length (const char *p)
{
  gsize n = (*p == '`' || *p == '~') ? strspn (p, *p == '`' ? "`" : "~") : 0;

  return n >= 3 ? n : 0;
}

static gboolean
code_line (Parser *ps, const char *line)
{
  const char *p = skip_blanks (line);
  gsize n = fence_length (p);

  if (n >= ps->fence_len && *p == ps->fence_char && *skip_blanks (p + n) == '\0')
    {
      ps->code = NULL;
      return TRUE;
    }
  /* Lines of a fence indented under a list item lose that indentation. */
  for (gsize i = 0; i < ps->fence_indent && *line == ' '; i++)
    line++;
  if (ps->code_lines++ > 0)
    g_string_append_c (ps->code->text, '\n');
  g_string_append (ps->code->text, line);
  return TRUE;
}

static gboolean
fence_open (Parser *ps, const char *line)
{
  const char *p = skip_blanks (line);
  gsize n = fence_length (p);
  g_autofree char *info = NULL;
  g_auto (GStrv) words = NULL;

  if (n == 0)
    return FALSE;
  ps->code = block_add (ps, TS_MD_CODE, "", 0);
  ps->fence_char = *p;
  ps->fence_len = n;
  ps->fence_indent = (gsize) (p - line);
  ps->code_lines = 0;
  info = g_strstrip (g_strdup (p + n));
  words = g_strsplit_set (info, " \t{}", 2);
  if (words[0] != NULL && words[0][0] != '\0')
    ps->code->language = g_ascii_strdown (words[0], -1);
  ps->current = NULL;
  return TRUE;
}

static gboolean
heading (Parser *ps, const char *p)
{
  gsize n = strspn (p, "#");
  g_autofree char *text = NULL;
  char *end;

  if (n < 1 || n > 6 || (p[n] != ' ' && p[n] != '\t' && p[n] != '\0'))
    return FALSE;
  text = g_strstrip (g_strdup (p + n));
  /* A closing run of '#' after a space is decoration. */
  end = text + strlen (text);
  while (end > text && end[-1] == '#')
    end--;
  if (end == text || end[-1] == ' ')
    *end = '\0';
  g_strchomp (text);
  ps->current = NULL;
  ps->list_depth = 0;
  block_add (ps, TS_MD_HEADING, text, strlen (text))->level = (guint) n;
  return TRUE;
}

/* ---, ***, ___ (three or more, spaces between allowed). */
static gboolean
rule (Parser *ps, const char *p)
{
  char c = *p;
  guint n = 0;

  if (c != '-' && c != '*' && c != '_')
    return FALSE;
  for (; *p != '\0'; p++)
    {
      if (*p == c)
        n++;
      else if (*p != ' ' && *p != '\t')
        return FALSE;
    }
  if (n < 3)
    return FALSE;
  ps->current = NULL;
  ps->list_depth = 0;
  block_add (ps, TS_MD_RULE, "", 0);
  return TRUE;
}

static gboolean
quote (Parser *ps, const char *p)
{
  guint depth = 0;

  if (*p != '>')
    return FALSE;
  while (*p == '>')
    {
      depth++;
      p = skip_blanks (p + 1);
    }
  ps->list_depth = 0;
  if (*p == '\0')
    {
      ps->current = NULL;  /* an empty quote line ends the paragraph inside */
      return TRUE;
    }
  if (ps->current != NULL && ps->current->kind == TS_MD_QUOTE && ps->current->level == depth)
    {
      g_string_append_printf (ps->current->text, "\n%s", p);
      return TRUE;
    }
  ps->current = block_add (ps, TS_MD_QUOTE, p, strlen (p));
  ps->current->level = depth;
  return TRUE;
}

/* "- x", "* x", "+ x" → "•"; "12. x" or "12) x" → "12."; else NULL. */
static char *
list_marker (const char *p, const char **rest)
{
  const char *q = p;

  if ((p[0] == '-' || p[0] == '*' || p[0] == '+') && (p[1] == ' ' || p[1] == '\t'))
    {
      *rest = skip_blanks (p + 2);
      return g_strdup ("•");
    }
  while (g_ascii_isdigit (*q))
    q++;
  if (q > p && q - p < 10 && (q[0] == '.' || q[0] == ')') && (q[1] == ' ' || q[1] == '\t'))
    {
      *rest = skip_blanks (q + 2);
      return g_strdup_printf ("%.*s.", (int) (q - p), p);
    }
  return NULL;
}

/* The nesting depth of an item indented by @indent: deeper than the item
 * above it when indented more, back to the level it lines up with. */
static guint
list_level (Parser *ps, guint indent)
{
  while (ps->list_depth > 0 && ps->list_indents[ps->list_depth - 1] > indent)
    ps->list_depth--;
  if (ps->list_depth == 0 || ps->list_indents[ps->list_depth - 1] < indent)
    {
      if (ps->list_depth == MAX_LIST_DEPTH)
        ps->list_depth--;
      ps->list_indents[ps->list_depth++] = indent;
    }
  return ps->list_depth - 1;
}

static gboolean
list_item (Parser *ps, const char *line)
{
  const char *rest = NULL;
  char *marker = list_marker (skip_blanks (line), &rest);

  if (marker == NULL)
    return FALSE;
  ps->current = block_add (ps, TS_MD_LIST_ITEM, rest, strlen (rest));
  ps->current->marker = marker;
  ps->current->level = list_level (ps, indent_of (line));
  return TRUE;
}

/* ---- tables ---- */

/* The cells of "| a | b |" (outer pipes optional, "\|" stays in a cell). */
static GPtrArray *
table_split (const char *line)
{
  GPtrArray *cells = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *row = g_strstrip (g_strdup (line));
  const char *p = row, *start;
  gsize len = strlen (row);

  if (*p == '|')
    p++;
  if (len > 1 && row[len - 1] == '|' && row[len - 2] != '\\')
    row[--len] = '\0';
  for (start = p; ; p++)
    {
      if (*p == '\\' && p[1] != '\0')
        p++;
      else if (*p == '|' || *p == '\0')
        {
          g_ptr_array_add (cells, g_strstrip (g_strndup (start, (gsize) (p - start))));
          if (*p == '\0')
            break;
          start = p + 1;
        }
    }
  return cells;
}

static gboolean
has_pipe (const char *line)
{
  return strchr (line, '|') != NULL;
}

/* "---", ":--", "--:", ":-:": the alignment, or -1 if @cell is no delimiter. */
static int
delimiter_align (const char *cell)
{
  gsize len = strlen (cell);
  gboolean left = len > 0 && cell[0] == ':', right = len > 1 && cell[len - 1] == ':';
  gsize dashes = strspn (cell + left, "-");

  if (dashes == 0 || left + dashes + right != len)
    return -1;
  if (left && right)
    return TS_MD_ALIGN_CENTER;
  return left ? TS_MD_ALIGN_LEFT : right ? TS_MD_ALIGN_RIGHT : TS_MD_ALIGN_NONE;
}

/* The alignments of a delimiter row, or NULL if @line is none. */
static GArray *
delimiter_row (const char *line)
{
  g_autoptr (GPtrArray) cells = NULL;
  GArray *aligns;

  if (line == NULL || !has_pipe (line) || strchr (line, '-') == NULL)
    return NULL;
  cells = table_split (line);
  aligns = g_array_new (FALSE, TRUE, sizeof (TsMdAlign));
  for (guint i = 0; i < cells->len; i++)
    {
      const char *cell = g_ptr_array_index (cells, i);
      int align = delimiter_align (cell);
      TsMdAlign known = align < 0 ? TS_MD_ALIGN_NONE : (TsMdAlign) align;

      /* The row's last cell may still be arriving ("| --- | :"). */
      if (align < 0 && !(i == cells->len - 1 && strspn (cell, ":-") == strlen (cell)))
        {
          g_array_unref (aligns);
          return NULL;
        }
      g_array_append_val (aligns, known);
    }
  return aligns;
}

static void
table_add_row (TsMdBlock *table, const char *line)
{
  g_autoptr (GPtrArray) cells = table_split (line);

  for (guint i = 0; i < table->n_columns; i++)
    g_ptr_array_add (table->cells, g_strdup (i < cells->len ? g_ptr_array_index (cells, i) : ""));
}

/* A header row followed by a delimiter row starts a table. */
static gboolean
table_start (Parser *ps, const char *line, const char *next)
{
  g_autoptr (GArray) aligns = has_pipe (line) ? delimiter_row (next) : NULL;
  g_autoptr (GPtrArray) header = NULL;
  TsMdBlock *table;

  if (aligns == NULL)
    return FALSE;
  header = table_split (line);
  table = block_add (ps, TS_MD_TABLE, "", 0);
  table->n_columns = header->len;
  table->align = g_new0 (TsMdAlign, header->len);
  for (guint i = 0; i < header->len && i < aligns->len; i++)
    table->align[i] = g_array_index (aligns, TsMdAlign, i);
  table->cells = g_ptr_array_new_with_free_func (g_free);
  table_add_row (table, line);
  ps->current = table;
  ps->list_depth = 0;
  return TRUE;
}

/* ---- lines ---- */

static void
continue_or_start (Parser *ps, const char *line)
{
  const char *p = skip_blanks (line);
  g_autofree char *text = strip_trailing (p);

  if (ps->current != NULL && ps->current->kind != TS_MD_TABLE)
    {
      g_string_append_printf (ps->current->text, "\n%s", text);
      return;
    }
  ps->list_depth = 0;
  ps->current = block_add (ps, TS_MD_PARAGRAPH, text, strlen (text));
}

/* One line; @next is the line after it (NULL at the end). Returns how many
 * lines after this one it used up (a table's delimiter row). */
static guint
parse_line (Parser *ps, const char *line, const char *next)
{
  const char *p = skip_blanks (line);

  if (ps->code != NULL)
    return code_line (ps, line), 0;
  if (*p == '\0')
    {
      ps->current = NULL;
      return 0;
    }
  if (ps->current != NULL && ps->current->kind == TS_MD_TABLE)
    {
      if (has_pipe (line))
        {
          table_add_row (ps->current, line);
          return 0;
        }
      ps->current = NULL;
    }
  if (fence_open (ps, line) || heading (ps, p) || rule (ps, p) || quote (ps, p)
      || list_item (ps, line))
    return 0;
  if (table_start (ps, line, next))
    return 1;
  continue_or_start (ps, line);
  return 0;
}

GPtrArray *
ts_markdown_parse (const char *text)
{
  Parser ps = { .blocks = g_ptr_array_new_with_free_func (block_free) };
  g_auto (GStrv) lines = NULL;

  g_return_val_if_fail (text != NULL, ps.blocks);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_strdelimit (lines[i], "\r", ' ');
      i += parse_line (&ps, lines[i], lines[i + 1]);
    }
  return ps.blocks;
}

guint
ts_markdown_table_rows (const TsMdBlock *block)
{
  g_return_val_if_fail (block != NULL && block->kind == TS_MD_TABLE, 0);
  return block->n_columns > 0 ? block->cells->len / block->n_columns : 0;
}

const char *
ts_markdown_table_cell (const TsMdBlock *block, guint row, guint column)
{
  g_return_val_if_fail (block != NULL && block->kind == TS_MD_TABLE, NULL);
  g_return_val_if_fail (column < block->n_columns, NULL);
  g_return_val_if_fail ((row + 1) * block->n_columns <= block->cells->len, NULL);
  return g_ptr_array_index (block->cells, row * block->n_columns + column);
}

/* ts-markdown.h: Markdown of a reply, as blocks and Pango markup.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The subset a model writes: headings, paragraphs, bullet and numbered
 * list items (nested by indentation), block quotes, fenced code with its
 * language, pipe tables with column alignment, thematic breaks; inline
 * **bold**, *italic* / _italic_, ***both***, `code`, ~~strike~~,
 * [links](url), <autolinks> and backslash escapes.
 *
 * A reply is parsed again each time a token arrives, so the text may stop
 * anywhere: an unclosed span runs to the end of the text, an unclosed fence
 * to the end of the reply, a table row still arriving has its missing
 * cells empty. The text is untrusted: HTML in it is shown as text, and only
 * http, https and mailto links become links.
 *
 * GLib only; the app turns the blocks into widgets.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TS_MD_PARAGRAPH,
  TS_MD_HEADING,
  TS_MD_LIST_ITEM,
  TS_MD_QUOTE,
  TS_MD_CODE,
  TS_MD_TABLE,
  TS_MD_RULE,
} TsMdKind;

typedef enum {
  TS_MD_ALIGN_NONE,
  TS_MD_ALIGN_LEFT,
  TS_MD_ALIGN_CENTER,
  TS_MD_ALIGN_RIGHT,
} TsMdAlign;

typedef struct {
  TsMdKind kind;
  /* headings: 1..6; list items: nesting depth from 0; quotes: number of '>' */
  guint level;
  char *marker;        /* list items: "•" or the number with its dot, "3." */
  char *language;      /* code: the info string's first word, or NULL */
  GString *text;       /* code: the lines verbatim; tables: unused; else inline source */
  guint n_columns;     /* tables: the header's cells */
  TsMdAlign *align;    /* tables: n_columns alignments */
  GPtrArray *cells;    /* tables: inline source of each cell, row by row, header first */
} TsMdBlock;

/* The blocks of @text in order (a GPtrArray of TsMdBlock, freeing them). */
GPtrArray *ts_markdown_parse (const char *text);
/* Number of rows of a table block, the header included. */
guint ts_markdown_table_rows (const TsMdBlock *block);
/* Inline source of the table cell at @row (0: the header), @column. */
const char *ts_markdown_table_cell (const TsMdBlock *block, guint row, guint column);

/* GtkLabel markup for inline source: Pango markup, escaped, with
 * <a href> for http, https and mailto links. Newly allocated. */
char *ts_markdown_inline (const char *text);

G_END_DECLS

/* test-markdown.c: ts_markdown_parse() and ts_markdown_inline() against
 * hand-written block lists and markup: each construct, text cut off while
 * a reply streams in, escapes, and untrusted HTML and links.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ts-markdown.h"

/* One line per block: "p: text", "h2: text", "li1 •: text", "q1: text",
 * "code[c]: text", "table lcr: a|b / 1|2", "hr". */
static char *
describe (const char *markdown)
{
  static const char kinds[][6] = { "p", "h", "li", "q", "code", "table", "hr" };
  static const char aligns[] = "-lcr";
  g_autoptr (GPtrArray) blocks = ts_markdown_parse (markdown);
  GString *out = g_string_new (NULL);

  for (guint i = 0; i < blocks->len; i++)
    {
      const TsMdBlock *b = g_ptr_array_index (blocks, i);

      if (i > 0)
        g_string_append_c (out, '\n');
      g_string_append (out, kinds[b->kind]);
      if (b->kind == TS_MD_HEADING || b->kind == TS_MD_LIST_ITEM || b->kind == TS_MD_QUOTE)
        g_string_append_printf (out, "%u", b->level);
      if (b->kind == TS_MD_LIST_ITEM)
        g_string_append_printf (out, " %s", b->marker);
      if (b->kind == TS_MD_CODE)
        g_string_append_printf (out, "[%s]", b->language != NULL ? b->language : "-");
      if (b->kind == TS_MD_TABLE)
        {
          g_string_append_c (out, ' ');
          for (guint c = 0; c < b->n_columns; c++)
            g_string_append_c (out, aligns[b->align[c]]);
          g_string_append (out, ":");
          for (guint r = 0; r < ts_markdown_table_rows (b); r++)
            for (guint c = 0; c < b->n_columns; c++)
              g_string_append_printf (out, "%s%s", c > 0 ? "|" : r > 0 ? " / " : " ",
                                      ts_markdown_table_cell (b, r, c));
        }
      else if (b->kind != TS_MD_RULE)
        g_string_append_printf (out, ": %s", b->text->str);
    }
  return g_string_free (out, FALSE);
}

typedef struct {
  const char *markdown, *blocks;
} BlockCase;

static void
check_blocks (const BlockCase *cases, gsize n)
{
  for (gsize i = 0; i < n; i++)
    {
      g_autofree char *got = describe (cases[i].markdown);

      g_test_message ("markdown: %s", cases[i].markdown);
      g_assert_cmpstr (got, ==, cases[i].blocks);
    }
}

static void
test_blocks (void)
{
  static const BlockCase cases[] = {
    { "# Title\n## Sub ##\n###### Six\n####### seven",
      "h1: Title\nh2: Sub\nh6: Six\np: ####### seven" },
    { "#hashtag", "p: #hashtag" },
    { "one\ntwo\n\nthree", "p: one\ntwo\np: three" },
    { "- a\n* b\n+ c\n12. d\n3) e", "li0 •: a\nli0 •: b\nli0 •: c\nli0 12.: d\nli0 3.: e" },
    { "> quoted *text*\n> more\n>> deeper", "q1: quoted *text*\nmore\nq2: deeper" },
    { "above\n\n---\n* * *\n___", "p: above\nhr\nhr\nhr" },
    { "```c\nint x;\n\n  y;\n```\nafter", "code[c]: int x;\n\n  y;\np: after" },
    { "~~~ Python {.x}\nprint()\n~~~", "code[python]: print()" },
    { "```\n```", "code[-]: " },
    { "| a | b |\n|:--|--:|\n| 1 | **2** |\n| 3 |", "table lr: a|b / 1|**2** / 3|" },
    { "x | y\n:-:|---\n1 | 2 | 9\n\nend", "table c-: x|y / 1|2\np: end" },
    { "a \\| b | c\n---|---", "table --: a \\| b|c" },
    { "| not | a table |\nplain", "p: | not | a table |\nplain" },
  };

  check_blocks (cases, G_N_ELEMENTS (cases));
}

/* Items nest by their indentation: two spaces, four, or under a number. */
static void
test_nested_lists (void)
{
  static const BlockCase cases[] = {
    { "- a\n  - b\n    - c\n  - d\n- e",
      "li0 •: a\nli1 •: b\nli2 •: c\nli1 •: d\nli0 •: e" },
    { "1. one\n    - sub\n2. two", "li0 1.: one\nli1 •: sub\nli0 2.: two" },
    { "- a\n\n  - b\n\npara\n  - c", "li0 •: a\nli1 •: b\np: para\nli0 •: c" },
    { "- item\n  continued", "li0 •: item\ncontinued" },
    { "- code:\n  ```sh\n  ls -l\n  ```", "li0 •: code:\ncode[sh]: ls -l" },
  };

  check_blocks (cases, G_N_ELEMENTS (cases));
}

/* Text cut off at any point while a reply streams in. */
static void
test_streaming_blocks (void)
{
  static const BlockCase cases[] = {
    { "```py\nprint(1)", "code[py]: print(1)" },
    { "```py", "code[py]: " },
    { "```", "code[-]: " },
    { "``", "p: ``" },
    { "| a | b |", "p: | a | b |" },
    { "| a | b |\n|---", "table --: a|b" },
    { "| a | b |\n| :-- | :", "table l-: a|b" },
    { "| a | b |\n|---|---|\n| 1", "table --: a|b / 1|" },
    { "#", "h1: " },
    { "- ", "li0 •: " },
    { "> ", "" },
  };

  check_blocks (cases, G_N_ELEMENTS (cases));
}

typedef struct {
  const char *in, *out;
} InlineCase;

static void
check_inline (const InlineCase *cases, gsize n)
{
  for (gsize i = 0; i < n; i++)
    {
      g_autofree char *markup = ts_markdown_inline (cases[i].in);

      g_test_message ("inline: %s", cases[i].in);
      g_assert_cmpstr (markup, ==, cases[i].out);
    }
}

static void
test_inline_spans (void)
{
  static const InlineCase cases[] = {
    { "**bold** and *it* and _it_", "<b>bold</b> and <i>it</i> and <i>it</i>" },
    { "***both*** __b__", "<b><i>both</i></b> <b>b</b>" },
    { "**bold *in* it**", "<b>bold <i>in</i> it</b>" },
    { "*a **b** c*", "<i>a <b>b</b> c</i>" },
    { "~~gone~~ ~one~", "<s>gone</s> ~one~" },
    { "use `x<y` and ``a`b``", "use <tt>x&lt;y</tt> and <tt>a`b</tt>" },
    { "`**not bold**`", "<tt>**not bold**</tt>" },
    { "2 * 3 * 4", "2 * 3 * 4" },
    { "snake_case_name", "snake_case_name" },
    { "a\nb", "a\nb" },
  };

  check_inline (cases, G_N_ELEMENTS (cases));
}

static void
test_inline_links (void)
{
  static const InlineCase cases[] = {
    { "see [the docs](https://example.org/a?b=1&c=2) now",
      "see <a href=\"https://example.org/a?b=1&amp;c=2\">the docs</a> now" },
    { "[**bold** link](http://x.test \"title\")",
      "<a href=\"http://x.test\"><b>bold</b> link</a>" },
    { "<https://example.org> <mailto:a@b.test>",
      "<a href=\"https://example.org\">https://example.org</a> "
      "<a href=\"mailto:a@b.test\">mailto:a@b.test</a>" },
    { "[click](javascript:alert(1))", "[click](javascript:alert(1)" ")" },
    { "[x](file:///etc/passwd)", "[x](file:///etc/passwd)" },
    { "<javascript:alert(1)>", "&lt;javascript:alert(1)&gt;" },
    { "[a \"q\"](https://x.test/\"onclick=)",
      "<a href=\"https://x.test/&quot;onclick=\">a &quot;q&quot;</a>" },
    { "[[nested](https://a.test)](https://b.test)",
      "<a href=\"https://b.test\">[nested](https://a.test)</a>" },
  };

  check_inline (cases, G_N_ELEMENTS (cases));
}

static void
test_inline_escapes (void)
{
  static const InlineCase cases[] = {
    { "\\*not\\* \\`x\\` \\\\ \\a", "*not* `x` \\ \\a" },
    { "\\[x](https://a.test)", "[x](https://a.test)" },
    { "a < b & c > d", "a &lt; b &amp; c &gt; d" },
    { "<b>bold?</b> <script>x</script>",
      "&lt;b&gt;bold?&lt;/b&gt; &lt;script&gt;x&lt;/script&gt;" },
    { "<a href=\"https://x.test\">x</a>", "&lt;a href=&quot;https://x.test&quot;&gt;x&lt;/a&gt;" },
    { "&amp; &#60;", "&amp;amp; &amp;#60;" },
    { "ctl\001x", "ctl\357\277\275x" },
  };

  check_inline (cases, G_N_ELEMENTS (cases));
}

/* A span still open at the end runs to the end of the text, well formed. */
static void
test_inline_streaming (void)
{
  static const InlineCase cases[] = {
    { "open `code", "open <tt>code</tt>" },
    { "some **bol", "some <b>bol</b>" },
    { "some *it", "some <i>it</i>" },
    { "**bold *both", "<b>bold <i>both</i></b>" },
    { "~~str", "<s>str</s>" },
    { "ends with **", "ends with **" },
    { "ends with *", "ends with *" },
    { "[partial link](https://exa", "[partial link](https://exa" },
    { "[partial", "[partial" },
    { "<https://exa", "&lt;https://exa" },
  };

  check_inline (cases, G_N_ELEMENTS (cases));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/markdown/blocks", test_blocks);
  g_test_add_func ("/markdown/nested-lists", test_nested_lists);
  g_test_add_func ("/markdown/streaming-blocks", test_streaming_blocks);
  g_test_add_func ("/markdown/inline-spans", test_inline_spans);
  g_test_add_func ("/markdown/inline-links", test_inline_links);
  g_test_add_func ("/markdown/inline-escapes", test_inline_escapes);
  g_test_add_func ("/markdown/inline-streaming", test_inline_streaming);
  return g_test_run ();
}

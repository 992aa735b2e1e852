/* ts-models-zip.c: a zip member reader for the stored and deflate cases, with zlib.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Layout (PKWARE APPNOTE 6.3): the end-of-central-directory record (22 bytes
 * plus a comment of up to 65535) gives the central directory's offset; each
 * central entry (46 bytes plus name, extra, comment) gives a member's method,
 * CRC-32, sizes and the offset of its local header (30 bytes plus name and
 * an extra field whose length may differ from the central one). */
#include "ts-models-zip.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "ts-models-error.h"

#define EOCD_SIGNATURE    0x06054b50u
#define CENTRAL_SIGNATURE 0x02014b50u
#define LOCAL_SIGNATURE   0x04034b50u
#define EOCD_SIZE         22
#define CENTRAL_SIZE      46
#define LOCAL_SIZE        30
#define MAX_COMMENT       65535
#define IO_BLOCK          (256 * 1024)

typedef struct
{
  guint16 method;
  guint32 crc;
  guint64 compressed;
  guint64 size;
  guint64 local_offset;
} ZipMember;

static guint16
le16 (const guint8 *p)
{
  return (guint16) (p[0] | p[1] << 8);
}

static guint32
le32 (const guint8 *p)
{
  return (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}

static gboolean
archive_error (GError **error, const char *zip_path, const char *what)
{
  g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_ARCHIVE, "%s: %s", zip_path, what);
  return FALSE;
}

static gboolean
read_at (FILE *f, guint64 offset, void *buf, size_t n)
{
  return fseeko (f, (off_t) offset, SEEK_SET) == 0 && fread (buf, 1, n, f) == n;
}

/* Finds the end record by scanning back over a possible comment. */
static gboolean
find_central_directory (FILE *f, const char *zip_path, guint64 *offset, guint64 *size,
                        guint *entries, GError **error)
{
  g_autofree guint8 *tail = NULL;
  guint64 file_size, start;
  size_t n;

  if (fseeko (f, 0, SEEK_END) != 0 || (file_size = (guint64) ftello (f)) < EOCD_SIZE)
    return archive_error (error, zip_path, "too short to be a zip archive");
  start = file_size > EOCD_SIZE + MAX_COMMENT ? file_size - EOCD_SIZE - MAX_COMMENT : 0;
  n = (size_t) (file_size - start);
  tail = g_malloc (n);
  if (!read_at (f, start, tail, n))
    return archive_error (error, zip_path, "cannot read the end of the archive");
  for (size_t i = n - EOCD_SIZE + 1; i-- > 0;)
    if (le32 (tail + i) == EOCD_SIGNATURE)
      {
        *entries = le16 (tail + i + 10);
        *size = le32 (tail + i + 12);
        *offset = le32 (tail + i + 16);
        if (*offset == 0xffffffffu || *entries == 0xffff)
          return archive_error (error, zip_path, "ZIP64 archives are not supported");
        if (*offset + *size > start + i)
          return archive_error (error, zip_path, "the central directory lies outside the file");
        return TRUE;
      }
  return archive_error (error, zip_path, "no end-of-central-directory record (not a zip?)");
}

static gboolean
find_member (FILE *f, const char *zip_path, const char *member, ZipMember *out,
             GError **error)
{
  guint64 offset, size, pos = 0;
  guint entries;
  g_autofree guint8 *dir = NULL;
  size_t name_len = strlen (member);

  if (!find_central_directory (f, zip_path, &offset, &size, &entries, error))
    return FALSE;
  dir = g_malloc (size + 1);
  if (!read_at (f, offset, dir, size))
    return archive_error (error, zip_path, "cannot read the central directory");
  for (guint i = 0; i < entries; i++)
    {
      const guint8 *e = dir + pos;
      guint64 entry_len;

      if (pos + CENTRAL_SIZE > size || le32 (e) != CENTRAL_SIGNATURE)
        return archive_error (error, zip_path, "damaged central directory");
      entry_len = CENTRAL_SIZE + (guint64) le16 (e + 28) + le16 (e + 30) + le16 (e + 32);
      if (pos + entry_len > size)
        return archive_error (error, zip_path, "damaged central directory");
      if (le16 (e + 28) == name_len && memcmp (e + CENTRAL_SIZE, member, name_len) == 0)
        {
          out->method = le16 (e + 10);
          out->crc = le32 (e + 16);
          out->compressed = le32 (e + 20);
          out->size = le32 (e + 24);
          out->local_offset = le32 (e + 42);
          if (out->compressed == 0xffffffffu || out->size == 0xffffffffu
              || out->local_offset == 0xffffffffu)
            return archive_error (error, zip_path, "ZIP64 members are not supported");
          if ((le16 (e + 8) & 1) != 0)
            return archive_error (error, zip_path, "encrypted members are not supported");
          return TRUE;
        }
      pos += entry_len;
    }
  g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_ARCHIVE, "%s: no member \"%s\"",
               zip_path, member);
  return FALSE;
}

/* Positions @f at the member's data, past its local header. */
static gboolean
seek_data (FILE *f, const char *zip_path, const ZipMember *m, GError **error)
{
  guint8 local[LOCAL_SIZE];
  guint64 data;

  if (!read_at (f, m->local_offset, local, LOCAL_SIZE) || le32 (local) != LOCAL_SIGNATURE)
    return archive_error (error, zip_path, "damaged local header");
  data = m->local_offset + LOCAL_SIZE + le16 (local + 26) + le16 (local + 28);
  if (fseeko (f, (off_t) data, SEEK_SET) != 0)
    return archive_error (error, zip_path, "member data lies outside the file");
  return TRUE;
}

static gboolean
write_out (FILE *out, const guint8 *buf, size_t n, uLong *crc, guint64 *written,
           TsModelsMeter *meter, GError **error)
{
  if (n > 0 && fwrite (buf, 1, n, out) != n)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write the chunk: %s",
                   g_strerror (errno));
      return FALSE;
    }
  *crc = crc32 (*crc, buf, (uInt) n);
  *written += n;
  ts_models_meter_add (meter, (gint64) n);
  return TRUE;
}

static gboolean
copy_stored (FILE *in, FILE *out, const char *zip_path, const ZipMember *m, uLong *crc,
             guint64 *written, TsModelsMeter *meter, GCancellable *cancellable, GError **error)
{
  g_autofree guint8 *buf = g_malloc (IO_BLOCK);
  guint64 left = m->compressed;

  while (left > 0)
    {
      size_t n = fread (buf, 1, (size_t) MIN (left, IO_BLOCK), in);
      if (n == 0)
        return archive_error (error, zip_path, "member data ends early");
      if (g_cancellable_set_error_if_cancelled (cancellable, error)
          || !write_out (out, buf, n, crc, written, meter, error))
        return FALSE;
      left -= n;
    }
  return TRUE;
}

static gboolean
inflate_member (FILE *in, FILE *out, const char *zip_path, const ZipMember *m, uLong *crc,
                guint64 *written, TsModelsMeter *meter, GCancellable *cancellable,
                GError **error)
{
  g_autofree guint8 *src = g_malloc (IO_BLOCK);
  g_autofree guint8 *dst = g_malloc (IO_BLOCK);
  guint64 left = m->compressed;
  z_stream z = { 0 };
  int rc = Z_OK;
  gboolean ok = TRUE;

  /* Raw deflate: zip members carry no zlib header. */
  if (inflateInit2 (&z, -MAX_WBITS) != Z_OK)
    return archive_error (error, zip_path, "cannot start zlib");
  while (ok && rc != Z_STREAM_END)
    {
      if (z.avail_in == 0 && left > 0)
        {
          z.avail_in = (uInt) fread (src, 1, (size_t) MIN (left, IO_BLOCK), in);
          z.next_in = src;
          left -= z.avail_in;
          if (z.avail_in == 0)
            left = 0;
        }
      z.next_out = dst;
      z.avail_out = IO_BLOCK;
      rc = inflate (&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END)
        ok = archive_error (error, zip_path, rc == Z_BUF_ERROR ? "member data ends early"
                                                               : "corrupt deflate data");
      else if (g_cancellable_set_error_if_cancelled (cancellable, error))
        ok = FALSE;
      else
        ok = write_out (out, dst, IO_BLOCK - z.avail_out, crc, written, meter, error);
    }
  inflateEnd (&z);
  return ok;
}

static gboolean
extract_to (FILE *in, FILE *out, const char *zip_path, const char *member, TsModelsMeter *meter,
            GCancellable *cancellable, GError **error)
{
  ZipMember m;
  uLong crc = crc32 (0, NULL, 0);
  guint64 written = 0;
  gboolean ok;

  if (!find_member (in, zip_path, member, &m, error) || !seek_data (in, zip_path, &m, error))
    return FALSE;
  ts_models_meter_begin (meter, TS_MODELS_STAGE_EXTRACT, (gint64) m.size, 0, member);
  if (m.method == 0)
    ok = copy_stored (in, out, zip_path, &m, &crc, &written, meter, cancellable, error);
  else if (m.method == 8)
    ok = inflate_member (in, out, zip_path, &m, &crc, &written, meter, cancellable, error);
  else
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_ARCHIVE,
                   "%s: \"%s\" uses compression method %u (only stored and deflate are read)",
                   zip_path, member, m.method);
      return FALSE;
    }
  if (ok && (written != m.size || crc != m.crc))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "%s: \"%s\" extracts to %" G_GUINT64_FORMAT " bytes with CRC-32 %08lx; "
                   "the archive says %" G_GUINT64_FORMAT " bytes, %08x",
                   zip_path, member, written, crc, m.size, m.crc);
      return FALSE;
    }
  return ok;
}

gboolean
ts_models_zip_extract (const char *zip_path, const char *member, const char *out_path,
                       TsModelsMeter *meter, GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (zip_path != NULL, FALSE);
  g_return_val_if_fail (member != NULL, FALSE);
  g_return_val_if_fail (out_path != NULL, FALSE);

  FILE *in = g_fopen (zip_path, "rb");
  FILE *out;
  gboolean ok;

  if (in == NULL)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot open %s: %s", zip_path,
                   g_strerror (errno));
      return FALSE;
    }
  out = g_fopen (out_path, "wb");
  if (out == NULL)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot create %s: %s", out_path,
                   g_strerror (errno));
      fclose (in);
      return FALSE;
    }
  ok = extract_to (in, out, zip_path, member, meter, cancellable, error);
  fclose (in);
  if (fclose (out) != 0 && ok)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s", out_path,
                   g_strerror (errno));
      ok = FALSE;
    }
  if (!ok)
    g_unlink (out_path);
  return ok;
}

/* The egress pump's small helpers: memory, buffers, hex, JSON strings, time (pump.h). */
#include "pump.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) abort();
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) abort();
  return p;
}

char *xstrndup(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void sb_reserve(struct sbuf *b, size_t more) {
  if (b->len + more <= b->cap) return;
  while (b->len + more > b->cap) b->cap = b->cap ? b->cap * 2 : 256;
  b->p = xrealloc(b->p, b->cap);
}

void sb_add(struct sbuf *b, const void *p, size_t n) {
  sb_reserve(b, n);
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

void sb_str(struct sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

void sb_fmt(struct sbuf *b, const char *fmt, ...) {
  va_list a;
  va_start(a, fmt);
  int n = vsnprintf(NULL, 0, fmt, a);
  va_end(a);
  if (n < 0) return;
  sb_reserve(b, (size_t)n + 1);
  va_start(a, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, a);
  va_end(a);
  b->len += (size_t)n;
}

static const char HEX[] = "0123456789abcdef";

void sb_hex(struct sbuf *b, const void *p, size_t n) {
  sb_reserve(b, 2 * n);
  const unsigned char *s = p;
  char *o = b->p + b->len;
  for (size_t i = 0; i < n; i++) o[2 * i] = HEX[s[i] >> 4], o[2 * i + 1] = HEX[s[i] & 15];
  b->len += 2 * n;
}

/* The length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  /* overlong, surrogates and past U+10FFFF are not UTF-8 */
  if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
  if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
  return len;
}

void sb_json(struct sbuf *b, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  sb_reserve(b, n + 2);
  sb_add(b, "\"", 1);
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      sb_add(b, e, 2);
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      sb_fmt(b, "\\u%04x", c);
      i++;
    } else {
      size_t k = utf8_len(s + i, n - i);
      if (k) sb_add(b, s + i, k), i += k;
      else sb_str(b, "\xef\xbf\xbd"), i++;
    }
  }
  sb_add(b, "\"", 1);
}

void sb_iso_now(struct sbuf *b) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  struct tm tm;
  gmtime_r(&t.tv_sec, &tm);
  sb_fmt(b, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
         t.tv_nsec / 1000000);
}

static int unhex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char *unhex(const char *s, size_t *len) {
  if (strcmp(s, "-") == 0) s = "";
  size_t n = strlen(s);
  if (n % 2) return NULL;
  char *out = xmalloc(n / 2 + 1);
  for (size_t i = 0; i < n / 2; i++) {
    int hi = unhex_digit(s[2 * i]), lo = unhex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      free(out);
      return NULL;
    }
    out[i] = (char)(hi << 4 | lo);
  }
  out[n / 2] = 0;
  *len = n / 2;
  return out;
}

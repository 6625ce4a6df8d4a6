/*
 * Request heads as the pump handles them: their shape (the same the proxy accepts: http-head.ts), the
 * key under which the proxy's verdict on one may be kept, the origin-form rewrite of a plain-HTTP request,
 * and the server name of a TLS ClientHello. The proxy in Node decides on every head it is asked about;
 * nothing here decides: a head whose key has no kept verdict goes to the proxy.
 *
 * Why by hand: the pump needs these four small readings of bytes it already holds; an HTTP parser
 * library would bring a server's worth of state for them.
 */
#include "pump.h"

#include <string.h>
#include <strings.h>

static int is_space(char c) { return c == ' ' || c == '\t'; }

int head_parse(const char *buf, size_t n, struct head *h) {
  memset(h, 0, sizeof *h);
  const char *end = buf + n, *eol = memmem(buf, n, "\r\n", 2);
  if (!eol) eol = end;
  /* METHOD SP TARGET SP HTTP/1.x */
  const char *p = buf;
  h->method = p;
  while (p < eol && *p >= 'A' && *p <= 'Z') p++;
  h->mlen = (size_t)(p - h->method);
  if (!h->mlen || p >= eol || *p != ' ') return -1;
  h->target = ++p;
  while (p < eol && *p != ' ' && !is_space(*p) && (unsigned char)*p > 0x20) p++;
  h->tlen = (size_t)(p - h->target);
  if (!h->tlen || p >= eol || *p != ' ') return -1;
  h->version = ++p;
  h->vlen = (size_t)(eol - p);
  if (h->vlen != 8 || (memcmp(p, "HTTP/1.1", 8) != 0 && memcmp(p, "HTTP/1.0", 8) != 0)) return -1;
  h->headers = eol < end ? eol + 2 : end;
  h->hlen = (size_t)(end - h->headers);
  /* NAME: value lines; a name has no whitespace */
  for (const char *l = h->headers; l < end;) {
    const char *le = memmem(l, (size_t)(end - l), "\r\n", 2);
    if (!le) le = end;
    if (le > l) {
      const char *colon = memchr(l, ':', (size_t)(le - l));
      if (!colon || colon == l) return -1;
      for (const char *q = l; q < colon; q++)
        if ((unsigned char)*q <= 0x20) return -1;
      if (colon - l == 4 && !strncasecmp(l, "host", 4)) {
        const char *v = colon + 1, *ve = le;
        while (v < ve && is_space(*v)) v++;
        while (ve > v && is_space(ve[-1])) ve--;
        if (!h->nhost++) h->host = v, h->host_len = (size_t)(ve - v);
      }
    }
    l = le + 2;
  }
  return 0;
}

/* The authority of an absolute http:// target as sent, and what follows it. */
static int authority_of(const struct head *h, const char **auth, size_t *alen) {
  if (h->tlen < 8 || memcmp(h->target, "http://", 7) != 0) return -1;
  const char *a = h->target + 7, *e = h->target + h->tlen, *q = a;
  while (q < e && *q != '/' && *q != '?' && *q != '#') q++;
  if (q == a) return -1;
  *auth = a;
  *alen = (size_t)(q - a);
  return 0;
}

int head_key(const struct head *h, struct sbuf *key) {
  key->len = 0;
  if (h->mlen == 7 && !memcmp(h->method, "CONNECT", 7)) {
    sb_add(key, "C ", 2);
    sb_add(key, h->target, h->tlen);
    return 0;
  }
  const char *auth;
  size_t alen;
  /* The proxy checks the Host header against the URL: with two of them, nothing is kept. */
  if (authority_of(h, &auth, &alen) != 0 || h->nhost > 1) return -1;
  sb_add(key, "H ", 2);
  sb_add(key, auth, alen);
  sb_add(key, " ", 1);
  if (h->host) sb_add(key, h->host, h->host_len);
  else sb_add(key, "\x01", 1);
  return 0;
}

/* The proxy's own headers: not passed on (nor Connection, Keep-Alive: one request per connection). */
static int dropped(const char *name, size_t n) {
  static const char *const names[] = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strlen(names[i]) == n && !strncasecmp(name, names[i], n)) return 1;
  return 0;
}

void head_origin_form(const struct head *h, struct sbuf *out) {
  const char *auth = NULL, *path, *end = h->target + h->tlen;
  size_t alen = 0;
  if (authority_of(h, &auth, &alen) != 0) {
    /* Only an absolute http:// target is ever allowed as plain HTTP (the proxy refuses the rest). */
    auth = h->target, alen = 0;
  }
  path = auth + alen;
  const char *frag = memchr(path, '#', (size_t)(end - path));
  if (frag) end = frag;
  sb_add(out, h->method, h->mlen);
  sb_add(out, " ", 1);
  if (path == end || *path != '/') sb_add(out, "/", 1);
  sb_add(out, path, (size_t)(end - path));
  sb_add(out, " ", 1);
  sb_add(out, h->version, h->vlen);
  sb_add(out, "\r\n", 2);
  const char *hend = h->headers + h->hlen;
  for (const char *l = h->headers; l < hend;) {
    const char *le = memmem(l, (size_t)(hend - l), "\r\n", 2);
    if (!le) le = hend;
    const char *colon = memchr(l, ':', (size_t)(le - l));
    if (colon && !dropped(l, (size_t)(colon - l))) {
      sb_add(out, l, (size_t)(le - l));
      sb_add(out, "\r\n", 2);
    }
    l = le + 2;
  }
  if (!h->nhost && alen) {
    sb_add(out, "Host: ", 6);
    sb_add(out, auth, alen);
    sb_add(out, "\r\n", 2);
  }
  sb_str(out, "Connection: close\r\n\r\n");
}

size_t sni_of(const unsigned char *b, size_t n, const unsigned char **name) {
  /* record header: type(1)=0x16, version(2), length(2); handshake: type(1)=1, length(3), version(2), random(32) */
  if (n < 5 + 4 + 2 + 32 + 1 || b[0] != 0x16 || b[5] != 0x01) return 0;
  size_t p = 5 + 4 + 2 + 32;
  p += 1 + b[p]; /* session id */
  if (p + 2 > n) return 0;
  p += 2 + ((size_t)b[p] << 8 | b[p + 1]); /* cipher suites */
  if (p + 1 > n) return 0;
  p += 1 + b[p]; /* compression methods */
  if (p + 2 > n) return 0;
  size_t end = p + 2 + ((size_t)b[p] << 8 | b[p + 1]);
  for (p += 2; p + 4 <= end && p + 4 <= n;) {
    size_t type = (size_t)b[p] << 8 | b[p + 1], len = (size_t)b[p + 2] << 8 | b[p + 3];
    p += 4;
    if (type == 0) {
      /* server_name list: length(2), then entries of type(1) = 0 (host_name), length(2), name */
      for (size_t q = p + 2; q + 3 <= p + len && q + 3 <= n;) {
        size_t nl = (size_t)b[q + 1] << 8 | b[q + 2];
        if (q + 3 + nl > n) return 0;
        if (b[q] == 0) return *name = b + q + 3, nl;
        q += 3 + nl;
      }
      return 0;
    }
    p += len;
  }
  return 0;
}

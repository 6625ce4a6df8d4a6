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
    /* The URL's host[:port] only: userinfo (user:pw@) is no part of a Host (the proxy refuses it anyway). */
    const char *at = memrchr(auth, '@', alen);
    if (at) alen -= (size_t)(at + 1 - auth), auth = at + 1;
    sb_add(out, "Host: ", 6);
    sb_add(out, auth, alen);
    sb_add(out, "\r\n", 2);
  }
  sb_str(out, "Connection: close\r\n\r\n");
}

/* Big-endian integers of 2 and 3 bytes. */
static size_t be16(const unsigned char *p) { return (size_t)p[0] << 8 | p[1]; }
static size_t be24(const unsigned char *p) { return (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2]; }

/* A ClientHello's body (after its 4-byte handshake header): its server_name (*name, *nl; 0: none) or why not. */
static int client_hello_sni(const unsigned char *b, size_t n, const unsigned char **name, size_t *nl, const char **why) {
  *nl = 0;
  /* legacy_version(2) random(32) session_id<0..32> cipher_suites<2..2^16-2> compression_methods<1..2^8-1> */
  size_t p = 2 + 32;
  if (p + 1 > n || b[p] > 32 || p + 1 + b[p] > n) return *why = "its session id is malformed", HELLO_BAD;
  p += 1 + b[p];
  if (p + 2 > n || be16(b + p) < 2 || be16(b + p) % 2 || p + 2 + be16(b + p) > n)
    return *why = "its cipher suites are malformed", HELLO_BAD;
  p += 2 + be16(b + p);
  if (p + 1 > n || b[p] < 1 || p + 1 + b[p] > n) return *why = "its compression methods are malformed", HELLO_BAD;
  p += 1 + b[p];
  if (p == n) return HELLO_DONE; /* no extensions at all: no server_name */
  if (p + 2 > n || p + 2 + be16(b + p) != n) return *why = "its extensions do not fill it exactly", HELLO_BAD;
  int seen = 0;
  for (p += 2; p < n;) {
    if (p + 4 > n) return *why = "an extension is cut short", HELLO_BAD;
    size_t type = be16(b + p), len = be16(b + p + 2);
    p += 4;
    if (p + len > n) return *why = "an extension is longer than the ClientHello", HELLO_BAD;
    if (type == 0) {
      /* RFC 6066 §3: ServerNameList<1..2^16-1> of (name_type(1), HostName<1..2^16-1>); one host_name at most. */
      if (seen++) return *why = "it has two server_name extensions", HELLO_BAD;
      if (len < 2 || be16(b + p) != len - 2) return *why = "its server_name list is malformed", HELLO_BAD;
      for (size_t q = p + 2, e = p + len; q < e;) {
        if (q + 3 > e || q + 3 + be16(b + q + 1) > e) return *why = "its server_name list is malformed", HELLO_BAD;
        size_t l = be16(b + q + 1);
        if (b[q] == 0) {
          if (*nl) return *why = "it names two hosts in server_name", HELLO_BAD;
          if (!l) return *why = "its server_name is empty", HELLO_BAD;
          *name = b + q + 3, *nl = l;
        }
        q += 3 + l;
      }
    }
    p += len;
  }
  return HELLO_DONE;
}

int hello_sni(const unsigned char *b, size_t n, struct sbuf *msg, const unsigned char **name, size_t *nl, const char **why) {
  *name = NULL, *nl = 0, *why = NULL;
  if (!n) return HELLO_MORE;
  if (b[0] != 0x16) return HELLO_NOT_TLS;
  /*
   * The handshake message may be spread over several records (RFC 8446 §5.1: a message split, or
   * zero-length fragments between): the records' headers are walked first, and the message copied out
   * only once all of it is here (a ClientHello trickled in byte by byte costs a walk per read, not a copy).
   */
  size_t off = 0, have = 0, want = 0, records = 0;
  unsigned char head[4];
  while (!want || have < want) {
    if (off + 5 > n) return off + 5 > HELLO_MAX_BYTES ? (*why = "the ClientHello is too large", HELLO_BAD) : HELLO_MORE;
    const unsigned char *r = b + off;
    if (r[0] != 0x16) return *why = "a record other than a handshake came before the ClientHello was complete", HELLO_BAD;
    if (r[1] != 3) return *why = "a record's version is not TLS", HELLO_BAD;
    size_t len = be16(r + 3);
    if (len > 16384) return *why = "a record is longer than TLS allows (2^14 bytes)", HELLO_BAD;
    if (++records > HELLO_MAX_RECORDS) return *why = "the ClientHello is spread over too many records", HELLO_BAD;
    if (off + 5 + len > HELLO_MAX_BYTES) return *why = "the ClientHello is too large", HELLO_BAD;
    if (off + 5 + len > n) return HELLO_MORE;
    /* The message's 4-byte header, possibly across fragments. */
    for (size_t i = 0; i < len && have + i < 4; i++) head[have + i] = r[5 + i];
    have += len;
    off += 5 + len;
    if (!want && have >= 4) {
      if (head[0] != 1) return *why = "the first handshake message is not a ClientHello", HELLO_BAD;
      want = 4 + be24(head + 1);
      if (want > HELLO_MAX_BYTES) return *why = "the ClientHello is too large", HELLO_BAD;
    }
  }
  /* All of it is here: copied out of its records, then read. */
  msg->len = 0;
  sb_reserve(msg, want);
  for (size_t o = 0; msg->len < want; o += 5 + be16(b + o + 3)) {
    size_t len = be16(b + o + 3), take = want - msg->len < len ? want - msg->len : len;
    sb_add(msg, b + o + 5, take);
  }
  return client_hello_sni((const unsigned char *)msg->p + 4, want - 4, name, nl, why);
}

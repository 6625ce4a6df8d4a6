/*
 * A coverage-guided fuzz target (libFuzzer, built with ASan and UBSan) for the pump's readings of bytes
 * a sandbox chose: request heads (head_parse, head_key, head_origin_form) and the TLS ClientHello at the
 * start of a tunnel (hello_sni, its reassembly across records). test/hardening/pump-fuzz.test.ts builds
 * and runs it from the seed corpus beside it (corpus/, made by test/hardening/make-pump-corpus.ts).
 *
 * An input is what a client sends: a head up to its blank line, then a tunnel's first bytes. Besides
 * memory errors and undefined behaviour, the target aborts on a broken promise of the parsers (a
 * "bypass": what the pump would send on is not what was decided):
 *  - the origin-form request it would send upstream reads back as a head, with one Host at most, and a
 *    Host it added from the URL carries no userinfo;
 *  - a ClientHello's name lies inside the reassembled message; an input whose ClientHello is not yet
 *    whole (HELLO_MORE) has no prefix that is already refused or decided.
 */
#include "../pump.h"

#include <stdlib.h>
#include <string.h>

static void check(int ok) {
  if (!ok) abort();
}

static void fuzz_hello(const unsigned char *b, size_t n) {
  struct sbuf msg = {0};
  const unsigned char *name;
  size_t nl;
  const char *why;
  int r = hello_sni(b, n, &msg, &name, &nl, &why);
  if (r == HELLO_DONE && nl) check(name >= (const unsigned char *)msg.p + 4 && name + nl <= (const unsigned char *)msg.p + msg.len);
  if (r == HELLO_BAD) check(why != NULL);
  if (r == HELLO_MORE && n > 1) check(hello_sni(b, n / 2, &msg, &name, &nl, &why) == HELLO_MORE);
  free(msg.p);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  const char *buf = (const char *)data;
  const char *end = memmem(buf, size, "\r\n\r\n", 4);
  size_t head_len = end ? (size_t)(end - buf) : size;
  struct head h;
  if (head_parse(buf, head_len, &h) == 0) {
    struct sbuf key = {0}, out = {0};
    head_key(&h, &key);
    head_origin_form(&h, &out);
    /* What would go upstream is a head the proxy itself would read, with at most one Host. */
    check(out.len >= 4 && !memcmp(out.p + out.len - 4, "\r\n\r\n", 4));
    struct head o;
    check(head_parse(out.p, out.len - 4, &o) == 0);
    if (h.nhost <= 1) check(o.nhost <= 1);
    if (!h.nhost && o.nhost) check(!memchr(o.host, '@', o.host_len));
    free(key.p);
    free(out.p);
  }
  fuzz_hello(data, size);
  if (end) fuzz_hello(data + head_len + 4, size - head_len - 4);
  return 0;
}

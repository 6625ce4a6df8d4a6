/*
 * The proxy's allowed verdicts, kept by the pump for identical requests: a head whose key (http.c:
 * the CONNECT target, or the URL's authority and the Host header, byte for byte as sent) was allowed
 * under the policies.json of now is dialled without asking the proxy again. Nothing is decided here —
 * a kept verdict is the proxy's own answer to the very same question — and it holds only while:
 *  - policies.json is the file the proxy decided under (its inode, size and mtime, stat'ed on every
 *    use: a change made by the app takes effect on the next connection, as the proxy's own reading
 *    of the file does), and
 *  - its time is not up (the proxy resolved the name: the addresses are kept as long as it says).
 * Refusals are never kept: each goes to the proxy, which writes why.
 *
 * Why: each question to the proxy wakes another process twice, and on a small machine the wake-ups
 * cost more than the decision (docs/network-policy.md, run 16).
 */
#include "pump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Kept per sandbox at most; the oldest goes first. */
#define MAX_KEPT 256

char *policies_path;

void policies_stamp(char *buf, size_t cap) {
  struct stat st;
  if (!policies_path || stat(policies_path, &st) != 0) {
    snprintf(buf, cap, "none");
    return;
  }
  snprintf(buf, cap, "%llu:%llu:%lld", (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
           (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
}

static void verdict_free(struct verdict *e) {
  free(e->key);
  free(e->host);
  free(e->sni);
  free(e->addrs);
  free(e->stamp);
  free(e);
}

const struct verdict *verdicts_find(struct verdicts *v, const char *key, size_t key_len) {
  for (struct verdict **pp = &v->list; *pp; pp = &(*pp)->next) {
    struct verdict *e = *pp;
    if (strlen(e->key) != key_len || memcmp(e->key, key, key_len) != 0) continue;
    char now[96];
    policies_stamp(now, sizeof now);
    if (e->expires > now_ms() && !strcmp(now, e->stamp)) return e;
    /* Stale: gone, and the proxy is asked. */
    *pp = e->next;
    verdict_free(e);
    v->n--;
    return NULL;
  }
  return NULL;
}

void verdicts_keep(struct verdicts *v, const char *key, size_t key_len, int connect, const char *host, int port, const char *sni,
                   const char *addrs, int timeout_ms, const char *stamp, int64_t ttl_ms) {
  if (ttl_ms <= 0) return;
  /* One per key: a newer verdict replaces the older. */
  for (struct verdict **pp = &v->list; *pp; pp = &(*pp)->next)
    if (strlen((*pp)->key) == key_len && !memcmp((*pp)->key, key, key_len)) {
      struct verdict *e = *pp;
      *pp = e->next;
      verdict_free(e);
      v->n--;
      break;
    }
  if (v->n >= MAX_KEPT) {
    struct verdict **pp = &v->list;
    while ((*pp)->next) pp = &(*pp)->next;
    verdict_free(*pp);
    *pp = NULL;
    v->n--;
  }
  struct verdict *e = xmalloc(sizeof *e);
  *e = (struct verdict){.key = xstrndup(key, key_len), .connect = connect, .host = xstrdup(host), .port = port,
                        .sni = sni ? xstrdup(sni) : NULL, .addrs = xstrdup(addrs), .stamp = xstrdup(stamp), .timeout_ms = timeout_ms,
                        .expires = now_ms() + ttl_ms, .next = v->list};
  v->list = e;
  v->n++;
}

void verdicts_clear(struct verdicts *v) {
  while (v->list) {
    struct verdict *e = v->list;
    v->list = e->next;
    verdict_free(e);
  }
  v->n = 0;
}

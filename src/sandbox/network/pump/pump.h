/*
 * The egress pump's modules (see main.c for what the pump is and its protocol with the proxy):
 *   util.c      memory, growable buffers, hex, JSON strings, time
 *   http.c      request heads: their shape, the verdict cache's key, the origin-form rewrite, TLS SNI
 *   lookup.c    which process in a sandbox holds a socket (sock_diag in its namespace, then /proc)
 *   helper.c    the lookup helper: a process of its own, the only one keeping privileges, asked asynchronously
 *   confine.c   what the pump and its helper may do: capabilities dropped, no_new_privs, seccomp
 *   journal.c   the sandbox's connection log: one JSON line per decision, bounded, reopened when replaced
 *   verdicts.c  the proxy's allowed verdicts kept for identical requests while policies.json is unchanged
 *   main.c      the channel to the proxy, the sandboxes' sockets, connections, the loop
 */
#ifndef EGRESS_PUMP_H
#define EGRESS_PUMP_H

#define _GNU_SOURCE
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- util.c ---------------------------------------------------------------------------------- */

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
int64_t now_ms(void);

/* A growable byte buffer. */
struct sbuf {
  char *p;
  size_t len, cap;
};
void sb_reserve(struct sbuf *b, size_t more);
void sb_add(struct sbuf *b, const void *p, size_t n);
void sb_str(struct sbuf *b, const char *s);
void sb_fmt(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_hex(struct sbuf *b, const void *p, size_t n);
/* A JSON string (quotes included): escaped, and invalid UTF-8 replaced by U+FFFD as JavaScript would read it. */
void sb_json(struct sbuf *b, const char *s, size_t n);
/* This moment as an ISO 8601 UTC time with milliseconds (JavaScript's toISOString). */
void sb_iso_now(struct sbuf *b);

/* Hex to bytes in a new buffer (NUL-terminated); NULL on a bad digit. "-" is empty. */
char *unhex(const char *s, size_t *len);

/* ---- lookup.c -------------------------------------------------------------------------------- */

/* What the lookup learns of one sandbox's network namespace (from its relay's listener). */
struct lookup_ns {
  int diag_fd; /* a NETLINK_SOCK_DIAG socket made in the namespace; -1: no lookup here */
  int told;
  unsigned long ino;
  char net[48];    /* "net:[inode]", as /proc/<pid>/ns/net reads */
  char procs[256]; /* the container's cgroup.procs, learned from a holder; "" until then */
  int last_holder, last_fd;
};

/* The command line shown on the log is cut at 120 characters; this much is read (the exec wrapper's name is early). */
#define CMDLINE_READ 1024

/* The process behind a connection. */
struct found {
  int host_pid, pid; /* pid: as the sandbox sees it */
  char comm[64];     /* its name */
  char *cmdline;     /* NUL-separated, the first CMDLINE_READ bytes */
  size_t cmdline_len;
  int ancestry[64]; /* the sandbox's pids of its parents, parent first, up to the container's init */
  int nancestry;
};

void lookup_init(struct lookup_ns *ns);
void lookup_close(struct lookup_ns *ns);
/* Takes the namespace of `listener`, a socket the relay made there; says why not where it cannot. */
void lookup_learn(struct lookup_ns *ns, int listener, int key, void (*say)(const char *fmt, ...));
/*
 * Who holds the TCP socket whose own end is `src` and peer `dst` in the namespace; 0 and *f filled, -1: not
 * known (or not found by `deadline`, now_ms: the scan is abandoned).
 */
int lookup(struct lookup_ns *ns, const struct sockaddr_in *src, const struct sockaddr_in *dst, int64_t deadline, struct found *f);
void found_free(struct found *f);
/* Must be called once, before any lookup_learn (the pump's own namespace, to come back to). */
int lookup_setup(void);

/* ---- helper.c ------------------------------------------------------------------------------- */

/* The pump's end of the helper's socket; -1: no helper (none started, or it is gone: nothing is looked up). */
extern int helper_fd;
/* Forks the lookup helper (before the pump drops its privileges). 0, or -1: the pump serves without lookups. */
int helper_start(void);
/* Passes a sandbox's listener (its network namespace) to the helper; forgets what it learned of a sandbox. */
void helper_learn(int key, int listener);
void helper_forget(int key);
/* Asks who holds a connection, answered by `deadline` (now_ms) or not at all. 0: asked; -1: cannot be asked. */
int helper_ask(uint64_t id, int key, const struct sockaddr_in *src, const struct sockaddr_in *dst, int64_t deadline);
/* Reads the helper's answers: found(id, f) for each lookup (f NULL: not known), say(text) for its notes. */
void helper_read(void (*found)(uint64_t id, struct found *f), void (*say)(const char *fmt, ...));

/* ---- confine.c ------------------------------------------------------------------------------ */

/* The parsing and splicing pump: no capability left anywhere, no_new_privs, the seccomp allow-list. 0, or -1. */
int confine_pump(void (*say)(const char *fmt, ...));
/* The lookup helper: only the capabilities in `keep` (bits of CAP_*), no_new_privs. 0, or -1. */
int confine_helper(uint64_t keep);
/* (tests) Calls outside the pump's allow-list, each as "NAME=ERRNO_NAME", for the probe command's answer. */
void confine_probe(struct sbuf *out);

/* ---- http.c ---------------------------------------------------------------------------------- */

/* A request head as the pump reads it (pointers into the head's bytes). */
struct head {
  const char *method, *target, *version, *headers; /* headers: after the request line's CRLF */
  size_t mlen, tlen, vlen, hlen;
  const char *host; /* the Host header's value, trimmed; NULL if none */
  size_t host_len;
  int nhost; /* how many Host headers */
};
/* Parses a head (without its blank line) as the proxy would accept it; 0, or -1 for any other shape. */
int head_parse(const char *buf, size_t n, struct head *h);
/*
 * The key under which the proxy's verdict on this head may be kept: the request target as sent (CONNECT),
 * or the absolute URL's authority as sent and the Host header (plain HTTP). 0, or -1: not to be kept.
 */
int head_key(const struct head *h, struct sbuf *key);
/* The plain-HTTP request in origin form: the path, the head without the proxy's own headers, Connection: close. */
void head_origin_form(const struct head *h, struct sbuf *out);
/* What a tunnel's first bytes are as TLS (hello_sni). */
enum { HELLO_MORE, HELLO_NOT_TLS, HELLO_BAD, HELLO_DONE };
/* A ClientHello, with the records around it, is at most this long, over at most this many records. */
#define HELLO_MAX_BYTES (64 * 1024)
#define HELLO_MAX_RECORDS 64
/*
 * The server_name of the ClientHello at the start of a tunnel's bytes `b`, its handshake message
 * reassembled (in `msg`) across as many TLS records as it was split into. HELLO_MORE: not all of it is
 * here yet; HELLO_NOT_TLS: the first byte is not a handshake record (another protocol); HELLO_BAD: *why
 * (malformed, too large, or another record type first); HELLO_DONE: *name and *nl (into msg), 0 for none.
 */
int hello_sni(const unsigned char *b, size_t n, struct sbuf *msg, const unsigned char **name, size_t *nl, const char **why);

/* ---- journal.c ------------------------------------------------------------------------------- */

/* One sandbox's connection log: <data>/network/logs/<sandbox>.jsonl (and .1.jsonl, the older half). */
struct journal {
  char *path, *older, *sandbox_json; /* sandbox_json: its name as a JSON string */
  int fd;
  ino_t ino;
};
void journal_open(struct journal *j, const char *path, const char *sandbox);
void journal_close(struct journal *j);
/* Past this a log becomes its older half (the proxy sets it: LOG_MAX_BYTES of network-files.ts). */
extern long journal_max_bytes;
/* One decision's line (reason NULL: none; f NULL: the process is not known). 0, or -1 when it could not be written. */
int journal_write(struct journal *j, const char *verdict, const char *host, size_t host_len, int port, const char *kind,
                  const char *reason, size_t reason_len, const struct found *f);
/* The process as the log shows it, as JSON members: "process":"…","pid":N,"ancestry":[…] (or "process":null). */
void journal_process(struct sbuf *b, const struct found *f);

/* ---- verdicts.c ------------------------------------------------------------------------------ */

/* An allowed verdict of the proxy, kept for identical requests. */
struct verdict {
  char *key;
  int connect; /* else plain HTTP */
  char *host;  /* as the proxy decided it (normalized): the log's host */
  int port;
  char *sni;   /* the name a ClientHello must carry (CONNECT to a name), or NULL */
  char *addrs; /* comma-separated, the order to dial them in */
  char *stamp; /* the policies.json the proxy decided under: "ino:size:mtime_ns" or "none" */
  int timeout_ms; /* how long a dial may take */
  int64_t expires;
  struct verdict *next;
};
struct verdicts {
  struct verdict *list;
  int n;
};
/* Where the sandboxes' policies are (policies.json): stat'ed on every use of a kept verdict. */
extern char *policies_path;
/* A kept verdict for `key` that still holds (not expired, policies.json unchanged), or NULL. */
const struct verdict *verdicts_find(struct verdicts *v, const char *key, size_t key_len);
void verdicts_keep(struct verdicts *v, const char *key, size_t key_len, int connect, const char *host, int port, const char *sni,
                   const char *addrs, int timeout_ms, const char *stamp, int64_t ttl_ms);
void verdicts_clear(struct verdicts *v);
/* policies.json as the proxy writes its stamp. */
void policies_stamp(char *buf, size_t cap);

#endif

/*
 * egress-pump: the egress proxy's data path (issue 17), compiled. It holds the sockets sandboxes
 * connect to, reads each connection's request head, asks the proxy in Node for a verdict (one line
 * each way over its stdin/stdout), writes the decision's line on the sandbox's log, and then dials and
 * moves the bytes itself, with splice(2). Node makes every decision — the policy, DNS, the Host check —
 * and nothing here knows a rule; the pump keeps Node's allowed verdicts for byte-identical requests while
 * policies.json is unchanged (verdicts.c), so a client that asks the same again is not a question to Node.
 *
 * Why by hand, in C: the decision is the whole job and it is the app's own (a maintained proxy such as
 * haproxy or squid would need the policy, the log and the process lookup re-expressed in its
 * configuration, reloaded on every change), and each connection handled in Node cost ~1.4 ms of CPU
 * on this project's 2-core machines — a small request through the proxy took 1.5x as long as without
 * it (docs/network-policy.md, runs 1-15). Here a connection costs a few dozen syscalls.
 *
 * What it holds, per sandbox (Node's `serve`):
 *  - proxy.sock: connections as they are (QEMU's guestfwd, tests);
 *  - relay.sock: the links of a docker sandbox's relay (egress-relay-script.ts), each passing the
 *    listening TCP socket of the sandbox's proxy address, made in the sandbox's network namespace. The
 *    pump accepts the sandbox's connections on it itself: no process between. When a link ends the
 *    pump closes that listener (the relay closes its copy: the address refuses, fails closed). When the
 *    pump dies, all of it goes with it;
 *  - the sandbox's log (journal.c), and the process behind each connection (lookup.c).
 *
 * Protocol (lines; binary or free-text fields in hex; fields separated by one space):
 *  Node -> pump: config POLICIES_HEX LOG_MAX_BYTES [MAX_CONNS MAX_HEADS MAX_HEAD_BYTES]
 *                                                      the limits are per sandbox (0: the default, 256 64 4 MiB)
 *                serve KEY PROXY_SOCK_HEX RELAY_SOCK_HEX|- LOG_HEX SANDBOX_HEX   (answers served / unserved)
 *                unserve KEY [REASON_HEX]              stop: sockets removed, relay links closed, its
 *                                                      connections closed (a line for each open one)
 *                tunnels KEY                           its allowed connections: tunnels ...
 *                cut ID REASON_HEX                     the policy no longer allows it: a denied line
 *                                                      ("open connection closed: REASON"), then closed
 *                dial ID KIND HOST PORT SNI|- ADDR[,ADDR...] TIMEOUT_MS STAMP KEEP_MS
 *                                                      allowed: logged, dialled, kept for KEEP_MS (0: not)
 *                answer ID VERDICT|- HOST PORT KIND REASON_HEX|- RESPONSE_HEX
 *                                                      logged (unless -), answered, closed once the client
 *                                                      has finished sending
 *                lookup KEY SRC SPORT DST DPORT        (tests) the process behind a 4-tuple: found ... (in order)
 *                probe                                 (tests) calls outside the seccomp allow-list: probed ...
 *  pump -> Node: ready
 *                served KEY | unserved KEY WHY_HEX
 *                conn ID KEY HEAD_HEX                  a request head the pump has no verdict for
 *                tunnels KEY [ID,KIND,PORT,HOST,ADDR ...]  its connections allowed and not yet finished
 *                                                      (dialling or open), each as decided
 *                found JSON|-                          {"hostPid":N,"process":…,"pid":N,"ancestry":[…]}
 *                probed NAME=EPERM|allowed|ERRNO ...   what each call outside the allow-list did
 *                say TEXT                              for the proxy's log (proxy.log)
 * A connection whose head is too large is answered 431 here, one past its sandbox's limits 503 (the
 * limits: `limits` below); everything else about HTTP is Node's. When the
 * policies change Node asks for each sandbox's `tunnels`, decides each again and `cut`s those no
 * longer allowed (issue 35 #11): a change applies to connections already open, not only to new ones.
 * The pump exits when its stdin ends (the proxy is gone), and dies with its parent (PR_SET_PDEATHSIG).
 *
 * Privileges (issue 35, item 13): at start the pump forks its lookup helper (helper.c), the one process
 * that keeps the few capabilities a process lookup needs, then drops every capability, sets
 * no_new_privs and installs a seccomp allow-list (confine.c) before it reads a byte a sandbox sent.
 * Lookups are asked of the helper and answered asynchronously (item 10): a decision waits for its
 * connection's answer at most LOOKUP_WAIT_MS, so the log line names the process in the normal case
 * (the answer is there in well under a millisecond) and a slow lookup delays nothing by more.
 */
#include "pump.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_HEAD (64 * 1024)
#define CHUNK (1 << 20)
#define HEAD_TIMEOUT_MS 60000
#define VERDICT_TIMEOUT_MS 30000
#define CLOSING_TIMEOUT_MS 5000
/* Once a ClientHello has begun, the rest of it must come within this (it is held, not passed on, meanwhile). */
#define HELLO_TIMEOUT_MS 10000
#define HASH 4096
#define PIPE_POOL 64
/*
 * How long a decision (Node's, or a kept verdict) waits for its connection's process lookup before it
 * goes on without it. Waiting — rather than logging at once and completing the line later — keeps one
 * line per decision, written before the client has its answer (what network-call-link and every reader
 * of the log rely on); the helper answers the normal case in well under a millisecond, so only a lookup
 * that could not be done quickly costs this, and that once.
 */
#define LOOKUP_WAIT_MS 100
/* A test's lookup (the lookup command) waits longer: its answer, not a connection, is what it is for. */
#define TEST_LOOKUP_WAIT_MS 2000
#define TEST_LOOKUP_BIT (1ull << 63)

/*
 * Per sandbox, so that one sandbox cannot starve the others of the pump's descriptors or memory
 * (issue 35 #9): its open connections, its pending heads (connections whose request is not decided
 * yet: still being read, or with Node) and the bytes their buffers hold. Past one, a new connection
 * is refused (503, then closed) and the proxy's log says which limit, once a second at most.
 * Node may set others with `config`.
 */
enum { L_CONNS, L_HEADS, L_HEAD_BYTES, NLIMITS };
static long limits[NLIMITS] = {256, 64, 4L << 20};
static const char *const limit_names[NLIMITS] = {"open connections", "pending request heads", "bytes of pending request heads"};
struct refusals {
  long n;          /* refused since the last line */
  int64_t said_at; /* when the last line was said */
};

enum { T_CTL_IN, T_CTL_OUT, T_PROXY_LS, T_RELAY_LS, T_LINK, T_TCP_LS, T_CLIENT, T_UPSTREAM, T_HELPER };
struct tag {
  int type;
  void *p;
};

static int ep;

static int epoll_add(int fd, struct tag *t, uint32_t events) {
  struct epoll_event e = {.events = events, .data.ptr = t};
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

/*
 * Closed sandboxes, links and connections are freed only after the batch of events being handled:
 * a later event of the same batch may still point at them (it then finds them dead and does nothing).
 */
static void **grave;
static size_t ngrave, capgrave;

static void bury(void *p) {
  if (ngrave == capgrave) grave = xrealloc(grave, (capgrave = capgrave * 2 + 16) * sizeof *grave);
  grave[ngrave++] = p;
}

/* A listener passed by a relay is shared with it: closing our descriptor alone would leave it in epoll. */
static void close_shared(int fd) {
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
}

/* ---------------------------------------------------------------------------------------------- */
/* the channel to Node                                                                              */

static struct sbuf out;
static size_t out_off;
static int out_waiting; /* registered for EPOLLOUT */
static struct tag ctl_out_tag = {T_CTL_OUT, NULL};

/* Writes what it can now; the rest when stdout is writable again. Node gone: nothing to serve. */
static void out_flush(void) {
  while (out_off < out.len) {
    ssize_t k = write(1, out.p + out_off, out.len - out_off);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) {
      if (!out_waiting) {
        struct epoll_event e = {.events = EPOLLOUT, .data.ptr = &ctl_out_tag};
        epoll_ctl(ep, EPOLL_CTL_ADD, 1, &e);
        out_waiting = 1;
      }
      return;
    }
    if (k <= 0) _exit(0);
    out_off += (size_t)k;
  }
  out_off = out.len = 0;
  if (out_waiting) {
    epoll_ctl(ep, EPOLL_CTL_DEL, 1, NULL);
    out_waiting = 0;
  }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char tmp[900];
  va_list a;
  va_start(a, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, a);
  va_end(a);
  for (char *p = tmp; *p; p++)
    if (*p == '\n') *p = ' ';
  sb_fmt(&out, "say %s\n", tmp);
}

/* ---------------------------------------------------------------------------------------------- */
/* sandboxes, their listeners and relay links                                                        */

struct link;
struct sandbox {
  int key;
  char *proxy_path, *relay_path; /* relay_path "": none */
  struct tag proxy_tag, relay_tag;
  int proxy_ls, relay_ls;
  struct link *links;
  struct journal log;
  struct verdicts kept;
  int dead;
  /* What its connections hold now (the per-sandbox limits: one sandbox must not starve the others). */
  int nconn, nheads;
  size_t head_bytes;
  struct refusals refused[NLIMITS];
  struct sandbox *next;
};
struct link {
  struct tag tag, ls_tag;
  struct sandbox *sb;
  int fd, ls, dead;
  struct link *next;
};
static struct sandbox *sandboxes;

static struct sandbox *sandbox_of(int key) {
  for (struct sandbox *s = sandboxes; s; s = s->next)
    if (s->key == key) return s;
  return NULL;
}

static void link_close(struct link *l) {
  struct link **pp = &l->sb->links;
  while (*pp && *pp != l) pp = &(*pp)->next;
  if (*pp) *pp = l->next;
  if (l->ls >= 0) close_shared(l->ls);
  close(l->fd);
  l->dead = 1;
  bury(l);
}

/* A Unix socket the relay (root of its own container, not of this machine) or QEMU may connect to. */
static int unix_listen(const char *path, struct tag *t) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) return errno = ENAMETOOLONG, -1;
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  unlink(path);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(path, 0666) != 0 || listen(fd, 512) != 0 ||
      epoll_add(fd, t, EPOLLIN | EPOLLET) != 0) {
    int e = errno;
    close(fd);
    unlink(path);
    return errno = e, -1;
  }
  return fd;
}

static void conns_of_close(struct sandbox *s, const char *why);

/* `why`: the reason each open connection's line gives (NULL: a sandbox never served, it has none). */
static void sandbox_free(struct sandbox *s, const char *why) {
  /* Its connections first (they count against it, their lines go on its log): nothing of it stays open. */
  conns_of_close(s, why);
  while (s->links) link_close(s->links);
  if (s->proxy_ls >= 0) close(s->proxy_ls), unlink(s->proxy_path);
  if (s->relay_ls >= 0) close(s->relay_ls), unlink(s->relay_path);
  free(s->proxy_path);
  free(s->relay_path);
  helper_forget(s->key);
  journal_close(&s->log);
  verdicts_clear(&s->kept);
  struct sandbox **pp = &sandboxes;
  while (*pp && *pp != s) pp = &(*pp)->next;
  if (*pp) *pp = s->next;
  s->dead = 1;
  bury(s);
}

static void cmd_serve(char **f) {
  int key = atoi(f[1]);
  size_t n;
  char *proxy = unhex(f[2], &n), *relay = unhex(f[3], &n), *log = unhex(f[4], &n), *name = unhex(f[5], &n);
  if (!proxy || !relay || !log || !name || !proxy[0] || !log[0]) {
    say("bad serve command");
    goto done;
  }
  struct sandbox *old = sandbox_of(key);
  if (old) sandbox_free(old, "the sandbox is served anew");
  struct sandbox *s = calloc(1, sizeof *s);
  if (!s) abort();
  s->key = key;
  s->proxy_ls = s->relay_ls = -1;
  s->proxy_tag = (struct tag){T_PROXY_LS, s};
  s->relay_tag = (struct tag){T_RELAY_LS, s};
  /* Whole, never cut to fit: a path too long for a Unix socket is refused by unix_listen (ENAMETOOLONG). */
  s->proxy_path = proxy, s->relay_path = relay;
  proxy = relay = NULL;
  journal_open(&s->log, log, name);
  s->next = sandboxes;
  sandboxes = s;
  /* The relay's socket first: once proxy.sock exists, the daemon's supervisor counts the sandbox as served. */
  if ((s->relay_path[0] && (s->relay_ls = unix_listen(s->relay_path, &s->relay_tag)) < 0) ||
      (s->proxy_ls = unix_listen(s->proxy_path, &s->proxy_tag)) < 0) {
    char why[300];
    snprintf(why, sizeof why, "cannot listen on %s: %s", s->relay_ls < 0 && s->relay_path[0] ? s->relay_path : s->proxy_path,
             strerror(errno));
    sandbox_free(s, NULL);
    sb_fmt(&out, "unserved %d ", key);
    sb_hex(&out, why, strlen(why));
    sb_str(&out, "\n");
    goto done;
  }
  sb_fmt(&out, "served %d\n", key);
done:
  free(proxy);
  free(relay);
  free(log);
  free(name);
}

/* A relay link passed something: only a listening IPv4 TCP socket is taken (the relay runs in the sandbox's namespace). */
static void link_read(struct link *l) {
  for (;;) {
    char data[64];
    union {
      char buf[CMSG_SPACE(16 * sizeof(int))];
      struct cmsghdr align;
    } u;
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n = recvmsg(l->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < count; i++) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        int acc = 0, dom = 0, type = 0;
        socklen_t sl = sizeof(int);
        int ok = getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &sl) == 0 && acc == 1;
        sl = sizeof(int);
        ok = ok && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &sl) == 0 && dom == AF_INET;
        sl = sizeof(int);
        ok = ok && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl) == 0 && type == SOCK_STREAM;
        if (!ok || fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
          close(fd);
          continue;
        }
        if (l->ls >= 0) close_shared(l->ls);
        l->ls = fd;
        l->ls_tag = (struct tag){T_TCP_LS, l};
        epoll_add(fd, &l->ls_tag, EPOLLIN | EPOLLET);
        helper_learn(l->sb->key, fd);
      }
    }
    if (n <= 0) {
      /* The link is gone: so is the listener it passed (the relay closes its copy: refused, fails closed). */
      link_close(l);
      return;
    }
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* connections                                                                                      */

enum { S_HEAD, S_VERDICT, S_DIAL, S_HELLO, S_RELAY, S_CLOSING, S_DEAD };

/* One direction: what is pending from us first, then the source's bytes through a pipe (splice). */
struct way {
  int *src, *dst;
  int pr, pw;
  size_t in_pipe;
  char *pend;
  size_t pend_len, pend_off;
  int eof, done, on, discard;
};

struct conn {
  struct tag tc, tu;
  uint64_t id;
  int key;
  int c, u;
  int state;
  char *buf; /* the head, then what followed it: a request's body, or (CONNECT) the tunnel's first bytes */
  size_t len, cap, head_len;
  struct sbuf cache_key; /* the head's verdict key (http.c), empty: none */
  /* the process behind it: asked of the helper once the head is in (tcp: accepted on a relay's listener) */
  struct sockaddr_in peer, self;
  int can_lookup, known;
  int asking;          /* asked, not answered yet */
  int64_t lookup_by;   /* when a decision stops waiting for the answer */
  int parked;          /* a decision waits for the answer (on the parked list) */
  char *parked_cmd;    /* Node's command to run then; NULL: a kept verdict, decided again then */
  struct conn *pnext, **pprev;
  struct found proc;
  struct way up, down; /* up: client -> destination; down: destination -> client */
  /* the dial */
  char **addrs;
  int naddr, ai, port, connect;
  char *host, *sni; /* host: as decided (the log's, and 502's); sni: what a ClientHello must name, or NULL */
  int64_t deadline, dial_deadline;
  /* what it counts against its sandbox's limits: counted (an open connection), pending (a head not yet decided), held (its buffer's bytes) */
  int counted, pending;
  size_t held;
  struct conn *hnext, *prev, *next;
};

static struct conn *conns;
static struct conn *parked_list;
static struct conn *by_id[HASH];
static uint64_t next_id = 1;
static int pipes[PIPE_POOL][2], npipes;

static struct conn *conn_of(uint64_t id) {
  for (struct conn *c = by_id[id % HASH]; c; c = c->hnext)
    if (c->id == id) return c;
  return NULL;
}

static int pipe_get(struct way *w) {
  if (w->pr >= 0) return 0;
  int p[2];
  if (npipes > 0) {
    npipes--;
    p[0] = pipes[npipes][0], p[1] = pipes[npipes][1];
  } else {
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
    fcntl(p[1], F_SETPIPE_SZ, CHUNK); /* best effort: the default 64 KiB works, only slower for bulk */
  }
  w->pr = p[0], w->pw = p[1];
  return 0;
}

static void way_free(struct way *w) {
  if (w->pr >= 0) {
    /* An empty pipe is as good as new: kept for the next connection. */
    if (w->in_pipe == 0 && npipes < PIPE_POOL) {
      pipes[npipes][0] = w->pr, pipes[npipes][1] = w->pw;
      npipes++;
    } else {
      close(w->pr);
      close(w->pw);
    }
  }
  free(w->pend);
  w->pr = w->pw = -1;
  w->pend = NULL;
}

/* Its head is decided (or it is gone): no longer a pending head of its sandbox. */
static void pending_end(struct conn *c) {
  if (!c->pending) return;
  struct sandbox *s = sandbox_of(c->key);
  if (s) s->nheads--, s->head_bytes -= c->held;
  c->pending = 0;
  c->held = 0;
}

static void conn_close(struct conn *c) {
  if (c->state == S_DEAD) return;
  c->state = S_DEAD;
  pending_end(c);
  if (c->counted) {
    struct sandbox *s = sandbox_of(c->key);
    if (s) s->nconn--;
  }
  if (c->c >= 0) close(c->c);
  if (c->u >= 0) close(c->u);
  way_free(&c->up);
  way_free(&c->down);
  struct conn **pp = &by_id[c->id % HASH];
  while (*pp && *pp != c) pp = &(*pp)->hnext;
  if (*pp) *pp = c->hnext;
  if (c->prev) c->prev->next = c->next;
  else conns = c->next;
  if (c->next) c->next->prev = c->prev;
  for (int i = 0; i < c->naddr; i++) free(c->addrs[i]);
  free(c->addrs);
  free(c->buf);
  free(c->cache_key.p);
  found_free(&c->proc);
  if (c->parked) {
    *c->pprev = c->pnext;
    if (c->pnext) c->pnext->pprev = c->pprev;
  }
  free(c->parked_cmd);
  free(c->host);
  free(c->sni);
  bury(c);
}

static void way_pend(struct way *w, const char *p, size_t n) {
  if (!n) return;
  size_t left = w->pend_len - w->pend_off;
  char *b = xmalloc(left + n);
  if (left) memcpy(b, w->pend + w->pend_off, left);
  memcpy(b + left, p, n);
  free(w->pend);
  w->pend = b;
  w->pend_len = left + n;
  w->pend_off = 0;
}

/*
 * Moves what it can of one direction: our pending bytes, then the source's through the pipe. A
 * source's end passes on as a write shutdown (half-close: the other way stays open). -1: broken.
 */
static int way_pump(struct way *w) {
  if (!w->on || w->done) return 0;
  for (;;) {
    if (w->pend_off < w->pend_len) {
      ssize_t k = send(*w->dst, w->pend + w->pend_off, w->pend_len - w->pend_off, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return 0;
      if (k < 0) return -1;
      w->pend_off += (size_t)k;
      continue;
    }
    if (w->in_pipe) {
      ssize_t k = splice(w->pr, NULL, *w->dst, NULL, w->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return 0;
      if (k <= 0) return -1;
      w->in_pipe -= (size_t)k;
      continue;
    }
    if (w->eof) {
      if (!w->discard && *w->dst >= 0) shutdown(*w->dst, SHUT_WR);
      w->done = 1;
      return 0;
    }
    if (w->discard) {
      char sink[4096];
      ssize_t k = recv(*w->src, sink, sizeof sink, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return 0;
      if (k <= 0) w->eof = 1;
      continue;
    }
    if (pipe_get(w) != 0) return -1;
    ssize_t k = splice(*w->src, NULL, w->pw, NULL, CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return 0;
    if (k < 0) {
      if (errno == ECONNRESET) {
        w->eof = 1;
        continue;
      }
      return -1;
    }
    if (k == 0) w->eof = 1;
    else w->in_pipe += (size_t)k;
  }
}

static void conn_pump(struct conn *c) {
  if (way_pump(&c->up) < 0 || way_pump(&c->down) < 0) return conn_close(c);
  if (c->up.done && c->down.done) conn_close(c);
}

/* Answers the client with `resp` and closes once it has finished sending (a close with its bytes unread would reset the answer). */
static void conn_answer(struct conn *c, const char *resp, size_t n) {
  pending_end(c);
  /* The head is answered: its buffer is not needed while the answer drains. */
  free(c->buf);
  c->buf = NULL;
  c->len = c->cap = c->head_len = 0;
  if (c->u >= 0) close(c->u), c->u = -1;
  way_free(&c->up);
  way_free(&c->down);
  c->state = S_CLOSING;
  c->deadline = now_ms() + CLOSING_TIMEOUT_MS;
  c->down = (struct way){.src = &c->u, .dst = &c->c, .pr = -1, .pw = -1, .on = 1, .eof = 1};
  way_pend(&c->down, resp, n);
  c->up = (struct way){.src = &c->c, .dst = &c->u, .pr = -1, .pw = -1, .on = 1, .discard = 1};
  conn_pump(c);
}

static void conn_answer_text(struct conn *c, int status, const char *reason, const char *body) {
  struct sbuf r = {0};
  sb_fmt(&r, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", status, reason,
         strlen(body), body);
  conn_answer(c, r.p, r.len);
  free(r.p);
}

/* The connection's line on its sandbox's log (the process as looked up, when it was). */
static void conn_log(struct conn *c, const char *verdict, const char *reason, size_t reason_len) {
  struct sandbox *s = sandbox_of(c->key);
  if (!s) return;
  if (journal_write(&s->log, verdict, c->host, strlen(c->host), c->port, c->connect ? "connect" : "http", reason, reason_len,
                    c->known ? &c->proc : NULL) != 0)
    say("sandbox %d: cannot write its log %s: %s", c->key, s->log.path, strerror(errno));
}

static void conn_head(struct conn *c);

static void refusals_say(struct sandbox *s, int which) {
  struct refusals *r = &s->refused[which];
  say("sandbox %s: refused %ld new connection(s): it holds its limit of %ld %s (a limit per sandbox, so that one cannot "
      "starve the others)",
      s->log.sandbox_json, r->n, limits[which], limit_names[which]);
  r->n = 0;
  r->said_at = now_ms();
}

/* A limit was hit: said at once, then at most once a second with how many more (the sweep says the rest). */
static void refused(struct sandbox *s, int which) {
  s->refused[which].n++;
  if (now_ms() - s->refused[which].said_at >= 1000) refusals_say(s, which);
}

static const char refused_text[] = "the sandbox has too many connections or requests open at the egress proxy; close some and retry\n";

/*
 * Which of its sandbox's limits a new connection would pass, or -1 for none. `more`: the bytes it will
 * hold as a pending head (its first buffer).
 */
static int over_limit(const struct sandbox *s, size_t more) {
  if (s->nconn >= limits[L_CONNS]) return L_CONNS;
  if (s->nheads >= limits[L_HEADS]) return L_HEADS;
  if (s->head_bytes + more > (size_t)limits[L_HEAD_BYTES]) return L_HEAD_BYTES;
  return -1;
}

/* A connection over its sandbox's limit: told why (best effort: it has sent nothing we wait for) and closed. */
static void refuse_fd(int fd) {
  struct sbuf r = {0};
  sb_fmt(&r, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
         sizeof refused_text - 1, refused_text);
  if (send(fd, r.p, r.len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) shutdown(fd, SHUT_WR);
  free(r.p);
  close(fd);
}

#define FIRST_BUF 8192

static void conn_new(int fd, int key, struct sandbox *s, int tcp) {
  struct sandbox *sb = sandbox_of(key);
  int over = sb ? over_limit(sb, FIRST_BUF) : -1;
  if (over >= 0) {
    refused(sb, over);
    return refuse_fd(fd);
  }
  struct conn *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->id = next_id++;
  c->key = key;
  if (sb) sb->nconn++, sb->nheads++, c->counted = c->pending = 1;
  c->c = fd;
  c->u = -1;
  c->tc = (struct tag){T_CLIENT, c};
  c->tu = (struct tag){T_UPSTREAM, c};
  c->up = (struct way){.src = &c->c, .dst = &c->u, .pr = -1, .pw = -1};
  c->down = (struct way){.src = &c->u, .dst = &c->c, .pr = -1, .pw = -1};
  c->state = S_HEAD;
  c->deadline = now_ms() + HEAD_TIMEOUT_MS;
  c->hnext = by_id[c->id % HASH];
  by_id[c->id % HASH] = c;
  c->next = conns;
  if (conns) conns->prev = c;
  conns = c;
  if (tcp) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    socklen_t pl = sizeof c->peer, sl = sizeof c->self;
    c->can_lookup = s && helper_fd >= 0 && getpeername(fd, (struct sockaddr *)&c->peer, &pl) == 0 &&
                    getsockname(fd, (struct sockaddr *)&c->self, &sl) == 0 && c->peer.sin_family == AF_INET;
  }
  epoll_add(fd, &c->tc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
  /* A client writes its head as soon as it has connected: usually it is here already (no wait for epoll). */
  conn_head(c);
}

/*
 * Out of descriptors (EMFILE/ENFILE) the connection waiting would stay in the backlog, reported again
 * and again: one descriptor is kept in reserve, given up to take it and close it (refused), then taken
 * back. The limits per sandbox keep one sandbox from getting here; this is what is left when all of
 * them together do.
 */
static int reserve_fd = -1;
static int64_t out_of_fds_said;
static long out_of_fds_refused;

static void reserve_take(void) {
  if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void accept_all(int ls, int key, struct sandbox *s, int tcp) {
  reserve_take();
  for (;;) {
    int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && reserve_fd >= 0) {
        close(reserve_fd);
        reserve_fd = -1;
        fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) close(fd);
        reserve_take();
        if (fd < 0) return;
        out_of_fds_refused++;
        if (now_ms() - out_of_fds_said >= 1000) {
          say("out of file descriptors: refused %ld connection(s) (raise the pump's RLIMIT_NOFILE, or lower the per-sandbox limits)",
              out_of_fds_refused);
          out_of_fds_refused = 0;
          out_of_fds_said = now_ms();
        }
        continue;
      }
      return; /* EAGAIN (or no reserve to give up: retried by the sweep) */
    }
    conn_new(fd, key, s, tcp);
  }
}

/* Asks the helper who holds the connection (the client surely does: nothing has answered it yet). */
static void lookup_ask(struct conn *c) {
  if (!c->can_lookup || c->asking || c->known) return;
  c->lookup_by = now_ms() + LOOKUP_WAIT_MS;
  c->asking = helper_ask(c->id, c->key, &c->peer, &c->self, c->lookup_by) == 0;
}

/*
 * Whether a decision must wait for the connection's lookup (item 10: at most until lookup_by). Then it
 * is kept — Node's command `f` (NULL: a kept verdict, looked up again then) — and run by unpark.
 */
static int park(struct conn *c, char **f, int n) {
  if (!c->asking) return 0;
  if (now_ms() >= c->lookup_by) return c->asking = 0, 0;
  if (c->parked) return 1; /* already waiting: a second command for it is not Node's (one decision each) */
  struct sbuf cmd = {0};
  for (int i = 0; i < n; i++) sb_fmt(&cmd, "%s%s", i ? " " : "", f[i]);
  if (n) sb_add(&cmd, "", 1);
  c->parked_cmd = n ? cmd.p : NULL;
  c->parked = 1;
  c->pnext = parked_list;
  if (parked_list) parked_list->pprev = &c->pnext;
  c->pprev = &parked_list;
  parked_list = c;
  return 1;
}

static void command(char *line);
static void conn_decide(struct conn *c);

/* The lookup is answered, or no longer waited for: a decision that waited goes on. */
static void unpark(struct conn *c) {
  c->asking = 0;
  if (!c->parked) return;
  *c->pprev = c->pnext;
  if (c->pnext) c->pnext->pprev = c->pprev;
  c->parked = 0;
  char *cmd = c->parked_cmd;
  c->parked_cmd = NULL;
  if (cmd) command(cmd);
  else conn_decide(c);
  free(cmd);
}

/* The helper's answer for connection `id` (f NULL: not known). */
static void test_found(uint64_t id, struct found *f);
static void on_found(uint64_t id, struct found *f) {
  if (id & TEST_LOOKUP_BIT) return test_found(id, f);
  struct conn *c = conn_of(id);
  if (!c || c->state == S_DEAD || !c->asking) {
    if (f) found_free(f);
    return;
  }
  if (f) c->proc = *f, c->known = 1;
  unpark(c);
}

static void dial_start(struct conn *c, const char *addrs, int timeout_ms);

/* Reads the request head; then dials on a kept verdict, or asks Node. */
static void conn_head(struct conn *c) {
  for (;;) {
    if (c->cap - c->len < 4096) {
      size_t cap = c->cap ? c->cap * 2 : FIRST_BUF;
      if (cap > MAX_HEAD + 8192) cap = MAX_HEAD + 8192;
      struct sandbox *s = c->pending ? sandbox_of(c->key) : NULL;
      if (s && s->head_bytes + (cap - c->cap) > (size_t)limits[L_HEAD_BYTES]) {
        /* Its sandbox's pending heads hold all the memory they may: this one goes, not the pump's memory. */
        refused(s, L_HEAD_BYTES);
        return conn_answer_text(c, 503, "Service Unavailable", refused_text);
      }
      if (s) s->head_bytes += cap - c->cap, c->held += cap - c->cap;
      c->cap = cap;
      c->buf = xrealloc(c->buf, c->cap);
    }
    if (c->len >= MAX_HEAD + 4096) break;
    ssize_t k = recv(c->c, c->buf + c->len, c->cap - c->len, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) break;
    if (k <= 0) return conn_close(c); /* gone before its head was complete */
    size_t from = c->len > 3 ? c->len - 3 : 0;
    c->len += (size_t)k;
    if (memmem(c->buf + from, c->len - from, "\r\n\r\n", 4)) break;
  }
  char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
  if (!end && c->len <= MAX_HEAD) return; /* more to come */
  if (!end || (size_t)(end - c->buf) > MAX_HEAD)
    return conn_answer_text(c, 431, "Request Header Fields Too Large", "the request head is too large\n");
  c->head_len = (size_t)(end - c->buf);
  c->state = S_VERDICT;
  c->deadline = now_ms() + VERDICT_TIMEOUT_MS;
  struct head h;
  if (head_parse(c->buf, c->head_len, &h) != 0 || head_key(&h, &c->cache_key) != 0) c->cache_key.len = 0;
  /* The helper looks the process up while the verdict is found (Node's, or kept). */
  lookup_ask(c);
  conn_decide(c);
}

/* A kept verdict dials (once the lookup is answered: the line names the process); otherwise Node is asked. */
static void conn_decide(struct conn *c) {
  struct sandbox *s = sandbox_of(c->key);
  const struct verdict *v = s && c->cache_key.len ? verdicts_find(&s->kept, c->cache_key.p, c->cache_key.len) : NULL;
  if (v) {
    /* Decided again once the lookup is answered: the verdict may have expired meanwhile (then Node is asked). */
    if (park(c, NULL, 0)) return;
    /* The proxy allowed this very request under these very policies: its verdict again, without asking. */
    c->connect = v->connect;
    c->host = xstrdup(v->host);
    c->port = v->port;
    c->sni = v->sni ? xstrdup(v->sni) : NULL;
    conn_log(c, "allowed", NULL, 0);
    dial_start(c, v->addrs, v->timeout_ms);
    return;
  }
  sb_fmt(&out, "conn %llu %d ", (unsigned long long)c->id, c->key);
  sb_hex(&out, c->buf, c->head_len);
  sb_str(&out, "\n");
  out_flush();
}

static void dial_next(struct conn *c);

static void dial_failed(struct conn *c, int err) {
  if (c->ai + 1 < c->naddr) {
    c->ai++;
    return dial_next(c);
  }
  char body[600];
  snprintf(body, sizeof body, "could not reach %s%s%s:%d: %s\n", strchr(c->host, ':') ? "[" : "", c->host,
           strchr(c->host, ':') ? "]" : "", c->port, err == ETIMEDOUT ? "connect timeout" : strerror(err));
  conn_answer_text(c, 502, "Bad Gateway", body);
}

static void dial_next(struct conn *c) {
  if (c->u >= 0) close(c->u), c->u = -1;
  union {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
  } a = {0};
  socklen_t al;
  const char *addr = c->addrs[c->ai];
  if (inet_pton(AF_INET, addr, &a.in4.sin_addr) == 1) {
    a.in4.sin_family = AF_INET;
    a.in4.sin_port = htons((uint16_t)c->port);
    al = sizeof a.in4;
  } else if (inet_pton(AF_INET6, addr, &a.in6.sin6_addr) == 1) {
    a.in6.sin6_family = AF_INET6;
    a.in6.sin6_port = htons((uint16_t)c->port);
    al = sizeof a.in6;
  } else
    return dial_failed(c, EINVAL);
  c->u = socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->u < 0) return dial_failed(c, errno);
  int one = 1;
  setsockopt(c->u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->state = S_DIAL;
  if (connect(c->u, &a.sa, al) != 0 && errno != EINPROGRESS) return dial_failed(c, errno);
  epoll_add(c->u, &c->tu, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
}

/* Dials the allowed destination: `addrs` (comma-separated) in turn, within `timeout_ms`. */
static void dial_start(struct conn *c, const char *addrs, int timeout_ms) {
  char *list = xstrdup(addrs), *save = NULL;
  for (char *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    c->addrs = xrealloc(c->addrs, (size_t)(c->naddr + 1) * sizeof *c->addrs);
    c->addrs[c->naddr++] = xstrdup(a);
  }
  free(list);
  pending_end(c);
  c->dial_deadline = c->deadline = now_ms() + timeout_ms;
  /* What followed the head: a request's body (after the head in origin form), or a tunnel's first bytes. */
  size_t rest = c->len - c->head_len - 4;
  if (!c->connect) {
    struct head h;
    struct sbuf o = {0};
    /* The proxy refuses these; were one ever allowed, it is still not sent on (RFC 9112 §3.2: one Host). */
    if (head_parse(c->buf, c->head_len, &h) != 0 || h.nhost > 1) {
      static const char why[] = "the request has more than one Host header (or cannot be read)";
      conn_log(c, "denied", why, sizeof why - 1);
      return conn_answer_text(c, 400, "Bad Request", "send exactly one Host header (RFC 9112 section 3.2)\n");
    }
    head_origin_form(&h, &o);
    way_pend(&c->up, o.p, o.len);
    way_pend(&c->up, c->buf + c->head_len + 4, rest);
    free(o.p);
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
  } else {
    memmove(c->buf, c->buf + c->head_len + 4, rest);
    c->len = rest;
    /* Only the tunnel's first bytes are kept (conn_hello grows it again if a ClientHello needs more). */
    if (c->cap > rest + 4096) c->buf = xrealloc(c->buf, c->cap = rest + 4096);
  }
  c->head_len = 0;
  if (!c->naddr) return conn_answer_text(c, 502, "Bad Gateway", "no address to dial\n");
  dial_next(c);
}

/* A tunnel's check refused: nothing went on; the denial is on the log, then the connection is cut. */
static void hello_refused(struct conn *c, const char *why, const unsigned char *name, size_t nl) {
  struct sbuf w = {0};
  if (name) {
    sb_str(&w, "TLS SNI ");
    sb_add(&w, name, nl);
    sb_str(&w, " does not match the CONNECT host");
  } else sb_fmt(&w, "TLS ClientHello refused: %s", why);
  conn_log(c, "denied", w.p, w.len);
  free(w.p);
  conn_close(c);
}

/*
 * CONNECT: the client's first bytes, before any reach the destination. A TLS ClientHello must name
 * the host CONNECT named (no domain fronting): it is read whole, across however many records it was
 * split into (hello_sni), within HELLO_MAX_BYTES and HELLO_TIMEOUT_MS; one that cannot be read, or names
 * no host, is refused. A first byte that is not a TLS handshake is another protocol: passed on.
 */
static void conn_hello(struct conn *c) {
  int eof = 0, r = HELLO_NOT_TLS;
  const unsigned char *name = NULL;
  size_t nl = 0;
  const char *why = NULL;
  struct sbuf msg = {0};
  for (;;) {
    if (!c->sni) break; /* CONNECT to an address: no name to hold a ClientHello to */
    r = hello_sni((const unsigned char *)c->buf, c->len, &msg, &name, &nl, &why);
    if (r != HELLO_MORE) break;
    /* The first byte of a handshake: the rest of the ClientHello has HELLO_TIMEOUT_MS from now. */
    if (c->len && c->deadline == INT64_MAX) c->deadline = now_ms() + HELLO_TIMEOUT_MS;
    if (c->cap - c->len < 4096 && c->cap < HELLO_MAX_BYTES) {
      c->cap = c->cap * 2 > HELLO_MAX_BYTES ? HELLO_MAX_BYTES : c->cap * 2 < 8192 ? 8192 : c->cap * 2;
      c->buf = xrealloc(c->buf, c->cap);
    }
    size_t room = (c->cap < HELLO_MAX_BYTES ? c->cap : HELLO_MAX_BYTES) - c->len;
    if (!room) {
      r = HELLO_BAD, why = "the ClientHello is too large";
      break;
    }
    ssize_t k = recv(c->c, c->buf + c->len, room, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return free(msg.p);
    if (k <= 0) {
      eof = 1;
      break;
    }
    c->len += (size_t)k;
  }
  /* Here with HELLO_MORE only when the client ended: it sent part of a ClientHello, or nothing at all. */
  const char *refuse = r == HELLO_MORE && c->len ? "the connection ended before its ClientHello was complete"
                       : r == HELLO_BAD          ? why
                       : r == HELLO_DONE && !nl  ? "it names no host (server_name), and CONNECT named one: it must name the same"
                                                 : NULL;
  int mismatch = r == HELLO_DONE && nl && (nl != strlen(c->sni) || strncasecmp((const char *)name, c->sni, nl) != 0 || memchr(name, 0, nl));
  if (refuse || mismatch) {
    hello_refused(c, refuse, mismatch ? name : NULL, nl);
    return free(msg.p);
  }
  free(msg.p);
  way_pend(&c->up, c->buf, c->len);
  c->len = 0;
  c->up.on = 1;
  c->up.eof = eof;
  c->state = S_RELAY;
  conn_pump(c);
}

static void dial_done(struct conn *c) {
  int err = 0;
  socklen_t el = sizeof err;
  if (getsockopt(c->u, SOL_SOCKET, SO_ERROR, &err, &el) != 0) err = errno;
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err) return dial_failed(c, err);
  c->down.on = 1;
  if (c->connect) {
    /* Established: the destination's bytes flow at once (server-first protocols), the client's after the check. */
    static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    way_pend(&c->down, ok, sizeof ok - 1);
    c->state = S_HELLO;
    c->deadline = INT64_MAX; /* a client may say nothing for as long as it likes; a ClientHello begun has a deadline */
    conn_pump(c);
    if (c->state != S_DEAD) conn_hello(c);
    return;
  }
  c->up.on = 1;
  c->state = S_RELAY;
  conn_pump(c);
}

/* ---------------------------------------------------------------------------------------------- */
/* Node's commands                                                                                  */

/* A host as the proxy decided it: an address or a DNS name (the proxy refuses anything else). */
static int plain_field(const char *s) {
  if (!*s || strlen(s) > 255) return 0;
  for (; *s; s++)
    if ((unsigned char)*s <= 0x20 || *s == ',' || *s == '"' || *s == '\\') return 0;
  return 1;
}

/* Addresses as the proxy gives them: IPv4 or IPv6 literals, comma-separated. */
static int address_list(const char *s) {
  if (!*s || strlen(s) > 4096) return 0;
  for (; *s; s++)
    if (!strchr("0123456789abcdefABCDEF:.,", *s)) return 0;
  return 1;
}

static void cmd_dial(char **f, int n) {
  /* dial ID KIND HOST PORT SNI|- ADDRS TIMEOUT_MS STAMP KEEP_MS */
  if (n != 10) return say("bad dial command (%d fields)", n);
  struct conn *c = conn_of(strtoull(f[1], NULL, 10));
  if (!c || c->state != S_VERDICT) return;
  if (!plain_field(f[3]) || !address_list(f[6])) return say("bad dial command (host or addresses)");
  if (park(c, f, n)) return;
  c->connect = !strcmp(f[2], "connect");
  c->host = xstrdup(f[3]);
  c->port = atoi(f[4]);
  c->sni = strcmp(f[5], "-") ? xstrdup(f[5]) : NULL;
  conn_log(c, "allowed", NULL, 0);
  struct sandbox *s = sandbox_of(c->key);
  if (s && c->cache_key.len)
    verdicts_keep(&s->kept, c->cache_key.p, c->cache_key.len, c->connect, c->host, c->port, c->sni, f[6], atoi(f[7]), f[8], atoll(f[9]));
  dial_start(c, f[6], atoi(f[7]));
}

static void cmd_answer(char **f, int n) {
  /* answer ID VERDICT|- HOST PORT KIND REASON_HEX|- RESPONSE_HEX */
  if (n != 8) return say("bad answer command (%d fields)", n);
  struct conn *c = conn_of(strtoull(f[1], NULL, 10));
  if (!c || c->state != S_VERDICT) return;
  if (park(c, f, n)) return;
  size_t rl = 0, al = 0;
  char *reason = unhex(f[6], &rl), *resp = unhex(f[7], &al);
  if (!reason || !resp) {
    say("bad answer command (hex)");
  } else {
    if (strcmp(f[2], "-") && plain_field(f[3])) {
      c->connect = !strcmp(f[5], "connect");
      c->host = xstrdup(f[3]);
      c->port = atoi(f[4]);
      conn_log(c, !strcmp(f[2], "allowed") ? "allowed" : "denied", strcmp(f[6], "-") ? reason : NULL, rl);
    }
    conn_answer(c, resp, al);
  }
  free(reason);
  free(resp);
}

/* Allowed and not finished: dialling, checking its ClientHello, or moving bytes. */
static int is_tunnel(const struct conn *c) {
  return c->host && (c->state == S_DIAL || c->state == S_HELLO || c->state == S_RELAY);
}

/* An allowed connection the policy no longer allows: its line on the sandbox's log, then closed. */
static void tunnel_cut(struct conn *c, const char *why, size_t why_len) {
  struct sbuf r = {0};
  sb_str(&r, "open connection closed: ");
  sb_add(&r, why, why_len);
  conn_log(c, "denied", r.p, r.len);
  free(r.p);
  conn_close(c);
}

static void conns_of_close(struct sandbox *s, const char *why) {
  int cut = 0;
  for (struct conn *c = conns, *next; c; c = next) {
    next = c->next;
    if (c->key != s->key) continue;
    if (why && is_tunnel(c)) tunnel_cut(c, why, strlen(why)), cut++;
    else conn_close(c);
  }
  if (cut) say("sandbox %s: closed %d open connection(s): %s", s->log.sandbox_json, cut, why);
}

static void cmd_tunnels(char **f, int n) {
  /* tunnels KEY -> tunnels KEY [ID,KIND,PORT,HOST,ADDR ...] (ADDR: the address dialled, - before one is) */
  int key = n == 2 ? atoi(f[1]) : -1;
  sb_fmt(&out, "tunnels %d", key);
  for (struct conn *c = conns; c; c = c->next)
    if (c->key == key && is_tunnel(c))
      sb_fmt(&out, " %llu,%s,%d,%s,%s", (unsigned long long)c->id, c->connect ? "connect" : "http", c->port, c->host,
             c->ai < c->naddr ? c->addrs[c->ai] : "-");
  sb_str(&out, "\n");
}

static void cmd_cut(char **f, int n) {
  /* cut ID REASON_HEX */
  if (n != 3) return say("bad cut command (%d fields)", n);
  struct conn *c = conn_of(strtoull(f[1], NULL, 10));
  size_t rl = 0;
  char *reason = unhex(f[2], &rl);
  if (!reason) return say("bad cut command (hex)");
  if (c && is_tunnel(c)) tunnel_cut(c, reason, rl);
  free(reason);
}

/*
 * Tests' lookups, answered in the order asked (the proxy matches each `found` to its oldest question):
 * an answer waits for the ones asked before it, each of which comes or is given up on by its `by`.
 */
static struct {
  uint64_t id;
  int64_t by;
  char *line;
} tests[64];
static int ntests;
static uint64_t test_seq;

static void tests_flush(void) {
  int64_t t = now_ms();
  while (ntests && (tests[0].line || tests[0].by <= t)) {
    sb_str(&out, tests[0].line ? tests[0].line : "found -\n");
    free(tests[0].line);
    memmove(tests, tests + 1, (size_t)--ntests * sizeof *tests);
  }
}

static void test_found(uint64_t id, struct found *f) {
  for (int i = 0; i < ntests; i++)
    if (tests[i].id == id && !tests[i].line) {
      struct sbuf b = {0};
      if (f) {
        sb_fmt(&b, "found {\"hostPid\":%d,", f->host_pid);
        journal_process(&b, f);
        sb_str(&b, "}\n");
      } else sb_str(&b, "found -\n");
      tests[i].line = b.p;
    }
  if (f) found_free(f);
  tests_flush();
}

static void cmd_lookup(char **f, int n) {
  struct sandbox *s = n == 6 ? sandbox_of(atoi(f[1])) : NULL;
  struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
  if (ntests == (int)(sizeof tests / sizeof *tests)) tests[0].by = 0, tests_flush(); /* the oldest is given up on */
  int i = ntests++;
  tests[i].id = TEST_LOOKUP_BIT | ++test_seq;
  tests[i].by = now_ms() + TEST_LOOKUP_WAIT_MS;
  tests[i].line = NULL;
  if (s && inet_pton(AF_INET, f[2], &src.sin_addr) == 1 && inet_pton(AF_INET, f[4], &dst.sin_addr) == 1) {
    src.sin_port = htons((uint16_t)atoi(f[3]));
    dst.sin_port = htons((uint16_t)atoi(f[5]));
    if (helper_ask(tests[i].id, s->key, &src, &dst, tests[i].by) == 0) return;
  }
  tests[i].line = xstrdup("found -\n");
  tests_flush();
}

static void cmd_config(char **f, int n) {
  size_t len;
  char *path = n == 3 || n == 3 + NLIMITS ? unhex(f[1], &len) : NULL;
  if (!path) return say("bad config command");
  free(policies_path);
  policies_path = path;
  if (atol(f[2]) > 0) journal_max_bytes = atol(f[2]);
  for (int i = 0; i < NLIMITS && n == 3 + NLIMITS; i++)
    if (atol(f[3 + i]) > 0) limits[i] = atol(f[3 + i]);
}

static void command(char *line) {
  char *f[12];
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " ", &save); t && n < 12; t = strtok_r(NULL, " ", &save)) f[n++] = t;
  if (n == 0) return;
  if (!strcmp(f[0], "dial")) cmd_dial(f, n);
  else if (!strcmp(f[0], "answer")) cmd_answer(f, n);
  else if (!strcmp(f[0], "serve") && n == 6) cmd_serve(f);
  else if (!strcmp(f[0], "unserve") && (n == 2 || n == 3)) {
    struct sandbox *s = sandbox_of(atoi(f[1]));
    size_t rl;
    char *why = n == 3 ? unhex(f[2], &rl) : NULL;
    if (s) sandbox_free(s, why && *why ? why : "the sandbox is no longer served");
    free(why);
  } else if (!strcmp(f[0], "tunnels")) cmd_tunnels(f, n);
  else if (!strcmp(f[0], "cut")) cmd_cut(f, n);
  else if (!strcmp(f[0], "lookup")) cmd_lookup(f, n);
  else if (!strcmp(f[0], "probe")) {
    sb_str(&out, "probed");
    confine_probe(&out);
    sb_str(&out, "\n");
  }
  else if (!strcmp(f[0], "config")) cmd_config(f, n);
  else say("unknown command %s", f[0]);
}

static struct sbuf in;

/* One read per wake-up: stdin is watched level-triggered, so what is left is reported again. */
static void ctl_read(void) {
  sb_reserve(&in, 65536);
  ssize_t k = read(0, in.p + in.len, in.cap - in.len);
  if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (k <= 0) _exit(0); /* the proxy is gone: so is every way out (fails closed) */
  in.len += (size_t)k;
  size_t start = 0;
  for (char *nl; (nl = memchr(in.p + start, '\n', in.len - start));) {
    *nl = 0;
    command(in.p + start);
    start = (size_t)(nl - in.p) + 1;
  }
  memmove(in.p, in.p + start, in.len - start);
  in.len -= start;
}

/* ---------------------------------------------------------------------------------------------- */

static void on_conn_event(struct conn *c, int upstream) {
  switch (c->state) {
  case S_DEAD:
    return;
  case S_HEAD:
    if (!upstream) conn_head(c);
    return;
  case S_VERDICT:
    return; /* nothing is read until Node has decided */
  case S_DIAL:
    if (upstream) dial_done(c);
    return;
  case S_HELLO:
    conn_pump(c);
    if (c->state != S_DEAD && !upstream) conn_hello(c);
    return;
  default:
    conn_pump(c);
  }
}

/* Once a second: what has waited too long ends, and listeners that could not accept (EMFILE) try again. */
static void sweep(void) {
  int64_t t = now_ms();
  for (struct conn *c = conns, *next; c; c = next) {
    next = c->next;
    if (c->state == S_RELAY || c->deadline > t) continue;
    if (c->state == S_DIAL) dial_failed(c, ETIMEDOUT);
    else if (c->state == S_HELLO) hello_refused(c, "its ClientHello did not arrive whole in time", NULL, 0);
    else if (c->state == S_VERDICT) conn_answer_text(c, 504, "Gateway Timeout", "the egress proxy did not decide in time\n");
    else conn_close(c);
  }
  for (struct sandbox *s = sandboxes; s; s = s->next) {
    for (int i = 0; i < NLIMITS; i++)
      if (s->refused[i].n && t - s->refused[i].said_at >= 1000) refusals_say(s, i);
    if (s->proxy_ls >= 0) accept_all(s->proxy_ls, s->key, NULL, 0);
    for (struct link *l = s->links; l; l = l->next)
      if (l->ls >= 0) accept_all(l->ls, s->key, s, 1);
  }
}

/* How long the loop may sleep: until the next decision stops waiting for its lookup, a second at most. */
static int lookups_wait(void) {
  int64_t t = now_ms(), until = t + 1000;
  for (struct conn *c = parked_list; c; c = c->pnext)
    if (c->lookup_by < until) until = c->lookup_by;
  if (ntests && tests[0].by < until) until = tests[0].by;
  return until > t ? (int)(until - t) : 0;
}

/* Decisions whose lookup took too long go on without it; tests' lookups given up on are answered. */
static void lookups_due(void) {
  int64_t t = now_ms();
  for (struct conn *c = parked_list, *next; c; c = next) {
    next = c->pnext;
    if (c->lookup_by <= t) unpark(c);
  }
  tests_flush();
}

int main(void) {
  /* Nothing of the proxy's but the channel: a descriptor inherited by accident would be held open here. */
  close_range(3, ~0U, 0);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0; /* the proxy died before we got here */
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  /* The helper first, while the pump still has the privileges it keeps; then the pump gives up its own. */
  if (helper_start() != 0) say("no process lookups: cannot start the lookup helper: %s", strerror(errno));
  if (confine_pump(say) != 0) {
    out_flush();
    return 1; /* fails closed: a pump that parses sandboxes' bytes with root's powers does not serve */
  }
  ep = epoll_create1(EPOLL_CLOEXEC);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
  static struct tag ctl_in = {T_CTL_IN, NULL};
  if (ep < 0 || epoll_add(0, &ctl_in, EPOLLIN) != 0) return 1;
  static struct tag helper_tag = {T_HELPER, NULL};
  if (helper_fd >= 0) epoll_add(helper_fd, &helper_tag, EPOLLIN);
  sb_str(&out, "ready\n");
  out_flush();
  int64_t last_sweep = now_ms();
  struct epoll_event ev[64];
  for (;;) {
    int n = epoll_wait(ep, ev, 64, lookups_wait());
    for (int i = 0; i < n; i++) {
      struct tag *t = ev[i].data.ptr;
      switch (t->type) {
      case T_CTL_IN:
        ctl_read();
        break;
      case T_CTL_OUT:
        break; /* flushed below */
      case T_PROXY_LS: {
        struct sandbox *s = t->p;
        if (!s->dead) accept_all(s->proxy_ls, s->key, NULL, 0);
        break;
      }
      case T_RELAY_LS: {
        struct sandbox *s = t->p;
        for (int fd; !s->dead && (fd = accept4(s->relay_ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          struct link *l = calloc(1, sizeof *l);
          if (!l) abort();
          *l = (struct link){.tag = {T_LINK, l}, .sb = s, .fd = fd, .ls = -1, .next = s->links};
          s->links = l;
          epoll_add(fd, &l->tag, EPOLLIN | EPOLLRDHUP | EPOLLET);
          link_read(l);
        }
        break;
      }
      case T_LINK:
        if (!((struct link *)t->p)->dead) link_read(t->p);
        break;
      case T_TCP_LS: {
        struct link *l = t->p;
        if (!l->dead) accept_all(l->ls, l->sb->key, l->sb, 1);
        break;
      }
      case T_CLIENT:
      case T_UPSTREAM:
        on_conn_event(t->p, t->type == T_UPSTREAM);
        break;
      case T_HELPER:
        if (helper_fd >= 0) helper_read(on_found, say);
        break;
      }
    }
    lookups_due();
    if (now_ms() - last_sweep >= 1000) {
      sweep();
      last_sweep = now_ms();
    }
    out_flush();
    for (size_t i = 0; i < ngrave; i++) free(grave[i]);
    ngrave = 0;
  }
}

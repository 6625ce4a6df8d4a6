/*
 * The lookup helper (issue 35, items 10 and 13): the one part of the pump that keeps privileges, in a
 * process of its own, forked by the pump before the pump drops every capability and installs its
 * seccomp filter (confine.c). Finding the process behind a connection needs setns into a sandbox's
 * network namespace (CAP_SYS_ADMIN), SIOCGSKNS on its listener (CAP_NET_ADMIN) and other processes'
 * /proc/PID/fd links (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH); parsing and splicing the bytes a sandbox
 * chose needs none of them. The helper keeps those four and nothing else, never sees a sandbox's bytes,
 * and answers over a SOCK_SEQPACKET socketpair (one message each, no framing to get wrong).
 *
 * Asynchronous, so no lookup is on the data path: the pump asks when a head is complete and carries on
 * (Node decides meanwhile); a decision waits for the answer at most LOOKUP_WAIT_MS (main.c). Here the
 * queue is served round-robin by sandbox, each lookup within LOOKUP_BUDGET_MS (lookup.c abandons the
 * scan past it), so a sandbox whose lookups are slow delays another's by one budget at most; a lookup
 * whose asker gave up (its deadline passed) is answered "not known" without a scan.
 *
 * Messages, pump -> helper: struct ask (LEARN carries the listener by SCM_RIGHTS); helper -> pump:
 * struct answer (FOUND, or SAY with a note for the proxy's log).
 */
#include "pump.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* A lookup's share of the helper: the scan is abandoned past it (see the top). */
#define LOOKUP_BUDGET_MS 40
/* Lookups waiting, in all and per sandbox: past these, "not known" at once (the asker would give up anyway). */
#define QUEUE_MAX 1024
#define QUEUE_PER_SANDBOX 64

enum { ASK_LEARN = 1, ASK_FORGET, ASK_LOOKUP };
enum { ANS_FOUND = 1, ANS_SAY };

struct ask {
  int type, key;
  uint64_t id;
  int64_t deadline;
  struct sockaddr_in src, dst;
};

struct answer {
  int type, ok;
  uint64_t id;
  int host_pid, pid, nancestry;
  int ancestry[64];
  char comm[64];
  size_t cmdline_len;
  char text[CMDLINE_READ]; /* the command line (FOUND), or the note (SAY) */
};

int helper_fd = -1;

/* ---------------------------------------------------------------------------------------------- */
/* the helper's side                                                                                */

static int sock;

struct nsk {
  int key;
  struct lookup_ns ns;
};
static struct nsk *nss;
static size_t nnss;

static struct lookup_ns *ns_of(int key, int make) {
  for (size_t i = 0; i < nnss; i++)
    if (nss[i].key == key) return &nss[i].ns;
  if (!make) return NULL;
  nss = xrealloc(nss, (nnss + 1) * sizeof *nss);
  nss[nnss].key = key;
  lookup_init(&nss[nnss].ns);
  return &nss[nnss++].ns;
}

static void send_answer(struct answer *a) {
  /* Blocking: the pump reads its end on every wake-up; a message is never cut (SEQPACKET). */
  while (send(sock, a, sizeof *a, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

static void helper_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void helper_say(const char *fmt, ...) {
  struct answer a = {.type = ANS_SAY};
  va_list v;
  va_start(v, fmt);
  vsnprintf(a.text, sizeof a.text, fmt, v);
  va_end(v);
  send_answer(&a);
}

static void answer_lookup(const struct ask *q) {
  struct answer a = {.type = ANS_FOUND, .id = q->id};
  struct lookup_ns *ns = ns_of(q->key, 0);
  int64_t t = now_ms(), deadline = q->deadline < t + LOOKUP_BUDGET_MS ? q->deadline : t + LOOKUP_BUDGET_MS;
  struct found f;
  if (ns && t < q->deadline && lookup(ns, &q->src, &q->dst, deadline, &f) == 0) {
    a.ok = 1;
    a.host_pid = f.host_pid, a.pid = f.pid, a.nancestry = f.nancestry;
    memcpy(a.ancestry, f.ancestry, sizeof a.ancestry);
    memcpy(a.comm, f.comm, sizeof a.comm);
    a.cmdline_len = f.cmdline_len < sizeof a.text ? f.cmdline_len : sizeof a.text;
    memcpy(a.text, f.cmdline, a.cmdline_len);
    found_free(&f);
  }
  send_answer(&a);
}

static struct ask queue[QUEUE_MAX];
static size_t nqueue;

/* Takes one message; lookups are queued, the rest done at once. 0, or -1: none was waiting (or the pump is gone). */
static int take(int flags) {
  struct ask q;
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct iovec iov = {&q, sizeof q};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | flags);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return -1;
  if (n <= 0) _exit(0); /* the pump is gone */
  int fd = -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(&fd, CMSG_DATA(c), sizeof fd);
  if (n != (ssize_t)sizeof q) {
    if (fd >= 0) close(fd);
    return 0;
  }
  if (q.type == ASK_LEARN && fd >= 0) lookup_learn(ns_of(q.key, 1), fd, q.key, helper_say);
  else if (q.type == ASK_FORGET) {
    struct lookup_ns *ns = ns_of(q.key, 0);
    if (ns) lookup_close(ns), lookup_init(ns);
  } else if (q.type == ASK_LOOKUP) {
    size_t same = 0;
    for (size_t i = 0; i < nqueue; i++) same += queue[i].key == q.key;
    if (nqueue == QUEUE_MAX || same >= QUEUE_PER_SANDBOX) {
      struct answer a = {.type = ANS_FOUND, .id = q.id};
      send_answer(&a);
    } else queue[nqueue++] = q;
  }
  if (fd >= 0) close(fd);
  return 0;
}

/* The next lookup: the oldest of the sandbox after `last` (by key, wrapping), so each sandbox has its turn. */
static size_t next_of(int last) {
  size_t best = 0, wrap = 0;
  int have = 0, have_wrap = 0;
  for (size_t i = 0; i < nqueue; i++) {
    int k = queue[i].key;
    if (k > last && (!have || k < queue[best].key)) best = i, have = 1;
    if (!have_wrap || k < queue[wrap].key) wrap = i, have_wrap = 1;
  }
  return have ? best : wrap;
}

static void __attribute__((noreturn)) helper_main(void) {
  int last = -1;
  for (;;) {
    if (nqueue == 0) take(0); /* wait for work */
    while (nqueue < QUEUE_MAX && take(MSG_DONTWAIT) == 0) {
    }
    if (nqueue == 0) continue;
    size_t i = next_of(last);
    struct ask q = queue[i];
    memmove(queue + i, queue + i + 1, (nqueue - i - 1) * sizeof *queue);
    nqueue--;
    last = q.key;
    answer_lookup(&q);
  }
}

int helper_start(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(0);
    close(sv[0]);
    sock = sv[1];
    /* Not the proxy's channel: the pump's stdin and stdout are its own (a copy held here would hide its exit). */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) dup2(null, 0), dup2(null, 1), close(null);
    if (lookup_setup() != 0) _exit(1);
    uint64_t keep = 1ull << CAP_SYS_ADMIN | 1ull << CAP_NET_ADMIN | 1ull << CAP_SYS_PTRACE | 1ull << CAP_DAC_READ_SEARCH;
    if (confine_helper(keep) != 0) _exit(1);
    helper_main();
  }
  close(sv[1]);
  /* The pump's end: non-blocking (its loop never waits on the helper). */
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  helper_fd = sv[0];
  return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* the pump's side                                                                                  */

static int ask_send(const struct ask *q, int fd) {
  if (helper_fd < 0) return -1;
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct iovec iov = {(void *)q, sizeof *q};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    memset(&u, 0, sizeof u);
    m.msg_control = u.buf, m.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  while ((n = sendmsg(helper_fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 && errno == EINTR) {
  }
  /* EAGAIN: the helper is that far behind; this lookup is not made (the connection goes on, process unknown). */
  return n == (ssize_t)sizeof *q ? 0 : -1;
}

void helper_learn(int key, int listener) {
  struct ask q = {.type = ASK_LEARN, .key = key};
  ask_send(&q, listener);
}

void helper_forget(int key) {
  struct ask q = {.type = ASK_FORGET, .key = key};
  ask_send(&q, -1);
}

int helper_ask(uint64_t id, int key, const struct sockaddr_in *src, const struct sockaddr_in *dst, int64_t deadline) {
  struct ask q = {.type = ASK_LOOKUP, .key = key, .id = id, .deadline = deadline, .src = *src, .dst = *dst};
  return ask_send(&q, -1);
}

void helper_read(void (*found)(uint64_t id, struct found *f), void (*say)(const char *fmt, ...)) {
  static struct answer a;
  for (;;) {
    ssize_t n = recv(helper_fd, &a, sizeof a, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      /* It died (it cannot be asked again: its privileges are gone from here). Lookups end; serving goes on. */
      say("the lookup helper is gone (%s): processes are not known from now on", n < 0 ? strerror(errno) : "it exited");
      close(helper_fd);
      helper_fd = -1;
      return;
    }
    if (n != (ssize_t)sizeof a) continue;
    if (a.type == ANS_SAY) {
      a.text[sizeof a.text - 1] = 0;
      say("%s", a.text);
    } else if (a.type == ANS_FOUND && !a.ok) {
      found(a.id, NULL);
    } else if (a.type == ANS_FOUND) {
      struct found f = {.host_pid = a.host_pid, .pid = a.pid, .nancestry = a.nancestry < 0 || a.nancestry > 64 ? 0 : a.nancestry};
      memcpy(f.ancestry, a.ancestry, sizeof f.ancestry);
      memcpy(f.comm, a.comm, sizeof f.comm);
      f.comm[sizeof f.comm - 1] = 0;
      f.cmdline_len = a.cmdline_len <= sizeof a.text ? a.cmdline_len : 0;
      f.cmdline = xstrndup(a.text, f.cmdline_len);
      found(a.id, &f); /* takes f.cmdline */
    }
  }
}

/*
 * A sandbox's connection log, written by the pump: one JSON line per decision (NetworkLogEntry of
 * src/shared/network-policy.ts), before the connection's answer leaves — a client that reads the log
 * right after its answer finds the line. The pump is the log's only writer: every line, the proxy's
 * decisions and the pump's own (a kept verdict, a ClientHello naming another host), goes through here
 * in the order the decisions were made. The app tails the file (network-files.ts readLog).
 *
 * Past journal_max_bytes a log becomes `<sandbox>.1.jsonl` (replacing the older one), so a log is at
 * most about twice that. The file is kept open; a stat per line notices it removed (the sandbox was
 * removed, and maybe made again under its name) or replaced, and it is opened anew: no line goes to a
 * file nobody reads.
 */
#include "pump.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

long journal_max_bytes = 512 * 1024;

/* The longest command line shown (a wrapper's `bash -c <script>` would otherwise fill the log with the script). */
#define MAX_SHOWN 120

void journal_open(struct journal *j, const char *path, const char *sandbox) {
  memset(j, 0, sizeof *j);
  j->fd = -1;
  j->path = xstrdup(path);
  size_t n = strlen(path);
  struct sbuf o = {0};
  if (n > 6 && !strcmp(path + n - 6, ".jsonl")) sb_add(&o, path, n - 6), sb_str(&o, ".1.jsonl");
  else sb_str(&o, path), sb_str(&o, ".1");
  sb_add(&o, "", 1);
  j->older = o.p;
  struct sbuf s = {0};
  sb_json(&s, sandbox, strlen(sandbox));
  sb_add(&s, "", 1);
  j->sandbox_json = s.p;
}

void journal_close(struct journal *j) {
  if (j->fd >= 0) close(j->fd);
  free(j->path);
  free(j->older);
  free(j->sandbox_json);
  memset(j, 0, sizeof *j);
  j->fd = -1;
}

/* The log's folder (and those above it), 0700, where it was removed. */
static void make_parents(const char *path) {
  char *p = xstrdup(path);
  for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    mkdir(p, 0700);
    *s = '/';
  }
  free(p);
}

static int ensure_open(struct journal *j) {
  struct stat st;
  int have = stat(j->path, &st) == 0;
  if (j->fd >= 0 && (!have || st.st_ino != j->ino || st.st_size > journal_max_bytes)) {
    close(j->fd);
    j->fd = -1;
  }
  if (j->fd >= 0) return 0;
  if (!have) make_parents(j->path);
  if (have && st.st_size > journal_max_bytes) rename(j->path, j->older);
  j->fd = open(j->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (j->fd < 0) return -1;
  if (fstat(j->fd, &st) == 0) j->ino = st.st_ino;
  return 0;
}

void journal_process(struct sbuf *b, const struct found *f) {
  if (!f) {
    sb_str(b, "\"process\":null");
    return;
  }
  size_t n = f->cmdline_len;
  while (n && f->cmdline[n - 1] == 0) n--;
  struct sbuf flat = {0};
  /* The exec wrapper (src/exec/wrapper-script.ts) is itself the shell a command's builtins run in. */
  if (memmem(f->cmdline, n, "__sd_enter", 10)) sb_str(&flat, "the command shell of sandbox-desk exec");
  else {
    /* NULs between the arguments become spaces; runs of white space one; none at either end. */
    int space = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned char c = (unsigned char)f->cmdline[i];
      if (c == 0 || isspace(c)) {
        space = 1;
        continue;
      }
      if (space && flat.len) sb_add(&flat, " ", 1);
      space = 0;
      sb_add(&flat, &c, 1);
    }
  }
  /* At most MAX_SHOWN characters: the first MAX_SHOWN - 1 and an ellipsis. */
  size_t chars = 0, cut = flat.len;
  for (size_t i = 0; i < flat.len; i++)
    if (((unsigned char)flat.p[i] & 0xc0) != 0x80 && ++chars == MAX_SHOWN) cut = i;
  if (chars > MAX_SHOWN) flat.len = cut, sb_str(&flat, "\xe2\x80\xa6");
  const char *comm = f->comm;
  size_t cl = strlen(comm);
  while (cl && isspace((unsigned char)*comm)) comm++, cl--;
  while (cl && isspace((unsigned char)comm[cl - 1])) cl--;
  struct sbuf text = {0};
  if (cl) sb_add(&text, comm, cl);
  else sb_add(&text, "?", 1);
  sb_fmt(&text, " (pid %d)", f->pid);
  if (flat.len) sb_add(&text, ": ", 2), sb_add(&text, flat.p, flat.len);
  sb_str(b, "\"process\":");
  sb_json(b, text.p, text.len);
  sb_fmt(b, ",\"pid\":%d,\"ancestry\":[", f->pid);
  for (int i = 0; i < f->nancestry; i++) sb_fmt(b, "%s%d", i ? "," : "", f->ancestry[i]);
  sb_add(b, "]", 1);
  free(flat.p);
  free(text.p);
}

int journal_write(struct journal *j, const char *verdict, const char *host, size_t host_len, int port, const char *kind,
                  const char *reason, size_t reason_len, const struct found *f) {
  static struct sbuf line;
  line.len = 0;
  sb_str(&line, "{\"at\":\"");
  sb_iso_now(&line);
  sb_str(&line, "\",\"sandbox\":");
  sb_str(&line, j->sandbox_json);
  sb_str(&line, ",\"host\":");
  sb_json(&line, host, host_len);
  sb_fmt(&line, ",\"port\":%d,\"verdict\":\"%s\",\"kind\":\"%s\",\"reason\":", port, verdict, kind);
  if (reason) sb_json(&line, reason, reason_len);
  else sb_str(&line, "null");
  sb_add(&line, ",", 1);
  journal_process(&line, f);
  sb_str(&line, "}\n");
  if (ensure_open(j) != 0) return -1;
  for (size_t off = 0; off < line.len;) {
    ssize_t k = write(j->fd, line.p + off, line.len - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    off += (size_t)k;
  }
  return 0;
}

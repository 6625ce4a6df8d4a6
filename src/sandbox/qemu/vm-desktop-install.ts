/**
 * `--desktop` on a qemu cloud image (Debian genericcloud, Ubuntu cloudimg): cloud-init installs the bot
 * desktop's packages — the same list as the debian-desktop image — at the VM's first boot, from the
 * guest's own package mirror. The guest reports where it is in a status file; the readiness wait reads
 * it over SSH (which is up long before cloud-final finishes) and shows each step with apt's progress.
 * Refused with the reason, never half-done silently: network policy offline/allow (up front, no boot),
 * a guest that is not Debian/Ubuntu-based (its /etc/os-release, named), no reachable mirror (apt-get
 * update's own error).
 */
import { SandboxDeskError } from '../../shared/errors.js';
import type { ProgressEvent } from '../provider.js';
import type { NetworkMode } from '../../shared/network-policy.js';
import { isDebianLike, parseOsRelease } from '../docker/desktop-image.js';

/**
 * The desktop's packages in a VM: build-vm-image.sh's DESKTOP_PACKAGES + debian-desktop's EXTRA_PACKAGES
 * + what its minbase and stage 2 add that the desktop needs (dbus, python3 for the DevTools relay);
 * vm-desktop-install.test.ts keeps this equal to the script. Chromium is installed when the guest's
 * archive has it as a real package (Debian); Ubuntu ships it only as a snap, which a cloud-init
 * first boot cannot install headless, so there the desktop runs without a browser and `desktop status`
 * says chromium is missing.
 */
export const VM_DESKTOP_PACKAGES = [
  'tigervnc-standalone-server',
  'xauth',
  'x11-utils',
  'x11-xserver-utils',
  'xfwm4',
  'xfdesktop4',
  'xfce4-panel',
  'xfce4-settings',
  'xfconf',
  'dbus-x11',
  'xdotool',
  'socat',
  'fonts-dejavu-core',
  'adwaita-icon-theme',
  'fonts-liberation',
  'xclip',
  'dbus',
  'python3',
] as const;
export const VM_DESKTOP_BROWSER = 'chromium';

/** Where the guest keeps the install's state (persistent: a second boot sees `done` and skips it). */
export const DESKTOP_STATE_DIR = '/var/lib/sdesk-desktop';
/** Per-boot, before 50-sdesk-ready (cloud-final runs them in name order): a ready VM has its desktop. */
export const DESKTOP_INSTALL_SCRIPT_PATH = '/var/lib/cloud/scripts/per-boot/45-sdesk-desktop';

/**
 * The guest's script. Its only inputs are the constants above (no sandbox data), and it always exits 0:
 * a failure is written to the status file for the app to report, and cloud-init still finishes, so the
 * VM stays reachable for the error's details. apt's own machine-readable progress (APT::Status-Fd) goes
 * to `progress`: `dlstatus:` while downloading, `pmstatus:` while unpacking and configuring.
 */
export function desktopInstallScript(): string {
  const d = DESKTOP_STATE_DIR;
  return `#!/bin/sh
# Sandbox Desk --desktop: the bot desktop's packages, installed once, at first boot.
st=${d}
mkdir -p "$st"
[ -e "$st/done" ] && exit 0
say() { printf '%s\\n' "$*" > "$st/status.tmp" && mv -f "$st/status.tmp" "$st/status"; case "$*" in step*) printf '%s\\n' "$*" >> "$st/steps" ;; esac; }
fail() { say "failed $*"; exit 0; }
[ -r /etc/os-release ] || fail "os this guest has no /etc/os-release"
. /etc/os-release
case " \${ID:-} \${ID_LIKE:-} " in
  *" debian "*|*" ubuntu "*) ;;
  *) fail "os /etc/os-release says \${PRETTY_NAME:-\${ID:-nothing}}, not Debian- or Ubuntu-based" ;;
esac
command -v apt-get >/dev/null || fail "os \${PRETTY_NAME:-$ID} has no apt-get"
export DEBIAN_FRONTEND=noninteractive
say "step 1 3 apt-get update (the guest's package mirror)"
if ! apt-get update -q > "$st/apt.log" 2>&1 || grep -Eq '^(Err:|W: Failed to fetch|E: )' "$st/apt.log"; then
  fail "mirror $(grep -E '^(Err:|W: |E: )' "$st/apt.log" | head -n 2 | tr '\\n' ' ')"
fi
apt-cache show ${VM_DESKTOP_PACKAGES[0]} >/dev/null 2>&1 || fail "mirror the guest's package lists have no ${VM_DESKTOP_PACKAGES[0]} (apt-get update reached no full Debian/Ubuntu archive)"
pkgs="${VM_DESKTOP_PACKAGES.join(' ')}"
browser=none
if apt-cache show --no-all-versions ${VM_DESKTOP_BROWSER} 2>/dev/null | grep -q '^Version:' && ! apt-cache show --no-all-versions ${VM_DESKTOP_BROWSER} | grep -qi 'snap'; then
  pkgs="$pkgs ${VM_DESKTOP_BROWSER}"; browser=${VM_DESKTOP_BROWSER}
fi
echo "$browser" > "$st/browser"
say "step 2 3 apt-get install ($(echo $pkgs | wc -w) packages and their dependencies; browser: $browser)"
: > "$st/progress"
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends -o APT::Status-Fd=3 $pkgs >> "$st/apt.log" 2>&1 3>>"$st/progress" \\
  || fail "install $(tail -n 3 "$st/apt.log" | tr '\\n' ' ')"
say "step 3 3 the display user"
id sdesk-display >/dev/null 2>&1 || useradd --create-home --home-dir /home/sdesk-display --shell /usr/sbin/nologin --user-group sdesk-display
chmod 0700 /home/sdesk-display
apt-get clean
touch "$st/done"
say "done browser=$browser"
`;
}

/**
 * The guest's status line and apt's last progress line, as one read; then, after STEPS_MARK, every step
 * begun so far (a short step — apt-get update on a near mirror — can begin and end between two reads).
 */
export const DESKTOP_STATUS_PROBE = `cat ${DESKTOP_STATE_DIR}/status 2>/dev/null; echo; tail -n 1 ${DESKTOP_STATE_DIR}/progress 2>/dev/null; echo; echo '#steps'; cat ${DESKTOP_STATE_DIR}/steps 2>/dev/null`;
const STEPS_MARK = '\n#steps\n';
/** A step line the install script says: `step N TOTAL text`. */
const STEP_RE = /^step (\d+) (\d+) (.*)$/;

/** The steps begun so far, in order, from DESKTOP_STATUS_PROBE's output. */
export function parseDesktopSteps(out: string): Array<{ step: number; total: number; text: string }> {
  const at = out.indexOf(STEPS_MARK);
  if (at < 0) return [];
  return out
    .slice(at + STEPS_MARK.length)
    .split('\n')
    .flatMap((l) => {
      const m = STEP_RE.exec(l.trim());
      return m ? [{ step: Number(m[1]), total: Number(m[2]), text: m[3]! }] : [];
    });
}

export type DesktopInstallState =
  | { state: 'pending' }
  | { state: 'step'; step: number; total: number; text: string; percent: number | null; detail: string | null }
  | { state: 'done'; browser: string | null }
  | { state: 'failed'; kind: 'os' | 'mirror' | 'install'; reason: string };

/** The script's step whose progress is apt's (`apt-get install`). */
const INSTALL_STEP = 2;

/** Parses DESKTOP_STATUS_PROBE's output. */
export function parseDesktopStatus(out: string): DesktopInstallState {
  const at = out.indexOf(STEPS_MARK);
  const [status = '', ...rest] = (at < 0 ? out : out.slice(0, at)).split('\n');
  const line = status.trim();
  if (line.startsWith('done')) {
    const b = /browser=(\S+)/.exec(line)?.[1];
    return { state: 'done', browser: b && b !== 'none' ? b : null };
  }
  const failed = /^failed (os|mirror|install) ?(.*)$/.exec(line);
  if (failed) return { state: 'failed', kind: failed[1] as 'os' | 'mirror' | 'install', reason: failed[2]!.trim() };
  const step = STEP_RE.exec(line);
  if (!step) return { state: 'pending' };
  // apt: `dlstatus:N:PERCENT:TEXT` / `pmstatus:PKG:PERCENT:TEXT` — apt's progress is step 2's alone (the
  // file stays after it: step 3 read with it said "99% (installing: …)" of the install before).
  const apt =
    Number(step[1]) === INSTALL_STEP ? /^(dl|pm)status:[^:]*:([\d.]+):(.*)$/.exec(rest.join('\n').trim().split('\n').pop() ?? '') : null;
  return {
    state: 'step',
    step: Number(step[1]),
    total: Number(step[2]),
    text: step[3]!,
    percent: apt ? Math.round(Number(apt[2])) : null,
    detail: apt ? `${apt[1] === 'dl' ? 'downloading' : 'installing'}: ${apt[3]!.trim()}` : null,
  };
}

/**
 * Up front, before a boot: the install needs the guest's mirror, and policies offline and allow give it
 * no route there (slirp restrict=on; allow reaches only the egress proxy, which apt is not pointed at).
 */
export function checkDesktopNetwork(mode: NetworkMode, sandbox: string): void {
  if (mode === 'open') return;
  throw new SandboxDeskError(
    'refused',
    `--desktop installs the desktop's packages from the guest's package mirror at first boot, and sandbox ${sandbox} has network policy ${mode}: the guest has no route to a mirror`,
    {
      hint: 'use --image debian-desktop (the desktop built in, no mirror needed), or create the sandbox with --network open',
    },
  );
}

/** Refuses a guest whose /etc/os-release is not Debian/Ubuntu-based, naming what it says. */
export function checkGuestOs(osReleaseText: string | null): void {
  const os = parseOsRelease(osReleaseText ?? '');
  if (osReleaseText !== null && isDebianLike(os)) return;
  const found =
    osReleaseText === null
      ? 'it has no readable /etc/os-release'
      : `its /etc/os-release says ${os.PRETTY_NAME ?? os.ID ?? 'nothing usable'}`;
  throw new SandboxDeskError('invalid_input', `--desktop needs a Debian- or Ubuntu-based guest; this VM's is not: ${found}`, {
    hint: 'use a Debian or Ubuntu cloud image, or --image debian-desktop',
  });
}

export interface DesktopWaitInput {
  /** Runs a command in the guest (SSH); code null or non-zero: it did not answer. */
  probe: (command: string, timeoutMs: number) => Promise<{ code: number | null; stdout: string; stderr: string }>;
  progress: (e: ProgressEvent) => void;
  /** Throws when the VM died, the boot was cancelled or the deadline passed (the readiness check). */
  check: (waitingFor: string) => void;
  since: () => string;
  pollMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * After SSH answers on a `--desktop` VM: the guest's OS first (refused, naming it), then the install's
 * steps as progress until `done`; a failure becomes the refusal with the guest's reason.
 */
export async function waitForDesktopInstall(input: DesktopWaitInput): Promise<{ browser: string | null }> {
  const os = await input.probe('cat /etc/os-release', 20_000);
  checkGuestOs(os.code === 0 ? os.stdout : null);
  let shown = '';
  const told = new Set<number>();
  for (;;) {
    input.check("the desktop's packages to install (cloud-init, first boot)");
    const r = await input.probe(DESKTOP_STATUS_PROBE, 20_000);
    const s = r.code === 0 ? parseDesktopStatus(r.stdout) : ({ state: 'pending' } as const);
    // Steps begun and over between two reads are told too, in order, before where the guest is now.
    for (const past of r.code === 0 ? parseDesktopSteps(r.stdout) : []) {
      if (told.has(past.step) || (s.state === 'step' && s.step === past.step)) continue;
      told.add(past.step);
      input.progress({ step: 'desktop', message: `desktop step ${past.step}/${past.total}: ${past.text} (${input.since()})` });
    }
    if (s.state === 'done') {
      input.progress({
        step: 'desktop',
        message: `the desktop's packages are installed${s.browser ? ` (with ${s.browser})` : " (no Chromium in this guest's archive: the desktop runs without a browser)"} (after ${input.since()})`,
      });
      return { browser: s.browser };
    }
    if (s.state === 'failed') {
      if (s.kind === 'os')
        throw new SandboxDeskError('invalid_input', `--desktop needs a Debian- or Ubuntu-based guest: ${s.reason}`, {
          hint: 'use a Debian or Ubuntu cloud image, or --image debian-desktop',
        });
      throw new SandboxDeskError(
        s.kind === 'mirror' ? 'refused' : 'boot_failed',
        s.kind === 'mirror'
          ? `--desktop: the guest has no reachable package mirror, so the desktop's packages cannot be installed: ${s.reason || 'apt-get update failed'}`
          : `--desktop: installing the desktop's packages in the guest failed: ${s.reason}`,
        {
          hint:
            s.kind === 'mirror'
              ? "check the guest's network and /etc/apt/sources.list, or use --image debian-desktop (no mirror needed)"
              : `see ${DESKTOP_STATE_DIR}/apt.log in the guest`,
        },
      );
    }
    if (s.state === 'step') {
      const msg = `desktop step ${s.step}/${s.total}: ${s.text}${s.percent !== null ? ` — ${s.percent}%` : ''}${s.detail ? ` (${s.detail})` : ''}`;
      if (msg !== shown) {
        input.progress({ step: 'desktop', message: `${msg} (${input.since()})` });
        shown = msg;
        told.add(s.step);
      }
    }
    await sleep(input.pollMs ?? 3000);
  }
}

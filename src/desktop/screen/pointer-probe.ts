import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { SandboxDeskError } from '../../shared/errors.js';
import type { IDisposable } from '../../shared/lifecycle.js';

/**
 * Reads the X pointer where RFB cannot: the protocol has no "where is the pointer" question, so one
 * long-lived process inside the sandbox (started once per live connection, as the desktop's account)
 * answers one line per request. With python3 it holds one X connection and calls XQueryPointer
 * through ctypes (no fork per question); without, a shell runs `xdotool getmouselocation` per line.
 * Either way an action costs no `docker exec`.
 *
 * With libXrandr the answer also carries the screen's geometry generation (G=): RandR's timestamps of
 * the last screen change, read fresh from the X server (XRRGetScreenResourcesCurrent; XRRTimes is
 * cached client-side). Every resize bumps them — SetDesktopSize from any RFB client, xrandr in the
 * sandbox — so a frame id that carries them is stale in any process after a resize and back.
 */
const PY_PROBE = `
import ctypes, sys
x11 = ctypes.CDLL('libX11.so.6')
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XDefaultRootWindow.restype = ctypes.c_ulong
x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x11.XQueryPointer.argtypes = [ctypes.c_void_p, ctypes.c_ulong] + [ctypes.c_void_p] * 7
class Res(ctypes.Structure): _fields_ = [('timestamp', ctypes.c_ulong), ('configTimestamp', ctypes.c_ulong)]
try:
    xr = ctypes.CDLL('libXrandr.so.2')
    xr.XRRGetScreenResourcesCurrent.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    xr.XRRGetScreenResourcesCurrent.restype = ctypes.POINTER(Res)
    xr.XRRFreeScreenResources.argtypes = [ctypes.c_void_p]
except OSError:
    xr = None
def generation():
    if not xr: return ''
    r = xr.XRRGetScreenResourcesCurrent(d, root)
    if not r: return ''
    g = ' G=%x.%x' % (r.contents.timestamp, r.contents.configTimestamp)
    xr.XRRFreeScreenResources(r)
    return g
d = x11.XOpenDisplay(None)
if not d:
    sys.stdout.write('Error: cannot open display\\n'); sys.stdout.flush(); sys.exit(1)
root = x11.XDefaultRootWindow(d)
w1, w2 = ctypes.c_ulong(), ctypes.c_ulong()
rx, ry, wx, wy = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
m = ctypes.c_uint()
for line in sys.stdin:
    x11.XQueryPointer(d, root, ctypes.byref(w1), ctypes.byref(w2), ctypes.byref(rx), ctypes.byref(ry), ctypes.byref(wx), ctypes.byref(wy), ctypes.byref(m))
    sys.stdout.write('X=%d Y=%d%s\\n' % (rx.value, ry.value, generation() if line.startswith('g') else '')); sys.stdout.flush()
`;
const SH_PROBE = 'while IFS= read -r _; do xdotool getmouselocation --shell 2>&1 | tr "\\n" " "; echo; done';
const LAUNCH = `if command -v python3 >/dev/null 2>&1 && python3 -c "import ctypes; ctypes.CDLL('libX11.so.6')" 2>/dev/null; then exec python3 -u -c "$1"; fi
exec bash -c "$2"`;

/** The words to run inside the sandbox (after the exec prefix): the probe. */
export function pointerProbeWords(displayEnv: string[]): string[] {
  return ['env', ...displayEnv, 'bash', '-c', LAUNCH, 'sandbox-desk', PY_PROBE, SH_PROBE];
}

/** How long the first answer of a new probe may take (it includes starting the probe). */
export const PROBE_START_TIMEOUT_MS = 30_000;

export interface ProbeAnswer {
  x: number;
  y: number;
  /** The screen's geometry generation (RandR timestamps); absent where the probe cannot read it. */
  generation?: string;
}

interface Pending {
  resolve: (p: ProbeAnswer) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class PointerProbe implements IDisposable {
  private child: ChildProcessWithoutNullStreams | undefined;
  private buffered = '';
  private readonly pending: Pending[] = [];

  /** `argv`: the whole command (exec prefix + pointerProbeWords). */
  constructor(private readonly argv: string[]) {}

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn(this.argv[0]!, this.argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.on('error', () => undefined);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s: string) => {
      this.buffered += s;
      for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 1);
        this.answer(line);
      }
    });
    const gone = (why: string): void => {
      if (this.child === child) this.child = undefined;
      this.buffered = '';
      for (const p of this.pending.splice(0)) {
        clearTimeout(p.timer);
        p.reject(new SandboxDeskError('backend_unavailable', `could not read the pointer position: ${why}`));
      }
    };
    child.on('error', (e) => gone(e.message));
    child.on('close', (code) => gone(`the probe exited (${code})`));
    return child;
  }

  private answer(line: string): void {
    const p = this.pending.shift();
    if (!p) return;
    clearTimeout(p.timer);
    const x = /X=(\d+)/.exec(line)?.[1];
    const y = /Y=(\d+)/.exec(line)?.[1];
    if (x === undefined || y === undefined)
      p.reject(new SandboxDeskError('backend_unavailable', `xdotool getmouselocation said: ${line.trim() || 'nothing'}`));
    else {
      const g = /G=([0-9a-f]+\.[0-9a-f]+)/.exec(line)?.[1];
      p.resolve({ x: Number(x), y: Number(y), ...(g ? { generation: g } : {}) });
    }
  }

  /** The pointer; with `generation`, the screen's geometry generation too (one more X request, asked only when needed). */
  measure(timeoutMs = 5000, generation = false): Promise<ProbeAnswer> {
    // The first answer also waits for the probe to start inside the sandbox (an exec, then python3 and
    // libX11 loading): seconds in a VM under TCG, so it gets the longer of the two limits.
    const fresh = this.child === undefined;
    this.child ??= this.start();
    const child = this.child;
    const limit = fresh ? Math.max(timeoutMs, PROBE_START_TIMEOUT_MS) : timeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // Answers come in order: after a lost one the stream cannot be trusted, so start over.
        child.kill();
        reject(new SandboxDeskError('backend_unavailable', `the pointer position did not come within ${limit} ms`));
      }, limit);
      this.pending.push({ resolve, reject, timer });
      child.stdin.write(generation ? 'g\n' : '\n');
    });
  }

  dispose(): void {
    this.child?.kill();
    this.child = undefined;
  }
}

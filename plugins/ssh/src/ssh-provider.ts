import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type {
  BackendStatus,
  CreateEnvironmentOptions,
  PluginContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from '../../../src/sandbox/plugin-api.js';
import { controlArgv, execPrefixArgv, keyscanArgv, masterArgv, type SshTarget } from './ssh-argv.js';

/** The master stays up this long after its last client, so the next command skips the handshake. */
const PERSIST_SECONDS = 600;
/** What a sandbox's identity is made of: the remote kernel's boot id and its pid 1's start time. */
const INCARNATION_SCRIPT = 'echo "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)-$(cut -d" " -f22 /proc/1/stat 2>/dev/null)"';

interface SshState {
  stopped: boolean;
  incarnation: string | null;
}

const HOST_RE = /^[A-Za-z0-9][A-Za-z0-9.:_-]*$/;
const USER_RE = /^[a-z_][a-z0-9_.-]{0,31}$/i;

/** Sandboxes on machines reachable over SSH. `stop` disconnects; it never powers the machine off. */
export class SshProvider implements SandboxProvider {
  readonly name = 'ssh';
  readonly isContainer = true;
  // Another machine: the window must not call it a container (isContainer is about host paths).
  readonly isolation = 'remote' as const;
  /** Each machine's own home, resolved after connecting. */
  readonly defaultCwd = '~';
  readonly supportsStreams = true;
  readonly description = 'a machine reachable over SSH (options: host, port, user, key)';

  constructor(private readonly ctx: PluginContext) {}

  private dir(backendRef: string): string {
    return join(this.ctx.dataDir, backendRef);
  }

  private target(ref: { backendRef: string | null; options: Record<string, string>; user: string | null }): SshTarget {
    if (!ref.backendRef)
      throw this.ctx.error('sandbox_missing', 'this ssh sandbox was never provisioned', { hint: 'remove it and create it again' });
    const o = ref.options;
    const hash = createHash('sha256').update(ref.backendRef).digest('hex').slice(0, 12);
    // Unix socket paths are limited to ~108 bytes: fall back to a short private dir under /tmp.
    let controlDir = join(this.ctx.dataDir, 'c');
    if (controlDir.length + 14 > 100) controlDir = join(tmpdir(), `sdesk-ssh-${process.getuid?.() ?? 'u'}`);
    mkdirSync(controlDir, { recursive: true, mode: 0o700 });
    return {
      host: o.host!,
      port: Number(o.port ?? 22),
      user: o.user ?? ref.user!,
      key: o.key ?? null,
      knownHosts: join(this.dir(ref.backendRef), 'known_hosts'),
      controlPath: join(controlDir, hash),
    };
  }

  private readState(backendRef: string): SshState | null {
    const f = join(this.dir(backendRef), 'state.json');
    if (!existsSync(f)) return null;
    return JSON.parse(readFileSync(f, 'utf8')) as SshState;
  }

  private writeState(backendRef: string, s: SshState): void {
    writeFileSync(join(this.dir(backendRef), 'state.json'), JSON.stringify(s));
  }

  private checkOptions(spec: ProvisionSpec): void {
    const o = spec.options;
    const bad = (what: string, hint: string) => this.ctx.error('invalid_input', `ssh: ${what}`, { hint });
    if (spec.image) throw bad('the ssh backend has no images', 'drop --image');
    if (!o.host || !HOST_RE.test(o.host))
      throw bad(`host ${JSON.stringify(o.host ?? '')} is not a host name or address`, 'pass --option host=NAME_OR_IP');
    const port = Number(o.port ?? 22);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw bad(`port ${JSON.stringify(o.port)} is not 1-65535`, 'pass --option port=N');
    const user = o.user ?? spec.user;
    if (!user || !USER_RE.test(user)) throw bad(`user ${JSON.stringify(user ?? '')} is not a login name`, 'pass --option user=NAME');
    if (o.key !== undefined) {
      if (!isAbsolute(o.key))
        throw bad(`key ${JSON.stringify(o.key)} must be an absolute path`, 'pass --option key=/absolute/path/to/private_key');
      if (!existsSync(o.key)) throw bad(`key ${o.key} does not exist`, 'pass the path of an existing private key');
    }
    for (const k of Object.keys(o))
      if (!['host', 'port', 'user', 'key'].includes(k)) throw bad(`unknown option ${k}`, 'the ssh backend takes host, port, user and key');
  }

  async provision(spec: ProvisionSpec): Promise<ProvisionResult> {
    this.checkOptions(spec);
    const ref = { backendRef: spec.resourceName, options: spec.options, user: spec.user };
    const t = this.target(ref);
    mkdirSync(this.dir(spec.resourceName), { recursive: true, mode: 0o700 });
    // Pin the host key now, over the given port; every later connection checks it strictly.
    const scan = await this.ctx.helpers.runArgv(keyscanArgv(t.host, t.port), { timeoutMs: 20_000 });
    const keys = scan.stdout.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    if (keys.length === 0) {
      rmSync(this.dir(spec.resourceName), { recursive: true, force: true });
      throw this.ctx.error(
        'backend_unavailable',
        `ssh: no host key from ${t.host}:${t.port} (${scan.stderr.trim() || `exit ${scan.code}`})`,
        {
          hint: 'check that sshd runs there and that host and port are right',
        },
      );
    }
    writeFileSync(t.knownHosts, keys.join('\n') + '\n', { mode: 0o600 });
    this.writeState(spec.resourceName, { stopped: true, incarnation: null });
    return { backendRef: spec.resourceName, user: t.user, image: null };
  }

  /** Starts the control master unless it is up; returns ssh's complaint when it cannot connect. */
  private async ensureMaster(t: SshTarget): Promise<string | null> {
    if ((await this.ctx.helpers.runArgv(controlArgv(t, 'check'), { timeoutMs: 10_000 })).code === 0) return null;
    const log = `${t.knownHosts}.master.log`;
    const fd = openSync(log, 'w', 0o600);
    try {
      const argv = masterArgv(t, PERSIST_SECONDS);
      const code = await new Promise<number | null>((resolve) => {
        // stdin/stdout to /dev/null, stderr to a file: the backgrounded master holds no pipe of ours.
        const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', fd] });
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.on('error', () => resolve(null));
        child.on('exit', (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      });
      return code === 0 ? null : readFileSync(log, 'utf8').trim() || `ssh exited with ${code}`;
    } finally {
      closeSync(fd);
    }
  }

  private async measureIncarnation(t: SshTarget): Promise<string> {
    const r = await this.ctx.helpers.runArgv([...execPrefixArgv(t, false), INCARNATION_SCRIPT], { timeoutMs: 20_000 });
    const id = r.stdout.trim();
    if (r.code !== 0 || id.length < 3)
      throw this.ctx.error('backend_unavailable', `ssh: could not identify ${t.host} (${r.stderr.trim() || `exit ${r.code}`})`);
    return id;
  }

  async start(ref: SandboxRef): Promise<void> {
    const t = this.target(ref);
    const state = this.readState(ref.backendRef!);
    if (!state)
      throw this.ctx.error('sandbox_missing', `ssh sandbox ${ref.name} has no state`, {
        hint: `remove it (sandbox-desk sandbox rm ${ref.name}) and create it again`,
      });
    const why = await this.ensureMaster(t);
    if (why)
      throw this.ctx.error('backend_unavailable', `ssh: cannot connect to ${t.user}@${t.host}:${t.port}: ${why}`, {
        hint: 'check the machine, the key and the user; the host key pinned at create must still match',
      });
    this.writeState(ref.backendRef!, { stopped: false, incarnation: await this.measureIncarnation(t) });
  }

  async stop(ref: SandboxRef): Promise<void> {
    const t = this.target(ref);
    if (this.readState(ref.backendRef!)) this.writeState(ref.backendRef!, { stopped: true, incarnation: null });
    await this.ctx.helpers.runArgv(controlArgv(t, 'exit'), { timeoutMs: 10_000 });
  }

  async remove(ref: SandboxRef): Promise<void> {
    if (!ref.backendRef) return;
    await this.ctx.helpers.runArgv(controlArgv(this.target(ref), 'exit'), { timeoutMs: 10_000 });
    rmSync(this.dir(ref.backendRef), { recursive: true, force: true });
  }

  /** Cheap while the master is up (a local socket check); otherwise reconnects, and notices a reboot. */
  async status(ref: SandboxRef): Promise<BackendStatus> {
    if (!ref.backendRef) return { state: 'missing', incarnation: null, detail: 'never provisioned' };
    const state = this.readState(ref.backendRef);
    if (!state) return { state: 'missing', incarnation: null, detail: 'its state directory is gone' };
    if (state.stopped) return { state: 'stopped', incarnation: null, detail: 'disconnected' };
    const t = this.target(ref);
    const details = { host: t.host, port: t.port, user: t.user };
    const checked = await this.ctx.helpers.runArgv(controlArgv(t, 'check'), { timeoutMs: 10_000 });
    if (checked.code === 0 && state.incarnation) return { state: 'running', incarnation: state.incarnation, details };
    const why = await this.ensureMaster(t);
    if (why) return { state: 'stopped', incarnation: null, detail: `unreachable: ${why}`, details };
    const incarnation = await this.measureIncarnation(t);
    this.writeState(ref.backendRef, { stopped: false, incarnation });
    return { state: 'running', incarnation, details };
  }

  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const st = await this.status(opts.sandbox);
    if (st.state !== 'running' || !st.incarnation) {
      throw this.ctx.error('sandbox_not_running', `ssh sandbox ${opts.sandbox.name} is not connected (${st.detail ?? st.state})`, {
        hint: `start it with \`sandbox-desk sandbox start ${opts.sandbox.name}\``,
      });
    }
    const t = this.target(opts.sandbox);
    const home =
      opts.cachedHome && opts.cachedHome.incarnation === st.incarnation
        ? opts.cachedHome.home
        : await this.ctx.helpers.measureHome(execPrefixArgv(t, false), true);
    return {
      user: t.user,
      home,
      defaultCwd: opts.cwd === '~' ? home : opts.cwd,
      cwd: null,
      mounts: [],
      incarnation: st.incarnation,
      // ssh joins the words after the prefix into one remote command line; the app quotes them.
      joinsArgv: true,
      // Another user (e.g. root) through sudo on the machine; the login user otherwise.
      execPrefix: ({ interactive, user }) => execPrefixArgv(t, interactive, user),
      getTempDir: () => '/tmp',
    };
  }
}

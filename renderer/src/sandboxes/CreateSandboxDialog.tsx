// Over ~400 lines on purpose: one form whose fields follow the chosen backend (image list, VM fields,
// Advanced); its parsing and the image choices are in create-form.ts, the suggestions in src/shared.
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { useFocusTrap } from '../ui/focus-trap.js';
import type { BackendInfo, CreateSandboxResult, ImageInfo, NetworkMode, PluginInfo } from '../../../src/api/contract.js';
import { closestImageName } from '../../../src/shared/did-you-mean.js';
import { ISOLATION_LABEL } from '../../../src/shared/isolation.js';
import { humanSize, imagesFor, parseAllowLines, parseEnvLines, parseMountLines } from './create-form.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { elapsed } from '../ui/format.js';
import { useInterval } from '../hooks/useInterval.js';
import { useSandboxProgress } from '../hooks/useSandboxProgress.js';

export const DOCKER_DEFAULT_IMAGE = 'sandbox-desk/base:latest';
export const DOCKER_DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';

type Field = 'name' | 'backend' | 'image' | 'user' | 'defaultCwd' | 'advanced' | 'form';

interface Props {
  onClose: () => void;
  onCreated: (result: CreateSandboxResult) => void;
  /** Prefilled image (e.g. the desktop image, from "Create a desktop sandbox"). */
  initialImage?: string | undefined;
  /**
   * The create's own progress (steps and its one Cancel), once the core reports it: shown in the
   * dialog in place of the dialog's buttons. It used to float over the dialog, beside a second, greyed
   * Cancel of the dialog's own.
   */
  progress?: ReactNode;
}

/** Which field a server error is about, so it is shown where the user has to act. */
function fieldOf(code: string | undefined, message: string): Field {
  if (code === 'name_taken') return 'name';
  if (code === 'image_not_found') return 'image';
  if (code === 'unknown_backend' || code === 'backend_unavailable' || code === 'engine_unreachable') return 'backend';
  if (code === 'invalid_input') {
    if (/\bname\b/i.test(message)) return 'name';
    if (/\buser\b/i.test(message)) return 'user';
    if (/\bcwd\b|default/i.test(message)) return 'defaultCwd';
    if (/\bimage\b/i.test(message)) return 'image';
  }
  return 'form';
}

/** The VM fields that were filled, as backend options (the backend validates them). */
function vmOptions(vm: Record<'cpus' | 'memory' | 'disk' | 'accel', string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(vm)
      .map(([k, v]) => [k, v.trim()] as const)
      .filter(([, v]) => v !== ''),
  );
}

/** The Create dialog: the few things a sandbox needs, with the server's answer shown in place. */
export function CreateSandboxDialog({ onClose, onCreated, initialImage, progress: opProgress }: Props) {
  const api = useApi();
  const [backends, setBackends] = useState<BackendInfo[] | null>(null);
  const [backendsError, setBackendsError] = useState<string | null>(null);
  const [brokenPlugins, setBrokenPlugins] = useState<PluginInfo[]>([]);
  const [name, setName] = useState('');
  const [backend, setBackend] = useState('');
  const [image, setImage] = useState(initialImage ?? '');
  const [user, setUser] = useState('');
  const [defaultCwd, setDefaultCwd] = useState('');
  const [vm, setVm] = useState({ cpus: '', memory: '', disk: '', accel: '' });
  const [limits, setLimits] = useState({ cpus: '', memory: '' });
  const [desktop, setDesktop] = useState(false);
  const [mountsText, setMountsText] = useState('');
  const [envText, setEnvText] = useState('');
  // Network policy (docs/network-policy.md): open unless asked; allow entries one per line.
  const [networkMode, setNetworkMode] = useState<NetworkMode>('open');
  const [allowText, setAllowText] = useState('');
  const [images, setImages] = useState<ImageInfo[]>([]);
  const [busySince, setBusySince] = useState<number | null>(null);
  const [, setTick] = useState(0);
  const [error, setError] = useState<{ field: Field; message: string; hint?: string } | null>(null);
  const nameRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    let live = true;
    api.call('backends', {}).then(
      (list) => {
        if (!live) return;
        setBackends(list);
        // Docker first: it is the backend the desktop and the isolation story are built around.
        setBackend((b) => b || (list.find((x) => x.name === 'docker') ?? list[0])?.name || '');
      },
      (err: unknown) => live && setBackendsError(describeError(err).message),
    );
    // The images to pick from (Docker and VM); without them the field is still a free text box.
    api.call('listImages', {}).then(
      (l) => live && setImages(l.images),
      () => undefined,
    );
    // A plugin that did not load is why its backend is missing from the list: say so here.
    api.call('plugins', {}).then(
      (list) => live && setBrokenPlugins(list.filter((p) => p.status !== 'loaded')),
      () => undefined,
    );
    nameRef.current?.focus();
    return () => {
      live = false;
    };
  }, [api]);

  useInterval(() => setTick((t) => t + 1), busySince === null ? null : 1000);

  // Escape closes from anywhere: while the form is busy its controls are disabled, so the focus may
  // have fallen back to the page.
  const busyRef = useRef(false);
  busyRef.current = busySince !== null;
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && !busyRef.current) onCloseRef.current();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  // After a refusal, the focus goes to the field to fix.
  const formRef = useRef<HTMLFormElement>(null);
  // Modal: the focus stays in the dialog (and its floating progress) and goes back to the opener on close.
  useFocusTrap(formRef, { initialFocus: () => nameRef.current });
  useEffect(() => {
    if (!error || busySince !== null) return;
    const field =
      formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]') ??
      formRef.current?.querySelector<HTMLElement>('[data-testid="create-name"]');
    field?.focus();
  }, [error, busySince]);

  const info = backends?.find((b) => b.name === backend);
  const isDocker = backend === 'docker';
  const isQemu = backend === 'qemu';
  // Only backends with their own root filesystem take an image and a user (not `local`: this machine).
  const takesImage = info?.isolation !== 'host';
  const choices = imagesFor(backend, images);
  const typed = image.trim();
  const suggestion =
    typed && !choices.some((i) => i.ref === typed || i.tags.includes(typed))
      ? closestImageName(
          typed,
          choices.flatMap((i) => (i.tags.length ? i.tags : [i.ref])),
        )
      : null;
  const mounts = parseMountLines(mountsText);
  const env = parseEnvLines(envText);
  const allow = parseAllowLines(allowText);
  const busy = busySince !== null;
  const progress = useSandboxProgress(busy ? name.trim() : null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (busy) return;
    const advancedProblem = mounts.error ?? env.error ?? (networkMode === 'allow' ? allow.error : null);
    if (advancedProblem) {
      setError({ field: 'advanced', message: advancedProblem });
      return;
    }
    setError(null);
    setBusySince(Date.now());
    try {
      // Empty fields are left out, so the backend's own defaults apply (and are reported back).
      const result = await api.call('createSandbox', {
        name: name.trim(),
        backend,
        ...(takesImage && image.trim() ? { image: image.trim() } : {}),
        ...(takesImage && user.trim() ? { user: user.trim() } : {}),
        ...(defaultCwd.trim() ? { defaultCwd: defaultCwd.trim() } : {}),
        ...(mounts.mounts.length ? { mounts: mounts.mounts } : {}),
        ...(Object.keys(env.env).length ? { env: env.env } : {}),
        ...(networkMode !== 'open' ? { network: networkMode, ...(networkMode === 'allow' ? { allow: allow.entries } : {}) } : {}),
        ...(isQemu ? { options: vmOptions(vm) } : {}),
        ...(isDocker && (desktop || limits.cpus.trim() || limits.memory.trim())
          ? { options: { ...vmOptions({ ...limits, disk: '', accel: '' }), ...(desktop ? { desktop: 'true' } : {}) } }
          : {}),
      });
      onCreated(result);
    } catch (err) {
      const d = describeError(err);
      setError({ field: fieldOf(d.code, d.message), message: d.message, ...(d.hint ? { hint: d.hint } : {}) });
    } finally {
      setBusySince(null);
    }
  }

  const errorAt = (field: Field) =>
    error?.field === field ? (
      <div className="field-error" role="alert" data-testid="create-error">
        {error.message}
        {error.hint && <div className="hint">{error.hint}</div>}
      </div>
    ) : null;

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && !busy && onClose()}>
      <form className="modal" role="dialog" aria-modal="true" aria-labelledby="create-title" onSubmit={(e) => void submit(e)} ref={formRef}>
        <h2 id="create-title">New sandbox</h2>
        <fieldset disabled={busy}>
          <label className="field">
            <span className="label">Name</span>
            <input
              ref={nameRef}
              data-testid="create-name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              placeholder="e.g. agent-1"
              autoComplete="off"
              spellCheck={false}
              required
              aria-invalid={error?.field === 'name'}
            />
            <span className="help">Letters, digits, _ . and -; starts with a letter or digit.</span>
            {errorAt('name')}
          </label>

          <label className="field">
            <span className="label">Backend</span>
            <select
              data-testid="create-backend"
              value={backend}
              onChange={(e) => setBackend(e.target.value)}
              aria-invalid={error?.field === 'backend'}
            >
              {!backends && <option value="">{backendsError ? 'could not list backends' : 'loading…'}</option>}
              {backends?.map((b) => (
                <option key={b.name} value={b.name}>
                  {b.name} ({ISOLATION_LABEL[b.isolation]})
                </option>
              ))}
            </select>
            {info && <span className="help">{info.description}</span>}
            {backendsError && <span className="field-error">{backendsError}</span>}
            {brokenPlugins.map((p) => (
              <span className="help plugin-broken" key={p.name} data-testid={`plugin-broken-${p.name}`}>
                Plugin <b>{p.name}</b> {p.status === 'crashed' ? 'crashed' : 'did not load'}: {p.error ?? 'no reason given'}
              </span>
            ))}
            {errorAt('backend')}
          </label>

          {takesImage && (
            <div className="field">
              <label className="label" htmlFor="create-image">
                Image
              </label>
              <div className="image-pick">
                <input
                  id="create-image"
                  data-testid="create-image"
                  value={image}
                  onChange={(e) => setImage(e.target.value)}
                  placeholder={isDocker ? DOCKER_DEFAULT_IMAGE : 'backend default'}
                  spellCheck={false}
                  aria-invalid={error?.field === 'image'}
                />
                {choices.length > 0 && (
                  <select
                    data-testid="create-image-pick"
                    aria-label="Pick an image"
                    value={choices.some((c) => c.ref === typed) ? typed : ''}
                    onChange={(e) => e.target.value && setImage(e.target.value)}
                  >
                    <option value="">{`${choices.length} image${choices.length > 1 ? 's' : ''} here…`}</option>
                    {choices.map((c) => (
                      <option key={c.ref} value={c.ref}>
                        {c.ref} — {humanSize(c.sizeBytes)}
                        {c.desktop ? ' · desktop' : ''}
                        {c.usedBy.length ? ` · used by ${c.usedBy.length}` : ''}
                      </option>
                    ))}
                  </select>
                )}
              </div>
              {suggestion && (
                <span className="help" data-testid="create-image-suggestion">
                  Not here. Did you mean{' '}
                  <button type="button" className="link" onClick={() => setImage(suggestion)}>
                    {suggestion}
                  </button>
                  ?
                </span>
              )}
              {isDocker && (
                <span className="help">
                  Empty means <code>{DOCKER_DEFAULT_IMAGE}</code>. For a bot desktop (Xfce + Chromium) use{' '}
                  <button type="button" className="link" onClick={() => setImage(DOCKER_DESKTOP_IMAGE)}>
                    {DOCKER_DESKTOP_IMAGE}
                  </button>
                  .
                </span>
              )}
              {isDocker && (
                <label className="check" data-testid="create-desktop-label">
                  <input type="checkbox" data-testid="create-desktop" checked={desktop} onChange={(e) => setDesktop(e.target.checked)} />
                  <span>
                    Add the bot desktop (Xvnc, Xfce, Chromium): builds a desktop variant of a Debian/Ubuntu image once, then reuses it
                  </span>
                </label>
              )}
              {errorAt('image')}
            </div>
          )}

          {isQemu && (
            <div className="field-row field-row-wrap" data-testid="create-vm-fields">
              {(
                [
                  ['cpus', 'CPUs', '2'],
                  ['memory', 'Memory (MiB)', '1024'],
                  ['disk', 'Disk (GiB)', "image's"],
                ] as const
              ).map(([key, label, placeholder]) => (
                <label className="field" key={key}>
                  <span className="label">{label}</span>
                  <input
                    data-testid={`create-vm-${key}`}
                    inputMode="numeric"
                    value={vm[key]}
                    onChange={(e) => setVm({ ...vm, [key]: e.target.value })}
                    placeholder={placeholder}
                  />
                </label>
              ))}
              <label className="field field-full">
                <span className="label">Acceleration</span>
                <select data-testid="create-vm-accel" value={vm.accel} onChange={(e) => setVm({ ...vm, accel: e.target.value })}>
                  <option value="">auto (KVM when it really works)</option>
                  <option value="kvm">kvm</option>
                  <option value="tcg">tcg (emulated, slower)</option>
                </select>
              </label>
            </div>
          )}

          <div className="field-row">
            {takesImage && (
              <label className="field">
                <span className="label">User</span>
                <input
                  data-testid="create-user"
                  value={user}
                  onChange={(e) => setUser(e.target.value)}
                  placeholder="image's default user"
                  spellCheck={false}
                  aria-invalid={error?.field === 'user'}
                />
                {errorAt('user')}
              </label>
            )}
            <label className="field">
              <span className="label">Default cwd</span>
              <input
                data-testid="create-default-cwd"
                value={defaultCwd}
                onChange={(e) => setDefaultCwd(e.target.value)}
                placeholder={info?.defaultCwd ?? '~'}
                spellCheck={false}
                aria-invalid={error?.field === 'defaultCwd'}
              />
              {errorAt('defaultCwd')}
            </label>
          </div>
          <p className="help">
            Where commands start when a session has no directory of its own: an absolute path inside the sandbox, or <code>~</code> — the
            sandbox user's real home, resolved after connecting (measured inside, never guessed from this machine).
          </p>

          <details className="advanced" data-testid="create-advanced" open={error?.field === 'advanced' || undefined}>
            <summary>Advanced: mounts, environment, network{isDocker ? ', CPU and memory limits' : ''}</summary>
            <label className="field">
              <span className="label">Mounts</span>
              <textarea
                data-testid="create-mounts"
                rows={2}
                value={mountsText}
                onChange={(e) => setMountsText(e.target.value)}
                placeholder="/host/folder:/in/sandbox[:ro] — one per line"
                spellCheck={false}
              />
            </label>
            <label className="field">
              <span className="label">Environment variables</span>
              <textarea
                data-testid="create-env"
                rows={2}
                value={envText}
                onChange={(e) => setEnvText(e.target.value)}
                placeholder="KEY=VALUE — one per line"
                spellCheck={false}
              />
            </label>
            <div className="field-row">
              <label className="field">
                <span className="label">Network</span>
                <select data-testid="create-network" value={networkMode} onChange={(e) => setNetworkMode(e.target.value as NetworkMode)}>
                  <option value="open">open — this machine’s network</option>
                  <option value="allow">allow — only the hosts below, through the egress proxy</option>
                  <option value="offline">offline — no network at all</option>
                </select>
              </label>
              {networkMode === 'allow' && (
                <label className="field">
                  <span className="label">Allowed hosts</span>
                  <textarea
                    data-testid="create-allow"
                    rows={2}
                    value={allowText}
                    onChange={(e) => setAllowText(e.target.value)}
                    placeholder="pypi.org, *.example.com:443, 10.0.0.0/8 — one per line"
                    spellCheck={false}
                  />
                </label>
              )}
            </div>
            {isDocker && (
              <div className="field-row">
                <label className="field">
                  <span className="label">CPUs</span>
                  <input
                    data-testid="create-cpus"
                    inputMode="decimal"
                    value={limits.cpus}
                    onChange={(e) => setLimits({ ...limits, cpus: e.target.value })}
                    placeholder="no limit"
                  />
                </label>
                <label className="field">
                  <span className="label">Memory (MiB)</span>
                  <input
                    data-testid="create-memory"
                    inputMode="numeric"
                    value={limits.memory}
                    onChange={(e) => setLimits({ ...limits, memory: e.target.value })}
                    placeholder="no limit"
                  />
                </label>
              </div>
            )}
            {errorAt('advanced')}
          </details>
        </fieldset>

        {errorAt('form')}
        {busy && opProgress ? (
          <div data-testid="create-op-progress">{opProgress}</div>
        ) : (
          <div className="modal-actions">
            {busy && (
              <span className="progress" role="status">
                <span className="spinner" aria-hidden="true" /> Creating and starting… {elapsed(busySince)}
                {progress && (
                  <span
                    className={progress.level === 'warning' ? 'progress-step progress-warning' : 'progress-step'}
                    data-testid="create-progress"
                  >
                    {' '}
                    — {progress.message}
                  </span>
                )}
              </span>
            )}
            <button type="button" className="btn" onClick={onClose} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className="btn btn-primary" data-testid="create-submit" disabled={busy || !backend}>
              {busy ? 'Creating…' : 'Create'}
            </button>
          </div>
        )}
      </form>
    </div>
  );
}

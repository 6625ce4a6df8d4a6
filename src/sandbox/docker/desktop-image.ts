import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resourcePath } from '../../platform/project-root.js';
import { SandboxDeskError } from '../../shared/errors.js';
import type { ImageTaskEvent } from '../../shared/image-types.js';
import { IMAGE_LABELS, type DockerImages } from './docker-images.js';

/** Where derived desktop images are tagged: `…:<hash of the base image id + the Dockerfile>`. */
export const DERIVED_DESKTOP_REPO = 'sandbox-desk/derived-desktop';

/**
 * The desktop's packages and display user, line for line as resources/images/desktop/Dockerfile's RUN
 * (a test keeps them equal): on a base of sandbox-desk/base the step then comes from Docker's layer cache.
 */
export const DESKTOP_RUN = `RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      tigervnc-standalone-server xauth x11-utils x11-xserver-utils \\
      xfwm4 xfdesktop4 xfce4-panel xfce4-settings xfconf dbus dbus-x11 \\
      chromium xdotool socat fonts-dejavu-core adwaita-icon-theme iproute2 python3 \\
 && rm -rf /var/lib/apt/lists/* \\
 && useradd --create-home --home-dir /home/sdesk-display --shell /usr/sbin/nologin --uid 1001 --user-group sdesk-display \\
 && chmod 0700 /home/sdesk-display`;

/**
 * The desktop image's managed Chromium policy (resources/images/desktop/chromium-policy.json: its
 * browser sends nothing of its own, issue 36) as a RUN that writes it where Chromium reads it. Written
 * into the Dockerfile rather than copied from a build context, so the derived image's tag (a hash of
 * the Dockerfile) changes when the policy does. Compact JSON holds no single quote: checked, since
 * the shell's single quotes carry it.
 */
export function chromiumPolicyRun(policyJson = readFileSync(resourcePath('images', 'desktop', 'chromium-policy.json'), 'utf8')): string {
  const compact = JSON.stringify(JSON.parse(policyJson));
  if (compact.includes("'")) throw new Error('the Chromium policy holds a single quote: it cannot be written with printf here');
  return `RUN mkdir -p /etc/chromium/policies/managed \\\n && printf '%s\\n' '${compact}' > /etc/chromium/policies/managed/sandbox-desk.json`;
}

/** The Dockerfile the app writes for `--desktop` on `base`: FROM it, the desktop's parts, its user back. */
export function derivedDockerfile(base: string, baseUser: string | null): string {
  return [
    `# Written by Sandbox Desk for --desktop: ${base} + the bot desktop's parts (as sandbox-desk/desktop).`,
    `FROM ${base}`,
    '',
    'USER root',
    DESKTOP_RUN,
    chromiumPolicyRun(),
    '',
    // The base's own user stays the one commands run as (the provider reads USER, then this label).
    `USER ${baseUser || 'root'}`,
    '',
  ].join('\n');
}

/** The derived image's tag: the same base image (by id) and the same Dockerfile give the same tag. */
export function derivedTag(baseId: string, dockerfile: string): string {
  const hash = createHash('sha256').update(baseId).update('\0').update(dockerfile).digest('hex').slice(0, 16);
  return `${DERIVED_DESKTOP_REPO}:${hash}`;
}

/** `/etc/os-release` → its fields (values unquoted). */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!.replace(/^(["'])(.*)\1$/, '$2');
  }
  return out;
}

/** Debian or Ubuntu, or derived from them (ID_LIKE): apt and these package names exist there. */
export function isDebianLike(os: Record<string, string>): boolean {
  const ids = [os.ID ?? '', ...(os.ID_LIKE ?? '').split(/\s+/)].map((s) => s.toLowerCase());
  return ids.some((id) => id === 'debian' || id === 'ubuntu');
}

type Event = Omit<ImageTaskEvent, 'at'>;

export interface DeriveDeps {
  images: DockerImages;
  /** Reads /etc/os-release of an image (a short-lived container); null when the image has none. */
  osRelease: (image: string) => Promise<string | null>;
}

/**
 * The desktop variant of `base`: built once (with progress), then found by its tag. A base that
 * already has the desktop (the app's label) is used as it is; one that is not Debian/Ubuntu is
 * refused, naming what its /etc/os-release says.
 */
export async function ensureDesktopImage(
  deps: DeriveDeps,
  base: string,
  onEvent: (e: Event) => void,
  signal?: AbortSignal,
): Promise<string> {
  const info = await deps.images.inspect(base);
  if (!info)
    throw new SandboxDeskError('image_not_found', `Image ${base} does not exist in the Docker engine`, {
      hint: 'see `sandbox-desk image list`, or build it with `sandbox-desk image build --tag TAG PATH`',
    });
  if (info.Config?.Labels?.[IMAGE_LABELS.displayUser]) {
    onEvent({ kind: 'output', text: `${base} already has the desktop's parts` });
    return base;
  }
  const dockerfile = derivedDockerfile(base, info.Config?.User || null);
  const tag = derivedTag(info.Id, dockerfile);
  if (await deps.images.inspect(tag)) {
    onEvent({ kind: 'output', text: `desktop image ${tag} (from ${base}) is built already` });
    return tag;
  }
  const osText = await deps.osRelease(base);
  const os = parseOsRelease(osText ?? '');
  if (!isDebianLike(os)) {
    const found =
      osText === null ? 'it has no readable /etc/os-release' : `its /etc/os-release says ${os.PRETTY_NAME ?? os.ID ?? 'nothing usable'}`;
    throw new SandboxDeskError('invalid_input', `--desktop needs a Debian- or Ubuntu-based image; ${base} is not: ${found}`, {
      hint: 'use a Debian/Ubuntu-based image, or sandbox-desk/desktop:latest',
    });
  }
  onEvent({ kind: 'output', text: `building ${tag}: ${base} (${os.PRETTY_NAME ?? os.ID}) + the desktop's parts, once` });
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-desk-derive-'));
  try {
    writeFileSync(join(dir, 'Dockerfile'), dockerfile);
    await deps.images.build({
      context: dir,
      tag,
      labels: {
        [IMAGE_LABELS.kind]: 'derived-desktop',
        [IMAGE_LABELS.displayUser]: 'sdesk-display',
        [IMAGE_LABELS.derivedFrom]: base,
        ...(info.Config?.User ? { 'io.sandbox-desk.default-user': info.Config.User } : {}),
      },
      signal,
      onEvent,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return tag;
}

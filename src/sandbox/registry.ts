import { SandboxDeskError } from '../shared/errors.js';
import { unknownNameHint } from '../shared/did-you-mean.js';
import type { SandboxProvider } from './provider.js';

/** Names that only the built-in backends may use, including ones that arrive in later releases. */
export const BUILTIN_BACKENDS = ['local', 'docker', 'qemu'] as const;

const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** Looks providers up by name. Built-in names cannot be taken by another provider. */
export class ProviderRegistry {
  private readonly providers = new Map<string, SandboxProvider>();

  registerBuiltin(provider: SandboxProvider): void {
    if (!(BUILTIN_BACKENDS as readonly string[]).includes(provider.name)) {
      throw new SandboxDeskError('invalid_input', `'${provider.name}' is not a built-in backend name`);
    }
    this.providers.set(provider.name, provider);
  }

  /** For providers that are not built in (plugins). */
  register(provider: SandboxProvider): void {
    this.assertRegistrable(provider.name);
    this.providers.set(provider.name, provider);
  }

  /** Throws what `register` would throw for this name, without registering anything. */
  assertRegistrable(name: unknown): asserts name is string {
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw new SandboxDeskError('invalid_input', `Backend name ${JSON.stringify(name)} is invalid`, {
        hint: 'use 1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit',
      });
    }
    if ((BUILTIN_BACKENDS as readonly string[]).includes(name)) {
      throw new SandboxDeskError('refused', `Backend name '${name}' is reserved for the built-in ${name} backend`, {
        hint: 'choose another name for the plugin provider',
      });
    }
    if (this.providers.has(name)) {
      throw new SandboxDeskError('name_taken', `A backend named '${name}' is already registered`);
    }
  }

  get(name: string): SandboxProvider {
    const provider = this.providers.get(name);
    if (!provider) {
      throw new SandboxDeskError('unknown_backend', `unknown backend '${name}'`, {
        hint: unknownNameHint(name, this.names(), 'available backends'),
      });
    }
    return provider;
  }

  has(name: string): boolean {
    return this.providers.has(name);
  }

  names(): string[] {
    return [...this.providers.keys()];
  }

  all(): SandboxProvider[] {
    return [...this.providers.values()];
  }
}

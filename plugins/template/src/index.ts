/**
 * A minimal plugin backend: "acmebox" sandboxes reached through an `acmebox exec` CLI. Copy this folder,
 * rename, fill in the TODOs, `npm run build`, then `sandbox-desk --plugin ./my-plugin plugin list`.
 *
 * Import the API with `import type` only — here from the checkout it lives in (the project typechecks
 * this file); outside it, copy src/sandbox/plugin-api.ts and provider.ts next to your code. At runtime
 * everything comes through `ctx`, so the plugin runs in-process and isolated alike.
 */
import type { PluginContext, SandboxEnvironment, SandboxProvider } from '../../../src/sandbox/plugin-api.js';

export const apiVersion = 1;

export function register(ctx: PluginContext): void {
  const provider: SandboxProvider = {
    name: 'acmebox', // not local/docker/qemu: built-in names are reserved
    isContainer: true, // host paths mean nothing inside: the cwd guard drops them
    defaultCwd: '~', // or an absolute in-sandbox path such as '/home/acme'; read on every command: keep it cheap
    supportsStreams: true, // terminal sessions, the screen and the browser may live inside
    description: 'an AcmeBox sandbox',
    async provision(spec) {
      // TODO: create the sandbox; spec.options holds --option k=v pairs.
      return { backendRef: spec.resourceName, user: spec.user, image: spec.image };
    },
    async start() {},
    async stop() {},
    async remove() {},
    async status(ref) {
      // TODO: ask your service. `incarnation` must change when the sandbox is recreated or rebooted.
      return ref.backendRef ? { state: 'running', incarnation: ref.backendRef } : { state: 'missing', incarnation: null };
    },
    async createEnvironment(opts): Promise<SandboxEnvironment> {
      const st = await provider.status(opts.sandbox);
      if (st.state !== 'running') throw ctx.error('sandbox_not_running', `${opts.sandbox.name} is not running`, { hint: 'start it' });
      const prefix = (interactive: boolean) => [
        'acmebox',
        'exec',
        ...(interactive ? ['--tty'] : []),
        '--stdin',
        opts.sandbox.backendRef!,
        '--',
      ];
      // Measure the home after connecting; never guess it from the user name.
      const home = await ctx.helpers.measureHome(prefix(false));
      return {
        user: opts.sandbox.user,
        home,
        defaultCwd: opts.cwd === '~' ? home : opts.cwd, // "~" arrives verbatim: resolve it to the home you got
        cwd: null,
        mounts: [],
        incarnation: st.incarnation!,
        // An argv array, never a string; null when it cannot run right now (the app says "retry").
        execPrefix: ({ interactive }) => prefix(interactive),
        getTempDir: () => '/tmp',
      };
    },
  };
  ctx.registerProvider(provider);
}

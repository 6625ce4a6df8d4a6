import { defineConfig } from 'vitest/config';

// No test runs the host's ~/.bashrc. Bash reads it even for `bash -c` when it guesses that rshd started it
// (its stdin is a socket, which is how Node passes a child its pipes) and it is a top-level shell (SHLVL
// unset or 0, as under `npm test` here). On these machines ~/.bashrc runs `pyenv init`, whose rehash takes
// a lock: a bash a test ended mid-rehash left the lock behind, and every later bash waited a minute for it
// (CI: terminal tests; a run here: runArgv tests). SHLVL ≥ 1 tells bash it is not top-level; the tests' processes
// and everything they start inherit it. Login shells read ~/.profile whatever SHLVL is: the tests that start
// local ones give them a home of their own (test/hermetic-home.ts).
if (!(Number(process.env.SHLVL) >= 1)) process.env.SHLVL = '1';

// Three projects: fast unit tests beside the code (src/**/*.test.ts), the UI's component tests
// (renderer/**/*.test.tsx, jsdom), and integration tests against a real Docker engine (test/integration).
// The machine has 2 cores, so integration files run one at a time.
export default defineConfig({
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'src/**/*.test.ts',
            'test/architecture.test.ts',
            'test/host-shells.test.ts',
            'test/architecture/**/*.test.ts',
            'plugins/*/src/**/*.test.ts',
            'main/**/*.test.ts',
            'renderer/**/*.test.ts',
            'bench/**/*.test.ts',
          ],
          environment: 'node',
        },
      },
      {
        // The React UI: components against a fake ApiClient, in jsdom.
        test: {
          name: 'ui',
          include: ['renderer/**/*.test.tsx'],
          environment: 'jsdom',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          globalSetup: ['./test/integration/global-setup.ts'],
        },
      },
      {
        // The standing hardening suite (issue 18): sandbox-output and request fuzzers, token scopes, MCP size
        // limits, lease bypass attempts — real parts only, seeded, bounded in time, one file at a time.
        test: {
          name: 'hardening',
          include: ['test/hardening/**/*.test.ts'],
          environment: 'node',
          testTimeout: 600_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          globalSetup: ['./test/integration/global-setup.ts'],
        },
      },
    ],
  },
});

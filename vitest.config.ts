import { defineConfig } from 'vitest/config';
import { ensureNestedShellLevel } from './src/shared/shell-level.js';

// No test runs the host's ~/.bashrc through a `bash -c` (src/shared/shell-level.ts says how it would): on
// these machines it runs `pyenv init`, whose rehash waits a minute on a lock a killed shell left (CI: terminal
// tests; a run here: runArgv tests). The tests' processes and all they start inherit the level. Login shells
// read ~/.profile whatever it is: the tests that start local ones give them a home of their own
// (test/hermetic-home.ts).
ensureNestedShellLevel(process.env);

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

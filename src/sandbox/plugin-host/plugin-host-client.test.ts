import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PluginHostClient } from './plugin-host-client.js';

describe('plugin host output', () => {
  it("what an isolated plugin prints reaches the app's logger, line by line, named by stream", async () => {
    const seen: string[] = [];
    const client = new PluginHostClient({
      plugin: 'printer',
      entry: '/nonexistent.js',
      dataDir: '/nonexistent',
      apiVersion: 1,
      logger: { info: (m) => void seen.push(`info ${m}`), warn: (m) => void seen.push(`warn ${m}`) },
      loadTimeoutMs: 20_000,
      // A real child that prints (one line split over two writes) and exits without answering the load.
      spawnHost: () =>
        spawn(
          process.execPath,
          [
            '-e',
            "process.stdout.write('hello '); setTimeout(() => { process.stdout.write('from plugin\\n'); console.error('oops line'); setTimeout(() => process.exit(3), 100); }, 50);",
          ],
          {
            stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
          },
        ),
    });
    await expect(client.load()).rejects.toThrow(/exit code 3/);
    await expect.poll(() => seen.length, { timeout: 5000 }).toBeGreaterThanOrEqual(3);
    await client.dispose();
    expect(seen).toEqual(expect.arrayContaining(['info stdout: hello from plugin', 'info stderr: oops line']));
    expect(seen.some((l) => /^info isolated host started \(pid \d+\)$/.test(l))).toBe(true);
  });
});

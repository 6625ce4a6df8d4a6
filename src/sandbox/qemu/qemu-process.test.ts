import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isPortClash, isVmProcess, processStartTime, qemuMessage, waitForExit } from './qemu-process.js';

describe('qemu process helpers', () => {
  it('recognise a process by pid, start time and the QMP socket in its command line', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const pid = child.pid!;
    const start = processStartTime(pid)!;
    expect(start).toMatch(/^\d+$/);
    expect(isVmProcess(pid, start, '/tmp/other/qmp.sock')).toBe(false);
    expect(isVmProcess(pid, String(Number(start) + 1), 'sleep')).toBe(false); // a reused pid has another start time
    expect(isVmProcess(pid, start, '30')).toBe(true);
    child.kill('SIGKILL');
    expect(await waitForExit(pid, start, 5_000)).toBe(true);
    expect(isVmProcess(pid, start, '30')).toBe(false);
  });

  it("turn QEMU's stderr into one line and spot a taken port", () => {
    const msg = qemuMessage(
      "qemu-system-x86_64: -netdev user,id=net0,hostfwd=tcp:127.0.0.1:2222-:22: Could not set up host forwarding rule 'tcp:127.0.0.1:2222-:22'\n",
    );
    expect(msg).toBe("-netdev user,id=net0,hostfwd=tcp:127.0.0.1:2222-:22: Could not set up host forwarding rule 'tcp:127.0.0.1:2222-:22'");
    expect(isPortClash(msg)).toBe(true);
    expect(isPortClash('Could not open disk.qcow2: No such file')).toBe(false);
  });
});

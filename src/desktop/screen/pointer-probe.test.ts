import { afterEach, describe, expect, it } from 'vitest';
import { PointerProbe, pointerProbeWords } from './pointer-probe.js';

const probes: PointerProbe[] = [];
afterEach(() => {
  for (const p of probes.splice(0)) p.dispose();
});

/** A stand-in for the sandbox side: the same read loop, with xdotool replaced by a script (the boundary faked). */
function probeAnswering(script: string): PointerProbe {
  const p = new PointerProbe(['bash', '-c', `while IFS= read -r _; do ${script}; done`]);
  probes.push(p);
  return p;
}

describe('PointerProbe', () => {
  it('answers each request from one long-lived process, in order', async () => {
    const p = probeAnswering('n=$((n+1)); echo "X=$n Y=$((n*2)) SCREEN=0 WINDOW=1 "');
    expect(await Promise.all([p.measure(), p.measure()])).toEqual([
      { x: 1, y: 2 },
      { x: 2, y: 4 },
    ]);
    expect(await p.measure()).toEqual({ x: 3, y: 6 });
  });

  it('asks for the geometry generation only when wanted (one more X request), and reads it', async () => {
    const p = new PointerProbe([
      'bash',
      '-c',
      'while IFS= read -r l; do if [ "$l" = g ]; then echo "X=1 Y=2 G=ab.cd"; else echo "X=1 Y=2"; fi; done',
    ]);
    probes.push(p);
    expect(await p.measure()).toEqual({ x: 1, y: 2 });
    expect(await p.measure(5000, true)).toEqual({ x: 1, y: 2, generation: 'ab.cd' });
  });

  it('says what xdotool said when there is no position', async () => {
    const p = probeAnswering('echo "Error: Can\'t open display"');
    await expect(p.measure()).rejects.toThrow(/getmouselocation said: Error: Can't open display/);
  });

  it('rejects when the probe exits, and starts a new one next time', async () => {
    const p = probeAnswering('exit 3');
    await expect(p.measure()).rejects.toThrow(/exited \(3\)/);
    await expect(p.measure()).rejects.toThrow(/exited/);
  });
});

describe('pointerProbeWords', () => {
  it('runs the X probe and reports when it cannot reach the display', async () => {
    const p = new PointerProbe(pointerProbeWords(['DISPLAY=:987654', 'XAUTHORITY=/nonexistent']));
    probes.push(p);
    await expect(p.measure()).rejects.toThrow(/getmouselocation said: .*(cannot open display|Can't open display)|exited/i);
  });
});

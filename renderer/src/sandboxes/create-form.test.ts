import { describe, expect, it } from 'vitest';
import { humanSize, imagesFor, parseAllowLines, parseEnvLines, parseMountLines } from './create-form.js';
import { imageInfo } from '../test/fake-api.js';

describe('create form fields', () => {
  it('parses mounts as the CLI does, and says which line is wrong', () => {
    expect(parseMountLines('/src:/work\n\n/data:/data:ro\n')).toEqual({
      mounts: [
        { hostPath: '/src', sandboxPath: '/work' },
        { hostPath: '/data', sandboxPath: '/data', readOnly: true },
      ],
      error: null,
    });
    expect(parseMountLines('/a:/b\nrel:/x').error).toMatch(/^line 2: "rel:\/x" is not HOST:SANDBOX/);
    expect(parseMountLines('/a:/b:rw').error).toMatch(/line 1/);
  });

  it('parses KEY=VALUE lines, values may hold =', () => {
    expect(parseEnvLines('A=1\nURL=http://x/?a=b')).toEqual({ env: { A: '1', URL: 'http://x/?a=b' }, error: null });
    expect(parseEnvLines('1A=2').error).toMatch(/line 1/);
    expect(parseEnvLines('novalue').error).toMatch(/not KEY=VALUE/);
  });

  it('offers Docker images for docker, VM images for qemu, none for local', () => {
    const images = [imageInfo({ ref: 'a:1' }), imageInfo({ ref: 'debian-test', kind: 'vm' })];
    expect(imagesFor('docker', images).map((i) => i.ref)).toEqual(['a:1']);
    expect(imagesFor('qemu', images).map((i) => i.ref)).toEqual(['debian-test']);
    expect(imagesFor('local', images)).toEqual([]);
  });

  it('writes sizes in binary units', () => {
    expect(humanSize(512)).toBe('512 B');
    expect(humanSize(1536)).toBe('1.5 KiB');
    expect(humanSize(315e6)).toBe('300 MiB');
  });
});

describe('allow lines', () => {
  it('one entry per line, blank lines skipped; the first bad one is named with the valid forms', () => {
    expect(parseAllowLines('pypi.org\n\n *.example.com:443 \n10.0.0.0/8')).toEqual({
      entries: ['pypi.org', '*.example.com:443', '10.0.0.0/8'],
      error: null,
    });
    expect(parseAllowLines('ok.com\nexample.com:70000').error).toMatch(/port 70000 is outside 1-65535/);
  });
});

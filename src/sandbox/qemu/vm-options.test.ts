import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/expect-error.js';
import { parseVmOptions } from './vm-options.js';

describe('parseVmOptions', () => {
  it('fills defaults: 2 CPUs, 1 GiB, image-sized disk, auto accel, any free port', () => {
    expect(parseVmOptions({})).toMatchObject({ cpus: 2, memoryMiB: 1024, diskGiB: null, accel: 'auto', sshPort: null, cpuType: null });
  });

  it('reads the CLI shorthands and the timing options', () => {
    const o = parseVmOptions({
      cpus: '4',
      memory: '2048',
      disk: '8',
      accel: 'tcg',
      sshPort: '2222',
      bootTimeout: '60',
      stopTimeout: '5',
      kvmProbe: '3',
      cpuType: 'qemu64',
    });
    expect(o).toEqual({
      cpus: 4,
      memoryMiB: 2048,
      diskGiB: 8,
      accel: 'tcg',
      sshPort: 2222,
      bootTimeoutS: 60,
      stopTimeoutS: 5,
      kvmProbeS: 3,
      cpuType: 'qemu64',
      desktop: false,
      desktopTimeoutS: 3600,
      template: 'auto',
    });
  });

  it('template is auto or off; anything else says what it means', () => {
    expect(parseVmOptions({ template: 'off' }).template).toBe('off');
    expect(() => parseVmOptions({ template: 'yes' })).toThrow(/template="yes" is not auto or off/);
  });

  it('reads --desktop (the CLI sends desktop=true)', () => {
    expect(parseVmOptions({ desktop: 'true' }).desktop).toBe(true);
    expect(parseVmOptions({}).desktop).toBe(false);
  });

  it.each([
    [{ cpus: '0' }, /cpus="0" is not a whole number of CPUs between 1 and 64/],
    [{ cpus: 'two' }, /cpus="two"/],
    [{ memory: '64' }, /memory="64" is not a whole number of MiB/],
    [{ disk: '1.5' }, /disk="1.5"/],
    [{ sshPort: '22' }, /sshPort="22" is not a whole number of port between 1024 and 65535/],
    [{ accel: 'hvf' }, /accel="hvf" is not auto, kvm or tcg/],
    [{ cpuType: 'host,+vmx' }, /cpuType="host,\+vmx" is not a CPU model name/],
    [{ desktop: 'yes' }, /desktop="yes" is not true or false/],
  ])('refuses %j with a message that names the option', (options, message) => {
    const err = thrown(() => parseVmOptions(options));
    expect(err.code).toBe('invalid_input');
    expect(err.message).toMatch(message);
    expect(err.hint).toBeTruthy();
  });

  it('refuses unknown keys, so a typo never silently does nothing', () => {
    const err = thrown(() => parseVmOptions({ cpu: '2' }));
    expect(err.message).toBe('unknown qemu option: cpu');
    expect(err.hint).toContain('cpus');
  });
});

import { describe, expect, it } from 'vitest';
import * as msg from './client-messages.js';

describe('client messages', () => {
  it('lays out ClientCutText: type 6, padding, a u32 length, latin-1 text', () => {
    expect([...msg.clientCutText('hé')]).toEqual([6, 0, 0, 0, 0, 0, 0, 2, 0x68, 0xe9]);
  });

  it('lays out ProtocolVersion, the security choice and ClientInit', () => {
    expect(msg.protocolVersion(8).toString('latin1')).toBe('RFB 003.008\n');
    expect(msg.protocolVersion(3).toString('latin1')).toBe('RFB 003.003\n');
    expect([...msg.singleByte(1)]).toEqual([1]);
  });

  it('asks for 32 bpp little-endian BGRX', () => {
    expect([...msg.setPixelFormatBgrx()]).toEqual([0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]);
  });

  it('writes encodings as signed 32-bit numbers', () => {
    expect([...msg.setEncodings([0, -308])]).toEqual([2, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xfe, 0xcc]);
  });

  it('lays out update requests and EnableContinuousUpdates for the whole screen', () => {
    expect([...msg.framebufferUpdateRequest(true, 1024, 768)]).toEqual([3, 1, 0, 0, 0, 0, 4, 0, 3, 0]);
    expect([...msg.framebufferUpdateRequest(false, 1, 2)]).toEqual([3, 0, 0, 0, 0, 0, 0, 1, 0, 2]);
    expect([...msg.enableContinuousUpdates(1024, 768)]).toEqual([150, 1, 0, 0, 0, 0, 4, 0, 3, 0]);
  });

  it('rounds and clamps pointer coordinates to the u16 range; keysyms are unsigned', () => {
    expect([...msg.pointerEvent(10.6, -3, 0x101)]).toEqual([5, 1, 0, 11, 0, 0]);
    expect([...msg.pointerEvent(70000, 65535, 0)]).toEqual([5, 0, 0xff, 0xff, 0xff, 0xff]);
    expect([...msg.keyEvent(-1, true)]).toEqual([4, 1, 0, 0, 0xff, 0xff, 0xff, 0xff]);
  });

  it('echoes the server screen in SetDesktopSize', () => {
    const b = msg.setDesktopSize(800, 600, { id: 0x01020304, flags: 5 });
    expect(b.length).toBe(24);
    expect([...b.subarray(0, 8)]).toEqual([251, 0, 3, 32, 2, 88, 1, 0]);
    expect([...b.subarray(8)]).toEqual([1, 2, 3, 4, 0, 0, 0, 0, 3, 32, 2, 88, 0, 0, 0, 5]);
  });

  it('lays out a fence reply with its payload', () => {
    expect([...msg.clientFence(0b101, Buffer.from([7, 8]))]).toEqual([248, 0, 0, 0, 0, 0, 0, 5, 2, 7, 8]);
  });
});

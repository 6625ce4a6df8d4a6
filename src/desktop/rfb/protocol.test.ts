import { describe, expect, it } from 'vitest';
import {
  ClientMessage,
  Encoding,
  PROTOCOL_VERSION_PATTERN,
  QemuClientMessage,
  SecurityType,
  ServerMessage,
  protocolVersionBanner,
} from './protocol.js';

describe('RFB protocol table', () => {
  it('gives every name in a table its own number', () => {
    for (const table of [ClientMessage, ServerMessage, Encoding, SecurityType, QemuClientMessage]) {
      const values = Object.values(table);
      expect(new Set(values).size).toBe(values.length);
    }
  });

  it('has the numbers of the spec for what the client and the filter rely on', () => {
    expect([ClientMessage.KeyEvent, ClientMessage.PointerEvent, ClientMessage.ClientCutText, ClientMessage.SetDesktopSize]).toEqual([
      4, 5, 6, 251,
    ]);
    expect([ServerMessage.FramebufferUpdate, ServerMessage.ServerFence]).toEqual([0, 248]);
    expect([Encoding.Raw, Encoding.CopyRect, Encoding.DesktopSize, Encoding.LastRect, Encoding.ExtendedDesktopSize]).toEqual([
      0, 1, -223, -224, -308,
    ]);
    expect([Encoding.Fence, Encoding.ContinuousUpdates]).toEqual([-312, -313]);
  });

  it('writes a ProtocolVersion banner its own pattern accepts', () => {
    const banner = protocolVersionBanner(3, 8);
    expect(banner.toString('latin1')).toBe('RFB 003.008\n');
    expect(PROTOCOL_VERSION_PATTERN.test(banner.toString('latin1'))).toBe(true);
  });
});

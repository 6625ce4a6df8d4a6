import { SandboxDeskError } from '../../shared/errors.js';

/**
 * X keysyms for what agents type and press, sent as RFB KeyEvents. Text needs no keyboard map:
 * Latin-1 characters are their own keysym, everything else is 0x01000000 + code point (X11's
 * Unicode keysyms), and Xvnc binds a spare keycode to any keysym its map lacks. Key names are the
 * X names xdotool accepts for the keys agents press, plus the usual aliases (ctrl, alt, enter, esc…).
 */

const NAMED: Record<string, number> = {
  BackSpace: 0xff08,
  Tab: 0xff09,
  Return: 0xff0d,
  Enter: 0xff0d,
  Escape: 0xff1b,
  Esc: 0xff1b,
  Delete: 0xffff,
  Del: 0xffff,
  Home: 0xff50,
  Left: 0xff51,
  Up: 0xff52,
  Right: 0xff53,
  Down: 0xff54,
  Page_Up: 0xff55,
  Prior: 0xff55,
  PageUp: 0xff55,
  Page_Down: 0xff56,
  Next: 0xff56,
  PageDown: 0xff56,
  End: 0xff57,
  Insert: 0xff63,
  Menu: 0xff67,
  Print: 0xff61,
  Pause: 0xff13,
  space: 0x20,
  Space: 0x20,
  minus: 0x2d,
  plus: 0x2b,
  equal: 0x3d,
  comma: 0x2c,
  period: 0x2e,
  slash: 0x2f,
  backslash: 0x5c,
  semicolon: 0x3b,
  apostrophe: 0x27,
  grave: 0x60,
  bracketleft: 0x5b,
  bracketright: 0x5d,
  Shift_L: 0xffe1,
  Shift_R: 0xffe2,
  Control_L: 0xffe3,
  Control_R: 0xffe4,
  Caps_Lock: 0xffe5,
  Meta_L: 0xffe7,
  Meta_R: 0xffe8,
  Alt_L: 0xffe9,
  Alt_R: 0xffea,
  Super_L: 0xffeb,
  Super_R: 0xffec,
  shift: 0xffe1,
  ctrl: 0xffe3,
  control: 0xffe3,
  alt: 0xffe9,
  meta: 0xffe7,
  super: 0xffeb,
  win: 0xffeb,
  cmd: 0xffeb,
};
for (let i = 1; i <= 24; i++) NAMED[`F${i}`] = 0xffbe + i - 1;
const BY_LOWER = new Map(Object.entries(NAMED).map(([k, v]) => [k.toLowerCase(), v]));

/** At most this many characters per `type` (each is a key press and release on the wire). */
export const MAX_TYPE_CHARS = 10_000;

/** The keysym that types one character (a Unicode code point). */
export function keysymForChar(cp: number): number {
  if (cp === 0x0a || cp === 0x0d) return NAMED.Return!;
  if (cp === 0x09) return NAMED.Tab!;
  if (cp === 0x08) return NAMED.BackSpace!;
  if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff)) return cp;
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
    throw new SandboxDeskError(
      'invalid_input',
      `text holds control character U+${cp.toString(16).padStart(4, '0').toUpperCase()}, which has no key`,
      {
        hint: 'type printable text; press keys such as Return or Tab with the key action',
      },
    );
  }
  return 0x01000000 + cp;
}

/** One keysym per character of the text (code points, so emoji and other astral characters stay whole). */
export function keysymsForText(text: string): number[] {
  if (typeof text !== 'string' || text.length === 0) throw new SandboxDeskError('invalid_input', 'text to type is empty');
  const chars = [...text];
  if (chars.length > MAX_TYPE_CHARS) {
    throw new SandboxDeskError('invalid_input', `text to type has ${chars.length} characters, above the limit of ${MAX_TYPE_CHARS}`, {
      hint: `type it in pieces of at most ${MAX_TYPE_CHARS} characters, or write it to a file with write_file`,
    });
  }
  return chars.map((c) => keysymForChar(c.codePointAt(0)!));
}

/** What an X keysym name looks like (XF86AudioMute, dead_acute, Hangul_Start…): what xdotool may be asked. */
const X_KEY_NAME = /^[A-Za-z][A-Za-z0-9_]{1,63}$/;

/** A keysym of the table, or the name itself when it only looks like an X key name (xdotool's to resolve). */
function keysymForName(name: string, whole: string): number | string {
  const named = NAMED[name] ?? BY_LOWER.get(name.toLowerCase());
  if (named !== undefined) return named;
  const chars = [...name];
  if (chars.length === 1) return keysymForChar(chars[0]!.codePointAt(0)!);
  if (X_KEY_NAME.test(name)) return name;
  throw new SandboxDeskError('invalid_input', `${JSON.stringify(name)} in keys ${JSON.stringify(whole)} is not a key name`, {
    hint: 'use X key names joined by "+", combinations separated by spaces: "ctrl+l", "Return", "shift+Tab", "alt+F4", "ctrl+shift+t Return"',
  });
}

/**
 * How a key action is sent: over RFB when every name is in the table; else all of it through
 * `xdotool key` (one tool for the whole sequence keeps its order), table keys as their keysym
 * numbers (0xffe3) so xdotool presses exactly what RFB would, the other names as written for X to
 * resolve (X refuses the ones it does not know).
 */
export type KeyPlan = { via: 'rfb'; combos: number[][] } | { via: 'xdotool'; combos: string[]; outside: string[] };

export function planKeys(keys: string): KeyPlan {
  const combos = parseCombos(keys);
  const outside = combos.flat().filter((k): k is string => typeof k === 'string');
  if (outside.length === 0) return { via: 'rfb', combos: combos as number[][] };
  return {
    via: 'xdotool',
    combos: combos.map((c) => c.map((k) => (typeof k === 'number' ? `0x${k.toString(16)}` : k)).join('+')),
    outside: [...new Set(outside)],
  };
}

/** "ctrl+shift+t Return" → [[Control_L, Shift_L, t], [Return]] (names outside the table stay names). */
function parseCombos(keys: string): (number | string)[][] {
  if (typeof keys !== 'string' || keys.trim() === '')
    throw new SandboxDeskError('invalid_input', 'keys is empty', { hint: 'e.g. "ctrl+l" or "Return"' });
  if (keys.length > 1000)
    throw new SandboxDeskError('invalid_input', `keys is ${keys.length} characters, above the limit of 1000`, {
      hint: 'use the type action for text',
    });
  return keys
    .trim()
    .split(/\s+/)
    .map((combo) => {
      // "+" alone, or a trailing "++" (ctrl++), is the plus key itself.
      const parts = combo === '+' ? ['+'] : combo.endsWith('++') ? [...combo.slice(0, -2).split('+'), '+'] : combo.split('+');
      if (parts.some((p) => p === ''))
        throw new SandboxDeskError('invalid_input', `${JSON.stringify(combo)} in keys ${JSON.stringify(keys)} has an empty key name`, {
          hint: 'join key names with single "+": "ctrl+l"',
        });
      return parts.map((p) => keysymForName(p, keys));
    });
}

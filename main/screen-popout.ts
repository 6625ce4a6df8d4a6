/**
 * Which `window.open` the app's own window may make: the screen popped out (`?screen=NAME`) on the
 * app's own page — nothing else (every other URL is refused, https links go to the user's browser).
 * Pure, so the rule is unit-tested without Electron.
 */
export function isScreenPopOut(url: string, appPageUrl: string): boolean {
  let u: URL;
  let app: URL;
  try {
    u = new URL(url);
    app = new URL(appPageUrl);
  } catch {
    return false;
  }
  if (u.protocol !== app.protocol || u.host !== app.host || u.pathname !== app.pathname) return false;
  if (u.hash || u.username || u.password) return false;
  const keys = [...u.searchParams.keys()];
  return keys.length === 1 && keys[0] === 'screen' && (u.searchParams.get('screen') ?? '') !== '';
}

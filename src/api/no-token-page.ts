/**
 * What a browser gets when it opens the app without its token (a bookmark without `?token=`, an
 * expired cookie after a server restart): a page that says how to get in, instead of raw JSON. API
 * calls and other non-page requests still get the JSON error, which is what their clients read.
 */

/** true for a browser navigating to a page (it asks for HTML), not for fetch/XHR or command-line clients. */
export function wantsPage(method: string | undefined, path: string, accept: string | undefined): boolean {
  if (method !== 'GET') return false;
  if (!(path === '/' || path === '/index.html' || /^\/desktop\/[^/]+$/.test(path))) return false;
  return (accept ?? '').includes('text/html');
}

/** The page: static text (nothing from the request is echoed into it), styled inline to need no assets. */
export function noTokenPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox Desk — sign-in link needed</title>
<style>
  body { font: 15px/1.5 system-ui, sans-serif; background: #15171c; color: #e6e8ee; margin: 0; }
  main { max-width: 40rem; margin: 12vh auto; padding: 0 1.5rem; }
  h1 { font-size: 1.4rem; }
  code { background: #262a33; padding: 0.1rem 0.35rem; border-radius: 4px; }
  li { margin: 0.4rem 0; }
  .muted { color: #9aa1b0; }
</style>
</head>
<body>
<main>
  <h1>This page needs Sandbox Desk's sign-in link</h1>
  <p>Sandbox Desk only opens for the link it printed when it started: that link carries a token, so other
  pages and programs on this machine cannot drive your sandboxes.</p>
  <ol>
    <li>Find the terminal where you ran <code>sandbox-desk serve</code>.</li>
    <li>Open the address it printed after <q>Open:</q> — it ends in <code>?token=…</code>.</li>
    <li>Lost it, or the server restarted? Stop it with Ctrl-C and run <code>sandbox-desk serve</code> again:
    it prints a new link (each server has its own token).</li>
  </ol>
  <p class="muted">After the first visit the browser keeps the sign-in in a cookie for this server, so the
  address without the token works until the server stops.</p>
</main>
</body>
</html>
`;
}

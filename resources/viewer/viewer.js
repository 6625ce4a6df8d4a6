// The desktop viewer: noVNC on a single-use-ticket WebSocket, plus the control lease.
// Served by Sandbox Desk's local server; the login token arrives in this page's URL.
import RFB from '/novnc/core/rfb.js';

const token = new URLSearchParams(location.search).get('token');
const sandbox = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const $ = (id) => document.getElementById(id);
// The same contract every client uses (POST /api/call/:method): no viewer-only routes.
const call = (method, params) =>
  fetch(`/api/call/${method}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(params),
  }).then(async (r) => {
    const body = await r.json();
    if (!('ok' in body)) throw new Error(body.error?.message ?? r.statusText);
    return body.ok;
  });

$('title').textContent = `Desktop — ${sandbox}`;
let viewerId = null;
let rfb = null;

function showLease(lease) {
  const mine = lease.holder === 'human' && lease.viewerId === viewerId;
  $('lease').textContent = mine ? 'you have control' : lease.holder === 'human' ? 'another viewer has control' : 'agent has control';
  $('lease').className = `pill ${mine ? 'ok' : lease.holder === 'human' ? 'warn' : ''}`;
  $('control').textContent = mine ? 'Give back' : 'Take control';
  $('control').classList.toggle('release', mine);
  $('control').disabled = false;
  if (rfb) rfb.viewOnly = !mine;
  window.sandboxDeskLease = lease;
}

async function connect() {
  const grant = await call('screenTicket', { sandbox });
  viewerId = grant.viewerId;
  window.sandboxDeskViewerId = viewerId;
  rfb = new RFB($('screen'), grant.url, { shared: true });
  rfb.scaleViewport = true;
  rfb.viewOnly = true;
  rfb.addEventListener('connect', () => {
    $('state').textContent = 'connected';
    $('state').className = 'pill ok';
    window.sandboxDeskConnected = true;
  });
  rfb.addEventListener('disconnect', (e) => {
    $('state').textContent = e.detail.clean ? 'disconnected' : 'connection lost';
    $('state').className = 'pill err';
  });
  showLease(await call('lease', { sandbox }));
}

$('control').addEventListener('click', async () => {
  const lease = await call('lease', { sandbox });
  const mine = lease.holder === 'human' && lease.viewerId === viewerId;
  showLease(await call(mine ? 'giveBack' : 'takeControl', { sandbox, viewerId }));
});

setInterval(() => call('lease', { sandbox }).then(showLease, () => undefined), 2000);
connect().catch((err) => {
  $('state').textContent = err.message;
  $('state').className = 'pill err';
});

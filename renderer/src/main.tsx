import '@xterm/xterm/css/xterm.css';
import './styles.css';
import './theme-light.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createApiClient } from './app/api-client.js';
import { App } from './app/App.js';
import { screenOnlySandbox } from './workspace/screen-view-mode.js';
import { ScreenOnly } from './workspace/ScreenOnly.js';
import { createEventsClient } from './events/events-client.js';

// `?screen=NAME`: the screen popped out of a window, alone in its tab.
const screenOnly = screenOnlySandbox();
const api = createApiClient();
// `?poll`: no event stream, every panel polls — the benchmark's baseline, and a way out should the stream misbehave.
const events = new URLSearchParams(location.search).has('poll') ? null : createEventsClient(api);
createRoot(document.getElementById('root')!).render(
  <StrictMode>{screenOnly ? <ScreenOnly api={api} sandbox={screenOnly} events={events} /> : <App api={api} events={events} />}</StrictMode>,
);

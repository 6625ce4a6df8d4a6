import '@xterm/xterm/css/xterm.css';
import './styles.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createApiClient } from './api-client.js';
import { App } from './App.js';
import { screenOnlySandbox } from './screen-view-mode.js';
import { ScreenOnly } from './ScreenOnly.js';
import { createEventsClient } from './events/events-client.js';

// `?screen=NAME`: the screen popped out of a window, alone in its tab.
const screenOnly = screenOnlySandbox();
const api = createApiClient();
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    {screenOnly ? <ScreenOnly api={api} sandbox={screenOnly} /> : <App api={api} events={createEventsClient(api)} />}
  </StrictMode>,
);

import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import type { EventsClient, EventsStatus } from './events-client.js';

const EventsContext = createContext<EventsClient | null>(null);

/** Gives the panels below the window's event stream; without one (tests, old cores) they poll. */
export function EventsProvider({ events, children }: { events: EventsClient | null; children: ReactNode }) {
  return <EventsContext.Provider value={events}>{children}</EventsContext.Provider>;
}

export function useEvents(): EventsClient | null {
  return useContext(EventsContext);
}

/** The stream's status, re-rendering on change ('off' when there is no stream). */
export function useEventsStatus(): EventsStatus {
  const events = useEvents();
  const [status, setStatus] = useState<EventsStatus>(events?.status ?? 'off');
  useEffect(() => {
    if (!events) return setStatus('off');
    setStatus(events.status);
    return events.onStatus(setStatus);
  }, [events]);
  return status;
}

/** Whether the page is hidden (`document.visibilityState`), re-rendering on change. */
export function usePageHidden(): boolean {
  const [hidden, setHidden] = useState(() => typeof document !== 'undefined' && document.visibilityState === 'hidden');
  useEffect(() => {
    const on = () => setHidden(document.visibilityState === 'hidden');
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, []);
  return hidden;
}

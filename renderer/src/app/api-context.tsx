import { createContext, useContext, type ReactNode } from 'react';
import type { ApiClient } from '../../../src/api/contract.js';

const ApiContext = createContext<ApiClient | null>(null);

/** Gives every component below one ApiClient: the real transport in the app, a fake in tests. */
export function ApiProvider({ api, children }: { api: ApiClient; children: ReactNode }) {
  return <ApiContext.Provider value={api}>{children}</ApiContext.Provider>;
}

export function useApi(): ApiClient {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi outside <ApiProvider>');
  return api;
}

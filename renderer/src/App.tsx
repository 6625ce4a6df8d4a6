import { useEffect, useState } from 'react';
import type { SandboxInfo } from '../../src/api/contract.js';
import { api, BridgeError } from './bridge.js';

/** The sandbox list: name, backend, state, and where commands start. */
export function App() {
  const [sandboxes, setSandboxes] = useState<SandboxInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api.listSandboxes().then(setSandboxes, (e: unknown) => setError(e instanceof BridgeError ? e.message : String(e)));
  }, []);

  return (
    <main className="app">
      <h1>Sandboxes</h1>
      {error && <p role="alert">{error}</p>}
      {sandboxes?.length === 0 && <p>No sandboxes yet. Create one: sandbox-desk sandbox create NAME --backend docker</p>}
      {sandboxes && sandboxes.length > 0 && (
        <table>
          <thead>
            <tr><th>Name</th><th>Backend</th><th>State</th><th>Default cwd</th><th>Home</th></tr>
          </thead>
          <tbody>
            {sandboxes.map((s) => (
              <tr key={s.name}>
                <td>{s.name}</td><td>{s.backend}</td><td>{s.state}</td><td>{s.declaredDefaultCwd}</td><td>{s.home ?? 'resolved after connect'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}

import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The renderer: built into dist/renderer, next to dist/main, with relative asset paths so the same
// build loads from a file:// URL in Electron and from the browser mode's server.
// noVNC 1.7 uses top-level await (its H.264 probe), so both the build and the dev-server prebundle
// must target ES2022. Vite 8 prebundles with Rolldown: `optimizeDeps.esbuildOptions` is deprecated
// there and its `target` is not carried over, so the target goes in rolldownOptions.transform.
export default defineConfig({
  root: 'renderer',
  base: './',
  plugins: [react()],
  // The workspace chunk (noVNC + xterm) is ~540 kB; it loads from disk or loopback, so the 500 kB
  // warning is raised rather than split further.
  build: { outDir: '../dist/renderer', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 800 },
  optimizeDeps: { rolldownOptions: { transform: { target: 'es2022' } } },
});

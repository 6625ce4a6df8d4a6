import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveDockerEndpoint } from './docker-endpoint.js';

describe('resolveDockerEndpoint', () => {
  /** A DOCKER_CONFIG directory of our own, so the real ~/.docker is never read. */
  let config: string;

  beforeEach(() => {
    config = mkdtempSync(join(tmpdir(), 'sd-docker-config-'));
  });
  afterEach(() => {
    rmSync(config, { recursive: true, force: true });
  });

  function writeConfig(json: unknown): void {
    writeFileSync(join(config, 'config.json'), JSON.stringify(json));
  }

  function writeContext(name: string, meta: unknown): void {
    const dir = join(config, 'contexts', 'meta', createHash('sha256').update(name).digest('hex'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'meta.json'), typeof meta === 'string' ? meta : JSON.stringify(meta));
  }

  const hostMeta = (host: string) => ({ Name: 'x', Endpoints: { docker: { Host: host } } });

  describe('DOCKER_HOST', () => {
    it('turns a unix:// URL into a socket path', () => {
      const e = resolveDockerEndpoint({ DOCKER_HOST: 'unix:///x', DOCKER_CONFIG: config });
      expect(e.options).toEqual({ socketPath: '/x' });
      expect(e.url).toBe('unix:///x');
      expect(e.origin).toBe('DOCKER_HOST');
    });

    it('turns a tcp:// URL into host and port over http', () => {
      const e = resolveDockerEndpoint({ DOCKER_HOST: 'tcp://h:1234', DOCKER_CONFIG: config });
      expect(e.options).toEqual({ protocol: 'http', host: 'h', port: 1234 });
    });

    it('uses https when DOCKER_TLS_VERIFY=1', () => {
      const e = resolveDockerEndpoint({ DOCKER_HOST: 'tcp://h:1234', DOCKER_TLS_VERIFY: '1', DOCKER_CONFIG: config });
      expect(e.options).toEqual({ protocol: 'https', host: 'h', port: 1234 });
    });

    it('defaults the port to 2375 without TLS and 2376 with TLS', () => {
      expect(resolveDockerEndpoint({ DOCKER_HOST: 'tcp://h' }).options).toMatchObject({ port: 2375, protocol: 'http' });
      expect(resolveDockerEndpoint({ DOCKER_HOST: 'tcp://h', DOCKER_TLS_VERIFY: '1' }).options).toMatchObject({
        port: 2376,
        protocol: 'https',
      });
    });

    it('uses https for an https:// URL', () => {
      expect(resolveDockerEndpoint({ DOCKER_HOST: 'https://h:443' }).options).toEqual({ protocol: 'https', host: 'h', port: 443 });
    });

    it('turns an npipe:// URL into a socket path', () => {
      expect(resolveDockerEndpoint({ DOCKER_HOST: 'npipe:////./pipe/docker_engine' }).options).toEqual({
        socketPath: '//./pipe/docker_engine',
      });
    });

    it('turns an ssh:// URL into ssh host, port and user', () => {
      expect(resolveDockerEndpoint({ DOCKER_HOST: 'ssh://me@box:2222' }).options).toMatchObject({
        protocol: 'ssh',
        host: 'box',
        port: 2222,
        username: 'me',
      });
      expect(resolveDockerEndpoint({ DOCKER_HOST: 'ssh://box' }).options).toMatchObject({ protocol: 'ssh', host: 'box', port: 22 });
    });

    it('wins over DOCKER_CONTEXT and the config', () => {
      writeConfig({ currentContext: 'ctx1' });
      writeContext('ctx1', hostMeta('unix:///ctx.sock'));
      const e = resolveDockerEndpoint({ DOCKER_HOST: 'unix:///env.sock', DOCKER_CONTEXT: 'ctx1', DOCKER_CONFIG: config });
      expect(e.options).toEqual({ socketPath: '/env.sock' });
    });
  });

  describe('docker contexts', () => {
    it("uses the config's current context", () => {
      writeConfig({ currentContext: 'ctx1' });
      writeContext('ctx1', hostMeta('unix:///ctx.sock'));
      const e = resolveDockerEndpoint({ DOCKER_CONFIG: config });
      expect(e.options).toEqual({ socketPath: '/ctx.sock' });
      expect(e.url).toBe('unix:///ctx.sock');
      expect(e.origin).toContain('ctx1');
      expect(e.origin).toContain('context');
    });

    it('lets DOCKER_CONTEXT override the config', () => {
      writeConfig({ currentContext: 'ctx1' });
      writeContext('ctx1', hostMeta('unix:///ctx1.sock'));
      writeContext('ctx2', hostMeta('tcp://remote:2376'));
      const e = resolveDockerEndpoint({ DOCKER_CONTEXT: 'ctx2', DOCKER_CONFIG: config });
      expect(e.options).toEqual({ protocol: 'http', host: 'remote', port: 2376 });
      expect(e.origin).toContain('ctx2');
    });

    it('uses the default socket for DOCKER_CONTEXT=default, ignoring the config', () => {
      writeConfig({ currentContext: 'ctx1' });
      writeContext('ctx1', hostMeta('unix:///ctx.sock'));
      const e = resolveDockerEndpoint({ DOCKER_CONTEXT: 'default', DOCKER_CONFIG: config });
      expect(e.options).toEqual({ socketPath: '/var/run/docker.sock' });
    });

    it('falls back to the default socket when the context has no metadata', () => {
      writeConfig({ currentContext: 'nowhere' });
      expect(resolveDockerEndpoint({ DOCKER_CONFIG: config }).options).toEqual({ socketPath: '/var/run/docker.sock' });
    });

    it('falls back to the default socket when the context metadata is not JSON', () => {
      writeConfig({ currentContext: 'ctx1' });
      writeContext('ctx1', '{not json');
      expect(resolveDockerEndpoint({ DOCKER_CONFIG: config }).options).toEqual({ socketPath: '/var/run/docker.sock' });
    });

    it('falls back to the default socket when the context has no docker endpoint', () => {
      writeConfig({ currentContext: 'ctx1' });
      writeContext('ctx1', { Endpoints: {} });
      expect(resolveDockerEndpoint({ DOCKER_CONFIG: config }).options).toEqual({ socketPath: '/var/run/docker.sock' });
    });

    it('falls back to the default socket when config.json is not JSON', () => {
      writeFileSync(join(config, 'config.json'), 'garbage');
      expect(resolveDockerEndpoint({ DOCKER_CONFIG: config }).options).toEqual({ socketPath: '/var/run/docker.sock' });
    });
  });

  describe('default', () => {
    it('uses /var/run/docker.sock when nothing is configured', () => {
      const e = resolveDockerEndpoint({ DOCKER_CONFIG: config });
      expect(e.options).toEqual({ socketPath: '/var/run/docker.sock' });
      expect(e.url).toBe('unix:///var/run/docker.sock');
      expect(e.origin).toBe('the default socket');
    });

    it('uses /var/run/docker.sock when the config has no current context', () => {
      writeConfig({ auths: {} });
      expect(resolveDockerEndpoint({ DOCKER_CONFIG: config }).options).toEqual({ socketPath: '/var/run/docker.sock' });
    });

    it('treats an empty DOCKER_HOST as unset', () => {
      expect(resolveDockerEndpoint({ DOCKER_HOST: '', DOCKER_CONFIG: config }).origin).toBe('the default socket');
    });
  });
});

describe('resolveDockerEndpoint with IPv6', () => {
  it('parses a bracketed IPv6 DOCKER_HOST', () => {
    expect(resolveDockerEndpoint({ DOCKER_HOST: 'tcp://[::1]:2375' }).options).toEqual({ protocol: 'http', host: '::1', port: 2375 });
  });
});

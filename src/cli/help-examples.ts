import type { Command } from 'commander';
import { allCommands } from './command-walk.js';

/**
 * An example for every command's `--help`, keyed by the command's path. Kept apart from the commands so
 * that `main.ts` stays about behaviour; `help-examples.test.ts` fails when a command has none.
 */
export const HELP_EXAMPLES: Record<string, string[]> = {
  sandbox: ['sandbox-desk sandbox create demo', 'sandbox-desk sandbox ls'],
  'sandbox create': [
    "sandbox-desk sandbox create demo --default-cwd '~'             # docker, sandbox-desk/base:latest",
    'sandbox-desk sandbox create web --image sandbox-desk/desktop:latest',
    'sandbox-desk sandbox create vm --backend qemu --memory 2048',
    'sandbox-desk sandbox create agent --network allow --allow github.com:443 --allow 10.0.0.0/8',
    'sandbox-desk sandbox create quiet --network offline',
  ],
  'sandbox list': ['sandbox-desk sandbox ls', 'sandbox-desk sandbox list --json'],
  'sandbox inspect': ['sandbox-desk sandbox inspect demo', 'sandbox-desk sandbox inspect demo --json'],
  'sandbox start': ['sandbox-desk sandbox start demo'],
  'sandbox stop': ['sandbox-desk sandbox stop demo'],
  'sandbox rm': ['sandbox-desk sandbox rm demo', 'sandbox-desk sandbox rm demo --force   # even while it runs'],
  'sandbox checkpoint': ["sandbox-desk sandbox checkpoint demo --label 'before the agent'", 'sandbox-desk sandbox checkpoint demo --json'],
  'sandbox restore': ['sandbox-desk sandbox restore demo 3f2a9c1b0d4e'],
  'sandbox fork': [
    'sandbox-desk sandbox fork demo 3f2a9c1b0d4e --as try',
    'sandbox-desk sandbox fork demo 3f2a9c1b0d4e --as agent --count 3   # agent-1 … agent-3',
  ],
  'sandbox pause': ['sandbox-desk sandbox pause demo'],
  'sandbox resume': ['sandbox-desk sandbox resume demo'],
  checkpoint: ['sandbox-desk checkpoint ls', 'sandbox-desk checkpoint rm 3f2a9c1b0d4e'],
  'checkpoint list': ['sandbox-desk checkpoint ls demo', 'sandbox-desk checkpoint list --json'],
  'checkpoint rm': ['sandbox-desk checkpoint rm 3f2a9c1b0d4e'],
  'sandbox network': [
    'sandbox-desk sandbox network demo                                   # show the policy',
    'sandbox-desk sandbox network demo --allow pypi.org --allow *.pythonhosted.org:443',
    'sandbox-desk sandbox network demo --deny pypi.org',
    'sandbox-desk sandbox network demo --mode offline                    # live: the next connection fails',
  ],
  network: ['sandbox-desk network log demo --follow'],
  pool: ['sandbox-desk pool set --size 2', 'sandbox-desk pool ls'],
  'pool list': ['sandbox-desk pool ls', 'sandbox-desk pool list --json'],
  'pool set': [
    'sandbox-desk pool set --size 2                                   # sandbox-desk/base:latest, no limits',
    'sandbox-desk pool set --desktop --size 1                         # desktops started ahead',
    'sandbox-desk pool set --image sandbox-desk/desktop:latest --memory 2048 --size 0   # remove that pool',
  ],
  'pool drain': ['sandbox-desk pool drain --desktop', 'sandbox-desk pool drain --all'],
  replay: ['sandbox-desk replay ls', 'sandbox-desk replay events demo --since 10m'],
  'replay list': ['sandbox-desk replay ls', 'sandbox-desk replay list demo --json'],
  'replay events': ['sandbox-desk replay events demo', 'sandbox-desk replay events demo --since 2026-03-01T10:00:00Z --json'],
  'replay frame': ['sandbox-desk replay frame demo --at 2026-03-01T10:00:05Z --out screen.png', 'sandbox-desk replay frame demo --at 30s'],
  'replay export': [
    'sandbox-desk replay export demo --out ./demo-replay',
    'sandbox-desk replay export demo --from 2026-03-01T10:00:00Z --to 2026-03-01T10:05:00Z --out ./clip --format webm',
  ],
  'replay rm': ['sandbox-desk replay rm demo'],
  'network log': [
    'sandbox-desk network log demo',
    'sandbox-desk network log demo --follow --json',
    'sandbox-desk network log demo --denied --process curl --host github.com',
  ],
  exec: [
    'sandbox-desk exec demo -- ls -la',
    'sandbox-desk exec demo --session a -- cd /tmp      # session a now records /tmp',
    'sandbox-desk exec demo --json -- pwd',
  ],
  session: ['sandbox-desk session ls demo'],
  'session list': ['sandbox-desk session ls demo', 'sandbox-desk session list demo --json'],
  'session create': ['sandbox-desk session create demo build --cwd /tmp', 'sandbox-desk session create demo child --parent build'],
  'session rm': ['sandbox-desk session rm demo build'],
  desktop: ['sandbox-desk desktop start web', 'sandbox-desk desktop screenshot web --out screen.png'],
  'desktop start': ['sandbox-desk desktop start web'],
  'desktop stop': ['sandbox-desk desktop stop web'],
  'desktop status': ['sandbox-desk desktop status web --json'],
  cp: [
    'sandbox-desk cp ./notes.txt web:',
    'sandbox-desk cp web:results/report.pdf .',
    'sandbox-desk cp big.tar web:/tmp/ --session agent-1',
  ],
  'desktop clipboard': [
    'sandbox-desk desktop clipboard web',
    "sandbox-desk desktop clipboard web --set 'https://example.org'",
    'cat notes.txt | sandbox-desk desktop clipboard web --set -',
  ],
  'desktop screenshot': ['sandbox-desk desktop screenshot web --out screen.png'],
  'desktop click': ['sandbox-desk desktop click web 640 400', 'sandbox-desk desktop click web 640 400 --button 3'],
  'desktop move': ['sandbox-desk desktop move web 100 200'],
  'desktop drag': ['sandbox-desk desktop drag web 100 100 300 300'],
  'desktop scroll': ['sandbox-desk desktop scroll web 640 400 down --amount 5'],
  'desktop type': ["sandbox-desk desktop type web 'hello, world'"],
  'desktop key': ["sandbox-desk desktop key web 'ctrl+l'", "sandbox-desk desktop key web 'ctrl+shift+t Return'"],
  'desktop browser': ['sandbox-desk desktop browser web'],
  'desktop view': ['sandbox-desk desktop view web'],
  'desktop wait-control': ['sandbox-desk desktop wait-control web --timeout 2m   # exit 0: the agent may act; 124: still a person'],
  serve: ['sandbox-desk serve', 'sandbox-desk serve --port 8080 --mcp --mcp-sandbox demo'],
  mcp: ['sandbox-desk mcp --sandbox demo'],
  service: ['sandbox-desk service status', 'sandbox-desk service stop'],
  'service run': ['sandbox-desk service run   # in the foreground, for debugging (any command starts it on demand)'],
  'service status': ['sandbox-desk service status --json'],
  'service stop': ['sandbox-desk service stop', 'sandbox-desk service stop --force   # even with sandboxes running (they keep running)'],
  calls: [
    'sandbox-desk calls demo                         # what agents ran in demo (alias: log)',
    'sandbox-desk calls demo --session a --jsonl',
    "sandbox-desk logs demo                          # not the same: the sandbox's own output",
  ],
  logs: [
    'sandbox-desk logs demo --follow',
    'sandbox-desk logs vm --source serial --tail 50',
    'sandbox-desk logs demo --list',
    "sandbox-desk calls demo                         # not the same: the agents' tool calls",
  ],
  stats: ['sandbox-desk stats demo', 'sandbox-desk stats demo --json'],
  token: ['sandbox-desk token create --sandbox demo --label ci'],
  'token create': ['sandbox-desk token create --sandbox demo --label ci'],
  'token list': ['sandbox-desk token ls'],
  'token rm': ['sandbox-desk token rm 3f2a'],
  plugin: ['sandbox-desk plugin ls'],
  'plugin list': ['sandbox-desk plugin ls', 'sandbox-desk plugin list --json'],
  'plugin enable': ['sandbox-desk plugin enable podman'],
  'plugin disable': ['sandbox-desk plugin disable podman'],
  config: ['sandbox-desk config ls', 'sandbox-desk config set shell.idleMs 600000'],
  'config list': ['sandbox-desk config ls'],
  'config get': ['sandbox-desk config get log.level'],
  'config set': ['sandbox-desk config set log.level debug'],
  'config unset': ['sandbox-desk config unset log.level'],
  image: ['sandbox-desk image ls', 'sandbox-desk image build --tag my/tool:1 ./tool'],
  'image list': ['sandbox-desk image ls', 'sandbox-desk image list --json'],
  'image inspect': ['sandbox-desk image inspect sandbox-desk/desktop:latest --json'],
  'image build': [
    'sandbox-desk image build --tag my/tool:1 ./tool',
    'sandbox-desk image build --tag my/tool:1 --file ./tool/Dockerfile',
    'sandbox-desk image build debian-test             # the VM image, by name',
    'sandbox-desk image build debian-desktop          # the desktop VM image (Chromium included)',
  ],
  'image rm': ['sandbox-desk image rm my/tool:1'],
  'image pull': ['sandbox-desk image pull debian:bookworm-slim'],
  'image template': ['sandbox-desk image template build debian-test', 'sandbox-desk image template rm debian-test@1024m-2cpu'],
  'image template build': [
    'sandbox-desk image template build debian-test',
    'sandbox-desk image template build debian-test --memory 2048 --cpus 2',
    'sandbox-desk sandbox create vm1 --backend qemu --image debian-test --json   # then: "fromTemplate": true',
  ],
  'image template rm': ['sandbox-desk image template rm debian-test@1024m-2cpu'],
  completion: [
    'sandbox-desk completion bash > ~/.local/share/bash-completion/completions/sandbox-desk',
    'sandbox-desk completion zsh > "${fpath[1]}/_sandbox-desk"',
    'sandbox-desk completion fish > ~/.config/fish/completions/sandbox-desk.fish',
  ],
};

/** Adds "Examples:" after the help of every command that has some; returns the paths that have none. */
export function addHelpExamples(program: Command, examples: Record<string, string[]> = HELP_EXAMPLES): string[] {
  const missing: string[] = [];
  for (const { cmd, path } of allCommands(program)) {
    const lines = examples[path.join(' ')];
    if (!lines?.length) {
      missing.push(path.join(' '));
      continue;
    }
    cmd.addHelpText('after', `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
  }
  return missing;
}

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packagesIn, sourcesLoadedBy } from '../support/loadedSources.js';
import { unusedPort } from '../support/ports.js';
import {
  binPath,
  type CliResult,
  type CreatedKey,
  cliJson,
  killChildren,
  runCli,
  type Sandbox,
  sandbox,
  startServer,
  submit,
} from '../support/processes.js';

/** The CLI's settings (`--data-dir`, `--config`, `--port`, `--host`, `--version`), its read commands on a data
 * directory that holds no database, what it loads at start, and what `set-plan` says on a downgrade. */

type AccountJson = { id: string; email: string; plan: string; active_keys: number; max_keys?: number | null };

const expectOneLineFailure = (result: CliResult, code: number, message: RegExp) => {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(message);
};

const boxes: Sandbox[] = [];
const newBox = (label: string) => {
  const box = sandbox(label);
  boxes.push(box);
  return box;
};
afterAll(async () => {
  await killChildren();
  for (const box of boxes) box.remove();
});

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const root = join(binPath, '..', '..', '..', '..', '..');

describe('commands that only read', { timeout: 60_000 }, () => {
  const readCommands = [
    ['accounts', 'list'],
    ['accounts', 'list', '--json'],
    ['keys', 'list', '--account', 'acct_x'],
    ['replay'],
    ['replay', '--verify'],
    // These change an account or key that must already exist: they need a database as much as a read does.
    ['accounts', 'set-plan', 'acct_x', 'scale'],
    ['keys', 'create', '--account', 'acct_x'],
    ['keys', 'revoke', 'key_x'],
  ];

  it('on a data directory that does not exist exit 2 with one line naming it and the setting, and create nothing', async () => {
    const box = newBox('airs-cli-typo');
    const typo = join(box.dir, 'dta');
    const config = box.writeConfig({ dataDir: join(box.dir, 'from-config') });
    const sources: Array<[string, string[], Record<string, string>, string, string]> = [
      ['AIRS_DATA_DIR', [], { AIRS_DATA_DIR: typo }, typo, 'AIRS_DATA_DIR'],
      ['--data-dir', ['--data-dir', 'dta'], {}, typo, '--data-dir'],
      ['the config file', [], { AIRS_DATA_DIR: '' }, join(box.dir, 'from-config'), `dataDir in ${config}`],
      ['the default', [], { AIRS_DATA_DIR: '', AIRS_CONFIG: '' }, join(box.dir, 'data'), 'the default ./data'],
    ];
    for (const [label, flags, env, dir, from] of sources) {
      for (const args of readCommands) {
        const result = await runCli(box, [...args, ...flags], { env });
        expectOneLineFailure(
          result,
          2,
          new RegExp(`^airs: no airs database in ${escaped(dir)} \\(data directory from ${escaped(from)}\\)`),
        );
        expect(existsSync(dir), `${args.join(' ')} with ${label} created ${dir}`).toBe(false);
      }
    }
  });

  it('on an existing directory without a database exit 2 and leave it empty', async () => {
    const box = newBox('airs-cli-emptydir');
    mkdirSync(box.dataDir);
    for (const args of readCommands) {
      expectOneLineFailure(await runCli(box, args), 2, /no airs database in .* \(data directory from AIRS_DATA_DIR\)/);
    }
    expect(readdirSync(box.dataDir)).toEqual([]);
    // `accounts create` starts one, and then reads work.
    expect((await runCli(box, ['accounts', 'create', '--email', 'first@example.com'])).code).toBe(0);
    expect((await runCli(box, ['accounts', 'list'])).stdout).toContain('first@example.com');
  });

  it('in words say on stderr which data directory they used; with --json stderr stays empty', async () => {
    const box = newBox('airs-cli-note');
    const created = await runCli(box, ['accounts', 'create', '--email', 'note@example.com', '--json']);
    expect(created.stderr).toBe('');
    const id = (JSON.parse(created.stdout) as AccountJson).id;
    for (const args of [
      ['accounts', 'list'],
      ['keys', 'list', '--account', id],
      ['accounts', 'suspend', id],
    ]) {
      const result = await runCli(box, args);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe(`airs: data directory ${box.dataDir} (from AIRS_DATA_DIR)\n`);
      expect(result.stdout).not.toContain(box.dataDir);
    }
  });
});

describe('--data-dir and --config', { timeout: 60_000 }, () => {
  it('--data-dir wins over AIRS_DATA_DIR, which wins over the config file’s dataDir', async () => {
    const box = newBox('airs-cli-datadir-flag');
    const flagged = join(box.dir, 'flagged');
    box.writeConfig({ dataDir: join(box.dir, 'configured') });
    const created = await cliJson<AccountJson>(box, [
      'accounts',
      'create',
      '--email',
      'flag@example.com',
      '--data-dir',
      flagged,
    ]);
    expect(existsSync(join(flagged, 'airs.mdb'))).toBe(true);
    expect(existsSync(box.dataDir)).toBe(false);
    expect(existsSync(join(box.dir, 'configured'))).toBe(false);
    const listed = await cliJson<AccountJson[]>(box, ['accounts', 'list', '--data-dir', flagged]);
    expect(listed.map((a) => a.id)).toEqual([created.id]);

    // Without the flag, AIRS_DATA_DIR (the sandbox's) is used, not the config file's dataDir.
    const envCreated = await runCli(box, ['accounts', 'create', '--email', 'env@example.com']);
    expect(envCreated.stderr).toContain(`data directory ${box.dataDir} (from AIRS_DATA_DIR)`);
    expect(existsSync(join(box.dir, 'configured'))).toBe(false);
    // Without either, the config file's.
    const fileCreated = await runCli(box, ['accounts', 'create', '--email', 'file@example.com'], {
      env: { AIRS_DATA_DIR: '' },
    });
    expect(fileCreated.stderr).toMatch(/data directory .*configured \(from dataDir in .*airs\.test-config\.json\)/);
  });

  it('--config wins over AIRS_CONFIG (here: a plan allowing two keys instead of one)', async () => {
    const box = newBox('airs-cli-config-flag');
    box.writeConfig({ plans: { free: { maxKeys: 1 } } });
    const roomy = join(box.dir, 'roomy.json');
    writeFileSync(roomy, JSON.stringify({ plans: { free: { maxKeys: 2 } } }));
    const account = await cliJson<AccountJson>(box, ['accounts', 'create', '--email', 'cfg@example.com']);
    await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]);
    expectOneLineFailure(
      await runCli(box, ['keys', 'create', '--account', account.id]),
      1,
      /free plan allows 1 active API key/,
    );
    const second = await runCli(box, ['keys', 'create', '--account', account.id, '--config', roomy]);
    expect(second.code, second.stderr).toBe(0);
    // A --config that cannot be read is a configuration error, even where AIRS_CONFIG is fine.
    expectOneLineFailure(
      await runCli(box, ['accounts', 'list', '--config', join(box.dir, 'missing.json')]),
      2,
      /bad configuration: config file .*missing\.json: cannot be read \(ENOENT\)/,
    );
  });
});

describe('serve --port, --host, --data-dir, --config', { timeout: 60_000 }, () => {
  it('listens where the flags say, over PORT, HOST and the config file', async () => {
    const box = newBox('airs-cli-serve-flags');
    const port = await unusedPort();
    const dataDir = join(box.dir, 'served');
    const config = join(box.dir, 'serve.json');
    writeFileSync(config, JSON.stringify({ port: 1, host: '192.0.2.1', shutdownDelaySeconds: 0 }));
    const child = spawn(
      process.execPath,
      [binPath, 'serve', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, '--config', config],
      { cwd: box.dir, env: box.env({ PORT: '2', HOST: '192.0.2.2' }), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    const url = await new Promise<string>((resolveUrl, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL; stderr: ${stderr}`)), 20_000);
      void exited.then((code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        const match = /airs listening on (\S+)/.exec(stdout);
        if (match?.[1] === undefined) return;
        clearTimeout(timer);
        resolveUrl(match[1]);
      });
    });
    try {
      expect(url).toBe(`http://127.0.0.1:${port}/`);
      expect((await fetch(`${url}v1/ai?req_id=req_x`)).status).toBe(401);
      expect(existsSync(join(dataDir, 'airs.mdb'))).toBe(true);
      expect(existsSync(box.dataDir)).toBe(false);
      expect(stderr).toContain(config);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('a bad --port, --host, --data-dir or --config is one line and exit 2, before anything is opened', async () => {
    const box = newBox('airs-cli-badflags');
    const cases: Array<[string[], RegExp]> = [
      [['serve', '--port', 'eighty'], /^airs: --port: expected an integer from 0 to 65535, got "eighty"$/m],
      [['serve', '--port', '65536'], /--port: expected an integer from 0 to 65535, got "65536"/],
      [['serve', '--port', '8080.5'], /--port: expected an integer/],
      [['serve', '--port', '-1'], /--port/],
      [['serve', '--host', ''], /--host: expected a host name or address, got ""/],
      [['serve', '--data-dir', ''], /--data-dir: expected a directory, got ""/],
      [['accounts', 'list', '--config', ' '], /--config: expected a file, got ""/],
      [['serve', '--port'], /--port/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(box, args, { timeoutMs: 15_000 });
      expectOneLineFailure(result, 2, message);
    }
    expect(existsSync(box.dataDir)).toBe(false);
  });
});

describe('--version', () => {
  it('prints the version in package.json and nothing else, exit 0', async () => {
    const box = newBox('airs-cli-version');
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await runCli(box, [flag]);
      expect(result).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });
});

describe('start-up', { timeout: 60_000 }, () => {
  const packagesLoadedBy = async (box: Sandbox, args: string[]) =>
    packagesIn(sourcesLoadedBy(args, { cwd: box.dir, env: box.env() }));

  it('`--help` loads commander alone; a management command loads neither the HTTP server nor the model providers', async () => {
    const box = newBox('airs-cli-startup');
    expect([...(await packagesLoadedBy(box, ['--help']))]).toEqual(['commander']);
    expect([...(await packagesLoadedBy(box, ['--version']))]).toEqual(['commander']);
    expect((await runCli(box, ['accounts', 'create', '--email', 'fast@example.com'])).code).toBe(0);
    const list = await packagesLoadedBy(box, ['accounts', 'list']);
    expect(list).toContain('lmdb');
    for (const heavy of ['openai', 'h3', 'srvx', 'yocto-spinner']) expect(list).not.toContain(heavy);
  });
});

describe('accounts set-plan to a plan with fewer keys than the account holds', { timeout: 60_000 }, () => {
  it('says so: the keys keep working, new keys are refused until enough are revoked', async () => {
    const box = newBox('airs-cli-downgrade');
    const account = await cliJson<AccountJson>(box, [
      'accounts',
      'create',
      '--email',
      'shrink@example.com',
      '--plan',
      'starter',
    ]);
    const keys: CreatedKey[] = [];
    for (let i = 0; i < 3; i++) keys.push(await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]));

    const moved = await runCli(box, ['accounts', 'set-plan', account.id, 'free']);
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toBe(
      `account ${account.id} is on plan free\nit has 3 active API keys and the free plan allows 1: they keep working, and new keys are refused until 2 are revoked\n`,
    );
    const json = await cliJson<AccountJson>(box, ['accounts', 'set-plan', account.id, 'free']);
    expect(json).toMatchObject({ plan: 'free', active_keys: 3, max_keys: 1 });

    // Nothing was revoked: every key still works against the server.
    const server = await startServer(box);
    try {
      for (const key of keys) expect((await submit(server.url, key.key, 'echo', 'still here')).status).toBe(202);
    } finally {
      await server.stop();
    }
    // New keys are refused while the account is at or over the limit, and allowed once it is under it.
    expectOneLineFailure(
      await runCli(box, ['keys', 'create', '--account', account.id]),
      1,
      /free plan allows 1 active API key/,
    );
    for (const key of keys.slice(0, 2)) expect((await runCli(box, ['keys', 'revoke', key.id])).code).toBe(0);
    const within = await runCli(box, ['accounts', 'set-plan', account.id, 'free']);
    expect(within.stdout).toBe(`account ${account.id} is on plan free\n`);
    expectOneLineFailure(await runCli(box, ['keys', 'create', '--account', account.id]), 1, /free plan allows 1/);
    expect((await runCli(box, ['keys', 'revoke', keys[2]?.id ?? ''])).code).toBe(0);
    expect((await runCli(box, ['keys', 'create', '--account', account.id])).code).toBe(0);
  });
});

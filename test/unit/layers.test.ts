import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layers of src/ (docs/architecture.md): the domain does no I/O and knows no other layer; the ports name what the
 * app needs; the app and the storage-neutral code use ports, never an adapter. Adapters and the composition root
 * (server.ts, baseLayer.ts) are the only places that tie them to LMDB, HTTP or a model provider.
 */
const root = resolve(import.meta.dirname, '../../src');

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );

/** Every module a file imports (static or dynamic), as a path under src/ (or the package name). */
const importsOf = (file: string): string[] =>
  [...readFileSync(file, 'utf8').matchAll(/(?:from|import\(?)\s*'([^']+)'/g)].map(([, spec]) =>
    (spec as string).startsWith('.') ? relative(root, resolve(join(file, '..'), spec as string)) : (spec as string),
  );

const crossings = (layer: string, forbidden: (target: string) => boolean) =>
  filesUnder(join(root, layer)).flatMap((file) =>
    importsOf(file)
      .filter(forbidden)
      .map((target) => `${relative(root, file)} imports ${target}`),
  );

describe('The layers of src/', () => {
  it('no file of the app, the storage-neutral code or the ports imports an adapter', () => {
    const adapter = (target: string) => target.startsWith('adapters/');
    expect([...crossings('app', adapter), ...crossings('storage', adapter), ...crossings('ports', adapter)]).toEqual(
      [],
    );
  });

  it('the domain imports nothing but the domain and its pure libraries', () => {
    const outside = (target: string) =>
      /^(adapters|app|storage|ports)\//.test(target) ||
      target.startsWith('node:') ||
      target === 'lmdb' ||
      target === 'h3';
    expect(crossings('domain', outside)).toEqual([]);
  });
});

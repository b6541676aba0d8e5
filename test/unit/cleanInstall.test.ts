import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * `npm ci` warns about a locked package whose `engines.node` does not admit the running Node (EBADENGINE), and npm 11
 * about a package with an install script that package.json's `allowScripts` does not cover. Both are read here from
 * package-lock.json, so a dependency bump that would bring a warning back fails at once (a real `npm ci` takes a
 * minute and the network).
 */

type LockedPackage = {
  readonly version?: string;
  readonly engines?: { readonly node?: string };
  readonly hasInstallScript?: boolean;
};

const root = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
  readonly engines: { readonly node: string };
  readonly allowScripts?: Readonly<Record<string, boolean>>;
};
const lock = JSON.parse(readFileSync(resolve(root, 'package-lock.json'), 'utf8')) as {
  readonly packages: Readonly<Record<string, LockedPackage>>;
};

/** `node_modules/a/node_modules/@b/c` is `@b/c`. */
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
const locked = Object.entries(lock.packages).filter(([path]) => path !== '');

describe('a clean install on the oldest Node that package.json admits', () => {
  it('locks only packages whose engines admit that Node, so npm ci prints no EBADENGINE', () => {
    const oldest = semver.minVersion(manifest.engines.node)?.version;
    expect(oldest).toBeDefined();
    const refusing = locked
      .filter(([, entry]) => entry.engines?.node !== undefined)
      .filter(([, entry]) => !semver.satisfies(oldest ?? '', entry.engines?.node ?? '*'))
      .map(([path, entry]) => `${nameOf(path)}@${entry.version} wants node ${entry.engines?.node}`);
    expect(refusing).toEqual([]);
  });

  it('approves in package.json allowScripts every locked package that has an install script', () => {
    const allowed = manifest.allowScripts ?? {};
    const approved = (name: string, version: string | undefined) =>
      allowed[name] === true || (version !== undefined && allowed[`${name}@${version}`] === true);
    const unapproved = locked
      .filter(([, entry]) => entry.hasInstallScript === true)
      .filter(([path, entry]) => !approved(nameOf(path), entry.version))
      .map(([path, entry]) => `${nameOf(path)}@${entry.version}`);
    expect(unapproved).toEqual([]);
  });

  it('checks something: the lock holds packages with engines and with install scripts', () => {
    expect(locked.filter(([, entry]) => entry.engines?.node !== undefined).length).toBeGreaterThan(10);
    expect(locked.filter(([, entry]) => entry.hasInstallScript === true).length).toBeGreaterThan(0);
  });
});

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Config, loadConfig } from '../../src/config.js';
import { fileSchema } from '../../src/configFile.js';
import { planNames } from '../../src/domain/plans.js';

/**
 * The "Configuration reference" of docs/operations.md, checked against the config file's zod schema: every key of the
 * schema has a row (nested keys as dotted paths, list entries as `list[].key`), no row names a key the schema lacks,
 * and each row's type and default are the schema's (or, for keys whose default `loadConfig` applies, what
 * `loadConfig` gives with no file).
 */

type JsonSchema = {
  readonly type?: string;
  readonly const?: unknown;
  readonly default?: unknown;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly additionalProperties?: JsonSchema | boolean;
};

/** One place a key occurs: list entries of a union (the models' providers) are variants of their own. */
type Occurrence = { readonly variant: string | undefined; readonly schema: JsonSchema; readonly required: boolean };

const alternativesOf = (schema: JsonSchema) => schema.oneOf ?? schema.anyOf;
const isObject = (schema: JsonSchema) => schema.properties !== undefined;

/** The name of a union member: the value of its discriminating (constant) property, e.g. `echo`. */
const variantName = (schema: JsonSchema): string => {
  const discriminator = Object.values(schema.properties ?? {}).find((property) => property.const !== undefined);
  return String(discriminator?.const ?? '?');
};

/** A record keyed by names the file chooses (`plans`): the table documents it under the built-in names. */
const namesOfRecord: Readonly<Record<string, readonly string[]>> = { plans: planNames };

/** Every documentable key of the schema: leaves and lists, not the objects that only group keys. */
const keysOf = (root: JsonSchema): Map<string, Occurrence[]> => {
  const keys = new Map<string, Occurrence[]>();
  const add = (path: string, occurrence: Occurrence) => keys.set(path, [...(keys.get(path) ?? []), occurrence]);
  const walk = (schema: JsonSchema, prefix: string, variant: string | undefined) => {
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      const path = prefix === '' ? name : `${prefix}.${name}`;
      const required = schema.required?.includes(name) ?? false;
      const members = namesOfRecord[path];
      if (members !== undefined && typeof property.additionalProperties === 'object') {
        const entry = property.additionalProperties;
        for (const member of members) walk(entry, `${path}.${member}`, variant);
      } else if (isObject(property)) walk(property, path, variant);
      else if (property.type === 'array' && property.items !== undefined) {
        add(path, { variant, schema: property, required });
        const members = alternativesOf(property.items)?.filter(isObject) ?? [];
        if (members.length > 0) for (const member of members) walk(member, `${path}[]`, variantName(member));
        else if (isObject(property.items)) walk(property.items, `${path}[]`, variant);
      } else add(path, { variant, schema: property, required });
    }
  };
  walk(root, '', undefined);
  return keys;
};

const schemaKeys = keysOf(z.toJSONSchema(fileSchema, { io: 'input' }) as JsonSchema);

// ---- The document ----

const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

const section = (text: string, heading: string): string => {
  const from = text.indexOf(`\n${heading}\n`);
  if (from < 0) throw new Error(`docs/operations.md has no "${heading}" section`);
  const rest = text.slice(from + heading.length + 2);
  const end = rest.search(/\n## /);
  return end < 0 ? rest : rest.slice(0, end);
};

const reference = section(operations, '## Configuration reference');

/** The rows of the markdown table whose header row starts with `| first |`, as trimmed cells. */
const tableRows = (text: string, first: string): string[][] => {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => line.startsWith(`| ${first} |`));
  if (header < 0) throw new Error(`no table with a "${first}" column`);
  const rows: string[][] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, line.endsWith('|') ? -1 : undefined)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
};

const codeOf = (cell: string) => /^`([^`]+)`$/.exec(cell)?.[1] ?? cell;

type Row = { readonly key: string; readonly type: string; readonly default: string; readonly meaning: string };
const rows: Row[] = tableRows(reference, 'Key').map(([key = '', type = '', byDefault = '', meaning = '']) => ({
  key: codeOf(key),
  type,
  default: byDefault,
  meaning,
}));
const documented = new Map(rows.map((row) => [row.key, row]));

// ---- Types ----

const typeWords = /"[^"]*"|\b(?:integer|number|string|boolean|list|object|null)\b/g;

/** The JSON types a key takes, in the table's words: `integer`, `string`, `list`, `null`, or a constant (`"echo"`). */
const typesOf = (schema: JsonSchema): string[] => {
  const alternatives = alternativesOf(schema);
  if (alternatives !== undefined) return alternatives.flatMap(typesOf);
  if (schema.const !== undefined) return [JSON.stringify(schema.const)];
  if (schema.type === 'array') return ['list'];
  return schema.type === undefined ? [] : [schema.type];
};

/** The range of an integer key as the table writes it: `1–10000`, or `≥ 1` when only a floor is set. */
const rangeOf = (schema: JsonSchema): string | undefined => {
  const integer = (alternativesOf(schema) ?? [schema]).find((member) => member.type === 'integer');
  if (integer === undefined) return undefined;
  const min =
    integer.minimum ?? (integer.exclusiveMinimum === undefined ? undefined : integer.exclusiveMinimum + 1) ?? 0;
  const max = integer.maximum;
  return max === undefined || max >= Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `${min}–${max}`;
};

const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

// ---- Defaults ----

type Default = { readonly kind: 'value'; readonly value: unknown } | { readonly kind: 'required' | 'none' };

const cwd = mkdtempSync(join(tmpdir(), 'airs-config-reference-'));
const loaded = loadConfig({}, cwd);

/** Keys whose default `loadConfig` keeps under another name or form than the file's. */
const loadedUnder: Readonly<Record<string, (config: Config) => unknown>> = {
  'storage.minFreeMegabytes': (config) => config.storage.minFreeBytes / (1024 * 1024),
};

/** What `loadConfig` gives for a key when the file does not set it, found at the same path of the Config. */
const loadedDefault = (path: string): unknown => {
  const special = loadedUnder[path];
  if (special !== undefined) return special(loaded);
  let value: unknown = loaded;
  for (const name of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[name];
  return value;
};

/** The default of one occurrence: the schema's own, else "required", else what loadConfig applies, else none. */
const expectedDefault = (path: string, occurrence: Occurrence): Default => {
  if (occurrence.schema.default !== undefined) return { kind: 'value', value: occurrence.schema.default };
  if (occurrence.required) return { kind: 'required' };
  if (path.includes('[]')) return { kind: 'none' };
  const value = loadedDefault(path);
  return value === undefined ? { kind: 'none' } : { kind: 'value', value };
};

const literal = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/**
 * A documented value in the form `loadConfig` gives it: a top-level key is parsed by its own schema (so a documented
 * model list gets the schema's defaults filled in), and `dataDir` is resolved from the working directory.
 */
const asLoaded = (path: string, value: unknown): unknown => {
  if (path === 'dataDir' && typeof value === 'string') return resolve(cwd, value);
  const shape = fileSchema.shape as Record<string, z.ZodType>;
  const own = path.includes('.') || path.includes('[]') ? undefined : shape[path];
  return own === undefined ? value : own.parse(value);
};

/** A Default cell: `required`, `—` (none), one `literal`, or one literal per variant: "`60000` (`echo`), …". */
const documentedDefault = (cell: string, variants: readonly string[]): Default | Record<string, Default> => {
  const perVariant = [...cell.matchAll(/`([^`]+)`\s*\(`?([\w-]+)`?\)/g)].filter(([, , name]) =>
    variants.includes(name ?? ''),
  );
  if (perVariant.length > 0)
    return Object.fromEntries(
      perVariant.map(([, text = '', name = '']) => [name, { kind: 'value', value: literal(text) } as Default]),
    );
  if (/^required\b/.test(cell)) return { kind: 'required' };
  if (/^(—|none\b)/.test(cell)) return { kind: 'none' };
  const single = /^`([^`]+)`/.exec(cell)?.[1];
  if (single === undefined) throw new Error(`unreadable default "${cell}": expected \`value\`, required or —`);
  return { kind: 'value', value: literal(single) };
};

const normalised = (path: string, value: Default): Default =>
  value.kind === 'value' ? { kind: 'value', value: asLoaded(path, value.value) } : value;

describe('The configuration reference in docs/operations.md', () => {
  it('has a row for every key of the config file schema', () => {
    const missing = [...schemaKeys.keys()].filter((key) => !documented.has(key));
    expect(missing, 'keys of the schema with no row in the table').toEqual([]);
  });

  it('names no key that the config file schema does not have', () => {
    const unknown = rows.map((row) => row.key).filter((key) => !schemaKeys.has(key));
    expect(unknown, 'rows naming keys the schema lacks').toEqual([]);
  });

  it('names each key once', () => {
    expect(rows.length).toBe(documented.size);
  });

  describe.each([...schemaKeys])('the row of %s', (path, occurrences) => {
    const row = () => {
      const found = documented.get(path);
      if (found === undefined) throw new Error(`no row for ${path}`);
      return found;
    };

    it('gives the type the schema has, and its range for integers', () => {
      const { type } = row();
      expect(sorted(type.replaceAll('`', '').match(typeWords) ?? []), type).toEqual(
        sorted(occurrences.flatMap((occurrence) => typesOf(occurrence.schema))),
      );
      for (const range of new Set(occurrences.map((occurrence) => rangeOf(occurrence.schema)))) {
        if (range !== undefined) expect(type, `range of ${path}`).toContain(range);
      }
    });

    it('gives the default the schema or loadConfig has', () => {
      const expected = occurrences.map((occurrence) => ({
        variant: occurrence.variant,
        default: normalised(path, expectedDefault(path, occurrence)),
      }));
      const variants = expected.map(({ variant }) => variant ?? '');
      const cell = documentedDefault(row().default, variants);
      const allAlike = expected.every(({ default: d }) => JSON.stringify(d) === JSON.stringify(expected[0]?.default));
      if (allAlike) {
        expect('kind' in cell, `one default for every variant of ${path}: ${row().default}`).toBe(true);
        expect(normalised(path, cell as Default)).toEqual(expected[0]?.default);
      } else {
        const perVariant = cell as Record<string, Default>;
        expect('kind' in cell, `a default per variant of ${path}: ${row().default}`).toBe(false);
        expect(Object.fromEntries(Object.entries(perVariant).map(([name, d]) => [name, normalised(path, d)]))).toEqual(
          Object.fromEntries(expected.map(({ variant, default: d }) => [variant, d])),
        );
      }
    });

    it('says what the key does', () => {
      expect(row().meaning.length).toBeGreaterThan(10);
    });
  });

  it('lists the environment variables of the contract, and those of port, host and dataDir with the same defaults', () => {
    const variables = new Map(
      tableRows(reference, 'Variable').map(([name = '', byDefault = '']) => [codeOf(name), byDefault]),
    );
    for (const name of ['PORT', 'HOST', 'AIRS_DATA_DIR', 'AIRS_CONFIG', 'LOG_LEVEL'])
      expect(variables.has(name), `${name} in the environment table`).toBe(true);
    for (const [name, key] of [
      ['PORT', 'port'],
      ['HOST', 'host'],
      ['AIRS_DATA_DIR', 'dataDir'],
    ] as const) {
      expect(variables.get(name), `default of ${name}`).toBe(documented.get(key)?.default);
    }
  });

  it('names environment variables that loadConfig reads: each changes the setting it stands for', () => {
    const config = loadConfig({ PORT: '9999', HOST: '0.0.0.0', AIRS_DATA_DIR: 'elsewhere' }, cwd);
    expect({ port: config.port, host: config.host, dataDir: config.dataDir }).toEqual({
      port: 9999,
      host: '0.0.0.0',
      dataDir: resolve(cwd, 'elsewhere'),
    });
  });
});

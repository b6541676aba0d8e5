import type { z } from 'zod';

/*
 * What is wrong with a config file, in the words of the person who wrote it rather than the validator's: the field as
 * they would find it in the file (`models[0].upstreamModel (model "gpt")`), "is required" for a missing field, and for
 * a key the schema does not know, the known key of the same object it most likely meant.
 */

/** Issues shown at most; the rest are counted (a file of a thousand bad keys is still one line). */
const maxShown = 10;
/** What of a key from the file a message quotes, at most. */
const maxQuoted = 80;

/** A value from the file as a message quotes it: JSON (control characters escaped), cut short. */
const quoted = (value: string): string =>
  JSON.stringify(value.length > maxQuoted ? `${value.slice(0, maxQuoted)}…` : value);

/** A key from the file as a path shows it: as it is when it reads as a name, else quoted. */
const keyText = (key: string): string => (/^[A-Za-z_$][\w$]{0,79}$/.test(key) ? key : quoted(key));

const at = (raw: unknown, key: PropertyKey): unknown =>
  typeof raw === 'object' && raw !== null ? (raw as Record<PropertyKey, unknown>)[key] : undefined;

/**
 * `path` as it reads in the file: `plans.free.maxKeys`, `models[2].upstreamModel`; when it goes through a model
 * that has an id, that id too, as an operator thinks of the model.
 */
export const fieldPath = (path: readonly PropertyKey[], raw: unknown): string => {
  let text = '';
  let model: unknown;
  let value = raw;
  for (const [index, segment] of path.entries()) {
    text += typeof segment === 'number' ? `[${segment}]` : `${text === '' ? '' : '.'}${keyText(String(segment))}`;
    value = at(value, segment);
    // The model's id names it, unless the id is the field in question.
    if (index === 1 && path[0] === 'models' && path[2] !== 'id') model = at(value, 'id');
  }
  return typeof model === 'string' ? `${text} (model ${quoted(model)})` : text;
};

/** The optimal-string-alignment distance of `a` and `b` (Levenshtein, plus swapping two neighbours as one edit). */
export const editDistance = (a: string, b: string): number => {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = rows[i] as number[];
      const above = rows[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = best;
    }
  }
  return (rows[a.length] as number[])[b.length] as number;
};

/**
 * The known key `key` most likely meant: the nearest by edit distance, ignoring case, when it is close (one edit
 * for a short key, up to one in three characters for a longer one); undefined when none is.
 */
export const nearestKey = (key: string, known: readonly string[]): string | undefined => {
  if (key.length > 64) return undefined;
  const bound = Math.min(3, Math.max(1, Math.floor(key.length / 3)));
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance <= bound && (best === undefined || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
};

type Def = {
  readonly type: string;
  readonly shape?: Record<string, z.ZodType>;
  readonly innerType?: z.ZodType;
  readonly element?: z.ZodType;
  readonly options?: readonly z.ZodType[];
};
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The object schemas `schema` can be at `value` (a union: the option whose literal fields `value` matches, or all). */
const objectsOf = (schema: z.ZodType, value: unknown): readonly Def[] => {
  const def = defOf(schema);
  if (def.innerType !== undefined) return objectsOf(def.innerType, value);
  if (def.type === 'object') return [def];
  if (def.type !== 'union' || def.options === undefined) return [];
  const options = def.options.flatMap((option) => objectsOf(option, value));
  const matching = options.filter((option) =>
    Object.entries(option.shape ?? {}).some(([name, field]) => {
      const values = (defOf(field) as { values?: readonly unknown[] }).values;
      return defOf(field).type === 'literal' && values?.includes(at(value, name)) === true;
    }),
  );
  return matching.length > 0 ? matching : options;
};

/** The keys the schema knows in the object at `path` of the file. */
export const knownKeysAt = (schema: z.ZodType, path: readonly PropertyKey[], raw: unknown): string[] => {
  let schemas: readonly z.ZodType[] = [schema];
  let value = raw;
  for (const segment of path) {
    const parent = value;
    schemas = schemas.flatMap((current) => {
      let inner = current;
      for (let def = defOf(inner); def.innerType !== undefined; def = defOf(inner)) inner = def.innerType;
      const def = defOf(inner);
      if (def.type === 'array') return typeof segment === 'number' && def.element !== undefined ? [def.element] : [];
      return objectsOf(inner, parent).flatMap((object) => object.shape?.[String(segment)] ?? []);
    });
    value = at(value, segment);
  }
  return [
    ...new Set(schemas.flatMap((current) => objectsOf(current, value).flatMap((o) => Object.keys(o.shape ?? {})))),
  ];
};

/** One line per problem, joined by "; ": `field: what is wrong`. */
export const describeConfigIssues = (
  source: string,
  issues: readonly z.core.$ZodIssue[],
  raw: unknown,
  schema: z.ZodType,
): string => {
  const lines = issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((key) => {
        const near = nearestKey(key, knownKeysAt(schema, issue.path, raw));
        return `${fieldPath([...issue.path, key], raw)}: unknown key${near === undefined ? '' : ` (did you mean "${near}"?)`}`;
      });
    const field = issue.path.length > 0 ? fieldPath(issue.path, raw) : '(top level)';
    return [`${field}: ${issue.message.replace(/^Invalid input: /, '')}`];
  });
  const shown = lines.slice(0, maxShown);
  if (lines.length > maxShown) shown.push(`and ${lines.length - maxShown} more`);
  return `${source}: ${shown.join('; ')}`;
};

/** The error map for parsing a config file: a field that is missing "is required" (zod: "expected string, received
 * undefined"). */
export const configErrorMap = (issue: { readonly code?: string; readonly input?: unknown }): string | undefined =>
  issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined;

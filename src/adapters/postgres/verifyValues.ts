/** How a PostgreSQL verify compares stored values with rebuilt ones, and shows them in its messages. */

/** Whether two values are the same as JSON: plain data compared field by field, an absent field and an undefined one
 * alike (the stored view is the JSON of the state the writer folded; key order does not matter). */
export const sameAsJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const present = (o: Record<string, unknown>) => Object.keys(o).filter((key) => o[key] !== undefined);
  const keys = present(left);
  return keys.length === present(right).length && keys.every((key) => sameAsJson(left[key], right[key]));
};

/** A bigint column as a number whatever the client's parsing of int8 (the store's: numbers; pg's default: strings). */
export const numberOrNull = (value: number | string | null): number | null => (value === null ? null : Number(value));

export const show = (value: unknown): string => (value === null ? 'null' : JSON.stringify(value));

import { z } from 'zod';

/**
 * A field as a reader of given fields reads it: `null` taken as the field's `.nullable()` takes it, and the rest read
 * by the schema inside (each wrapper a body's field crosses costs a call in zod).
 */
type Field = { readonly takesNull: boolean; readonly schema: z.ZodType };

const fieldOf = (schema: z.ZodType): Field => {
  let inner = schema;
  if (inner instanceof z.ZodOptional) inner = inner.unwrap() as z.ZodType;
  if (inner instanceof z.ZodNullable) return { takesNull: true, schema: inner.unwrap() as z.ZodType };
  return { takesNull: false, schema };
};

/**
 * Reads a body with an object schema's own fields, over the fields the body gives only: a body gives a few of a
 * create schema's twenty or forty fields, and zod's object reads every one (and copies every field it does not name).
 * It accepts what the schema's fields accept and reads them alike, the required ones given; undefined at any fault,
 * which the whole schema then reports as it orders faults. A field the schema does not name is a fault (`unknown:
 * 'refuse'`) or left out (`'ignore'`: accepted and ignored). Rules across fields are the caller's.
 */
export const givenFieldsReader = (
  shape: Readonly<Record<string, unknown>>,
  unknown: 'refuse' | 'ignore',
): ((body: unknown) => Record<string, unknown> | undefined) => {
  const fields: ReadonlyMap<string, Field> = new Map(
    Object.entries(shape).map(([key, schema]) => [key, fieldOf(schema as z.ZodType)]),
  );
  /** The fields a body must give: those whose schema refuses absence. */
  const requiredFields = Object.entries(shape)
    .filter(([, schema]) => !(schema as z.ZodType).safeParse(undefined).success)
    .map(([key]) => key);
  return (body) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const given = body as Record<string, unknown>;
    const read: Record<string, unknown> = {};
    for (const key of Object.keys(given)) {
      const field = fields.get(key);
      if (field === undefined) {
        if (unknown === 'refuse') return undefined;
        continue;
      }
      const value = given[key];
      if (value === null && field.takesNull) read[key] = null;
      else {
        const result = field.schema.safeParse(value);
        if (!result.success) return undefined;
        read[key] = result.data;
      }
    }
    for (const key of requiredFields) if (!(key in read)) return undefined;
    return read;
  };
};

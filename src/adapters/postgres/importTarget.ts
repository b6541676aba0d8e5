/** The target of `airs migrate` checked empty (`checkEmpty`): no relations but airs's own, and those without rows. */
import { type Query, sql } from './db.js';
import { TargetNotEmpty } from './importErrors.js';
import { migrateIn, migrations } from './schema.js';

/** The tables the store's migrations make (and the version table): what an airs database may hold. */
const airsTables = (): ReadonlySet<string> => {
  const names = new Set(['airs_schema_version']);
  for (const text of migrations)
    for (const match of text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/gi)) names.add(match[1] as string);
  return names;
};

/** Tables that may hold rows in an airs database that has no events yet (a server was started on it and took calls:
 * the log head, the schema's version, throttles and rate-limit states). */
const operational = new Set(['airs_schema_version', 'log_head', 'limiter', 'attempts']);

/**
 * Refuses a target that is not empty: any table, view or sequence outside airs's own, or airs's tables holding any
 * event or view row. Airs's tables with nothing in them (a node was started on the database first) are accepted.
 */
export const checkEmpty = async (query: Query, where: string): Promise<void> => {
  const relations = await query<{ schema: string; name: string }[]>(sql`
    SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND n.nspname <> 'information_schema'
      AND left(n.nspname, 3) <> 'pg_'
    ORDER BY 1, 2`);
  const ours = airsTables();
  const current = (await query<{ schema: string }[]>(sql`SELECT current_schema() AS schema`))[0]?.schema;
  const others = relations.filter((r) => r.schema !== current || !ours.has(r.name));
  if (others.length > 0) {
    const named = others.slice(0, 3).map((r) => `${r.schema}.${r.name}`);
    throw new TargetNotEmpty(
      `the database ${where} is not empty: it holds ${others.length} table(s) that are not airs's (${named.join(', ')}${others.length > 3 ? ', …' : ''}); migrate into a new, empty database (CREATE DATABASE)`,
    );
  }
  if (relations.length === 0) return;
  if (!relations.some((r) => r.name === 'airs_schema_version'))
    throw new TargetNotEmpty(
      `the database ${where} is not empty: it holds some of airs's tables without their schema version; migrate into a new, empty database (CREATE DATABASE)`,
    );
  // Airs's schema, at this version or upgraded to it (a newer one is refused by the migrations themselves).
  try {
    await migrateIn(query, where);
  } catch (error) {
    throw new TargetNotEmpty((error as Error).message);
  }
  const [events] = await query<{ n: number }[]>(sql`SELECT count(*)::float8 AS n FROM events`);
  if ((events?.n ?? 0) > 0)
    throw new TargetNotEmpty(
      `the database ${where} already holds an airs store with ${events?.n} events; migrate into a new, empty database (CREATE DATABASE), or keep using this one`,
    );
  for (const { name } of relations) {
    if (operational.has(name)) continue;
    const [row] = await query<{ any: boolean }[]>({ text: `SELECT EXISTS (SELECT 1 FROM ${name}) AS any`, values: [] });
    if (row?.any === true)
      throw new TargetNotEmpty(
        `the database ${where} is not empty: airs's table ${name} holds rows though the log is empty; migrate into a new, empty database (CREATE DATABASE)`,
      );
  }
  const [head] = await query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head WHERE id = 1`);
  if (head === undefined || Number(head.last_seq) !== 0)
    throw new TargetNotEmpty(`the database ${where} is not empty: its log head is not at the start`);
};

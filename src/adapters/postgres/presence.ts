import pg from 'pg';

/**
 * Whether the database at `url` holds airs's tables (made by a store that opened it), without making anything: a
 * command that only reads or changes data must not turn a mistyped URL into an empty airs database. One that cannot be
 * reached (or refuses the login) gives the reason.
 */
export const airsSchemaIn = async (url: string): Promise<boolean | { readonly reason: string }> => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  // A connection lost after the query (the server restarting) must not end the process.
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ found: boolean }>(
      `SELECT to_regclass('airs_schema_version') IS NOT NULL AS found`,
    );
    return rows[0]?.found === true;
  } catch (error) {
    return { reason: (error as Error).message };
  } finally {
    await client.end().catch(() => {});
  }
};

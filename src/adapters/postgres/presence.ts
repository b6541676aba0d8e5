import postgres from 'postgres';

/**
 * Whether the database at `url` holds airs's tables (made by a store that opened it), without making anything: a
 * command that only reads or changes data must not turn a mistyped URL into an empty airs database. One that cannot be
 * reached (or refuses the login) gives the reason.
 */
export const airsSchemaIn = async (url: string): Promise<boolean | { readonly reason: string }> => {
  const sql = postgres(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
  try {
    const [row] = await sql<{ found: boolean }[]>`SELECT to_regclass('airs_schema_version') IS NOT NULL AS found`;
    return row?.found === true;
  } catch (error) {
    return { reason: (error as Error).message };
  } finally {
    await sql.end({ timeout: 1 });
  }
};

/** A database URL without its password, for lines a person reads (logs, messages). No dependencies: the CLI names a
 * database without loading the PostgreSQL client. */
export const redactedUrl = (url: string): string => {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://…';
  }
};

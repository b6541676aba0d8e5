import { statfs } from 'node:fs/promises';

/** Bytes an unprivileged writer may still use on the filesystem that holds `dir`. */
export const freeBytesOf = async (dir: string): Promise<number> => {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
};

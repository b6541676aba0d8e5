import { createServer } from 'node:net';

/**
 * Whether `host:port` can be listened on now, found by listening on it a moment: `serve` asks before it creates
 * anything, so a server that cannot listen leaves no new data directory behind. Port 0 (any free port) always can.
 */
export const listenProblem = (host: string, port: number): Promise<NodeJS.ErrnoException | undefined> => {
  if (port === 0) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    probe.listen({ host, port }, () => probe.close(() => resolve(undefined)));
  });
};

/** Why `serve` cannot listen, in one line that says what to do. */
export const listenFailureMessage = (host: string, port: number, error: NodeJS.ErrnoException): string => {
  const where = `cannot listen on ${host}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE':
      return `${where}: the port is in use by another process; stop it, or choose another port (--port, PORT or port in the config)`;
    case 'EACCES':
      return `${where}: permission denied (ports below 1024 need privileges); choose another port (--port, PORT or port in the config)`;
    case 'EADDRNOTAVAIL':
      return `${where}: the address is not one of this machine's; choose another host (--host, HOST or host in the config)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${where}: the host name cannot be resolved; choose another host (--host, HOST or host in the config)`;
    default:
      return `${where} (${error.code ?? error.message})`;
  }
};

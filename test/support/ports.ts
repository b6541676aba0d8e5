import { createServer } from 'node:net';

/**
 * A port of 127.0.0.1 that was free a moment ago: taken from the system, then given back. Used as the fixed port an
 * operator would give `serve`, or, left unused, as an address where nothing listens (a closed upstream).
 */
export const unusedPort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject()));
    });
  });

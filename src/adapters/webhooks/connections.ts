import http from 'node:http';
import https from 'node:https';

/**
 * Kept-alive connections for webhook posts, one pool per checked address: a connection opened to an address the
 * destination check passed is reused only by a later post whose own check (made afresh, DNS included) came to the
 * same address, scheme, host name and port. A name that starts resolving elsewhere (DNS rebinding) gets another
 * pool, never this one's sockets. A new TCP (and TLS) connection per post cost more than the rest of a delivery.
 *
 * Bounded: at most `maxPools` addresses (the least recently used is closed), a few idle sockets each, closed after
 * a few seconds idle.
 */
export type ConnectionPools = {
  agentFor(target: {
    readonly secure: boolean;
    readonly hostname: string;
    readonly port: number;
    readonly address: string;
    readonly ca?: https.AgentOptions['ca'];
  }): http.Agent;
  /** Closes every pooled connection (a stopping server). */
  close(): void;
};

const maxPools = 256;
const idleMs = 4_000;

export const createConnectionPools = (): ConnectionPools => {
  const pools = new Map<string, http.Agent>();
  return {
    agentFor({ secure, hostname, port, address, ca }) {
      const key = `${secure ? 'https' : 'http'}\u0000${hostname}\u0000${port}\u0000${address}`;
      let agent = pools.get(key);
      if (agent !== undefined) {
        // Most recently used last: the first is the one to close when the bound is reached.
        pools.delete(key);
        pools.set(key, agent);
        return agent;
      }
      const options = { keepAlive: true, maxFreeSockets: 8, timeout: idleMs, scheduling: 'lifo' as const };
      agent = secure ? new https.Agent({ ...options, ...(ca === undefined ? {} : { ca }) }) : new http.Agent(options);
      pools.set(key, agent);
      if (pools.size > maxPools) {
        const [oldestKey, oldest] = pools.entries().next().value as [string, http.Agent];
        pools.delete(oldestKey);
        oldest.destroy();
      }
      return agent;
    },
    close() {
      for (const agent of pools.values()) agent.destroy();
      pools.clear();
    },
  };
};

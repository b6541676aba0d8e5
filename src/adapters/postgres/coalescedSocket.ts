import { Socket } from 'node:net';

/**
 * A socket for `pg` whose writes of one tick leave in one system call. `pg` writes each message of a statement on its
 * own (Parse, Bind, Describe, Execute, Sync: five writes), and in pipeline mode a batch asks for a dozen statements at
 * once: uncorked, each message was a `writev` of its own and woke the server's backend again (a third of a node's CPU
 * on PostgreSQL end to end, docs/performance.md). Corked until the tick ends, they go out together; nothing waits
 * longer than the current tick.
 */
export const coalescedSocket = (): Socket => {
  const socket = new Socket();
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  const write = socket.write;
  socket.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (!corked) {
      corked = true;
      this.cork();
      process.nextTick(uncork);
    }
    return write.apply(this, args as never);
  } as Socket['write'];
  return socket;
};

import pg from 'pg';

/**
 * The store's connections, over node-postgres (`pg`). A transaction runs on one client checked out of the pool: if
 * that connection dies, every later statement of the transaction fails (a pg client never reconnects by itself), so
 * a batch can never go on outside its transaction. (postgres.js 3.4.9 was tried first: a connection cut in the middle
 * of a transaction crashed the process from a timer, and its issues tell of statements of a transaction running on
 * the reconnected connection, outside it: porsager/postgres#1154, #1208, #1155.)
 */

/** A statement and its parameters, as the `sql` tag makes them. */
export type Statement = { readonly text: string; readonly values: unknown[] };

/** `sql\`… ${value} …\`` → a statement with `$1…$n` in place of the values. */
export const sql = (strings: TemplateStringsArray, ...values: unknown[]): Statement => ({
  text: strings.reduce((text, part, i) => (i === 0 ? part : `${text}$${i}${part}`), ''),
  values,
});

/** Runs a statement and returns its rows (typed as `R`, an array of rows). */
export type Query = <R extends readonly unknown[] = Record<string, unknown>[]>(statement: Statement) => Promise<R>;

/** int8 as a JavaScript number (times in ms and counts stay far below 2^53); `pg` gives strings by default. */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as never)) as never,
};

/** How long a session may sit idle inside a transaction (ours take milliseconds between statements). */
export const idleInTransactionMs = 15_000;

const connectionConfig = (url: string): pg.ClientConfig => ({
  connectionString: url,
  types,
  application_name: 'airs',
  // Also on every connection the pool opens again after a failure: durable commits whatever the server's default,
  // and a node that stops in the middle of a transaction (paused, cut off) holding the log's writer lock has its
  // session ended by the server after a while, so the other nodes write again (its batch is rolled back, never
  // acknowledged).
  options: `-c synchronous_commit=on -c idle_in_transaction_session_timeout=${idleInTransactionMs}`,
  keepAlive: true,
});

export type Db = {
  readonly query: Query;
  /** Runs `work` in one transaction on one connection: committed if it resolves, rolled back if it rejects. */
  begin<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** Hears NOTIFYs on `channel` on a connection of its own, opened again (with `onListening` then) after a loss. */
  listen(
    channel: string,
    onNotify: (payload: string | undefined) => void,
    onListening: () => void,
  ): Promise<{ stop(): Promise<void> }>;
  end(): Promise<void>;
};

/** The most statements given a name (prepared once per connection); those seen after run unnamed. */
const maxNamedStatements = 1_000;
const statementNames = new Map<string, string>();

/**
 * A statement with parameters runs as a named prepared statement: each connection parses it once, not at every
 * call (the same text always has the same name in this process). Without parameters it stays unnamed: a migration's
 * several commands in one text cannot be prepared.
 */
const configOf = (statement: Statement): pg.QueryConfig => {
  if (statement.values.length === 0) return { text: statement.text };
  let name = statementNames.get(statement.text);
  if (name === undefined && statementNames.size < maxNamedStatements) {
    name = `airs_${statementNames.size}`;
    statementNames.set(statement.text, name);
  }
  return { text: statement.text, values: statement.values, ...(name === undefined ? {} : { name }) };
};

const queryOn =
  (client: pg.Pool | pg.PoolClient | pg.Client): Query =>
  async <R extends readonly unknown[]>(statement: Statement) =>
    (await client.query(configOf(statement))).rows as unknown as R;

export const openDb = (url: string, max: number): Db => {
  // Pipeline mode (pg 8.23): the statements asked for on a connection go out at once, each answered in order, rather
  // than each waiting for the answer before it; a batch's dozen statements cost about one round trip instead of a
  // dozen (docs/performance.md, the PostgreSQL client). Each is its own extended-protocol message with its own Sync,
  // so one that fails does not swallow the others' answers; inside a transaction those after it fail as well.
  const pool = new pg.Pool({ ...connectionConfig(url), max, idleTimeoutMillis: 30_000, pipeline: true });
  // An idle connection that the server ends (restart, pg_terminate_backend) is dropped; the next query opens another.
  // Without this listener the pool's 'error' event for it would end the process.
  pool.on('error', () => {});
  // A client stays without an 'error' listener from the moment the pool hands a new connection over until the code
  // that asked for it adds one (a microtask later, after `await pool.connect()`). pg parses the rest of the socket's
  // chunk meanwhile: when the server ends the session right after its startup (a FATAL 57P01 behind ReadyForQuery,
  // seen with `pg_terminate_backend` in test/integration/postgresTerminate.test.ts), the client emits 'error' with
  // nobody listening and the process ends. Every connection of the pool therefore hears its errors from the start;
  // the statement that follows such an error fails ('not queryable'), and a failed client is not given back.
  pool.on('connect', (client) => client.on('error', () => {}));
  return {
    query: queryOn(pool),
    async begin(work) {
      const client = await pool.connect();
      // An error of this connection between statements (it was cut) must not end the process: the statement that
      // follows fails, and so does the transaction.
      const ignore = () => {};
      client.on('error', ignore);
      let broken: unknown;
      const query = queryOn(client);
      const plain = (text: string) => query({ text, values: [] });
      try {
        await plain('BEGIN');
        const result = await work(query);
        await plain('COMMIT');
        return result;
      } catch (error) {
        broken = error;
        await plain('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.off('error', ignore);
        // A connection that failed is not given back for reuse (its state is unknown).
        client.release(broken === undefined ? undefined : true);
      }
    },
    async listen(channel, onNotify, onListening) {
      let client: pg.Client | undefined;
      let stopped = false;
      let retry: NodeJS.Timeout | undefined;
      const connect = async (): Promise<void> => {
        const next = new pg.Client(connectionConfig(url));
        next.on('notification', (message) => onNotify(message.payload));
        next.on('error', () => {});
        next.on('end', () => {
          if (stopped || client !== next) return;
          client = undefined;
          retry = setTimeout(reconnect, 100);
        });
        try {
          await next.connect();
          await next.query(`LISTEN ${channel}`);
        } catch (error) {
          // Refused, or lost before it listened (a database starting up or going down): this one is let go, and
          // the caller tries again.
          await next.end().catch(() => {});
          throw error;
        }
        client = next;
      };
      const reconnect = () => {
        retry = undefined;
        if (stopped) return;
        connect().then(onListening, () => {
          if (!stopped) retry = setTimeout(reconnect, 500);
        });
      };
      await connect();
      return {
        async stop() {
          stopped = true;
          if (retry !== undefined) clearTimeout(retry);
          await client?.end().catch(() => {});
        },
      };
    },
    end: () => pool.end(),
  };
};

import type { RequestContext } from '../../domain/request/machine.js';
import type { MutableRequestState, RequestState, RequestStatus } from '../../domain/request/state.js';
import { absentNumber, numberOrUndefined, statusCode, statuses } from './requestColumnFields.js';
import { createStringTable } from './stringTable.js';

/**
 * Many requests' folded states, kept in columns (typed arrays, outside the JavaScript heap) rather than one object
 * per request: a verification holds every request of the log at once, and hundreds of thousands of long-lived
 * objects made the garbage collector the largest cost of a `replay --verify`. A request is taken out into one
 * reusable working state, changed there by the fold's own step, and put back. Fields are copied one by one, by
 * name: a loop over field names made every copy a slow lookup.
 */

type Working = { -readonly [K in keyof RequestContext]: RequestContext[K] | undefined };

export const createRequestColumns = () => {
  let capacity = 1024;
  let size = 0;
  /** The request id of each slot (it is also the key its slot is found by). */
  const ids: string[] = [];
  /**
   * Which slot holds an id, indexed on demand: a request whose events all come in a row never needs a lookup (only
   * an event that comes after another request's does), and the index is brought up to date only then.
   */
  const slots = new Map<string, number>();
  let indexed = 0;
  let status = new Uint8Array(capacity);
  let promptChars = new Float64Array(capacity);
  let createdAt = new Float64Array(capacity);
  let expiresAt = new Float64Array(capacity);
  let attempts = new Float64Array(capacity);
  let availableAt = new Float64Array(capacity);
  let responseChars = new Float64Array(capacity);
  let completedAt = new Float64Array(capacity);
  let failedAt = new Float64Array(capacity);
  let expiredAt = new Float64Array(capacity);
  let startedAt = new Float64Array(capacity);
  let cancelledAt = new Float64Array(capacity);
  let inputTokens = new Float64Array(capacity);
  let outputTokens = new Float64Array(capacity);
  let leaseUntil = new Float64Array(capacity);
  let maxAttempts = new Float64Array(capacity);
  /** Fields few requests have (conversations, idempotency keys, answers that call tools): by slot, where present. */
  const inputs = new Map<number, NonNullable<RequestContext['input']>>();
  const outputs = new Map<number, 'message'>();
  const idempotencyKeys = new Map<number, string>();
  const requestHashes = new Map<number, string>();
  const metadatas = new Map<number, string>();
  const batchIds = new Map<number, string>();
  const customIds = new Map<number, string>();
  const failureSaids = new Map<number, string>();
  const faces = new Map<number, 'responses'>();
  const affinities = new Map<number, number>();
  const upstreams = new Map<number, string>();
  const servedBys = new Map<number, string>();
  const deadlines = new Map<number, number>();
  const cancelReasons = new Map<number, 'deadline'>();
  const tiers = new Map<number, 'priority' | 'flex'>();
  const keepRare = <T>(column: Map<number, T>, slot: number, value: T | undefined) => {
    if (value === undefined) column.delete(slot);
    else column.set(slot, value);
  };
  /** Strings that repeat (accounts, keys, models, reasons) are stored once; the columns hold their indexes, -1 for
   * absent. */
  let accountId = new Int32Array(capacity);
  let keyId = new Int32Array(capacity);
  let model = new Int32Array(capacity);
  let lastError = new Int32Array(capacity);
  let failureReason = new Int32Array(capacity);
  let finishReason = new Int32Array(capacity);
  let owner = new Int32Array(capacity);
  const { table, keep, text } = createStringTable();

  const grow = () => {
    capacity *= 2;
    const numbers = (column: Float64Array) => {
      const next = new Float64Array(capacity);
      next.set(column);
      return next;
    };
    const indexes = (column: Int32Array) => {
      const next = new Int32Array(capacity);
      next.set(column);
      return next;
    };
    const codes = new Uint8Array(capacity);
    codes.set(status);
    status = codes;
    promptChars = numbers(promptChars);
    createdAt = numbers(createdAt);
    expiresAt = numbers(expiresAt);
    attempts = numbers(attempts);
    availableAt = numbers(availableAt);
    responseChars = numbers(responseChars);
    completedAt = numbers(completedAt);
    failedAt = numbers(failedAt);
    expiredAt = numbers(expiredAt);
    startedAt = numbers(startedAt);
    cancelledAt = numbers(cancelledAt);
    inputTokens = numbers(inputTokens);
    outputTokens = numbers(outputTokens);
    leaseUntil = numbers(leaseUntil);
    maxAttempts = numbers(maxAttempts);
    accountId = indexes(accountId);
    keyId = indexes(keyId);
    model = indexes(model);
    lastError = indexes(lastError);
    failureReason = indexes(failureReason);
    finishReason = indexes(finishReason);
    owner = indexes(owner);
  };

  /**
   * One working state, reused: the fold's step changes it in place. It always has every field (`undefined` when
   * absent), which the step does not tell apart from absent, nor does the view's encoding.
   */
  const working = { status: 'none' as RequestStatus, context: {} as Working };

  const store = (slot: number, fresh: boolean) => {
    const c = working.context;
    status[slot] = statusCode[working.status];
    promptChars[slot] = c.promptChars ?? absentNumber;
    createdAt[slot] = c.createdAt ?? absentNumber;
    expiresAt[slot] = c.expiresAt ?? absentNumber;
    attempts[slot] = c.attempts ?? absentNumber;
    availableAt[slot] = c.availableAt ?? absentNumber;
    responseChars[slot] = c.responseChars ?? absentNumber;
    completedAt[slot] = c.completedAt ?? absentNumber;
    failedAt[slot] = c.failedAt ?? absentNumber;
    expiredAt[slot] = c.expiredAt ?? absentNumber;
    startedAt[slot] = c.startedAt ?? absentNumber;
    cancelledAt[slot] = c.cancelledAt ?? absentNumber;
    inputTokens[slot] = c.inputTokens ?? absentNumber;
    outputTokens[slot] = c.outputTokens ?? absentNumber;
    leaseUntil[slot] = c.leaseUntil ?? absentNumber;
    maxAttempts[slot] = c.maxAttempts ?? absentNumber;
    keepRare(inputs, slot, c.input);
    keepRare(outputs, slot, c.output);
    keepRare(idempotencyKeys, slot, c.idempotencyKey);
    keepRare(requestHashes, slot, c.requestHash);
    keepRare(metadatas, slot, c.metadata);
    keepRare(batchIds, slot, c.batchId);
    keepRare(customIds, slot, c.customId);
    keepRare(failureSaids, slot, c.failureSaid);
    keepRare(faces, slot, c.face);
    keepRare(affinities, slot, c.affinity);
    keepRare(upstreams, slot, c.upstream);
    keepRare(servedBys, slot, c.servedBy);
    keepRare(deadlines, slot, c.deadlineAt);
    keepRare(cancelReasons, slot, c.cancelReason);
    keepRare(tiers, slot, c.serviceTier);
    const previous = fresh && slot > 0 ? slot - 1 : slot;
    accountId[slot] = keep(accountId[previous] as number, c.accountId);
    keyId[slot] = keep(keyId[previous] as number, c.keyId);
    model[slot] = keep(model[previous] as number, c.model);
    lastError[slot] = keep(fresh ? -1 : (lastError[slot] as number), c.lastError);
    failureReason[slot] = keep(fresh ? -1 : (failureReason[slot] as number), c.failureReason);
    finishReason[slot] = keep(fresh ? -1 : (finishReason[slot] as number), c.finishReason);
    owner[slot] = keep(fresh ? -1 : (owner[slot] as number), c.owner);
  };

  return {
    /** The working state: what `load` and `loadState` fill, and the step changes. */
    working: working as MutableRequestState,
    /** The working state filled from `state`. */
    loadState(state: RequestState): MutableRequestState {
      const from = state.context;
      const c = working.context;
      working.status = state.status;
      c.reqId = from.reqId;
      c.accountId = from.accountId;
      c.keyId = from.keyId;
      c.model = from.model;
      c.promptChars = from.promptChars;
      c.createdAt = from.createdAt;
      c.expiresAt = from.expiresAt;
      c.attempts = from.attempts;
      c.availableAt = from.availableAt;
      c.lastError = from.lastError;
      c.responseChars = from.responseChars;
      c.completedAt = from.completedAt;
      c.failedAt = from.failedAt;
      c.failureReason = from.failureReason;
      c.expiredAt = from.expiredAt;
      c.startedAt = from.startedAt;
      c.cancelledAt = from.cancelledAt;
      c.input = from.input;
      c.idempotencyKey = from.idempotencyKey;
      c.requestHash = from.requestHash;
      c.inputTokens = from.inputTokens;
      c.outputTokens = from.outputTokens;
      c.finishReason = from.finishReason;
      c.output = from.output;
      c.owner = from.owner;
      c.leaseUntil = from.leaseUntil;
      c.maxAttempts = from.maxAttempts;
      c.metadata = from.metadata;
      c.batchId = from.batchId;
      c.customId = from.customId;
      c.failureSaid = from.failureSaid;
      c.face = from.face;
      c.affinity = from.affinity;
      c.upstream = from.upstream;
      c.servedBy = from.servedBy;
      c.deadlineAt = from.deadlineAt;
      c.cancelReason = from.cancelReason;
      c.serviceTier = from.serviceTier;
      return working as MutableRequestState;
    },
    /** The working state filled from `slot`. */
    load(slot: number): MutableRequestState {
      const c = working.context;
      working.status = statuses[status[slot] as number] as RequestStatus;
      c.reqId = ids[slot];
      c.accountId = text(accountId[slot] as number);
      c.keyId = text(keyId[slot] as number);
      c.model = text(model[slot] as number);
      c.promptChars = numberOrUndefined(promptChars[slot] as number);
      c.createdAt = numberOrUndefined(createdAt[slot] as number);
      c.expiresAt = numberOrUndefined(expiresAt[slot] as number);
      c.attempts = numberOrUndefined(attempts[slot] as number);
      c.availableAt = numberOrUndefined(availableAt[slot] as number);
      c.lastError = text(lastError[slot] as number);
      c.responseChars = numberOrUndefined(responseChars[slot] as number);
      c.completedAt = numberOrUndefined(completedAt[slot] as number);
      c.failedAt = numberOrUndefined(failedAt[slot] as number);
      c.failureReason = text(failureReason[slot] as number);
      c.expiredAt = numberOrUndefined(expiredAt[slot] as number);
      c.startedAt = numberOrUndefined(startedAt[slot] as number);
      c.cancelledAt = numberOrUndefined(cancelledAt[slot] as number);
      c.input = inputs.get(slot);
      c.idempotencyKey = idempotencyKeys.get(slot);
      c.requestHash = requestHashes.get(slot);
      c.inputTokens = numberOrUndefined(inputTokens[slot] as number);
      c.outputTokens = numberOrUndefined(outputTokens[slot] as number);
      c.finishReason = text(finishReason[slot] as number);
      c.output = outputs.get(slot);
      c.owner = text(owner[slot] as number);
      c.leaseUntil = numberOrUndefined(leaseUntil[slot] as number);
      c.maxAttempts = numberOrUndefined(maxAttempts[slot] as number);
      c.metadata = metadatas.get(slot);
      c.batchId = batchIds.get(slot);
      c.customId = customIds.get(slot);
      c.failureSaid = failureSaids.get(slot);
      c.face = faces.get(slot);
      c.affinity = affinities.get(slot);
      c.upstream = upstreams.get(slot);
      c.servedBy = servedBys.get(slot);
      c.deadlineAt = deadlines.get(slot);
      c.cancelReason = cancelReasons.get(slot);
      c.serviceTier = tiers.get(slot);
      return working as MutableRequestState;
    },
    /** Writes the working state into `slot`. */
    save: (slot: number) => store(slot, false),
    /** Writes the working state into a new slot for request `reqId` (a request of the log appears once). */
    append(reqId: string): number {
      if (size === capacity) grow();
      ids.push(reqId);
      store(size, true);
      return size++;
    },
    /** The slot of request `reqId`, if it has one (the latest, should an id have been given two). */
    slotOf(reqId: string): number | undefined {
      for (; indexed < size; indexed++) slots.set(ids[indexed] as string, indexed);
      return slots.get(reqId);
    },
    /** The state of `slot` as a new object, with exactly the fields it has (for encoding it). */
    read(slot: number): RequestState {
      const context: Record<string, unknown> = {
        reqId: ids[slot],
        accountId: text(accountId[slot] as number),
        keyId: text(keyId[slot] as number),
        model: text(model[slot] as number),
        promptChars: promptChars[slot],
        createdAt: createdAt[slot],
        expiresAt: expiresAt[slot],
        attempts: attempts[slot],
        availableAt: availableAt[slot],
      };
      const error = lastError[slot] as number;
      if (error >= 0) context.lastError = table[error];
      if (!Number.isNaN(responseChars[slot])) context.responseChars = responseChars[slot];
      if (!Number.isNaN(completedAt[slot])) context.completedAt = completedAt[slot];
      if (!Number.isNaN(failedAt[slot])) context.failedAt = failedAt[slot];
      const reason = failureReason[slot] as number;
      if (reason >= 0) context.failureReason = table[reason];
      if (!Number.isNaN(expiredAt[slot])) context.expiredAt = expiredAt[slot];
      if (!Number.isNaN(startedAt[slot])) context.startedAt = startedAt[slot];
      if (!Number.isNaN(cancelledAt[slot])) context.cancelledAt = cancelledAt[slot];
      if (inputs.has(slot)) context.input = inputs.get(slot);
      if (idempotencyKeys.has(slot)) context.idempotencyKey = idempotencyKeys.get(slot);
      if (requestHashes.has(slot)) context.requestHash = requestHashes.get(slot);
      if (!Number.isNaN(inputTokens[slot])) context.inputTokens = inputTokens[slot];
      if (!Number.isNaN(outputTokens[slot])) context.outputTokens = outputTokens[slot];
      const finish = finishReason[slot] as number;
      if (finish >= 0) context.finishReason = table[finish];
      if (outputs.has(slot)) context.output = outputs.get(slot);
      const holder = owner[slot] as number;
      if (holder >= 0) context.owner = table[holder];
      if (!Number.isNaN(leaseUntil[slot])) context.leaseUntil = leaseUntil[slot];
      if (!Number.isNaN(maxAttempts[slot])) context.maxAttempts = maxAttempts[slot];
      if (metadatas.has(slot)) context.metadata = metadatas.get(slot);
      if (batchIds.has(slot)) context.batchId = batchIds.get(slot);
      if (customIds.has(slot)) context.customId = customIds.get(slot);
      if (failureSaids.has(slot)) context.failureSaid = failureSaids.get(slot);
      if (faces.has(slot)) context.face = faces.get(slot);
      if (affinities.has(slot)) context.affinity = affinities.get(slot);
      if (upstreams.has(slot)) context.upstream = upstreams.get(slot);
      if (servedBys.has(slot)) context.servedBy = servedBys.get(slot);
      if (deadlines.has(slot)) context.deadlineAt = deadlines.get(slot);
      if (cancelReasons.has(slot)) context.cancelReason = cancelReasons.get(slot);
      if (tiers.has(slot)) context.serviceTier = tiers.get(slot);
      return { status: statuses[status[slot] as number] as RequestStatus, context: context as RequestContext };
    },
    /** The request id of each slot, in slot order. */
    ids: (): readonly string[] => ids,
    size: () => size,
  };
};

export type RequestColumns = ReturnType<typeof createRequestColumns>;

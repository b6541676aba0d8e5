import { decideAccountCommand } from './accountCommands.js';
import { decideBatchCommand } from './batchCommands.js';
import { type Claim, decideClaim } from './claim.js';
import { type Command, type Decision, type DecisionReads, isRefusal, type Refusal } from './commandTypes.js';
import { failOverDecision } from './failOver.js';
import { decideFileCommand } from './fileCommands.js';
import { decideRequestCommand } from './requestCommands.js';
import { decideWebhookCommand, webhookDeliveriesFor } from './webhook/commands.js';

// The commands' types, and the deciding of each kind, are in files of their own; importers keep reading them here.
export { passwordCredentialKey, sessionCredentialKey } from './accountCommands.js';
export { type Command, type Decision, type DecisionReads, isRefusal, type Refusal } from './commandTypes.js';
export { idempotencyWindowMs } from './requestCommands.js';

/** A claim's starts (and give-ups of lapsed leases), each request's state as it leaves it; no text changes. */
const decideClaimCommand = (reads: DecisionReads, claim: Claim): Decision => {
  const decisions = decideClaim(reads, claim);
  return {
    events: decisions.flatMap((decision) => decision.events),
    requests: decisions.map((decision) => ({ state: decision.state })),
  };
};

const decideAlone = (reads: DecisionReads, command: Command): Decision | Refusal => {
  if (command.type === 'Account') return decideAccountCommand(reads, command);
  if (command.type === 'Batch') return decideBatchCommand(reads, command);
  if (command.type === 'File') return decideFileCommand(reads, command);
  if (command.type === 'Claim') return decideClaimCommand(reads, command);
  if (command.type === 'FailOver') return failOverDecision(reads, command);
  if (command.type === 'WebhookEndpoint' || command.type === 'WebhookDelivery')
    return decideWebhookCommand(reads, command) as Decision | Refusal;
  return decideRequestCommand(reads, command);
};

/**
 * Decides one command against the current state. Pure: reads come in, events (and a request's new state) go out.
 * The webhook deliveries its events make due (a request's or a batch's ending, for its account's endpoints) are
 * part of the same decision, so they are committed with the ending: the outbox.
 */
export const decideCommand = (reads: DecisionReads, command: Command): Decision | Refusal => {
  const decision = decideAlone(reads, command);
  if (isRefusal(decision) || decision.events.length === 0 || command.type === 'WebhookDelivery') return decision;
  const due = webhookDeliveriesFor(reads, decision.events);
  return due.length === 0 ? decision : { ...decision, events: [...decision.events, ...due] };
};

/** How many bytes of text a command carries (for the committer's bound on a batch). */
export const payloadBytesOf = (command: Command): number => {
  if (command.type === 'Submit') return (command.prompt.length + (command.metadata?.length ?? 0)) * 3;
  if (command.type === 'RecordSuccess') return command.response.length * 3;
  return 0;
};

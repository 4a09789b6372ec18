/**
 * Tenancy (TEAM#<teamId>): the team with its ledger, its slots and stored bytes, projects, agents,
 * a key's month, and the id entries. One family of the stored items: see item.ts for how every item
 * is read and written.
 */
import * as v from 'valibot';
import { counter, storedItem } from './item.ts';

/** A team's own key for a provider: a reference to the secret, never the secret (store/connections.ts). */
const ConnectionRefSchema = v.object({ secretRef: v.string(), endpoint: v.optional(v.string()) });
export type ConnectionRef = v.InferOutput<typeof ConnectionRefSchema>;

/** The team item: its ledger (invariant: balance + held + charged = granted), limits and connections. */
export const TeamItemSchema = v.object({
  balance: counter,
  held: counter,
  charged: counter,
  granted: counter,
  perStepLimitHundredths: v.nullish(v.number(), null),
  connections: v.optional(v.record(v.string(), ConnectionRefSchema), () => ({})),
});
export type TeamItem = v.InferOutput<typeof TeamItemSchema>;
export const storedTeam = storedItem(TeamItemSchema, ['teamId', 'name', 'createdAt']);

/**
 * A team's steps in flight: per step its worker's lease (functions/domain/team-steps.ts), taken
 * before the step runs and removed after it, whatever its end; a lease that ran out is removed by
 * the next refused start.
 */
export const TeamStepsItemSchema = v.object({ slots: v.record(v.string(), v.string()) });
export const storedTeamSteps = storedItem(TeamStepsItemSchema);

/**
 * A key's open event streams: per stream its lease (functions/domain/stream-slots.ts), taken before
 * the stream opens and removed when it ends; a lease that ran out (a function killed mid-stream) is
 * removed by the next refused open. The item expires (`ttl`) once its last lease has run out.
 */
export const StreamSlotsItemSchema = v.object({ slots: v.record(v.string(), v.string()) });
export const storedStreamSlots = storedItem(StreamSlotsItemSchema);

/**
 * A team's stored bytes (functions/store/stored-bytes.ts): by the UTC day they expire, their
 * running total (expired days included until a quota-checked write drops them), and the quota an
 * operator set (else the default).
 */
export const StoredBytesItemSchema = v.object({
  byDay: v.optional(v.record(v.string(), v.number()), () => ({})),
  heldBytes: counter,
  quotaBytes: v.nullish(v.number(), null),
});
export type StoredBytesItem = v.InferOutput<typeof StoredBytesItemSchema>;
export const storedStoredBytes = storedItem(StoredBytesItemSchema);

export const ProjectItemSchema = v.object({
  hardCapHundredths: v.nullish(v.number(), null),
  spentHundredths: counter,
});
/** The project, with its id, name and creation for operators, and its team (read from its id entry). */
export const storedProject = storedItem(ProjectItemSchema, ['projectId', 'teamId', 'name', 'createdAt']);

export const AgentItemSchema = v.object({
  projectId: v.string(),
  activeWorkflowId: v.optional(v.string()),
});
export const storedAgent = storedItem(AgentItemSchema, ['agentId', 'teamId', 'name', 'createdAt']);

/** A key's spend in one month (KEYSPEND#<keyId>). */
export const KeyMonthItemSchema = v.object({ spentHundredths: counter });
export const storedKeyMonth = storedItem(KeyMonthItemSchema);

/** The GSI1 entry that finds a project, agent or workflow by id alone: what is read of it is its team. */
export const IdEntrySchema = v.object({ teamId: v.string() });

/**
 * Every DynamoDB key of the single table, built in one place. Prefixes are typed so a partition
 * can be recognised at a glance in the console. See the access patterns table in docs/architecture.md.
 */

export const teamKey = (teamId: string) => ({ PK: `TEAM#${teamId}`, SK: 'TEAM' });

export const projectKey = (teamId: string, projectId: string) => ({ PK: `TEAM#${teamId}`, SK: `PROJECT#${projectId}` });

export const agentKey = (teamId: string, agentId: string) => ({ PK: `TEAM#${teamId}`, SK: `AGENT#${agentId}` });

/** Workflow summaries sit in the team partition so the list is one strongly consistent Query. */
export const workflowKey = (teamId: string, workflowId: string) => ({
  PK: `TEAM#${teamId}`,
  SK: `WORKFLOW#${workflowId}`,
});
export const workflowSkPrefix = 'WORKFLOW#';

/** A file a caller uploaded, in its team's partition: another team's id names no item there. */
export const uploadKey = (teamId: string, fileId: string) => ({ PK: `TEAM#${teamId}`, SK: `FILE#${fileId}` });
export const teamPartition = (teamId: string) => `TEAM#${teamId}`;

/** The canvas is large and read only by runs, so it lives apart from the summary. */
export const canvasKey = (workflowId: string) => ({ PK: `WORKFLOW#${workflowId}`, SK: 'CANVAS' });

/**
 * Each version of a workflow, beside its canvas: numbers zero-padded so the sort key orders them,
 * and the list is one Query read backwards.
 */
export const workflowVersionSkPrefix = 'VERSION#';
export const workflowVersionPartition = (workflowId: string) => `WORKFLOW#${workflowId}`;
export const workflowVersionKey = (workflowId: string, version: number) => ({
  PK: workflowVersionPartition(workflowId),
  SK: `${workflowVersionSkPrefix}${String(version).padStart(6, '0')}`,
});

/** An API key item is addressed by the SHA-256 of the secret: the only way a request finds it. */
export const apiKeyKey = (secretHash: string) => ({ PK: `APIKEY#${secretHash}`, SK: 'APIKEY' });

/** Pointer from the public key id to the hash, for revoke and update by id. */
export const apiKeyIdKey = (keyId: string) => ({ PK: `APIKEYID#${keyId}`, SK: 'APIKEYID' });

/** GSI1 entry listing a team's keys. */
export const teamKeysIndex = (teamId: string, keyId: string) => ({ GSI1PK: `TEAM#${teamId}#KEYS`, GSI1SK: keyId });
export const teamKeysPartition = (teamId: string) => `TEAM#${teamId}#KEYS`;

/**
 * The steps a team's workers run now (functions/store/team-steps.ts): its own partition, apart from
 * the team's, as every step start and end of the team writes it.
 */
/** A team's stored bytes, against its storage quota. */
export const storedBytesKey = (teamId: string) => ({ PK: `STOREDBYTES#${teamId}`, SK: 'BYTES' });
export const teamStepsKey = (teamId: string) => ({ PK: `TEAMSTEPS#${teamId}`, SK: 'INFLIGHT' });

/** The event streams a key holds open (functions/store/stream-slots.ts): one item per key. */
export const streamSlotsKey = (keyId: string) => ({ PK: `STREAMS#${keyId}`, SK: 'OPEN' });
/** A run's open event streams, whatever keys opened them (a key id never starts with `RUN#`). */
export const runStreamSlotsKey = (jobId: string) => ({ PK: `STREAMS#RUN#${jobId}`, SK: 'OPEN' });

/** One rate counter item per key; attributes are per-window counts. */
export const rateCounterKey = (keyId: string) => ({ PK: `RATE#${keyId}`, SK: 'RATE' });

/** The operator-set price multiplier and its hourly schedule. */
export const priceKey = () => ({ PK: 'PRICE', SK: 'PRICE' });

/** GSI1 entry that finds a project, agent or workflow (and so its team) from its id alone. */
export const idIndex = (kind: 'PROJECT' | 'AGENT' | 'WORKFLOW', id: string) => ({
  GSI1PK: `${kind}#${id}`,
  GSI1SK: kind,
});

/** A run and, in the same partition, its steps and its charges: one Query reads a whole run. */
export const runPartition = (jobId: string) => `RUN#${jobId}`;
export const runKey = (jobId: string) => ({ PK: runPartition(jobId), SK: 'RUN' });
export const stepSkPrefix = 'STEP#';
export const stepKey = (jobId: string, nodeId: string) => ({ PK: runPartition(jobId), SK: `${stepSkPrefix}${nodeId}` });

/** One run in progress per workflow: this item exists while one does, naming it. */
export const workflowLockKey = (workflowId: string) => ({ PK: `WFLOCK#${workflowId}`, SK: 'LOCK' });

/** A key's spend in one calendar month (UTC), for its monthly credit cap. */
export const keyMonthKey = (keyId: string, month: string) => ({ PK: `KEYSPEND#${keyId}`, SK: month });

/** A remembered answer to a run start with an Idempotency-Key (hash of the caller's key). */
export const idempotencyRecordKey = (keyId: string, idempotencyKeyHash: string) => ({
  PK: `IDEM#${keyId}#${idempotencyKeyHash}`,
  SK: 'IDEM',
});

/**
 * Sparse GSI1 entry on a run while it is `queued` and no step has finished, sharded so run starts
 * do not all write one index partition; the sweep re-sends the root steps of those left too long.
 */
export const queuedRunShards = 4;
export const queuedRunIndex = (jobId: string, createdAt: string) => ({
  GSI1PK: `QUEUEDRUNS#${Number.parseInt(jobId.slice(0, 2), 16) % queuedRunShards}`,
  GSI1SK: `${createdAt}#${jobId}`,
});
export const queuedRunPartition = (shard: number) => `QUEUEDRUNS#${shard}`;

/**
 * A workflow's queue (functions/domain/workflow-queue.ts): one entry per run waiting behind its run
 * in progress, sorted by `queueOrder`, read strongly consistent from the table itself.
 */
export const workflowQueuePartition = (workflowId: string) => `WFQUEUE#${workflowId}`;
export const workflowQueueKey = (workflowId: string, order: string) => ({
  PK: workflowQueuePartition(workflowId),
  SK: order,
});

/** A deferred run (spec 2.4). */
export const deferredRunKey = (deferredJobId: string) => ({ PK: `DEFERRED#${deferredJobId}`, SK: 'DEFERRED' });

/**
 * Sparse indexes on WAITING deferred runs only (removed when they move): GSI2 ordered by
 * maxMultiplier (fixed-width text so the order is numeric), GSI3 by expiresAt. One partition each,
 * so a dispatcher tick is one Query per index, reading only what it can move.
 */
export const waitingPartition = 'WAITING';
export const multiplierSortKey = (multiplier: number) => multiplier.toFixed(4).padStart(9, '0');
export const waitingIndexes = (deferredJobId: string, maxMultiplier: number, createdAt: string, expiresAt: string) => ({
  GSI2PK: waitingPartition,
  GSI2SK: `${multiplierSortKey(maxMultiplier)}#${createdAt}#${deferredJobId}`,
  GSI3PK: waitingPartition,
  GSI3SK: `${expiresAt}#${deferredJobId}`,
});

/**
 * Sparse entries of the list index (GSI5, on the attributes GSI4PK and GSI4SK, named for the index it replaced)
 * listing a team's runs and deferred runs, newest first: one partition per team and kind, sorted by
 * creation time then id. Written once, with the item; items older than the list index have none and are not listed.
 */
export const teamRunsPartition = (teamId: string) => `TEAM#${teamId}#RUNS`;
export const teamDeferredPartition = (teamId: string) => `TEAM#${teamId}#DEFERRED`;
export const runListIndex = (teamId: string, createdAt: string, jobId: string) => ({
  GSI4PK: teamRunsPartition(teamId),
  GSI4SK: `${createdAt}#${jobId}`,
});
export const deferredListIndex = (teamId: string, createdAt: string, deferredJobId: string) => ({
  GSI4PK: teamDeferredPartition(teamId),
  GSI4SK: `${createdAt}#${deferredJobId}`,
});

/**
 * A run's entry under one of its tags (GET /runs?tag=): one partition per team and tag, sorted as
 * the run list is (creation time, then id), so a page is one Query read backwards. Written by the
 * start beside the run; the table's own key is the index, so no GSI is written for it.
 */
export const runTagPartition = (teamId: string, tag: string) => `RUNTAG#${teamId}#${tag}`;
export const runTagKey = (teamId: string, tag: string, createdAt: string, jobId: string) => ({
  PK: runTagPartition(teamId, tag),
  SK: `${createdAt}#${jobId}`,
});

/**
 * A run's entry under the batch that started it (`POST /runs/batch`): one partition per team and
 * batch, sorted as a tag's (creation time, then id). Written by the run's start beside the run, so a
 * batch lists exactly the runs it committed; another team's batch is another partition.
 */
export const runBatchPartition = (teamId: string, batchId: string) => `RUNBATCH#${teamId}#${batchId}`;
export const runBatchKey = (teamId: string, batchId: string, createdAt: string, jobId: string) => ({
  PK: runBatchPartition(teamId, batchId),
  SK: `${createdAt}#${jobId}`,
});

/** The random key that signs list cursors: created once (conditional put), read once per container. */
export const cursorSigningKey = () => ({ PK: 'CURSORKEY', SK: 'CURSORKEY' });

/** The random key that signs file links: created once (conditional put), read once per container. */
export const fileLinkSigningKey = () => ({ PK: 'FILELINKKEY', SK: 'FILELINKKEY' });

/** The random key that signs run tokens (functions/domain/run-token.ts): as the file links' key, a key of its own. */
export const runTokenSigningKey = () => ({ PK: 'RUNTOKENKEY', SK: 'RUNTOKENKEY' });

/** Delivery state of one webhook event of a run (attempts, outcome). */
export const webhookSkPrefix = 'WEBHOOK#';
export const webhookDeliveryKey = (jobId: string, event: string) => ({
  PK: runPartition(jobId),
  SK: `${webhookSkPrefix}${event}`,
});

/**
 * The count of a run's step events sent, in its partition but outside `WEBHOOK#`, so the
 * delivery log's Query reads deliveries only.
 */
export const stepEventCountKey = (jobId: string) => ({ PK: runPartition(jobId), SK: 'STEPEVENTS' });

/** A team's webhook endpoint, in the team's partition: the list is one Query, another team's id names nothing. */
export const webhookEndpointSkPrefix = 'WHENDPOINT#';
export const webhookEndpointKey = (teamId: string, endpointId: string) => ({
  PK: teamPartition(teamId),
  SK: `${webhookEndpointSkPrefix}${endpointId}`,
});

/**
 * The team's endpoints counted under their cap: a `slots` map, per endpoint its creation time,
 * taken in the transaction that writes the endpoint (outside `WHENDPOINT#`, so the list reads none).
 */
export const webhookEndpointSlotsKey = (teamId: string) => ({ PK: teamPartition(teamId), SK: 'WHSLOTS' });

/**
 * One delivery of a webhook endpoint, in the endpoint's own partition: its ids begin with the
 * event's time (functions/domain/webhook-endpoints.ts), so the log is one Query read backwards.
 */
export const endpointDeliveryPartition = (endpointId: string) => `WHDELIVERY#${endpointId}`;
export const endpointDeliverySkPrefix = 'DELIVERY#';
export const endpointDeliveryKey = (endpointId: string, deliveryId: string) => ({
  PK: endpointDeliveryPartition(endpointId),
  SK: `${endpointDeliverySkPrefix}${deliveryId}`,
});

/**
 * A team's usage rollups (GET /usage; functions/store/usage.ts), added to by the transaction that
 * settles each run: a `cell` partition per team (one item per UTC day and combination of workflow,
 * key, first tag and project, `group` a digest of the four) and a `model` partition (one item per
 * day and model that charged). Sorted by day, so a period is one Query of a partition; the day is
 * the sort key's first 10 characters.
 */
export type UsagePart = 'cell' | 'model';
export const usagePartition = (teamId: string, part: UsagePart) => `USAGE#${teamId}#${part}`;
export const usageKey = (teamId: string, part: UsagePart, day: string, group: string) => ({
  PK: usagePartition(teamId, part),
  SK: `${day}#${group}`,
});

/**
 * A bulk action (POST /runs/cancel) and, in its partition, one marker per run or deferred run it
 * took up (`target`: `RUN#<jobId>` or `DEFERRED#<id>`), which counts each once however often its page comes.
 */
export const bulkActionPartition = (bulkActionId: string) => `BULK#${bulkActionId}`;
export const bulkActionKey = (bulkActionId: string) => ({ PK: bulkActionPartition(bulkActionId), SK: 'BULK' });
export const bulkTargetKey = (bulkActionId: string, target: string) => ({
  PK: bulkActionPartition(bulkActionId),
  SK: `TARGET#${target}`,
});

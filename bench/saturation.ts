/**
 * Saturation: 10-step chain runs started over HTTP at a rising rate, run by the real step executor
 * behind queue pollers, until the stack stops keeping up; then what gave out (docs/operations.md,
 * "Capacity"). Each level offers `rate` starts a second for `BENCH_SATURATION_SECONDS` (default 4)
 * and waits a drain window for the runs it started; a level is kept up with when every start was
 * accepted, every accepted run ended within the window, and the runs' median time to end is under
 * three times the first level's. The first level that is not is the saturation point, named by its
 * signal: starts refused (429: a rate limit; 503: contention on the team's items), runs left
 * unfinished with the steps queue backed up (the step consumers), or the time to end grown (the
 * table, here DynamoDB Local on this machine's cores).
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../functions/deps.ts';
import { runKey } from '../functions/store/keys.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { heading, line, note } from './report.ts';
import { createChainWorkflows, seedRunsTeam } from './seed.ts';
import type { ServerProcess } from './server-process.ts';
import { median, ms } from './stats.ts';

export interface SaturationContext {
  deps: Deps;
  resources: LocalResources;
  server: ServerProcess;
  cleanups: (() => Promise<void> | void)[];
  /** Starts a second at each level, rising. */
  rates: readonly number[];
  /** Seconds each level offers its rate. */
  seconds: number;
  /** Queue pollers in this process (each as one of the step consumer's concurrent batches). */
  pollers: number;
  chainLength: number;
}

export interface SaturationLevel {
  rate: number;
  offered: number;
  accepted: number;
  refused: Record<number, number>;
  ended: number;
  endMedianMs: number;
  backlog: number;
}

const endedStatuses = new Set(['completed', 'failed', 'cancelled', 'stopped']);
const sleep = (msToWait: number) => new Promise((resolve) => setTimeout(resolve, msToWait));

/** Why a level was not kept up with, or undefined when it was. */
export const saturationOf = (level: SaturationLevel, firstMedianMs: number): string | undefined => {
  const refused = (code: number) => level.refused[code] ?? 0;
  if (refused(429) > 0) return `starts refused 429 (${refused(429)}): a rate limit, the key's or the stage's`;
  if (refused(503) > 0) return `starts refused 503 (${refused(503)}): contention on the team's items`;
  const other = Object.entries(level.refused).filter(([code]) => code !== '429' && code !== '503');
  if (other.length > 0) return `starts refused ${other.map(([c, n]) => `${c}×${n}`).join(' ')}`;
  if (level.ended < level.accepted)
    return `${level.accepted - level.ended} runs unfinished, ${level.backlog} messages on the steps queue: the step consumers`;
  if (level.endMedianMs > 3 * firstMedianMs)
    return `runs take ${(level.endMedianMs / firstMedianMs).toFixed(1)}× the first level's time: the table (DynamoDB Local) and this machine's cores`;
  return undefined;
};

export const benchSaturation = async (ctx: SaturationContext) => {
  const { deps, resources, server, rates, seconds } = ctx;
  heading(
    `Saturation: ${ctx.chainLength}-step chains started at ${rates.join(', ')} a second, ${seconds} s each, ` +
      `${ctx.pollers} step pollers (each one of the step consumer's concurrent batches of 10)`,
  );
  const team = await seedRunsTeam(deps, 10_000_000);
  // A run locks its workflow: enough workflows for every run a level can have in flight.
  const workflowCount = Math.ceil(Math.max(...rates) * seconds);
  const free = await createChainWorkflows(deps, server.baseUrl, team, workflowCount, ctx.chainLength);
  const pollerDeps = localDeps(resources);
  const pollers = Array.from({ length: ctx.pollers }, () =>
    startQueuePoller({
      endpoint: resources.sqsS3Endpoint,
      queueUrl: resources.queueUrls.Steps,
      definition: stepsQueue,
      handler: makeHandler(pollerDeps),
      waitSeconds: 1,
    }),
  );
  const stop = async () => {
    await Promise.all(pollers.map((p) => p.stop()));
    pollerDeps.ddb.destroy();
    pollerDeps.sqs.destroy();
    pollerDeps.s3.destroy();
  };
  ctx.cleanups.push(stop);

  const endOf = async (jobId: string) => {
    const { Item } = await deps.ddb.send(
      new GetCommand({ TableName: deps.tableName, Key: runKey(jobId), ConsistentRead: true }),
    );
    return Item && endedStatuses.has(String(Item.status)) && Item.endedAt
      ? Date.parse(String(Item.endedAt)) - Date.parse(String(Item.createdAt))
      : undefined;
  };
  const levels: SaturationLevel[] = [];
  let saturated: { level: SaturationLevel; why: string } | undefined;
  try {
    for (const rate of rates) {
      const level: SaturationLevel = {
        rate,
        offered: 0,
        accepted: 0,
        refused: {},
        ended: 0,
        endMedianMs: 0,
        backlog: 0,
      };
      const jobs: { jobId: string; workflowId: string }[] = [];
      const starts: Promise<void>[] = [];
      const began = performance.now();
      for (let i = 0; i < rate * seconds; i++) {
        const due = began + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const workflowId = free.shift();
        level.offered += 1;
        if (!workflowId) {
          level.refused[409] = (level.refused[409] ?? 0) + 1;
          continue;
        }
        starts.push(
          fetch(`${server.baseUrl}/workflows/${workflowId}/runs`, {
            method: 'POST',
            headers: { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' },
            body: '{}',
          }).then(async (response) => {
            const body = (await response.json()) as { jobId?: string };
            if (response.status === 200 && body.jobId) {
              level.accepted += 1;
              jobs.push({ jobId: body.jobId, workflowId });
            } else {
              level.refused[response.status] = (level.refused[response.status] ?? 0) + 1;
              free.push(workflowId);
            }
          }),
        );
      }
      await Promise.all(starts);
      // The drain window: as long as the level again, and at least 10 s.
      const deadline = Date.now() + Math.max(10, seconds) * 1000;
      const times = new Map<string, number>();
      while (times.size < jobs.length && Date.now() < deadline) {
        for (const { jobId } of jobs) {
          if (times.has(jobId)) continue;
          const took = await endOf(jobId);
          if (took !== undefined) times.set(jobId, took);
        }
        if (times.size < jobs.length) await sleep(250);
      }
      const { Attributes } = await deps.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: resources.queueUrls.Steps,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      level.backlog =
        Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
      level.ended = times.size;
      level.endMedianMs = median([...times.values()]);
      for (const { jobId, workflowId } of jobs) if (times.has(jobId)) free.push(workflowId);
      levels.push(level);
      const refused = Object.entries(level.refused)
        .map(([code, n]) => `${code}×${n}`)
        .join(' ');
      line(
        `  ${rate}/s: ${level.accepted} of ${level.offered} started${refused ? ` (refused ${refused})` : ''}, ${level.ended} ended`,
        `median ${ms(level.endMedianMs)}, backlog ${level.backlog}`,
      );
      const why = saturationOf(level, levels[0]?.endMedianMs ?? level.endMedianMs);
      if (why) {
        saturated = { level, why };
        break;
      }
    }
  } finally {
    await stop();
  }
  const kept = levels.filter((l) => l !== saturated?.level).at(-1);
  line('kept up with, at most', kept ? `${kept.rate} runs/s` : 'none');
  line('saturates at', saturated ? `${saturated.level.rate} runs/s: ${saturated.why}` : 'not within the rates offered');
  note(
    'One machine: the API, the emulators and the pollers share its cores, so the point is where this stack gives out, ' +
      "not AWS's; docs/operations.md, Capacity, derives the deployed stage's ceilings from the per-step figures and the quotas.",
  );
  return { levels, saturated };
};

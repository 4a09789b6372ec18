/**
 * POST /workflows/{id}/estimate and POST /agents/{id}/estimate (our design), through the local API
 * and the real handlers against the emulators: the estimate is what the start that follows holds,
 * or the refusal it answers; nothing is held, written or counted; the multipliers of the next 24
 * UTC hours, on a fixed clock (the clock is an edge).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import { toHundredths } from '../functions/domain/credits.ts';
import { idempotencyKeyHash } from '../functions/domain/idempotency-key.ts';
import { applyMultiplier } from '../functions/domain/pricing.ts';
import { findIdempotentAnswer } from '../functions/store/idempotency.ts';
import { setHourlySchedule, setLiveMultiplier } from '../functions/store/price-multiplier.ts';
import { setStorageQuota } from '../functions/store/stored-bytes.ts';
import { createProject, setPerStepLimit } from '../functions/store/tenancy.ts';
import { createClient } from '../packages/client/src/index.ts';
import { modelSteps, smokeModelTypes } from '../packages/client/src/smoke/models.ts';
import { createWorkflowExamples } from '../schemas/workflows.ts';
import { runCli } from './support/cli.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import { diamondSteps, ledgerOf, pairSteps } from './support/runs.ts';
import {
  addKey,
  call,
  chainSteps,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  seedUnthrottledTeam,
  startTestStack,
  type TestStack,
} from './support/stack.ts';
import * as files from './support/upload-files.ts';

let stack: TestStack;
// 03:20 UTC: the hour in force is 3, the next 24 start at 04:00.
let clockMs = Date.parse('2026-11-22T03:20:00.000Z');
const doc = buildOpenApiDocument();
beforeAll(async () => {
  stack = await startTestStack({ now: () => new Date(clockMs) });
});
afterAll(() => stack.close());

type Body = Record<string, unknown>;

/** POST `path` with `body`, its answer checked against the document. */
const post = async (key: string, path: string, body: Body = {}, headers: Record<string, string> = {}) => {
  const answer = await call(stack.baseUrl, path, { key, method: 'POST', body, headers });
  expectValidResponse(doc, { method: 'POST', path, status: answer.status, body: answer.body });
  return answer;
};
const estimate = (key: string, workflowId: string, body: Body = {}, headers: Record<string, string> = {}) =>
  post(key, `/workflows/${workflowId}/estimate`, body, headers);
const start = (key: string, workflowId: string, body: Body = {}) => post(key, `/workflows/${workflowId}/runs`, body);

const hundredthsOf = (credits: unknown) => toHundredths(credits as number);

/** What nothing-held means, read: the ledger, the runs, the key's month. */
const traces = async (team: SeededTeam) => ({
  ledger: await ledgerOf(stack.deps, team.teamId),
  runs: (await call(stack.baseUrl, '/runs', { key: team.key })).body.runs,
  credits: (await call(stack.baseUrl, '/credits', { key: team.key })).body,
});

const { image, python, textChain } = createWorkflowExamples;
const workflows: Record<string, unknown[]> = {
  chain: chainSteps,
  diamond: diamondSteps,
  pair: pairSteps,
  textChain: textChain.value.steps,
  python: python.value.steps,
  image: image.value.steps,
  bigLlm: [
    { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
    { key: 'llm', type: 'LlmWorker', config: { maxTokens: 4000 }, inputs: ['topic'] },
  ],
};
const bodies: Body[] = [
  {},
  { mode: 'draft' },
  { mode: 'preview' },
  { inputs: { topic: 'sea otters, in some detail' }, tags: ['estimate'] },
];

describe('POST /workflows/{id}/estimate', () => {
  beforeAll(async () => {
    await setLiveMultiplier(stack.deps, null);
    await setHourlySchedule(
      stack.deps,
      Array.from({ length: 24 }, () => 1),
    );
  });

  it('equals the estimatedCredits of the start that follows it, or the refusal that start answers, over workflows and modes', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 10_000);
    let started = 0;
    let refused = 0;
    // And a workflow of each model node type at its cheapest settings (the smoke run's), as built and in draft.
    const cases: [string, unknown[], Body[]][] = [
      ...Object.entries(workflows).map(([name, steps]): [string, unknown[], Body[]] => [name, steps, bodies]),
      ...smokeModelTypes.map((type): [string, unknown[], Body[]] => [type, modelSteps(type), [{}, { mode: 'draft' }]]),
    ];
    for (const [name, steps, namedBodies] of cases) {
      for (const body of namedBodies) {
        // A new workflow each time: the start before it holds the lock.
        const workflowId = await createWorkflow(stack, team, steps, name);
        const priced = await estimate(team.key, workflowId, body);
        expect(priced.status, JSON.stringify(priced.body)).toBe(200);
        const steps_ = priced.body.steps as { nodeId: string; estimatedCredits: number }[];
        // The steps' parts sum exactly (in hundredths) to the total.
        expect(steps_.reduce((sum, s) => sum + hundredthsOf(s.estimatedCredits), 0)).toBe(
          hundredthsOf(priced.body.estimatedCredits),
        );
        expect(steps_).toHaveLength(steps.length);
        const answer = await start(team.key, workflowId, body);
        const refusal = priced.body.refusal as { status: number; body: unknown } | null;
        if (refusal === null) {
          expect(answer.status, `${name} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`).toBe(200);
          expect(answer.body.estimatedCredits).toBe(priced.body.estimatedCredits);
          started++;
        } else {
          expect({ status: answer.status, body: answer.body }).toEqual(refusal);
          refused++;
        }
      }
    }
    // The examples start (most) and a draft prices lower than production.
    expect(started).toBeGreaterThan(refused);
    const chain = await createWorkflow(stack, team, chainSteps, 'modes');
    const production = await estimate(team.key, chain);
    const draft = await estimate(team.key, chain, { mode: 'draft' });
    expect(draft.body.estimatedCredits).toBeLessThan(production.body.estimatedCredits as number);
  });

  it('shows a team short of credits the 402 a start answers, holding, writing and counting nothing', async () => {
    const team = await seedTeam(stack.deps, {
      credits: 1,
      key: { monthlyCapHundredths: 10_000, rateLimitPerMinute: 1000 },
    });
    const workflowId = await createWorkflow(stack, team);
    const before = await traces(team);
    const priced = await estimate(team.key, workflowId, {}, { 'Idempotency-Key': 'estimate-short' });
    expect(priced.status).toBe(200);
    expect(priced.body).toMatchObject({
      workflowId,
      estimatedCredits: 2.03,
      refusal: { status: 402, body: { error: 'Insufficient credits', required: 2.03, balance: 1 } },
      licence: { commercial_use: expect.any(String) },
    });
    const after = await traces(team);
    expect(after).toEqual(before);
    expect(before.runs).toEqual([]);
    expect((before.credits as Body).key).toMatchObject({ spentThisMonth: 0 });
    const { keyId } = team;
    expect(await findIdempotentAnswer(stack.deps, keyId, idempotencyKeyHash('estimate-short'))).toBeUndefined();
    // The start says exactly that.
    const answer = await start(team.key, workflowId);
    expect({ status: answer.status, body: answer.body }).toEqual(priced.body.refusal);
  });

  it('answers the other 402s, the 422s and the storage quota as the start would, each its own', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team);
    const same = async (body: Body, status: number) => {
      const priced = await estimate(team.key, workflowId, body);
      expect((priced.body.refusal as Body | null)?.status, JSON.stringify(priced.body.refusal)).toBe(status);
      const answer = await start(team.key, workflowId, body);
      expect({ status: answer.status, body: answer.body }).toEqual(priced.body.refusal);
    };
    await same({ inputs: { nope: 'x' } }, 422);
    await setPerStepLimit(stack.deps, team.teamId, 100);
    await same({}, 402);
    await setPerStepLimit(stack.deps, team.teamId, null);
    // The project hard cap, through an agent of a capped project.
    const { projectId } = await createProject(stack.deps, {
      teamId: team.teamId,
      name: 'Capped',
      hardCapHundredths: 100,
    });
    const capped = await call(stack.baseUrl, '/workflows', {
      key: team.key,
      method: 'POST',
      body: { name: 'Capped', steps: chainSteps, projectId },
    });
    const cappedId = capped.body.workflowId as string;
    const priced = await estimate(team.key, cappedId);
    expect(priced.body.refusal).toMatchObject({ status: 402, body: { error: 'Project hard cap exceeded' } });
  });

  it('shows the 409 of a busy workflow, and a run then starts as estimated once it may', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team);
    const first = await start(team.key, workflowId);
    expect(first.status).toBe(200);
    const priced = await estimate(team.key, workflowId);
    expect(priced.body.refusal).toEqual({
      status: 409,
      body: { error: 'This workflow already has a run in progress', activeJobId: first.body.jobId },
    });
    expect(priced.body.estimatedCredits).toBe(first.body.estimatedCredits);
    const second = await start(team.key, workflowId);
    expect({ status: second.status, body: second.body }).toEqual(priced.body.refusal);
    // A team short of credits on a busy workflow: the 409 first, as the start answers.
    const poor = await seedUnthrottledTeam(stack.deps, 2.03);
    const poorFlow = await createWorkflow(stack, poor);
    expect((await start(poor.key, poorFlow)).status).toBe(200);
    const busyAndPoor = await estimate(poor.key, poorFlow);
    expect((busyAndPoor.body.refusal as Body).status).toBe(409);
    expect((await start(poor.key, poorFlow)).status).toBe(409);
  });

  it('answers the 404 of an unknown or another team’s workflow, and the 403 of a key limited to others', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const other = await seedUnthrottledTeam(stack.deps, 100);
    const theirs = await createWorkflow(stack, other);
    const mine = await createWorkflow(stack, team);
    expect((await estimate(team.key, theirs)).status).toBe(404);
    expect((await estimate(team.key, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [theirs] });
    const refused = await estimate(limited.key, mine);
    expect([refused.status, refused.body]).toEqual([403, { error: 'Workflow not permitted for this key' }]);
    const reader = await addKey(stack.deps, team.teamId, { scopes: ['runs:read'] });
    expect((await estimate(reader.key, mine)).status).toBe(403);
  });

  it('estimates an agent’s workflow as its start runs it; an unknown agent is a 404', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team);
    const priced = await post(team.key, `/agents/${team.agentId}/estimate`, { mode: 'draft' });
    expect(priced.status).toBe(200);
    expect(priced.body).toMatchObject({ workflowId, refusal: null });
    const started = await post(team.key, `/agents/${team.agentId}/runs`, { mode: 'draft' });
    expect(started.body).toMatchObject({ workflowId, estimatedCredits: priced.body.estimatedCredits });
    const missing = await post(team.key, '/agents/00000000-0000-4000-8000-000000000000/estimate');
    expect(missing.status).toBe(404);
  });

  it('counts once against the rate limit', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team);
    const twice = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 2 });
    expect((await estimate(twice.key, workflowId)).status).toBe(200);
    expect((await estimate(twice.key, workflowId)).status).toBe(200);
    expect((await estimate(twice.key, workflowId)).status).toBe(429);
  });
});

describe('the multipliers of the next 24 UTC hours', () => {
  // Hour 3 (in force) 1.0; hours 4 and 5 1.5; 6 0.5; the rest 0.8.
  const schedule = Array.from({ length: 24 }, (_, hour) =>
    hour === 3 ? 1 : hour === 4 || hour === 5 ? 1.5 : hour === 6 ? 0.5 : 0.8,
  );
  beforeAll(async () => {
    await setLiveMultiplier(stack.deps, null);
    await setHourlySchedule(stack.deps, schedule);
  });
  afterAll(async () => {
    await setHourlySchedule(
      stack.deps,
      Array.from({ length: 24 }, () => 1),
    );
  });

  it('answers the multiplier in force and each of the next 24 hours, with the run’s price at each', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team);
    const priced = await estimate(team.key, workflowId);
    // Started now, a run is priced at 1 whatever the multiplier: the chain's 1 + 1 + 200 + 1.
    expect(priced.body.estimatedCredits).toBe(2.03);
    const multipliers = priced.body.multipliers as {
      inForce: { startsAt: string; multiplier: number; estimatedCredits: number };
      hours: { startsAt: string; multiplier: number; estimatedCredits: number }[];
    };
    expect(multipliers.inForce).toEqual({
      startsAt: new Date(clockMs).toISOString(),
      multiplier: 1,
      estimatedCredits: 2.03,
    });
    expect(multipliers.hours).toHaveLength(24);
    const prices = [1, 1, 200, 1];
    multipliers.hours.forEach((hour, i) => {
      const startsAt = Date.parse('2026-11-22T04:00:00.000Z') + i * 3_600_000;
      const multiplier = schedule[new Date(startsAt).getUTCHours()] as number;
      expect(hour).toEqual({
        startsAt: new Date(startsAt).toISOString(),
        multiplier,
        estimatedCredits: prices.reduce((sum, p) => sum + applyMultiplier(p, multiplier), 0) / 100,
      });
    });
    expect(multipliers.hours.map((h) => h.estimatedCredits).slice(0, 4)).toEqual([3.06, 3.06, 1.03, 1.63]);
    expect(priced.body).not.toHaveProperty('deferredStart');

    // A live multiplier holds every hour until it is cleared.
    await setLiveMultiplier(stack.deps, 0.7);
    const live = (await estimate(team.key, workflowId)).body.multipliers as typeof multipliers;
    expect(new Set([live.inForce, ...live.hours].map((h) => h.multiplier))).toEqual(new Set([0.7]));
    await setLiveMultiplier(stack.deps, null);
  });

  it('prices a deferred run at the hour it would start, or at maxMultiplier when none of its wait reaches it', async () => {
    const team = await seedTeam(stack.deps, { credits: 1, key: { rateLimitPerMinute: 1000 } });
    const workflowId = await createWorkflow(stack, team);
    const at = async (maxMultiplier: number) =>
      (await estimate(team.key, workflowId, { defer: true, maxMultiplier })).body;
    // 0.8 is first reached at 06:00 (0.5): the dispatcher starts it at its first tick there.
    expect(await at(0.8)).toMatchObject({
      deferredStart: { startsAt: '2026-11-22T06:00:00.000Z', multiplier: 0.5 },
      estimatedCredits: 1.03,
      // A deferred start holds nothing now: a team short of credits is not refused now.
      refusal: null,
    });
    // 1.0 is in force now.
    expect(await at(1)).toMatchObject({
      deferredStart: { startsAt: new Date(clockMs).toISOString(), multiplier: 1 },
      estimatedCredits: 2.03,
    });
    // No hour reaches 0.4: it would expire; priced at the most a dispatch could hold.
    expect(await at(0.4)).toMatchObject({ deferredStart: null, estimatedCredits: 0.83 });
    const deferred = await start(team.key, workflowId, { defer: true, maxMultiplier: 0.8 });
    expect(deferred.status).toBe(202);
  });
});

describe('the client and the CLI', () => {
  it('estimate and estimateAgent answer the route’s body; `workflow-run estimate` prints it', async () => {
    await setHourlySchedule(
      stack.deps,
      Array.from({ length: 24 }, () => 1),
    );
    const team = await seedUnthrottledTeam(stack.deps, 1);
    const workflowId = await createWorkflow(stack, team);
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const priced = await client.estimate(workflowId, { mode: 'production' });
    expect(priced).toMatchObject({ workflowId, estimatedCredits: 2.03, refusal: { status: 402 } });
    expect(priced.multipliers.hours).toHaveLength(24);
    expect(await client.estimateAgent(team.agentId)).toEqual(priced);

    const json = await runCli({ baseUrl: stack.baseUrl, key: team.key }, ['--json', 'estimate', workflowId]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(priced);
    const plain = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      'estimate',
      '--agent',
      team.agentId,
      '--mode',
      'draft',
    ]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain(`workflowId: ${workflowId}`);
    // A draft fits the team's 1 credit: no refusal.
    expect(plain.stdout).toMatch(/^refusal: -$/m);
    expect(plain.stdout).toMatch(/^estimatedCredits: 0\.1$/m);
    expect(plain.stdout).toMatch(/^ {2}llm \(LlmWorker\): /m);
    const upload = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      'estimate',
      workflowId,
      '--input',
      'topic=@x.png',
    ]);
    expect(upload.code).toBe(2);
  });
});

describe('file inputs', () => {
  // A presigned upload is checked against the storage's own clock: these run at the time it is.
  beforeAll(() => {
    clockMs = Date.now();
  });
  /** ImageLoader (its apiInputKey `photo`) → Upscaler → ImageGallery. */
  const upscaleSteps = [
    { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
    { key: 'up', type: 'Upscaler', config: { scale: 4 }, inputs: ['photo'] },
    { key: 'show', type: 'ImageGallery', inputs: ['up'] },
  ];
  /** Declares a file and sends its bytes as the answer says: its id. */
  const upload = async (team: SeededTeam, name: string, contentType: string, bytes: Uint8Array) => {
    const declared = await call(stack.baseUrl, '/files', {
      key: team.key,
      method: 'POST',
      body: { name, contentType, size: bytes.length },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    const { method, url, headers } = declared.body.upload as {
      method: string;
      url: string;
      headers: Record<string, string>;
    };
    const { 'content-length': _, ...rest } = headers;
    const sent = await fetch(url, { method, headers: rest, body: bytes });
    expect(sent.status, await sent.text()).toBe(200);
    return declared.body.fileId as string;
  };
  const storedBytes = async (team: SeededTeam) => (await call(stack.baseUrl, '/storage', { key: team.key })).body;

  it('checks an upload as the start does: a usable one, a rejected one, and copies past the storage quota', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team, upscaleSteps, 'Upscale');
    const cat = files.png(5, 3);
    const good = await upload(team, 'cat.png', 'image/png', cat);
    const before = await storedBytes(team);
    // Past the quota by the copy: the start would refuse it when it copies; the estimate says so first.
    await setStorageQuota(stack.deps, team.teamId, (before.usedBytes as number) + cat.length - 1);
    const tight = await estimate(team.key, workflowId, { inputs: { photo: good } });
    expect(tight.body.refusal).toMatchObject({
      status: 409,
      body: { error: 'Storage quota reached', neededBytes: cat.length },
    });
    expect(await storedBytes(team)).toEqual({ ...before, quotaBytes: (before.usedBytes as number) + cat.length - 1 });
    const refused = await start(team.key, workflowId, { inputs: { photo: good } });
    expect({ status: refused.status, body: refused.body }).toEqual(tight.body.refusal);

    await setStorageQuota(stack.deps, team.teamId, null);
    const priced = await estimate(team.key, workflowId, { inputs: { photo: good } });
    expect(priced.body.refusal).toBeNull();
    // Nothing copied or counted by the estimate.
    expect((await storedBytes(team)).usedBytes).toBe(before.usedBytes);
    const started = await start(team.key, workflowId, { inputs: { photo: good } });
    expect(started.body.estimatedCredits).toBe(priced.body.estimatedCredits);

    // Bytes that are no image: the upload is rejected when read, and both answer its 422.
    const other = await createWorkflow(stack, team, upscaleSteps, 'Upscale 2');
    const fake = await upload(team, 'fake.png', 'image/png', files.plainText());
    const rejected = await estimate(team.key, other, { inputs: { photo: fake } });
    expect(rejected.body.refusal).toMatchObject({ status: 422, body: { key: 'photo' } });
    const again = await start(team.key, other, { inputs: { photo: fake } });
    expect({ status: again.status, body: again.body }).toEqual(rejected.body.refusal);
  });
});

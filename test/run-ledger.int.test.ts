/**
 * A model-based property test of the credit ledger (spec 1, 3.1; docs/architecture.md, "Money"): random run starts
 * on several workflows (HTTP), step executions and failures (the real step-executor handler fed
 * the messages the service queued), redeliveries and cancellations (HTTP). After every command the
 * team's ledger is what the model predicts, `balance + held + charged = granted`, the team's `held`
 * is what its running runs hold plus what their steps charged (the team item settles once, at a
 * run's end), each run's `held + charged` is its estimate, and nothing is negative. Workflows with
 * a random `modelInput` are created among the commands: one whose fields may not pass is refused
 * (422 naming each) and moves nothing; one of a shape runs with `modelInput` at its priced work.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sumUsage, usageDay, usageDimensions } from '../functions/domain/usage.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { safeModelInputFields } from '../functions/nodes/providers/model-input.ts';
import { batchGet, itemFor } from '../functions/store/batch.ts';
import { RunItemSchema } from '../functions/store/items/runs.ts';
import { TeamItemSchema } from '../functions/store/items/tenancy.ts';
import { runKey, teamKey } from '../functions/store/keys.ts';
import { readStorageUsage } from '../functions/store/stored-bytes.ts';
import { balanceOf } from '../functions/store/tenancy.ts';
import { uploadObjectKey } from '../functions/store/uploads.ts';
import { readUsageItems } from '../functions/store/usage.ts';
import {
  api,
  cancelRunCall,
  deliver,
  diamondPrices,
  diamondSteps,
  expectBalanced,
  type StepHandler,
  type StepMessage,
  startRunCall,
  stepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import {
  call,
  chainSteps,
  createWorkflow,
  seedUnthrottledTeam,
  startTestStack,
  type TestStack,
} from './support/stack.ts';
import * as files from './support/upload-files.ts';

let stack: TestStack;
let succeed: StepHandler;
let fail: StepHandler;
beforeAll(async () => {
  stack = await startTestStack();
  succeed = stepHandler(stack.deps);
  fail = stepHandler(stack.deps, () => async () => {
    throw new StepFailedError('the provider refused the request');
  });
});
afterAll(() => stack.close());

/** `n` ImageLoaders, each fed by its own input key (`photo0`…), all named the same upload. */
const loaders = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ key: `l${i}`, type: 'ImageLoader', config: { apiInputKey: `photo${i}` } }));
const fileShape = (n: number) => ({
  steps: loaders(n),
  prices: Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, 1])),
  fileKeys: n,
});

/**
 * The workflows every property run gets, with each step's production price in hundredths; a shape
 * with `fileKeys` is started with a new upload named by each of its input keys.
 */
const shapes: { steps: unknown[]; prices: Record<string, number>; fileKeys?: number }[] = [
  { steps: chainSteps, prices: { topic: 1, prompt: 1, llm: 200, show: 1 } },
  {
    steps: [
      { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
      { key: 'out', type: 'TextConsole', inputs: ['in'] },
    ],
    prices: { in: 1, out: 1 },
  },
  { steps: diamondSteps, prices: diamondPrices },
  // modelInput that adds no work: priced as the step's own settings say (1,000 tokens by default).
  {
    steps: [
      { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
      { key: 'llm', type: 'LlmWorker', inputs: ['in'], config: { modelInput: { temperature: 0.2, seed: 3 } } },
    ],
    prices: { in: 1, llm: 200 },
  },
  // Uploads named by 1, 2 and 3 input keys: one copy per run, counted in the team's stored bytes.
  fileShape(1),
  fileShape(2),
  fileShape(3),
];
const png = files.png(16, 16);
const grantedHundredths = 500; // two dear runs fit at once, a third does not

interface ModelRun {
  jobId: string;
  shape: number;
  status: 'active' | 'completed' | 'failed' | 'cancelled' | 'stopped';
  held: number;
  charged: number;
  done: Set<string>;
  /** A resume's new run: it shares its original's input copies. */
  resumed?: boolean;
  /** Steps a resume carried over (in `done` from the start, never executed in this run). */
  carried?: number;
}

interface Model {
  balance: number;
  charged: number;
  runs: ModelRun[];
  /** Whether each workflow has a run in progress. */
  busy: boolean[];
  /** Deferred requests, and whether each was cancelled. */
  deferred: { id: string; cancelled: boolean }[];
}

interface Real {
  teamId: string;
  key: string;
  agentId: string;
  workflowIds: string[];
  /** Step messages the service queued and nobody delivered yet. */
  pending: StepMessage[];
  /** Messages delivered at least once (a redelivery picks one). */
  delivered: StepMessage[];
  /** The uploads declared so far. */
  uploads: string[];
}

/** The bytes the bucket holds for the team: its uploads and everything under `teams/<team>/` (`prefix` below it). */
const bucketBytes = async (real: Real, prefix = '') => {
  let bytes = 0;
  const prefixes = prefix
    ? [`teams/${real.teamId}/${prefix}`]
    : [`teams/${real.teamId}/`, uploadObjectKey(real.teamId, '')];
  for (const Prefix of prefixes) {
    let token: string | undefined;
    do {
      const page = await stack.deps.s3.send(
        new ListObjectsV2Command({ Bucket: stack.resources.bucket, Prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) bytes += object.Size ?? 0;
      token = page.NextContinuationToken;
    } while (token);
  }
  return bytes;
};

/** Declares and sends an upload of the test's PNG; its id. */
const upload = async (real: Real) => {
  const declared = await call(stack.baseUrl, '/files', {
    key: real.key,
    method: 'POST',
    body: { name: 'in.png', contentType: 'image/png', size: png.length },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(201);
  const { method, url, headers } = declared.body.upload as {
    method: string;
    url: string;
    headers: Record<string, string>;
  };
  const { 'content-length': _, ...rest } = headers;
  expect((await fetch(url, { method, headers: rest, body: png })).status).toBe(200);
  const fileId = declared.body.fileId as string;
  real.uploads.push(fileId);
  return fileId;
};

/** A run start's body for `shape`: its file keys naming a new upload. */
const startBody = async (real: Real, shape: number) => {
  const keys = shapes[shape]?.fileKeys;
  if (!keys) return undefined;
  const fileId = await upload(real);
  return { inputs: Object.fromEntries(Array.from({ length: keys }, (_, i) => [`photo${i}`, fileId])) };
};

/** The team's `held`: each running run's whole estimate (its steps' charges settle at its end). */
const held = (model: Model) =>
  model.runs.reduce((sum, run) => sum + (run.status === 'active' ? run.held + run.charged : 0), 0);

const endRun = (model: Model, run: ModelRun, status: ModelRun['status']) => {
  model.balance += run.held;
  model.charged += run.charged;
  run.held = 0;
  run.status = status;
  model.busy[run.shape] = false;
};

/** Moves what the service queued onto `pending`, then checks the ledger against the model. */
const settle = async (model: Model, real: Real) => {
  const jobIds = new Set(model.runs.map((r) => r.jobId));
  real.pending.push(...(await takeStepMessages(stack.deps)).filter((m) => jobIds.has(m.jobId)));
  const items = await batchGet(stack.deps, [teamKey(real.teamId), ...model.runs.map((r) => runKey(r.jobId))]);
  const ledger = balanceOf(itemFor(items, teamKey(real.teamId), TeamItemSchema));
  expectBalanced(ledger);
  expect(ledger).toEqual({
    balance: model.balance,
    held: held(model),
    charged: model.charged,
    granted: grantedHundredths,
  });
  let runsHeld = 0;
  for (const run of model.runs) {
    const item = itemFor(items, runKey(run.jobId), RunItemSchema);
    expect(item?.heldHundredths).toBeGreaterThanOrEqual(0);
    expect({ status: item?.status, held: item?.heldHundredths, charged: item?.chargedHundredths }).toEqual({
      status: run.status === 'active' ? (run.done.size > (run.carried ?? 0) ? 'processing' : 'queued') : run.status,
      held: run.held,
      charged: run.charged,
    });
    if (run.status === 'active') runsHeld += (item?.heldHundredths ?? 0) + (item?.chargedHundredths ?? 0);
  }
  expect(runsHeld).toBe(ledger.held);
  // The usage rollups, written by the same settlements: every grouping sums to what the team was charged.
  const day = (offset: number) => usageDay(new Date(Date.now() + offset * 86_400_000));
  for (const groupBy of usageDimensions) {
    const rows = sumUsage(await readUsageItems(stack.deps, real.teamId, groupBy, day(-1), day(1)));
    expect(
      rows.reduce((sum, row) => sum + row.chargedHundredths, 0),
      `usage by ${groupBy}`,
    ).toBe(ledger.charged);
  }
  // Stored bytes: what the bucket holds for the team never exceeds what its counter holds.
  const stored = await bucketBytes(real);
  const counted = (await readStorageUsage(stack.deps, real.teamId)).usedBytes;
  expect(stored).toBeLessThanOrEqual(counted);
  // Input copies: at most one per file run started (each names one upload), none for a deferred request.
  const fileRuns = model.runs.filter((r) => shapes[r.shape]?.fileKeys !== undefined && !r.resumed).length;
  expect(await bucketBytes(real, 'inputs/')).toBeLessThanOrEqual(fileRuns * png.length);
};

/** One command of the run: `pick` is what it acts on (a shape, a message or a run, by its index). */
abstract class LedgerCommand implements fc.AsyncCommand<Model, Real> {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check(_model: Readonly<Model>) {
    return true;
  }
  abstract run(model: Model, real: Real): Promise<void>;
  abstract toString(): string;
}

/** Starts a run of shape `pick`. */
class Start extends LedgerCommand {
  async run(model: Model, real: Real) {
    const body = await startBody(real, this.pick);
    const answer = await startRunCall(stack.baseUrl, real.key, real.workflowIds[this.pick] as string, body);
    const price = Object.values(shapes[this.pick]?.prices ?? {}).reduce((a, b) => a + b, 0);
    if (model.busy[this.pick]) {
      expect(answer.status).toBe(409);
    } else if (model.balance < price) {
      expect([answer.status, answer.body]).toEqual([
        402,
        { error: 'Insufficient credits', required: price / 100, balance: model.balance / 100 },
      ]);
    } else {
      expect(answer.status).toBe(200);
      model.runs.push({
        jobId: answer.body.jobId as string,
        shape: this.pick,
        status: 'active',
        held: price,
        charged: 0,
        done: new Set(),
      });
      model.balance -= price;
      model.busy[this.pick] = true;
    }
    await settle(model, real);
  }
  toString() {
    return `start(${this.pick})`;
  }
}

/** Delivers a pending step message: the node succeeds, or fails (StepFailedError). */
class Execute extends LedgerCommand {
  readonly failing: boolean;
  constructor(pick: number, failing: boolean) {
    super(pick);
    this.failing = failing;
  }
  async run(model: Model, real: Real) {
    if (real.pending.length === 0) return;
    const [message] = real.pending.splice(this.pick % real.pending.length, 1) as [StepMessage];
    expect(await deliver(this.failing ? fail : succeed, [stepRecord(message)])).toEqual([]);
    real.delivered.push(message);
    const run = model.runs.find((r) => r.jobId === message.jobId) as ModelRun;
    if (run.status === 'active' && !run.done.has(message.nodeId)) {
      const prices = shapes[run.shape]?.prices ?? {};
      if (this.failing) {
        endRun(model, run, 'failed');
      } else {
        const price = prices[message.nodeId] ?? 0;
        run.done.add(message.nodeId);
        run.held -= price;
        run.charged += price;
        if (run.done.size === Object.keys(prices).length) {
          endRun(model, run, 'completed');
          if (shapes[run.shape]?.fileKeys !== undefined) hits.fileRunsEnded += 1;
        }
      }
    }
    await settle(model, real);
  }
  toString() {
    return `${this.failing ? 'fail' : 'execute'}(${this.pick})`;
  }
}

/** Delivers an already delivered message again (a worker died before deleting it). */
class Redeliver extends LedgerCommand {
  async run(model: Model, real: Real) {
    if (real.delivered.length === 0) return;
    const message = real.delivered[this.pick % real.delivered.length] as StepMessage;
    expect(await deliver(succeed, [stepRecord(message, 2)])).toEqual([]);
    await settle(model, real);
  }
  toString() {
    return `redeliver(${this.pick})`;
  }
}

/** Creates a workflow whose LlmWorker has `modelInput`: refused (naming each field that may not pass) or made. */
class CreateWithModelInput extends LedgerCommand {
  readonly modelInput: Record<string, number>;
  constructor(modelInput: Record<string, number>) {
    super(0);
    this.modelInput = modelInput;
  }
  async run(model: Model, real: Real) {
    const steps = [
      { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
      { key: 'llm', type: 'LlmWorker', inputs: ['in'], config: { maxTokens: 10, modelInput: this.modelInput } },
    ];
    const answer = await call(stack.baseUrl, '/workflows', {
      key: real.key,
      method: 'POST',
      body: { name: 'M', steps, agentId: real.agentId },
    });
    const refused = Object.keys(this.modelInput).filter((field) => !safe.has(field));
    if (refused.length > 0) {
      expect(answer.status).toBe(422);
      expect((answer.body.errors as { path: string }[]).map((e) => e.path)).toEqual(
        refused.map((field) => `config.modelInput.${field}`),
      );
    } else {
      expect(answer.status).toBe(201);
    }
    await settle(model, real);
  }
  toString() {
    return `createWithModelInput(${JSON.stringify(this.modelInput)})`;
  }
}
const safe: ReadonlySet<string> = new Set(safeModelInputFields);
const hits = { resumed: 0, fileRunsEnded: 0, deferredCancelled: 0 };

/** Defers a run of file shape `pick`: answered 202, nothing held, no byte copied while it waits. */
class Defer extends LedgerCommand {
  async run(model: Model, real: Real) {
    const shape = shapes.length - 3 + (this.pick % 3);
    const body = await startBody(real, shape);
    const before = await bucketBytes(real, 'inputs/');
    const answer = await startRunCall(stack.baseUrl, real.key, real.workflowIds[shape] as string, {
      ...body,
      defer: true,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    model.deferred.push({ id: answer.body.deferredJobId as string, cancelled: false });
    expect(await bucketBytes(real, 'inputs/')).toBe(before);
    await settle(model, real);
  }
  toString() {
    return `defer(${this.pick})`;
  }
}

/** Cancels a deferred request: nothing was held, nothing was copied, nothing is left. */
class CancelDeferred extends LedgerCommand {
  override check(model: Readonly<Model>) {
    return model.deferred.length > 0;
  }
  async run(model: Model, real: Real) {
    const request = model.deferred[this.pick % model.deferred.length] as Model['deferred'][number];
    const before = await bucketBytes(real, 'inputs/');
    const answer = await api(stack.baseUrl, 'DELETE', `/deferred-runs/${request.id}`, { key: real.key });
    expect(answer.status).toBe(request.cancelled ? 409 : 200);
    if (!request.cancelled) hits.deferredCancelled += 1;
    request.cancelled = true;
    expect(await bucketBytes(real, 'inputs/')).toBe(before);
    await settle(model, real);
  }
  toString() {
    return `cancelDeferred(${this.pick})`;
  }
}

/**
 * Resumes a failed or stopped run: a new run holding the price of the steps it runs again, its
 * completed steps carried (each of a file shape's loaders stands alone, so exactly those); it shares
 * the original's input copies and stores no new byte.
 */
class Resume extends LedgerCommand {
  override check(model: Readonly<Model>) {
    return model.runs.length > 0;
  }
  async run(model: Model, real: Real) {
    // A failed or stopped run when there is one (the others answer 409, checked too when there is none).
    const ended = model.runs.filter((r) => r.status === 'failed' || r.status === 'stopped');
    const among = ended.length > 0 ? ended : model.runs;
    const run = among[this.pick % among.length] as ModelRun;
    const before = await bucketBytes(real);
    const answer = await api(stack.baseUrl, 'POST', `/runs/${run.jobId}/resume`, { key: real.key });
    const prices = shapes[run.shape]?.prices ?? {};
    const carried = new Set((answer.body.carriedSteps as string[] | undefined) ?? []);
    const price = Object.entries(prices).reduce((sum, [node, p]) => sum + (carried.has(node) ? 0 : p), 0);
    if (run.status !== 'failed' && run.status !== 'stopped') {
      expect(answer.status).toBe(409);
    } else if (model.busy[run.shape]) {
      expect(answer.status).toBe(409);
    } else if (model.balance < price) {
      expect(answer.status).toBe(402);
    } else {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      hits.resumed += 1;
      for (const node of carried) expect(run.done.has(node), node).toBe(true);
      if (shapes[run.shape]?.fileKeys !== undefined) expect([...carried].sort()).toEqual([...run.done].sort());
      model.runs.push({
        jobId: answer.body.jobId as string,
        shape: run.shape,
        status: 'active',
        held: price,
        charged: 0,
        done: new Set(carried),
        resumed: true,
        carried: carried.size,
      });
      model.balance -= price;
      model.busy[run.shape] = true;
      // It shares the original's copies: no new byte.
      expect(await bucketBytes(real)).toBe(before);
    }
    await settle(model, real);
  }
  toString() {
    return `resume(${this.pick})`;
  }
}

class Cancel extends LedgerCommand {
  override check(model: Readonly<Model>) {
    return model.runs.length > 0;
  }
  async run(model: Model, real: Real) {
    const run = model.runs[this.pick % model.runs.length] as ModelRun;
    const answer = await cancelRunCall(stack.baseUrl, real.key, run.jobId);
    if (run.status === 'active') {
      const status = run.done.size > 0 ? 'stopped' : 'cancelled';
      expect([answer.status, answer.body.status]).toEqual([200, status]);
      endRun(model, run, status);
    } else {
      expect([answer.status, answer.body]).toEqual([409, { error: 'Run already ended' }]);
    }
    await settle(model, real);
  }
  toString() {
    return `cancel(${this.pick})`;
  }
}

describe('the credit ledger under random starts, steps, failures, redeliveries and cancellations', () => {
  it('matches the model and keeps balance + held + charged = granted after every command', {
    timeout: 120_000,
  }, async () => {
    const commands = [
      fc.integer({ min: 0, max: shapes.length - 1 }).map((shape) => new Start(shape)),
      fc.integer({ min: shapes.length - 3, max: shapes.length - 1 }).map((shape) => new Start(shape)),
      fc.nat().map((pick) => new Execute(pick, false)),
      fc.nat().map((pick) => new Execute(pick, false)),
      fc.nat().map((pick) => new Execute(pick, false)),
      fc.nat().map((pick) => new Execute(pick, true)),
      fc.nat().map((pick) => new Redeliver(pick)),
      fc.nat().map((pick) => new Cancel(pick)),
      fc
        .dictionary(
          fc.constantFrom('temperature', 'seed', 'top_p', 'max_tokens', 'num_outputs', 'lora_weights'),
          fc.integer({ min: 0, max: 40_000 }),
          { maxKeys: 3 },
        )
        .map((modelInput) => new CreateWithModelInput(modelInput)),
      fc.nat().map((pick) => new Defer(pick)),
      fc.nat().map((pick) => new CancelDeferred(pick)),
      fc.nat().map((pick) => new Resume(pick)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 16 }), async (cmds) => {
        const team = await seedUnthrottledTeam(stack.deps, grantedHundredths / 100);
        const workflowIds: string[] = [];
        for (const [i, shape] of shapes.entries()) {
          workflowIds.push(await createWorkflow(stack, team, shape.steps, `Shape ${i}`));
        }
        const setup = () => ({
          model: {
            balance: grantedHundredths,
            charged: 0,
            runs: [],
            busy: shapes.map(() => false),
            deferred: [],
          } as Model,
          real: {
            teamId: team.teamId,
            key: team.key,
            agentId: team.agentId,
            workflowIds,
            pending: [],
            delivered: [],
            uploads: [],
          } as Real,
        });
        await fc.asyncModelRun(setup, cmds);
      }),
      { numRuns: 10 },
    );
    console.log('ledger property paths taken:', hits);
  });

  it('holds through a file run failed, resumed and completed, and a deferred file request cancelled', {
    timeout: 120_000,
  }, async () => {
    const team = await seedUnthrottledTeam(stack.deps, grantedHundredths / 100);
    const workflowIds: string[] = [];
    for (const [i, shape] of shapes.entries()) {
      workflowIds.push(await createWorkflow(stack, team, shape.steps, `Shape ${i}`));
    }
    const three = shapes.length - 1;
    const before = { ...hits };
    await fc.asyncModelRun(
      () => ({
        model: { balance: grantedHundredths, charged: 0, runs: [], busy: shapes.map(() => false), deferred: [] },
        real: {
          teamId: team.teamId,
          key: team.key,
          agentId: team.agentId,
          workflowIds,
          pending: [],
          delivered: [],
          uploads: [],
        },
      }),
      [
        new Start(three),
        new Execute(0, false),
        new Execute(0, true),
        new Resume(0),
        ...Array.from({ length: 4 }, () => new Execute(0, false)),
        new Redeliver(0),
        new Defer(2),
        new CancelDeferred(0),
        new CancelDeferred(0),
      ],
    );
    expect({
      resumed: hits.resumed - before.resumed,
      fileRunsEnded: hits.fileRunsEnded - before.fileRunsEnded,
      deferredCancelled: hits.deferredCancelled - before.deferredCancelled,
    }).toEqual({ resumed: 1, fileRunsEnded: 1, deferredCancelled: 1 });
  });
});

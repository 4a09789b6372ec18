/**
 * Errors by meaning, bodies at the edge: every domain error maps through the one table
 * (functions/http/error-map.ts) to its spec status and a body its schema accepts; anything else is
 * a 500 that never shows its message; the admission decides in the spec's order; and nothing below
 * the HTTP edge imports the error bodies.
 */
import './support/test-providers.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { documentedErrors, type ErrorDoc, errorDocs } from '../functions/docs/error-docs.ts';
import { buildOpenApiDocument, nodeConfigSchemas } from '../functions/docs/openapi.ts';
import {
  type AdmissionFacts,
  busyFirst,
  monthlyCapRetryAfterSeconds,
  type RunRefusal,
  refusalWithoutFacts,
  runRefusal,
} from '../functions/domain/admission.ts';
import type { RunEstimate } from '../functions/domain/pricing.ts';
import { ServiceError } from '../functions/errors/define.ts';
import * as domainErrors from '../functions/errors/table.ts';
import {
  AgentNotFoundError,
  AgentOrProjectNotFoundError,
  AgentOrProjectRequiredError,
  BatchNotFoundError,
  BulkActionNotFoundError,
  CallbackUrlInvalidError,
  CanvasNotFoundError,
  CreateWorkflowNotPermittedError,
  DeferredRunNotFoundError,
  DeferredRunNotWaitingError,
  DeliveryPendingError,
  FileLinkNotFoundError,
  FileNotAcceptedError,
  FileNotFoundError,
  IdempotencyKeyReusedError,
  InputFileNotUsableError,
  InvalidBodyError,
  InvalidCursorError,
  InvalidQueryError,
  MonthlyCapUnverifiableError,
  NameRequiredError,
  NoWorkflowForAgentError,
  PayloadTooLargeError,
  ProviderJobUnknownError,
  ProviderNotAvailableError,
  ProviderWebhookRefusedError,
  QueueFullError,
  RateLimitedError,
  RunAlreadyEndedError,
  RunInProgressError,
  RunNotFoundError,
  RunNotResumableError,
  RunRefusedError,
  RunValidationFailedError,
  ScopeNotPermittedError,
  StartByOutOfRangeError,
  StepNotFoundError,
  StepsRequiredError,
  StorageBusyError,
  StorageQuotaReachedError,
  TooManyFileInputsError,
  TooManyRedeliveriesError,
  TooManyRunStreamsError,
  TooManyStreamsError,
  TooManyWebhookEndpointsError,
  UnauthorizedError,
  UnknownInputKeysError,
  UnknownNodeTypeError,
  UsageNotPermittedError,
  WebhookDeliveryNotFoundError,
  WebhookEndpointNotFoundError,
  WorkflowNotFoundError,
  WorkflowNotPermittedError,
  WorkflowTooLargeToStoreError,
  WorkflowValidationFailedError,
  WorkflowVersionNotFoundError,
} from '../functions/errors/table.ts';
import { errorMapping, errorResponse, errorTable } from '../functions/http/error-map.ts';
import { IdempotencyRaceError } from '../functions/store/idempotency.ts';
import { ExtraConditionFailedError, RaceLostError } from '../functions/store/run/index.ts';
import { type RouteId, routes } from '../platform/routes.ts';
import { BulkActionNotFoundErrorSchema } from '../schemas/bulk-actions.ts';
import { DeliveryPendingErrorSchema } from '../schemas/deliveries.ts';
import { messages } from '../schemas/error-messages.ts';
import * as bodies from '../schemas/errors.ts';
import { fileMessages } from '../schemas/file-limits.ts';
import { FileNotAcceptedErrorSchema } from '../schemas/files.ts';
import { type DocumentedError, describeApi as describeWithSteps, documentedSchemas } from '../schemas/openapi.ts';
import { RunValidationFailedSchema } from '../schemas/runs.ts';
import { uploadContentTypes } from '../schemas/upload-types.ts';
import {
  TooManyWebhookEndpointsErrorSchema,
  WebhookDeliveryNotFoundErrorSchema,
  WebhookEndpointNotFoundErrorSchema,
} from '../schemas/webhook-endpoints.ts';
import { type ValidationIssue, WorkflowValidationFailedSchema } from '../schemas/workflows.ts';

/** The document of these rows, its steps from the catalogue as served. */
const describeApi = (rows: readonly DocumentedError[]) => describeWithSteps(rows, nodeConfigSchemas);

const jobId = '6f1c1b6e-2f1e-4b7a-9d43-0a8f5c3e9b21';
const issues: ValidationIssue[] = [{ code: 'cycle', key: null, message: 'The workflow has a cycle' }];
const now = new Date('2026-11-24T12:00:00Z');

interface Case {
  error: Error;
  status: number;
  schema: v.GenericSchema;
  /** The exact body, where the case pins it beyond its schema. */
  body?: unknown;
  retryAfter?: string;
}

/** One case per error class (the 402 once per refusal kind), with the status and schema the spec gives it. */
const cases: Case[] = [
  {
    error: new InvalidBodyError('steps[0].key: expected string'),
    status: 400,
    schema: bodies.InvalidBodyErrorSchema,
    body: { error: 'Invalid request body: steps[0].key: expected string' },
  },
  {
    error: new InvalidQueryError('limit must be a whole number from 1 to 100'),
    status: 400,
    schema: bodies.InvalidQueryErrorSchema,
    body: { error: 'Invalid query: limit must be a whole number from 1 to 100' },
  },
  {
    error: new InvalidCursorError(),
    status: 400,
    schema: bodies.InvalidCursorErrorSchema,
    body: { error: 'Invalid cursor: pass the nextCursor of this list back unchanged, with the same filters' },
  },
  { error: new NameRequiredError(), status: 400, schema: bodies.NameRequiredErrorSchema },
  { error: new StepsRequiredError(), status: 400, schema: bodies.StepsRequiredErrorSchema },
  { error: new AgentOrProjectRequiredError(), status: 400, schema: bodies.AgentOrProjectRequiredErrorSchema },
  { error: new UnauthorizedError('invalid'), status: 401, schema: bodies.UnauthorizedErrorSchema },
  {
    error: new RunRefusedError({ kind: 'insufficientCredits', requiredHundredths: 203 }, 150),
    status: 402,
    schema: bodies.InsufficientCreditsErrorSchema,
    body: { error: 'Insufficient credits', required: 2.03, balance: 1.5 },
  },
  {
    error: new RunRefusedError(
      {
        kind: 'projectHardCap',
        hardCapHundredths: 300,
        spentHundredths: 203,
        estimateHundredths: 203,
      },
      1000,
    ),
    status: 402,
    schema: bodies.ProjectHardCapExceededErrorSchema,
    body: { error: 'Project hard cap exceeded', hardCap: 3, spent: 2.03, estimate: 2.03, balance: 10 },
  },
  {
    error: new RunRefusedError(
      {
        kind: 'perStepLimit',
        nodeType: 'ImageGen',
        estimatedChargeHundredths: 250,
        ceilingHundredths: 100,
      },
      1000,
    ),
    status: 402,
    schema: bodies.PerStepLimitErrorSchema,
    body: {
      error: messages.perStepLimitExceeded('ImageGen', 2.5, 1),
      nodeType: 'ImageGen',
      estimatedCharge: 2.5,
      ceiling: 1,
      balance: 10,
    },
  },
  {
    error: new RunRefusedError(
      {
        kind: 'monthlyCap',
        monthlyCapHundredths: 500,
        spentThisMonthHundredths: 450,
        resetsAt: new Date('2026-12-01T00:00:00Z'),
      },
      1000,
    ),
    status: 402,
    schema: bodies.MonthlyCreditCapReachedErrorSchema,
    body: {
      error: 'Monthly credit cap reached',
      monthlyCreditCap: 5,
      spentThisMonth: 4.5,
      resets: 'Resets at 2026-12-01T00:00:00.000Z (start of the next calendar month, UTC)',
      balance: 10,
    },
  },
  { error: new ScopeNotPermittedError('runs:write'), status: 403, schema: bodies.ScopeNotPermittedErrorSchema },
  {
    error: new CreateWorkflowNotPermittedError(),
    status: 403,
    schema: bodies.CreateWorkflowNotPermittedErrorSchema,
  },
  { error: new WorkflowNotPermittedError(jobId), status: 403, schema: bodies.WorkflowNotPermittedErrorSchema },
  { error: new UsageNotPermittedError(), status: 403, schema: bodies.UsageNotPermittedErrorSchema },
  { error: new WorkflowNotFoundError(jobId), status: 404, schema: bodies.WorkflowNotFoundErrorSchema },
  { error: new CanvasNotFoundError(jobId), status: 404, schema: bodies.CanvasNotFoundErrorSchema },
  {
    error: new WorkflowVersionNotFoundError(jobId, 3),
    status: 404,
    schema: bodies.WorkflowVersionNotFoundErrorSchema,
  },
  { error: new AgentNotFoundError(jobId), status: 404, schema: bodies.AgentNotFoundErrorSchema },
  { error: new NoWorkflowForAgentError(jobId), status: 404, schema: bodies.NoWorkflowForAgentErrorSchema },
  { error: new AgentOrProjectNotFoundError(), status: 404, schema: bodies.AgentOrProjectNotFoundErrorSchema },
  { error: new RunNotFoundError(jobId), status: 404, schema: bodies.RunNotFoundErrorSchema },
  { error: new DeferredRunNotFoundError(jobId), status: 404, schema: bodies.DeferredRunNotFoundErrorSchema },
  { error: new StepNotFoundError(jobId, 'image'), status: 404, schema: bodies.StepNotFoundErrorSchema },
  { error: new BatchNotFoundError(jobId), status: 404, schema: bodies.BatchNotFoundErrorSchema },
  { error: new FileLinkNotFoundError(), status: 404, schema: bodies.FileLinkNotFoundErrorSchema },
  {
    error: new RunInProgressError(jobId),
    status: 409,
    schema: bodies.RunInProgressErrorSchema,
    body: { error: 'This workflow already has a run in progress', activeJobId: jobId },
  },
  {
    error: new QueueFullError(jobId, 100),
    status: 409,
    schema: bodies.QueueFullErrorSchema,
    body: { error: "This workflow's queue is full", activeJobId: jobId, queueDepth: 100 },
  },
  { error: new RunAlreadyEndedError(jobId), status: 409, schema: bodies.RunAlreadyEndedErrorSchema },
  {
    error: new RunNotResumableError(jobId, 'completed'),
    status: 409,
    schema: bodies.RunNotResumableErrorSchema,
    body: { error: 'Only a failed or stopped run can be resumed', status: 'completed' },
  },
  {
    error: new ProviderWebhookRefusedError('replicate', 'signature does not match'),
    status: 401,
    schema: bodies.ProviderWebhookRefusedErrorSchema,
    body: { error: 'Webhook signature not valid' },
  },
  {
    error: new ProviderJobUnknownError('replicate', 'abc'),
    status: 404,
    schema: bodies.ProviderJobUnknownErrorSchema,
    body: { error: 'Unknown provider job' },
  },
  { error: new DeferredRunNotWaitingError(jobId), status: 409, schema: bodies.DeferredRunNotWaitingErrorSchema },
  {
    error: new FileNotFoundError(`file_${jobId}`),
    status: 404,
    schema: bodies.FileNotFoundErrorSchema,
    body: { error: 'File not found' },
  },
  {
    error: new FileNotAcceptedError(fileMessages.sizeOutOfRange),
    status: 422,
    schema: FileNotAcceptedErrorSchema,
    body: {
      error: 'File not accepted: size must be a whole number of bytes from 1 to 104857600 (100 MiB)',
      maxBytes: 104_857_600,
      contentTypes: [...uploadContentTypes],
    },
  },
  {
    error: new DeliveryPendingError(jobId, '2026-11-24T12:02:00.000Z'),
    status: 409,
    schema: DeliveryPendingErrorSchema,
    body: { error: 'Webhook delivery pending', nextAttemptAt: '2026-11-24T12:02:00.000Z' },
  },
  {
    error: new DeliveryPendingError(jobId, null),
    status: 409,
    schema: DeliveryPendingErrorSchema,
    body: { error: 'Webhook delivery pending', nextAttemptAt: null },
  },
  {
    error: new WebhookEndpointNotFoundError(jobId),
    status: 404,
    schema: WebhookEndpointNotFoundErrorSchema,
    body: { error: 'Webhook endpoint not found' },
  },
  {
    error: new BulkActionNotFoundError(jobId),
    status: 404,
    schema: BulkActionNotFoundErrorSchema,
    body: { error: 'Bulk action not found' },
  },
  {
    error: new WebhookDeliveryNotFoundError(jobId),
    status: 404,
    schema: WebhookDeliveryNotFoundErrorSchema,
    body: { error: 'Webhook delivery not found' },
  },
  {
    error: new TooManyWebhookEndpointsError(20),
    status: 409,
    schema: TooManyWebhookEndpointsErrorSchema,
    body: { error: 'Webhook endpoint limit reached', maxEndpoints: 20 },
  },
  {
    error: new PayloadTooLargeError(65_536),
    status: 413,
    schema: bodies.PayloadTooLargeErrorSchema,
    body: { error: 'Request body too large: at most 65536 bytes' },
  },
  {
    error: new WorkflowTooLargeToStoreError(420_000, 390_000),
    status: 413,
    schema: bodies.PayloadTooLargeErrorSchema,
    body: { error: 'Request body too large: the workflow would take 420000 bytes to store; at most 390000' },
  },
  {
    error: new UnknownNodeTypeError('ImageLoadr', 'ImageLoader'),
    status: 422,
    schema: bodies.UnknownNodeTypeErrorSchema,
    body: { error: 'Unknown node type: ImageLoadr', didYouMean: 'ImageLoader' },
  },
  {
    error: new WorkflowValidationFailedError(issues),
    status: 422,
    schema: WorkflowValidationFailedSchema,
    body: { error: 'Workflow validation failed', errors: issues },
  },
  {
    error: new RunValidationFailedError(issues),
    status: 422,
    schema: RunValidationFailedSchema,
    body: { success: false, errors: issues },
  },
  {
    error: new UnknownInputKeysError(['b', 'a'], ['prompt']),
    status: 422,
    schema: bodies.UnknownInputKeysErrorSchema,
    body: { error: 'Unknown input key(s): b, a', validKeys: ['prompt'] },
  },
  {
    error: new TooManyFileInputsError(21, 0),
    status: 422,
    schema: bodies.TooManyFileInputsErrorSchema,
    body: {
      error: 'Too many file inputs',
      fileInputs: 21,
      maxFileInputs: 20,
      fileInputBytes: 0,
      maxFileInputBytes: 524288000,
    },
  },
  {
    error: new StorageQuotaReachedError({ usedBytes: 90, quotaBytes: 100 }, 20),
    status: 409,
    schema: bodies.StorageQuotaReachedErrorSchema,
    body: { error: 'Storage quota reached', quotaBytes: 100, usedBytes: 90, neededBytes: 20 },
  },
  {
    error: new InputFileNotUsableError(
      'photo',
      'ImageLoader reads image/png, image/jpeg, image/webp, image/gif, not audio/wav',
    ),
    status: 422,
    schema: bodies.InputFileNotUsableErrorSchema,
    body: {
      error: 'Input file not usable: photo',
      key: 'photo',
      reason: 'ImageLoader reads image/png, image/jpeg, image/webp, image/gif, not audio/wav',
    },
  },
  { error: new CallbackUrlInvalidError(), status: 422, schema: bodies.CallbackUrlInvalidErrorSchema },
  {
    error: new StartByOutOfRangeError('2026-12-01T00:00:00Z', '2026-12-14T12:00:00.000Z'),
    status: 422,
    schema: bodies.StartByOutOfRangeErrorSchema,
    body: {
      error: 'startBy must lie in the future and no later than latestStartBy',
      startBy: '2026-12-01T00:00:00Z',
      latestStartBy: '2026-12-14T12:00:00.000Z',
    },
  },
  {
    error: new ProviderNotAvailableError('ImageGen', ['studio-x'], 'app_only'),
    status: 422,
    schema: bodies.ProviderNotAvailableErrorSchema,
    body: {
      error: messages.providerNotAvailable('ImageGen', ['studio-x']),
      providers: ['studio-x'],
      level: 'app_only',
    },
  },
  { error: new IdempotencyKeyReusedError(), status: 422, schema: bodies.IdempotencyKeyReusedErrorSchema },
  { error: new RateLimitedError(17), status: 429, schema: bodies.RateLimitExceededErrorSchema, retryAfter: '17' },
  { error: new TooManyStreamsError(5, 42), status: 429, schema: bodies.TooManyStreamsErrorSchema, retryAfter: '42' },
  {
    error: new TooManyRunStreamsError(3, 42),
    status: 429,
    schema: bodies.TooManyRunStreamsErrorSchema,
    retryAfter: '42',
  },
  {
    error: new TooManyRedeliveriesError(50),
    status: 429,
    schema: bodies.TooManyRedeliveriesErrorSchema,
    retryAfter: '50',
  },
  {
    error: new MonthlyCapUnverifiableError(5),
    status: 503,
    schema: bodies.MonthlyCapUnverifiableErrorSchema,
    retryAfter: '5',
  },
  {
    error: new StorageBusyError('transactionConflict', 4),
    status: 503,
    schema: bodies.StorageBusyErrorSchema,
    body: { error: 'Service busy; try again shortly' },
    retryAfter: '1',
  },
];

/** Every error class `functions/errors/table.ts` exports. */
const domainErrorClasses = (Object.values(domainErrors) as unknown[]).filter(
  (value): value is typeof ServiceError => typeof value === 'function' && value.prototype instanceof ServiceError,
);

describe('the error table', () => {
  it.each(cases.map((c) => [c.error.name, c] as const))('%s', (_name, c) => {
    const response = errorResponse(c.error, 'req-1');
    expect(response.statusCode).toBe(c.status);
    const body = JSON.parse(response.body);
    v.parse(c.schema, body);
    if (c.body !== undefined) expect(body).toEqual(c.body);
    expect(response.headers?.['retry-after']).toBe(c.retryAfter);
    expect(response.headers?.['content-type']).toBe('application/json');
  });

  it('has one row per domain error class, and a case above for each', () => {
    expect(domainErrorClasses.length).toBeGreaterThan(25);
    for (const errorClass of domainErrorClasses) {
      expect(
        errorTable.filter((row) => row.error === errorClass),
        errorClass.name,
      ).toHaveLength(1);
      expect(
        cases.some((c) => c.error instanceof errorClass),
        errorClass.name,
      ).toBe(true);
    }
    expect(errorTable).toHaveLength(domainErrorClasses.length);
  });

  it('every domain error extends the base, carries its name and keeps its cause', () => {
    for (const c of cases) {
      expect(c.error).toBeInstanceOf(ServiceError);
      expect(c.error).toBeInstanceOf(Error);
      expect(c.error.name).toBe(c.error.constructor.name);
    }
    const cause = new Error('the read that failed');
    expect(new MonthlyCapUnverifiableError(5, { cause }).cause).toBe(cause);
    expect(new InvalidBodyError('not valid JSON', { cause }).cause).toBe(cause);
    expect(new ServiceError('x', { cause }).cause).toBe(cause);
  });

  it('no error carries a status or a body', () => {
    for (const c of cases) {
      const fields = Object.keys(c.error);
      expect(
        fields.filter((f) => /status|body/i.test(f)),
        c.error.name,
      ).toEqual([]);
    }
  });

  it('answers anything else 500 `Server error: <detail>` without its message', () => {
    const secret = 'sk_live_do_not_show';
    for (const error of [
      new Error(secret),
      new TypeError(secret),
      new RaceLostError({ cause: new Error(secret) }),
      new ExtraConditionFailedError(),
      new IdempotencyRaceError(),
      new ServiceError(secret),
      secret,
      undefined,
    ]) {
      expect(errorMapping(error)).toBeUndefined();
      const response = errorResponse(error, 'req-9');
      expect(response.statusCode).toBe(500);
      expect(response.body).not.toContain(secret);
      expect(JSON.parse(response.body)).toEqual({ error: 'Server error: unexpected failure (request req-9)' });
      v.parse(bodies.ServerErrorSchema, JSON.parse(response.body));
    }
  });

  it('names an AWS SDK failure by its service error name only', () => {
    const sdk = Object.assign(new Error('secret table name in here'), {
      name: 'ProvisionedThroughputExceededException',
      $metadata: { httpStatusCode: 400 },
    });
    const response = errorResponse(sdk, 'req-2');
    expect([response.statusCode, JSON.parse(response.body)]).toEqual([
      500,
      { error: 'Server error: storage unavailable (ProvisionedThroughputExceededException) (request req-2)' },
    ]);
  });
});

describe('admission (functions/domain/admission.ts), in the spec order', () => {
  const estimate: RunEstimate = {
    steps: [
      { nodeId: 'a', type: 'TextGen', hundredths: 100 },
      { nodeId: 'b', type: 'ImageGen', hundredths: 250 },
    ],
    totalHundredths: 350,
    multiplier: 1,
  };
  const open: AdmissionFacts = {
    perStepLimit: null,
    project: { hardCap: null, spent: 0 },
    key: { monthlyCap: null, spentThisMonth: 0 },
    balance: 10_000,
  };
  /** Facts that fail every 402 check at once. */
  const refusedEverywhere: AdmissionFacts = {
    perStepLimit: 200,
    project: { hardCap: 300, spent: 0 },
    key: { monthlyCap: 300, spentThisMonth: 0 },
    balance: 100,
  };

  it('admits a run within every limit, and one exactly at each limit', () => {
    expect(runRefusal(estimate, open, now)).toBeNull();
    const atLimits: AdmissionFacts = {
      perStepLimit: 250,
      project: { hardCap: 1_350, spent: 1_000 },
      key: { monthlyCap: 850, spentThisMonth: 500 },
      balance: 350,
    };
    expect(runRefusal(estimate, atLimits, now)).toBeNull();
  });

  it('refuses per-step limit first, then project hard cap, then key monthly cap, then balance', () => {
    const refusals: RunRefusal[] = [];
    let facts = refusedEverywhere;
    for (;;) {
      const refusal = runRefusal(estimate, facts, now);
      if (!refusal) break;
      refusals.push(refusal);
      // Lift the limit just refused and decide again.
      if (refusal.kind === 'perStepLimit') facts = { ...facts, perStepLimit: null };
      else if (refusal.kind === 'projectHardCap') facts = { ...facts, project: { hardCap: null, spent: 0 } };
      else if (refusal.kind === 'monthlyCap') facts = { ...facts, key: { monthlyCap: null, spentThisMonth: 0 } };
      else facts = { ...facts, balance: 10_000 };
    }
    expect(refusals).toEqual([
      { kind: 'perStepLimit', nodeType: 'ImageGen', estimatedChargeHundredths: 250, ceilingHundredths: 200 },
      { kind: 'projectHardCap', hardCapHundredths: 300, spentHundredths: 0, estimateHundredths: 350 },
      {
        kind: 'monthlyCap',
        monthlyCapHundredths: 300,
        spentThisMonthHundredths: 0,
        resetsAt: new Date('2026-12-01T00:00:00Z'),
      },
      { kind: 'insufficientCredits', requiredHundredths: 350 },
    ]);
  });

  it('counts what was spent before against the hard cap and the monthly cap', () => {
    expect(runRefusal(estimate, { ...open, project: { hardCap: 1_000, spent: 700 } }, now)).toMatchObject({
      kind: 'projectHardCap',
      spentHundredths: 700,
    });
    expect(runRefusal(estimate, { ...open, key: { monthlyCap: 1_000, spentThisMonth: 651 } }, now)).toMatchObject({
      kind: 'monthlyCap',
      spentThisMonthHundredths: 651,
    });
  });

  it('a run in progress is answered before every 402 kind, naming it', () => {
    const kinds = new Set<string>();
    let facts = refusedEverywhere;
    for (let refusal = runRefusal(estimate, facts, now); refusal; refusal = runRefusal(estimate, facts, now)) {
      kinds.add(refusal.kind);
      expect(busyFirst(refusal, jobId)).toEqual({ kind: 'runInProgress', activeJobId: jobId });
      expect(busyFirst(refusal, undefined)).toEqual({ kind: 'refused', refusal });
      facts =
        refusal.kind === 'perStepLimit'
          ? { ...facts, perStepLimit: null }
          : refusal.kind === 'projectHardCap'
            ? { ...facts, project: open.project }
            : refusal.kind === 'monthlyCap'
              ? { ...facts, key: open.key }
              : open;
    }
    expect([...kinds]).toEqual(['perStepLimit', 'projectHardCap', 'monthlyCap', 'insufficientCredits']);
  });

  it('a capped key whose facts cannot be read is refused 503 with Retry-After; an uncapped one lets the failure stand', () => {
    expect(refusalWithoutFacts(500)).toEqual({
      kind: 'monthlyCapUnverifiable',
      retryAfterSeconds: monthlyCapRetryAfterSeconds,
    });
    expect(refusalWithoutFacts(0)).toMatchObject({ kind: 'monthlyCapUnverifiable' });
    expect(refusalWithoutFacts(null)).toBeNull();
  });
});

describe('layers', () => {
  const root = new URL('..', import.meta.url).pathname;
  const filesUnder = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => join(entry.parentPath, entry.name));

  /** An import or re-export of schemas/errors.ts, however its braces are spread over lines, or a dynamic import of it. */
  const importsErrorBodies = (source: string) =>
    /\bfrom\s*['"][^'"]*schemas\/errors(\.ts)?['"]/.test(source) ||
    /\bimport\s*\(\s*['"][^'"]*schemas\/errors(\.ts)?['"]/.test(source);

  it('nothing under functions/store, functions/domain or functions/app imports schemas/errors.ts', () => {
    const files = ['functions/store', 'functions/domain', 'functions/app'].flatMap(filesUnder);
    expect(files.length).toBeGreaterThan(20);
    expect(files.filter((file) => importsErrorBodies(readFileSync(file, 'utf8')))).toEqual([]);
  });

  // Our answers' status codes: the error table's rows, the 500 of error-map.ts, and the named answers of response.ts.
  it('no file under functions/ writes a status code but the error table, error-map.ts and response.ts', () => {
    const statusCode = /\b(?:json|statusCode)\s*[(:]\s*\d{3}\b|\bstatus:\s*\d{3}\b/;
    const writers = filesUnder('functions')
      .filter((file) => statusCode.test(readFileSync(file, 'utf8')))
      .map((file) => file.slice(root.length));
    expect(writers.sort()).toEqual([
      'functions/errors/table.ts',
      'functions/http/error-map.ts',
      'functions/http/response.ts',
    ]);
    for (const written of ['json(200, x)', 'json(\n  404,', 'statusCode: 304', '  status: 409,'])
      expect(statusCode.test(written), written).toBe(true);
    expect(statusCode.test('response.status !== 200')).toBe(false);
  });

  it('the check above sees the ways an import can be written', () => {
    for (const source of [
      "import { messages } from '../../schemas/errors.ts';",
      "import {\n  messagePrefixes,\n  messages,\n} from '../../schemas/errors.ts';",
      'import type { RunInProgressErrorBody } from "../../schemas/errors";',
      "export * from '../../schemas/errors.ts';",
      "const m = await import('../../schemas/errors.ts');",
    ])
      expect(importsErrorBodies(source), source).toBe(true);
    expect(importsErrorBodies("import { messages } from '../../schemas/runs.ts';")).toBe(false);
  });
});

describe('errors as data (functions/errors/table.ts, functions/docs/error-docs.ts)', () => {
  const components = documentedSchemas(documentedErrors);
  const documented = new Set<unknown>(Object.values(components));
  /** Each row with its entry in the document's table, by its name. */
  const rows = errorTable.map((row) => {
    const entry = (errorDocs as Readonly<Record<string, ErrorDoc<never>>>)[row.error.name];
    return { ...row, name: row.error.name, schemas: entry?.schemas ?? [], routes: entry?.routes ?? [] };
  });

  it('every row has an error status, an entry, and a body schema the OpenAPI document names', () => {
    expect(errorTable.length).toBeGreaterThan(25);
    // Each entry is a row's (the compiler holds the names; this holds the table's order too).
    expect(Object.keys(errorDocs).sort()).toEqual(errorTable.map((row) => row.error.name).sort());
    expect(documentedErrors.map((error) => error.status)).toEqual(errorTable.map((row) => row.status));
    for (const row of rows) {
      expect(row.status, row.name).toBeGreaterThanOrEqual(400);
      expect(row.status, row.name).toBeLessThan(600);
      expect(row.schemas.length, row.name).toBeGreaterThan(0);
      for (const schema of row.schemas) expect(documented.has(schema), row.name).toBe(true);
    }
  });

  // The document derives each operation's error responses from the rows: each must sit under its row's status.
  it('the OpenAPI document lists each error body under the status its row answers with', () => {
    const statusesOf = new Map<string, Set<number>>();
    for (const [name, schema] of Object.entries(components)) {
      for (const row of rows) {
        if (row.schemas.includes(schema)) statusesOf.set(name, (statusesOf.get(name) ?? new Set()).add(row.status));
      }
    }
    const refsIn = (value: unknown): string[] =>
      value && typeof value === 'object'
        ? Object.entries(value).flatMap(([key, inner]) =>
            key === '$ref' && typeof inner === 'string' ? [inner.replace('#/components/schemas/', '')] : refsIn(inner),
          )
        : [];
    const misplaced: string[] = [];
    let checked = 0;
    for (const [path, item] of Object.entries(buildOpenApiDocument().paths ?? {})) {
      for (const [method, operation] of Object.entries(item as Record<string, { responses?: object }>)) {
        for (const [status, response] of Object.entries(operation.responses ?? {})) {
          for (const name of refsIn(response)) {
            const statuses = statusesOf.get(name);
            if (!statuses) continue;
            checked += 1;
            if (!statuses.has(Number(status))) misplaced.push(`${method} ${path} ${status}: ${name}`);
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(misplaced).toEqual([]);
  });

  it("an operation answers exactly the rows that name its route, each under the row's status", () => {
    const refsOf = (response: unknown) => JSON.stringify(response).match(/(?<=#\/components\/schemas\/)\w+/g) ?? [];
    const nameOf = (schema: unknown) => Object.entries(components).find(([, s]) => s === schema)?.[0];
    const errorNames = new Set(rows.flatMap((row) => row.schemas.map(nameOf)));
    for (const route of routes) {
      const { path, method } = route;
      const operation = buildOpenApiDocument().paths?.[path]?.[method.toLowerCase() as 'get'];
      const listed = Object.entries(operation?.responses ?? {}).flatMap(([status, response]) =>
        refsOf(response)
          .filter((name) => errorNames.has(name))
          .map((name) => `${status} ${name}`),
      );
      const expected = rows
        .filter((row) => row.routes.includes(route.id as RouteId))
        .flatMap((row) => row.schemas.map((schema) => `${row.status} ${nameOf(schema)}`));
      expect(new Set(listed), route.id).toEqual(new Set(expected));
    }
  });

  it("a new row's body joins the document under its export name, and its words follow the operation's", () => {
    const described = {
      status: 410,
      schemas: [bodies.RunNotFoundErrorSchema],
      routes: ['GetRun' as const],
      described: 'The run is gone.',
    };
    const doc = describeApi([...documentedErrors, described]);
    // (GET /runs/{jobId} also says each answer may carry Access-Control-Allow-Origin: a run token's.)
    expect(doc.paths?.['/runs/{jobId}']?.get?.responses?.['410']).toMatchObject({
      description: 'The run is gone.',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/RunNotFoundError' } } },
    });
    // A schema schemas/errors.ts exports that the document does not name yet (a stand-in for a new body).
    const newBody = describeApi([...documentedErrors, { ...described, schemas: [bodies.ProviderLevelSchema] }]);
    expect(newBody.components?.schemas?.ProviderLevel).toMatchObject({
      type: 'string',
      enum: [...bodies.providerLevels],
    });
    expect(newBody.paths?.['/runs/{jobId}']?.get?.responses?.['410']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ProviderLevel' } } },
    });
    const joined = describeApi([...documentedErrors, { ...described, status: 404, described: 'Or gone.' }]);
    expect(joined.paths?.['/runs/{jobId}']?.get?.responses?.['404']).toMatchObject({
      description: 'No such run in the team. Or gone.',
    });
    // A row at a status the operation has no words for, and that brings none, cannot be described.
    expect(() => describeApi([...documentedErrors, { ...described, described: undefined }])).toThrow('without words');
    // A body schema neither named by the document nor exported by schemas/errors.ts cannot be named.
    const unnamed = { ...described, schemas: [v.object({ error: v.string() })] };
    expect(() => describeApi([...documentedErrors, unnamed])).toThrow('cannot name');
  });

  it("each case's body fits one of its row's schemas, with no field the schema does not declare", () => {
    // The compiler holds a row's body to its schemas' fields; an extra field is caught here: valibot's
    // object drops what it does not declare, so the parsed body must equal the body sent.
    for (const c of cases) {
      const row = rows.find((r) => r.error === errorMapping(c.error)?.error);
      const body = JSON.parse(errorResponse(c.error, 'req-1').body);
      expect(
        row?.schemas.some((schema) => {
          const parsed = v.safeParse(schema, body);
          return parsed.success && isDeepStrictEqual(parsed.output, body);
        }),
        c.error.name,
      ).toBe(true);
    }
  });

  it('a declared error is a class named for its export, built from its arguments, keeping a cause', () => {
    for (const [name, value] of Object.entries(domainErrors)) {
      if (typeof value === 'function') expect(value.name).toBe(name);
    }
    const cause = new Error('contention');
    const busy = new StorageBusyError('throttled', 4, { cause });
    expect([busy.contention, busy.tries, busy.retryAfterSeconds, busy.cause]).toEqual(['throttled', 4, 1, cause]);
    expect(busy.message).toBe('storage busy (throttled) after 4 tries');
    expect(new DeliveryPendingError(jobId, null).nextAttemptAt).toBeNull();
  });
});

/**
 * The pure rules of functions/domain/, one describe per rule file, and the check that keeps them
 * pure: no file there reaches, directly or through what it imports, an AWS SDK, the file system,
 * the network, or the store, HTTP, app or worker layers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../functions/docs/openapi.ts';
import {
  deferredExpiresAt,
  deferredLifetimeSeconds,
  fateOf,
  hasExpired,
  startByProblem,
} from '../functions/domain/deferred-run-lifetime.ts';
import { fileLinkExpiresAt, fileUrlSeconds } from '../functions/domain/file-link-lifetime.ts';
import {
  idempotencyKeyHash,
  idempotencyWindowSeconds,
  rememberedUntil,
  replayOf,
  requestFingerprint,
} from '../functions/domain/idempotency-key.ts';
import { keyMayUseWorkflow } from '../functions/domain/key-workflows.ts';
import {
  capResetsText,
  fitsMonthlyCap,
  monthlyRoom,
  nextSpendMonthStart,
  spendMonth,
} from '../functions/domain/monthly-cap.ts';
import {
  currentMultiplier,
  defaultMultiplier,
  isValidMultiplier,
  parseSchedule,
} from '../functions/domain/price-multiplier.ts';
import { applyMultiplier, estimateRun, stepCharge } from '../functions/domain/pricing.ts';
import {
  defaultRetentionDays,
  epochSeconds,
  isExpired,
  parseRetentionDays,
  retentionExpiry,
  runItemExpiry,
  runItemGraceSeconds,
} from '../functions/domain/retention.ts';
import { deadlineAt, deadlineStep, timerDelaySeconds } from '../functions/domain/run-deadline.ts';
import { holdsEndedRun, isInProgress } from '../functions/domain/run-lifecycle.ts';
import { workflowLock } from '../functions/domain/workflow-lock.ts';
import { IdempotencyKeyReusedError } from '../functions/errors/table.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import {
  defaultMaxTokens,
  draftMaxTokens,
  draftPrice,
  modeSettings,
  priceInMode,
} from '../functions/nodes/catalogue/run-modes.ts';
import { endStatuses, inProgressStatuses } from '../platform/run-statuses.ts';
import { runStatuses } from '../schemas/run-words.ts';
import { canvasNode as node } from './support/canvas.ts';

const at = (iso: string) => new Date(iso);

describe('deferred-run lifetime', () => {
  it('expires a deferred run 24 hours after it was created, at that instant and not a millisecond before', () => {
    expect(deferredLifetimeSeconds).toBe(86_400);
    const expiresAt = deferredExpiresAt(at('2026-03-28T10:15:00.000Z')).toISOString();
    expect(expiresAt).toBe('2026-03-29T10:15:00.000Z');
    expect(hasExpired(expiresAt, at('2026-03-29T10:14:59.999Z'))).toBe(false);
    expect(hasExpired(expiresAt, at('2026-03-29T10:15:00.000Z'))).toBe(true);
    expect(hasExpired(expiresAt, at('2026-03-30T00:00:00.000Z'))).toBe(true);
  });

  it('expires at its startBy instead when given: in the future, at most 7 days ahead (24 hours with uploaded inputs)', () => {
    const now = at('2026-12-07T12:00:00.000Z');
    expect(deferredExpiresAt(now, '2026-12-10T00:00:00.000Z').toISOString()).toBe('2026-12-10T00:00:00.000Z');
    expect(startByProblem('2026-12-07T12:00:00.000Z', now, false)).toEqual({ kind: 'past' });
    expect(startByProblem('2026-12-07T12:00:00.001Z', now, false)).toBeUndefined();
    expect(startByProblem('2026-12-14T12:00:00.000Z', now, false)).toBeUndefined();
    expect(startByProblem('2026-12-14T12:00:00.001Z', now, false)).toEqual({
      kind: 'tooFar',
      latest: '2026-12-14T12:00:00.000Z',
    });
    expect(startByProblem('2026-12-08T12:00:00.000Z', now, true)).toBeUndefined();
    expect(startByProblem('2026-12-08T12:00:00.001Z', now, true)).toEqual({
      kind: 'tooFar',
      latest: '2026-12-08T12:00:00.000Z',
    });
  });

  it('keeps a deferred run waiting while its workflow is busy or its key is over (or cannot read) its monthly cap', () => {
    expect(fateOf('runInProgress')).toBe('waiting');
    expect(fateOf('monthlyCap')).toBe('waiting');
    expect(fateOf('monthlyCapUnverifiable')).toBe('waiting');
  });

  it('expires one that cannot be paid for or allowed, and cancels one whose key is revoked or expired', () => {
    for (const obstacle of ['insufficientCredits', 'projectHardCap', 'perStepLimit', 'notAllowed'] as const) {
      expect(fateOf(obstacle), obstacle).toBe('expired');
    }
    expect(fateOf('keyUnusable')).toBe('cancelled');
  });
});

describe('key monthly cap', () => {
  it('counts spend per calendar month in UTC, whatever the offset the instant was written with', () => {
    expect(spendMonth(at('2026-11-30T23:59:59.999Z'))).toBe('2026-11');
    expect(spendMonth(at('2026-12-01T00:00:00.000Z'))).toBe('2026-12');
    // 00:30 on 1 December in UTC+1 is still 30 November in UTC.
    expect(spendMonth(at('2026-12-01T00:30:00+01:00'))).toBe('2026-11');
  });

  it('resets at the first instant of the next UTC month, and the 402 says so', () => {
    expect(nextSpendMonthStart(at('2026-02-14T12:00:00Z')).toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(nextSpendMonthStart(at('2026-12-31T23:59:59.999Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(capResetsText(at('2027-01-01T00:00:00Z'))).toBe(
      'Resets at 2027-01-01T00:00:00.000Z (start of the next calendar month, UTC)',
    );
  });

  it('lets a start fit while the month spend plus its estimate stays within the cap; no cap fits anything', () => {
    expect(monthlyRoom(1_000, 300)).toBe(700);
    expect(fitsMonthlyCap(1_000, 700, 300)).toBe(true);
    expect(fitsMonthlyCap(1_000, 701, 300)).toBe(false);
    expect(fitsMonthlyCap(null, 1_000_000, 300)).toBe(true);
  });

  it('never refuses a read: only the two run starts and a resume can answer the monthly cap 402 or 503', () => {
    const capped: string[] = [];
    for (const item of Object.values(buildOpenApiDocument().paths ?? {})) {
      for (const operation of [item.get, item.post, item.delete]) {
        const responses = JSON.stringify(operation?.responses ?? {});
        if (responses.includes('MonthlyCreditCapReachedError') || responses.includes('MonthlyCapUnverifiableError')) {
          capped.push(operation?.operationId ?? '');
        }
      }
    }
    expect(capped.sort()).toEqual(['ResumeRun', 'RunAgent', 'RunWorkflow']);
  });
});

describe('workflow lock', () => {
  it('counts a run as in progress, holding its workflow, while it is queued or processing', () => {
    expect([...inProgressStatuses]).toEqual(['queued', 'processing']);
    expect(isInProgress('queued')).toBe(true);
    expect(isInProgress('processing')).toBe(true);
    for (const status of endStatuses) expect(isInProgress(status), status).toBe(false);
    expect(isInProgress(undefined)).toBe(false);
  });

  it('leaves no stored run status unaccounted for: `claimed` is only how a queued run with a started step reads', () => {
    const stored = [...inProgressStatuses, ...endStatuses].sort();
    expect(stored).toEqual(runStatuses.filter((s) => s !== 'claimed').sort());
    expect(isInProgress('claimed')).toBe(false);
  });

  it('keeps an ended run holding its lock only while a model step of it is claimed and leased', () => {
    const now = at('2026-03-28T10:15:00.000Z');
    const claim = { status: 'processing', attempts: 1, leaseUntil: '2026-03-28T10:15:00.001Z' };
    expect(holdsEndedRun(claim, now)).toBe(true);
    // The lease ran out (its worker is gone), or the claim was given back (the epoch).
    expect(holdsEndedRun({ ...claim, leaseUntil: '2026-03-28T10:15:00.000Z' }, now)).toBe(false);
    expect(holdsEndedRun({ ...claim, leaseUntil: new Date(0).toISOString() }, now)).toBe(false);
    // A cheap step's failed executions (never claimed), and steps that finished, hold nothing.
    expect(holdsEndedRun({ status: 'processing' }, now)).toBe(false);
    for (const status of ['completed', 'skipped', 'failed', 'unknown']) {
      expect(holdsEndedRun({ ...claim, status }, now), status).toBe(false);
    }
  });

  it('names the run that holds the lock and since when', () => {
    expect(workflowLock('job-1', '2026-03-28T10:15:00.000Z')).toEqual({
      type: 'WorkflowLock',
      jobId: 'job-1',
      since: '2026-03-28T10:15:00.000Z',
    });
  });
});

describe('run modes', () => {
  it('in draft makes one variation, a third of the sampling steps (at least one) and short text answers', () => {
    expect(modeSettings('draft', { variations: 4, steps: 30, maxTokens: 500 })).toEqual({
      variations: 1,
      steps: 10,
      maxTokens: draftMaxTokens,
    });
    expect(modeSettings('draft', { steps: 10 })).toMatchObject({ steps: 4 });
    expect(modeSettings('draft', { steps: 1 })).toMatchObject({ steps: 1 });
    expect(modeSettings('draft', {})).toEqual({ variations: 1, steps: 10, maxTokens: 64 });
    expect(modeSettings('draft', { maxTokens: 20 })).toMatchObject({ maxTokens: 20 });
  });

  it('in production and preview runs the settings as given', () => {
    const config = { variations: 4, steps: 30, maxTokens: 500 };
    expect(modeSettings('production', config)).toEqual({ variations: 4, steps: 30, maxTokens: 500 });
    expect(modeSettings('preview', config)).toEqual(modeSettings('production', config));
    // No maxTokens: the default bound, sent to the provider and priced, never "the provider's own limit".
    expect(modeSettings('production', {})).toEqual({ variations: 1, steps: 30, maxTokens: defaultMaxTokens });
    // Variations only where the step's schema checks them (ImageGen); an unchecked key changes nothing.
    expect(modeSettings('production', { variations: 1000 }, false)).toMatchObject({ variations: 1 });
  });

  it('prices a draft model step at half, rounded up, unless priced per run; preview as production', () => {
    expect(draftPrice(400, false)).toBe(200);
    expect(draftPrice(401, false)).toBe(201);
    expect(draftPrice(1500, true)).toBe(1500);
    const price = { production: 400, draft: 200 };
    expect([priceInMode(price, 'production'), priceInMode(price, 'preview'), priceInMode(price, 'draft')]).toEqual([
      400, 400, 200,
    ]);
  });
});

describe('price multiplier', () => {
  const schedule = parseSchedule('{"hours": {"0-6": 0.5, "7-22": 1.0, "23": 0.7}}');

  it('reads a schedule of UTC hours and ranges covering each hour once', () => {
    expect(schedule).toHaveLength(24);
    expect(schedule.slice(0, 8)).toEqual([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1]);
    expect(schedule[23]).toBe(0.7);
    expect(() => parseSchedule('{"hours": {"0-12": 1, "12-23": 1}}')).toThrow('Hour 12 is set twice');
    expect(() => parseSchedule('{"hours": {"0-22": 1}}')).toThrow('Hours without a multiplier: 23');
    expect(() => parseSchedule('{"hours": {"5-2": 1}}')).toThrow('ascending');
  });

  it('follows the schedule by the UTC hour; a live value wins over it; with neither it is 1', () => {
    expect(currentMultiplier({ multiplier: null, hourly: schedule }, at('2026-03-28T06:59:59Z'))).toBe(0.5);
    expect(currentMultiplier({ multiplier: null, hourly: schedule }, at('2026-03-28T07:00:00Z'))).toBe(1);
    expect(currentMultiplier({ multiplier: null, hourly: schedule }, at('2026-03-29T00:30:00+01:00'))).toBe(0.7);
    expect(currentMultiplier({ multiplier: 2, hourly: schedule }, at('2026-03-28T03:00:00Z'))).toBe(2);
    expect(currentMultiplier({ multiplier: null, hourly: null }, at('2026-03-28T03:00:00Z'))).toBe(defaultMultiplier);
    expect(defaultMultiplier).toBe(1);
  });

  it('accepts a positive multiplier of at most 10 with up to 4 decimals', () => {
    expect([0.0001, 0.7, 1, 10].every(isValidMultiplier)).toBe(true);
    expect([0, -1, 10.0001, 0.12345, Number.NaN, Number.POSITIVE_INFINITY].some(isValidMultiplier)).toBe(false);
  });
});

describe('pricing', () => {
  // ImageGen at 1024² and 30 steps, one variation: the reference work its catalogue rate prices.
  const canvas: Canvas = {
    nodes: [
      node('prompt', 'TextEntry'),
      node('image', 'ImageGen', { width: 1024, height: 1024 }),
      node('mesh', 'TwoDToThreeD'),
    ],
    edges: [],
  };
  const prices = {
    prompt: catalogue.TextEntry.price,
    image: catalogue.ImageGen.price,
    mesh: catalogue.TwoDToThreeD.price,
  };

  it('estimates a run step by step at the prices of its mode, the reference work at the catalogue rate', () => {
    const production = estimateRun(canvas, 'production');
    expect(production.steps).toEqual([
      { nodeId: 'prompt', type: 'TextEntry', hundredths: prices.prompt.production },
      { nodeId: 'image', type: 'ImageGen', hundredths: 400 },
      { nodeId: 'mesh', type: 'TwoDToThreeD', hundredths: prices.mesh.production },
    ]);
    expect(production.totalHundredths).toBe(prices.prompt.production + 400 + prices.mesh.production);
    expect(production.multiplier).toBe(1);
    expect(estimateRun(canvas, 'preview')).toEqual(production);
    // Draft: a third of the steps (10 of 30) at half price: ceil(400 / 3) = 134, halved = 67.
    expect(estimateRun(canvas, 'draft').steps.map((s) => s.hundredths)).toEqual([
      prices.prompt.draft,
      67,
      prices.mesh.production,
    ]);
  });

  it('prices a deferred run at its multiplier, each step rounded up to whole hundredths', () => {
    expect(applyMultiplier(400, 0.7)).toBe(280);
    expect(applyMultiplier(1, 0.5)).toBe(1);
    expect(applyMultiplier(3, 0.3333)).toBe(1);
    const half = estimateRun(canvas, 'production', 0.5);
    expect(half.steps.map((s) => s.hundredths)).toEqual([
      Math.ceil(prices.prompt.production / 2),
      200,
      Math.ceil(prices.mesh.production / 2),
    ]);
    expect(half.multiplier).toBe(0.5);
  });

  it('charges a completed step the price of the work it did, never above its estimate; skipped or failed nothing', () => {
    const spec = catalogue.LlmWorker;
    const run = { stepEstimates: { text: 200 }, mode: 'production' as const, priceMultiplier: 1 };
    const step = (tokens?: number) => ({
      nodeId: 'text',
      spec,
      ...(tokens === undefined ? {} : { work: { kind: 'tokens' as const, tokens } }),
    });
    expect(stepCharge(run, step(), 'completed')).toBe(200);
    expect(stepCharge(run, step(250), 'completed')).toBe(50);
    expect(stepCharge(run, step(5_000), 'completed')).toBe(200);
    expect(stepCharge({ ...run, priceMultiplier: 0.5 }, step(250), 'completed')).toBe(25);
    // A run that kept no multiplier (started before it was kept) is charged its estimates.
    expect(stepCharge({ stepEstimates: run.stepEstimates, mode: 'production' }, step(250), 'completed')).toBe(200);
    expect(stepCharge(run, step(250), 'skipped')).toBe(0);
    expect(stepCharge(run, step(250), 'failed')).toBe(0);
    expect(stepCharge({ mode: 'production' }, step(), 'completed')).toBe(0);
  });
});

describe('retention', () => {
  const start = '2026-03-01T10:00:00.400Z';
  const startSeconds = Date.parse('2026-03-01T10:00:00.000Z') / 1000;

  it('keeps an item whole days from an instant, in epoch seconds (the ttl DynamoDB deletes on)', () => {
    expect(epochSeconds(at(start))).toBe(startSeconds);
    expect(retentionExpiry(start, 30)).toBe(startSeconds + 30 * 86_400);
    expect(retentionExpiry(at(start), 365)).toBe(startSeconds + 365 * 86_400);
    expect(new Date(retentionExpiry(start, 1) * 1000).toISOString()).toBe('2026-03-02T10:00:00.000Z');
  });

  it("keeps a run's items the retention from the run's start, whenever they are written", () => {
    const kept = startSeconds + 7 * 86_400;
    expect(runItemExpiry(start, at(start), 7)).toBe(kept);
    // A step finished, the run ended, a webhook retried minutes or hours later: still the start's.
    expect(runItemExpiry(start, at('2026-03-01T10:05:00.000Z'), 7)).toBe(kept);
    expect(runItemExpiry(start, at('2026-03-07T10:00:00.000Z'), 7)).toBe(kept);
    // Written within the grace of its expiry (a run one day long on a one-day stage), or after it (a
    // run stuck in progress, then cancelled): never already expired, kept an hour after the write.
    expect(runItemGraceSeconds).toBe(3600);
    expect(runItemExpiry(start, at('2026-03-02T09:30:00.000Z'), 1)).toBe(startSeconds + 86_400 + 1800);
    const late = at('2026-03-20T00:00:00.000Z');
    expect(runItemExpiry(start, late, 7)).toBe(epochSeconds(late) + 3600);
    expect(isExpired(runItemExpiry(start, late, 7), late)).toBe(false);
  });

  it('reads an item as absent from the second its ttl names, and one without a ttl never', () => {
    const ttl = retentionExpiry(start, 30);
    expect(isExpired(ttl, new Date(ttl * 1000 - 1))).toBe(false);
    expect(isExpired(ttl, new Date(ttl * 1000))).toBe(true);
    expect(isExpired(ttl, new Date(ttl * 1000 + 86_400_000))).toBe(true);
    expect(isExpired(undefined, new Date(8.64e15))).toBe(false);
    expect(isExpired('1', new Date(8.64e15))).toBe(false);
  });

  it('reads RETENTION_DAYS as whole days of at least one, 30 when unset, and refuses anything else', () => {
    expect(defaultRetentionDays).toBe(30);
    expect(parseRetentionDays(undefined)).toBe(30);
    expect(parseRetentionDays('')).toBe(30);
    expect(parseRetentionDays('365')).toBe(365);
    expect(parseRetentionDays('1')).toBe(1);
    for (const bad of ['0', '-3', '1.5', 'thirty', '7d']) {
      expect(() => parseRetentionDays(bad), bad).toThrow(/RETENTION_DAYS must be a whole number of days/);
    }
  });
});

describe("a key's workflows", () => {
  it('a key with no list may use every workflow; a limited key only those it lists', () => {
    expect(keyMayUseWorkflow([], 'wf-a')).toBe(true);
    expect(keyMayUseWorkflow(['wf-a', 'wf-b'], 'wf-b')).toBe(true);
    expect(keyMayUseWorkflow(['wf-a'], 'wf-b')).toBe(false);
  });
});

describe('Idempotency-Key', () => {
  const target = { routeKey: 'POST /api/v1/workflows/{id}/runs', pathParameters: { id: 'w1' } };
  const body = { mode: 'standard' };

  it('identifies a key by its hash, and a request by its route, path and body', () => {
    expect(idempotencyKeyHash('k')).toMatch(/^[0-9a-f]{64}$/);
    const fingerprint = requestFingerprint(target, body);
    expect(requestFingerprint({ ...target }, { ...body })).toBe(fingerprint);
    expect(requestFingerprint({ ...target, routeKey: 'POST /api/v1/agents/{id}/runs' }, body)).not.toBe(fingerprint);
    expect(requestFingerprint({ ...target, pathParameters: { id: 'w2' } }, body)).not.toBe(fingerprint);
    expect(requestFingerprint(target, { mode: 'draft' })).not.toBe(fingerprint);
  });

  it('remembers 24 hours, and answers the same request again but refuses another', () => {
    const at = new Date('2026-11-24T12:00:00Z');
    expect(rememberedUntil(at, 30)).toBe(at.getTime() / 1000 + idempotencyWindowSeconds);
    expect(idempotencyWindowSeconds).toBe(24 * 3600);
    expect(replayOf(undefined, 'f')).toBeUndefined();
    expect(replayOf({ requestHash: 'f', answer: 'first' }, 'f')).toBe('first');
    expect(() => replayOf({ requestHash: 'f', answer: 'first' }, 'g')).toThrow(IdempotencyKeyReusedError);
  });
});

describe('file-link lifetime', () => {
  it('a link signed now works two hours', () => {
    expect(fileUrlSeconds).toBe(7200);
    expect(fileLinkExpiresAt(new Date('2026-11-24T12:00:00Z')).toISOString()).toBe('2026-11-24T14:00:00.000Z');
  });
});

describe('functions/domain stays pure', () => {
  const root = resolve(import.meta.dirname, '..');
  const domainDir = join(root, 'functions/domain');
  /** Modules that reach a disk, a network or AWS; `node:net` only for its address parsers. */
  const forbiddenModule = (specifier: string, names: string) =>
    specifier.startsWith('@aws-sdk/') ||
    /^(node:)?(fs|fs\/promises|http|https|http2|dns|dns\/promises|tls|dgram|child_process|worker_threads)$/.test(
      specifier,
    ) ||
    (/^(node:)?net$/.test(specifier) &&
      !/^\{\s*(isIP|isIPv4|isIPv6)(\s*,\s*(isIP|isIPv4|isIPv6))*\s*,?\s*\}$/.test(names));
  const forbiddenLayer = /^functions\/(store|http|http-client|app|workers|api)\//;

  /** Value imports and re-exports of `file` (type-only ones never load anything). */
  const importsOf = (file: string) => {
    const source = readFileSync(file, 'utf8');
    const found: { specifier: string; names: string }[] = [];
    for (const match of source.matchAll(/^(?:import|export)\s+(?!type\s)([^;]*?)\s+from\s+'([^']+)'/gms)) {
      found.push({ names: match[1] ?? '', specifier: match[2] ?? '' });
    }
    for (const match of source.matchAll(/^import\s+'([^']+)'/gm)) found.push({ names: '', specifier: match[1] ?? '' });
    return found;
  };

  /** The files reachable from `start` and every breach among them, as `file -> specifier`. */
  const reach = (start: string) => {
    const out: string[] = [];
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const { specifier, names } of importsOf(file)) {
        const from = relative(root, file);
        if (!specifier.startsWith('.')) {
          if (forbiddenModule(specifier, names)) out.push(`${from} -> ${specifier}`);
          continue;
        }
        const target = resolve(dirname(file), specifier);
        if (forbiddenLayer.test(relative(root, target))) out.push(`${from} -> ${relative(root, target)}`);
        else visit(target);
      }
    };
    visit(start);
    return { files: [...seen].map((file) => relative(root, file)), breaches: out };
  };

  const domainFiles = readdirSync(domainDir).filter((name) => name.endsWith('.ts'));

  it('has a file for each rule a newcomer looks up', () => {
    for (const rule of [
      'admission.ts',
      'pricing.ts',
      'price-multiplier.ts',
      'deferred-run-lifetime.ts',
      'workflow-lock.ts',
      'run-lifecycle.ts',
      'monthly-cap.ts',
      'webhook.ts',
      'licence.ts',
      'rate-limit.ts',
    ]) {
      expect(domainFiles, rule).toContain(rule);
    }
  });

  it('imports no AWS SDK, file system, network module or store, HTTP, app or worker code, even indirectly', () => {
    expect(domainFiles.flatMap((name) => reach(join(domainDir, name)).breaches)).toEqual([]);
  });

  it('follows imports through other folders, and catches such an import', () => {
    expect(reach(join(domainDir, 'licence.ts')).files).toContain('functions/nodes/providers/registry.ts');
    expect(reach(join(root, 'functions/app/start-run.ts')).breaches).toContain(
      'functions/app/start-run.ts -> functions/store/run/index.ts',
    );
    expect(forbiddenModule('@aws-sdk/lib-dynamodb', '{ GetCommand }')).toBe(true);
    expect(forbiddenModule('node:fs', '{ readFileSync }')).toBe(true);
    expect(forbiddenModule('node:https', '* as https')).toBe(true);
    expect(forbiddenModule('node:net', '{ connect }')).toBe(true);
    expect(forbiddenModule('node:net', '{ isIPv4, isIPv6 }')).toBe(false);
    expect(forbiddenModule('node:crypto', '{ createHmac }')).toBe(false);
    expect(forbiddenLayer.test('functions/store/run/index.ts')).toBe(true);
  });
});

describe('run deadline', () => {
  const start = at('2026-12-07T12:00:00.000Z');
  const due = deadlineAt(start, 3_600);

  it('counts from the start; a timer is delayed the whole wait, never early, at most 15 minutes', () => {
    expect(due.toISOString()).toBe('2026-12-07T13:00:00.000Z');
    expect(timerDelaySeconds(deadlineAt(start, 2), start)).toBe(2);
    expect(timerDelaySeconds(due, start)).toBe(900);
    expect(timerDelaySeconds(due, at('2026-12-07T12:59:58.500Z'))).toBe(2);
    expect(timerDelaySeconds(due, at('2026-12-07T13:00:05.000Z'))).toBe(0);
  });

  it('a message sends itself on until due, then ends a run in progress; an ended run is left alone', () => {
    const running = { inProgress: true };
    expect(deadlineStep(due, start, running)).toEqual({ kind: 'wait', delaySeconds: 900 });
    expect(deadlineStep(due, at('2026-12-07T12:59:59.999Z'), running)).toEqual({ kind: 'wait', delaySeconds: 1 });
    expect(deadlineStep(due, due, running)).toEqual({ kind: 'end' });
    expect(deadlineStep(due, at('2026-12-08T00:00:00.000Z'), running)).toEqual({ kind: 'end' });
    expect(deadlineStep(due, due, { inProgress: false })).toEqual({ kind: 'none' });
    expect(deadlineStep(due, start, { inProgress: false })).toEqual({ kind: 'none' });
  });

  it('waits for a run not yet committed for a minute past its due time, then drops the message', () => {
    expect(deadlineStep(due, start, undefined)).toEqual({ kind: 'wait', delaySeconds: 900 });
    expect(deadlineStep(due, at('2026-12-07T13:00:59.999Z'), undefined)).toEqual({ kind: 'wait', delaySeconds: 5 });
    expect(deadlineStep(due, at('2026-12-07T13:01:00.000Z'), undefined)).toEqual({ kind: 'none' });
  });
});

import { messages } from '../../schemas/errors.ts';
import type { RunMode } from '../../schemas/runs.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import { toCredits } from './credits.ts';
import type { Canvas } from './workflow-graph.ts';

/**
 * What a run is expected to cost, step by step, in hundredths of a credit. `preview` is priced as
 * `production`; `draft` uses the catalogue's draft price (equal for models priced per run). A
 * deferred run is priced at the multiplier in force when it starts; charges round up to whole
 * hundredths so the hold always covers them.
 */
export interface RunEstimate {
  steps: { nodeId: string; type: string; hundredths: number }[];
  totalHundredths: number;
}

/** Multipliers carry at most 4 decimals, so integer arithmetic on ten-thousandths is exact. */
export const applyMultiplier = (hundredths: number, multiplier: number): number =>
  Math.ceil((hundredths * Math.round(multiplier * 10_000)) / 10_000);

export const estimateRun = (canvas: Canvas, mode: RunMode, multiplier = 1): RunEstimate => {
  const steps = canvas.nodes.map((node) => {
    const spec = getNodeSpec(node.type);
    if (!spec) throw new Error(`No catalogue entry for ${node.type}`);
    const base = mode === 'draft' ? spec.price.draft : spec.price.production;
    return { nodeId: node.id, type: node.type, hundredths: applyMultiplier(base, multiplier) };
  });
  return { steps, totalHundredths: steps.reduce((sum, s) => sum + s.hundredths, 0) };
};

/** The facts the admission checks read, all in hundredths; null means "no limit set". */
export interface AdmissionFacts {
  perStepLimit: number | null;
  project: { hardCap: number | null; spent: number };
  key: { monthlyCap: number | null; spentThisMonth: number };
  balance: number;
}

export type Refusal =
  | { kind: 'perStepLimit'; nodeType: string; estimatedCharge: number; ceiling: number }
  | { kind: 'hardCap'; hardCap: number; spent: number; estimate: number }
  | { kind: 'monthlyCap'; monthlyCap: number; spentThisMonth: number }
  | { kind: 'insufficientCredits'; required: number };

/**
 * The spec's checks, in its order: per-step limit, project hard cap, key monthly cap, team
 * balance. The start transaction enforces the last three again atomically.
 */
export const admitRun = (estimate: RunEstimate, facts: AdmissionFacts): Refusal | null => {
  if (facts.perStepLimit !== null) {
    const over = estimate.steps.find((s) => s.hundredths > (facts.perStepLimit as number));
    if (over)
      return {
        kind: 'perStepLimit',
        nodeType: over.type,
        estimatedCharge: over.hundredths,
        ceiling: facts.perStepLimit,
      };
  }
  const total = estimate.totalHundredths;
  const { hardCap, spent } = facts.project;
  if (hardCap !== null && spent + total > hardCap) return { kind: 'hardCap', hardCap, spent, estimate: total };
  const { monthlyCap, spentThisMonth } = facts.key;
  if (monthlyCap !== null && spentThisMonth + total > monthlyCap)
    return { kind: 'monthlyCap', monthlyCap, spentThisMonth };
  if (facts.balance < total) return { kind: 'insufficientCredits', required: total };
  return null;
};

/** The calendar month (UTC) a key's spend is counted in, e.g. `2026-11`. */
export const spendMonth = (now: Date): string => now.toISOString().slice(0, 7);

/** Text for the 402 `resets` field: the first instant of the next UTC month. */
export const capResetsText = (now: Date): string => {
  const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return `Resets at ${next.toISOString()} (start of the next calendar month, UTC)`;
};

/** The spec's 402 body for a refusal, amounts in credits. */
export const refusalBody = (refusal: Refusal, now: Date): Record<string, unknown> => {
  switch (refusal.kind) {
    case 'perStepLimit':
      return {
        error: messages.perStepLimitExceeded(
          refusal.nodeType,
          toCredits(refusal.estimatedCharge),
          toCredits(refusal.ceiling),
        ),
        nodeType: refusal.nodeType,
        estimatedCharge: toCredits(refusal.estimatedCharge),
        ceiling: toCredits(refusal.ceiling),
      };
    case 'hardCap':
      return {
        error: messages.projectHardCapExceeded,
        hardCap: toCredits(refusal.hardCap),
        spent: toCredits(refusal.spent),
        estimate: toCredits(refusal.estimate),
      };
    case 'monthlyCap':
      return {
        error: messages.monthlyCreditCapReached,
        monthlyCreditCap: toCredits(refusal.monthlyCap),
        spentThisMonth: toCredits(refusal.spentThisMonth),
        resets: capResetsText(now),
      };
    case 'insufficientCredits':
      return { error: messages.insufficientCredits, required: toCredits(refusal.required) };
  }
};

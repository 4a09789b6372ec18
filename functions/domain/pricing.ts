/**
 * What a run costs, in hundredths of a credit. A run is estimated step by step when it starts, at
 * the prices of its mode (functions/nodes/catalogue/run-modes.ts) times the price multiplier in force
 * (1 for a run started at once; for a deferred run the multiplier it starts at, see
 * functions/domain/price-multiplier.ts), each charge rounded up to whole hundredths so the hold
 * always covers it. A model step's price follows the work it asks for
 * (functions/domain/model-pricing.ts); any other step has its flat catalogue price. The whole
 * estimate is held from the team balance at the start; each step is charged when it completes
 * (`stepCharge`): the price of the work it did, never more than its estimate; a skipped or failed
 * step nothing (but a provider job that ran to its end with an unusable answer: its price). What
 * was not charged is released when the run ends.
 *
 * A model the stage lists with its own price (platform/paid-models.ts) is priced at it: a flat price
 * a step in any mode, or a multiplier over the node type's price for the work; the estimate and the
 * charge both read it here (`listedModelPrice`).
 */

import { listedPrice, type ModelPrice } from '../../platform/paid-models.ts';
import type { RunMode } from '../../schemas/run-words.ts';
import type { Canvas, CanvasNode } from '../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import type { NodeSpec } from '../nodes/catalogue/node-spec.ts';
import { priceInMode } from '../nodes/catalogue/run-modes.ts';
import type { ModelWork } from '../nodes/executors/model-work.ts';
import { stepProvider } from '../nodes/providers/registry.ts';
import type { StageProviders } from '../nodes/providers/stage.ts';
import { askedWork, chargeOfWork, modelStepPrice } from './model-pricing.ts';
import { isCompleted, type StepEndStatus } from './run-lifecycle.ts';

/** A run's estimate: each step's charge, their sum, and the multiplier they were priced at. */
export interface RunEstimate {
  steps: { nodeId: string; type: string; hundredths: number }[];
  totalHundredths: number;
  multiplier: number;
}

/** A price times a multiplier, rounded up; multipliers carry at most 4 decimals, so integer arithmetic on ten-thousandths is exact. */
export const applyMultiplier = (hundredths: number, multiplier: number): number =>
  Math.ceil((hundredths * Math.round(multiplier * 10_000)) / 10_000);

/** What the stage prices its models at: its list of paid models and the defaults on it. */
export type StagePricing = Pick<StageProviders, 'paidModels' | 'modelDefaults'>;

/**
 * The price the stage lists for the model a step runs (as the step resolves it), or undefined:
 * the node type's own. The model is the one named or defaulted, whoever's key it runs on.
 */
export const listedModelPrice = (
  node: Pick<CanvasNode, 'config'>,
  spec: NodeSpec,
  stage: StagePricing | undefined,
): ModelPrice | undefined => {
  if (!stage?.paidModels) return undefined;
  const use = stepProvider(node, spec, stage.modelDefaults);
  return use?.model ? listedPrice(stage.paidModels, stage.modelDefaults, use.provider, use.model) : undefined;
};

/** A model step's price for its work (`nodeTypePrice`, in its mode) under the stage's listed price. */
const underListedPrice = (listed: ModelPrice | undefined, nodeTypePrice: number): number =>
  listed === undefined
    ? nodeTypePrice
    : 'hundredths' in listed
      ? listed.hundredths
      : applyMultiplier(nodeTypePrice, listed.multiplier);

/** The estimate of a run of `canvas` in `mode` at `multiplier`, at the stage's listed model prices. */
export const estimateRun = (canvas: Canvas, mode: RunMode, multiplier = 1, stage?: StagePricing): RunEstimate => {
  const steps = canvas.nodes.map((node) => {
    const spec = getNodeSpec(node.type);
    if (!spec) throw new Error(`No catalogue entry for ${node.type}`);
    const price = spec.model
      ? underListedPrice(listedModelPrice(node, spec, stage), modelStepPrice(spec, askedWork(canvas, node, mode), mode))
      : priceInMode(spec.price, mode);
    return { nodeId: node.id, type: node.type, hundredths: applyMultiplier(price, multiplier) };
  });
  return { steps, totalHundredths: steps.reduce((sum, s) => sum + s.hundredths, 0), multiplier };
};

/** What a run remembers of its pricing (the run item's fields). */
export interface RunPricing {
  stepEstimates?: Readonly<Record<string, number>>;
  mode: RunMode;
  /** The multiplier its estimate was priced at; absent on runs started before it was kept. */
  priceMultiplier?: number;
}

/**
 * What a step is charged when it ends: nothing unless it completed; then the price of the work it
 * reports having done (`work`, model steps), never above its estimate, or its estimate when it
 * reports none (its work is what it asked for), the stage lists a flat price for its model
 * (`listed`), or the run kept no multiplier to price it at.
 */
export const stepCharge = (
  run: RunPricing,
  step: { nodeId: string; spec: NodeSpec; work?: ModelWork; listed?: ModelPrice | undefined },
  status: StepEndStatus,
): number => {
  if (!isCompleted(status)) return 0;
  const estimate = run.stepEstimates?.[step.nodeId] ?? 0;
  if (!step.work || run.priceMultiplier === undefined) return estimate;
  if (step.listed !== undefined && 'hundredths' in step.listed) return estimate;
  const price = applyMultiplier(
    underListedPrice(step.listed, modelStepPrice(step.spec, step.work, run.mode)),
    run.priceMultiplier,
  );
  return chargeOfWork(estimate, price);
};

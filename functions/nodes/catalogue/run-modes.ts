/**
 * Run modes (spec 4.3): `production` runs the workflow as built, `preview` behaves and is priced
 * exactly like `production`, and `draft` is a cheaper pass. Everything `draft` changes is here:
 *
 * - a model step makes one variation, a third of its sampling steps (at least one) and text
 *   answers of at most `draftMaxTokens` tokens (`modeSettings`, read by the model executors);
 * - a model step costs half its production price, rounded up, except on a model its provider
 *   charges per run whatever the settings, which costs the same in every mode (`draftPrice`);
 *   a step that is not a model step costs the same in every mode;
 * - a run is estimated and charged at the prices of its mode (`priceInMode`).
 *
 * A provider is told the mode too and may lower its own quality further (an image provider asks
 * for its low quality), which never changes the price.
 */
import type { RunMode } from '../../../schemas/run-words.ts';

/** Longest text answer in `draft`, in tokens. */
export const draftMaxTokens = 64;

/** Sampling steps of a model step whose config names none. */
export const defaultSamplingSteps = 30;

/**
 * Longest text answer of a step whose config names no `maxTokens`. A bound is always sent, never
 * "the provider's own limit": the estimate is held for it, so it must be known before the run.
 */
export const defaultMaxTokens = 1_000;

/** What a mode makes of a model step's settings. */
export interface ModeSettings {
  variations: number;
  steps: number;
  maxTokens: number;
}

/**
 * The settings a model step runs with in `mode`, from its config (spec 4.3). `variations` is read
 * only where the step's schema has it (`ImageGen`): elsewhere it is an unchecked key, so one image.
 */
export const modeSettings = (mode: RunMode, config: Record<string, unknown>, hasVariations = true): ModeSettings => {
  const draft = mode === 'draft';
  const steps = typeof config.steps === 'number' ? config.steps : defaultSamplingSteps;
  const variations = hasVariations && typeof config.variations === 'number' ? config.variations : 1;
  const maxTokens = typeof config.maxTokens === 'number' ? config.maxTokens : defaultMaxTokens;
  return {
    variations: draft ? 1 : variations,
    steps: draft ? Math.max(1, Math.ceil(steps / 3)) : steps,
    maxTokens: draft ? Math.min(maxTokens, draftMaxTokens) : maxTokens,
  };
};

/**
 * An image model's default side in pixels, by the provider that renders it: the offline sandbox
 * renders small images (fast tests and local runs), real providers their usual 1024.
 */
export const defaultImageSide = (providerKey: string): number => (providerKey === 'sandbox' ? 256 : 1024);

/** The size an image model step asks for: its config's, else its provider's default side. */
export const imageSize = (config: Record<string, unknown>, providerKey: string): { width: number; height: number } => {
  const side = defaultImageSide(providerKey);
  return {
    width: typeof config.width === 'number' ? config.width : side,
    height: typeof config.height === 'number' ? config.height : side,
  };
};

/** A model step's `draft` price from its production price, in hundredths of a credit. */
export const draftPrice = (productionHundredths: number, pricedPerRun: boolean): number =>
  pricedPerRun ? productionHundredths : Math.ceil(productionHundredths / 2);

/** The price of a step in `mode`; `preview` is priced as `production`. */
export const priceInMode = (price: { production: number; draft: number }, mode: RunMode): number =>
  mode === 'draft' ? price.draft : price.production;

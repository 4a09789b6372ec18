/**
 * The work a model step does, as its executor reports it (`StepOutcome.work`) and as its price
 * is reckoned from (functions/domain/model-pricing.ts): each cost driver, its reference amount, and
 * the bounds every driver stays within. Pure.
 */
import { maxPixels } from '../media/png.ts';

/** The reference work of the image models' rate: one 1024 × 1024 image of 30 sampling steps. */
export const referenceImagePixels = 1024 * 1024;
export const referenceSamplingSteps = 30;
/** The reference work of the text models' rate: 1,000 tokens of answer. */
export const referenceTextTokens = 1_000;
/** The reference work of AudioGen's rate: 4 seconds (its default length). */
export const referenceAudioSeconds = 4;

/** Most images a step working on images takes on its input (a list of an ImageGen's variations at most). */
export const maxImagesPerStep = 4;
/** Largest image any step reads or writes, in pixels (the PNG reader's limit, 4096 × 4096). */
export const maxImagePixels = maxPixels;
/** Longest text an Embedder takes, in tokens; a longer one fails the step (a real embedding model's limit). */
export const maxEmbedTokens = 8_192;

/**
 * Tokens of a text, counted as four characters each (the usual rule of thumb, close for English),
 * at least one. Used for what a step did (an answer, an Embedder's text), never for an estimate.
 */
export const tokensOf = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

/** The work of one model step, by its cost driver. */
export type ModelWork =
  /** Image generation: `images` images of `pixels` each, `steps` sampling steps each. */
  | { kind: 'sampling'; images: number; pixels: number; steps: number }
  /** Text: answer tokens (LlmWorker, VisionInterrogator) or input tokens (Embedder). */
  | { kind: 'tokens'; tokens: number }
  /** Audio: seconds generated, each started second counted whole. */
  | { kind: 'seconds'; seconds: number }
  /** Image to image: output pixels, summed over the images processed. */
  | { kind: 'pixels'; pixels: number }
  /** A model its provider charges per run whatever the settings. */
  | { kind: 'run' };

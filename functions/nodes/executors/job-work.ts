/**
 * The work a finished job did, measured as a synchronous step's is (functions/nodes/executors/models.ts):
 * from what it made (each image's size read from its bytes, an audio file's length, the answer's
 * tokens) and what its provider reports (tokens counted by the model). The step is charged that work's
 * price, never above its estimate (functions/domain/pricing.ts `stepCharge`). Undefined when nothing
 * can be measured (a format whose size cannot be read, a model priced per run): the estimate stands.
 */
import { imageSize as imageDimensions } from 'image-size';
import { modeSettings } from '../catalogue/run-modes.ts';
import { isWav, readWavFormat } from '../media/wav.ts';
import type { JobUsage, MediaFile } from '../providers/types.ts';
import { type ModelWork, maxImagePixels, tokensOf } from './model-work.ts';
import type { StepContext } from './types.ts';

/** What a finished job made, as the outcome read it: its files by output handle kind, its text. */
export interface JobProduct {
  images: MediaFile[];
  audio: MediaFile[];
  text: string | undefined;
}

/** An image's pixels from its bytes (PNG, JPEG, WebP, GIF, …), or undefined when they cannot be read. */
export const imagePixels = (body: Uint8Array): number | undefined => {
  try {
    const { width, height } = imageDimensions(body);
    return width > 0 && height > 0 ? Math.min(width * height, maxImagePixels) : undefined;
  } catch {
    return undefined;
  }
};

/** A WAV file's length in seconds, or undefined for another format. */
const audioSeconds = (body: Uint8Array): number | undefined => {
  if (!isWav(body)) return undefined;
  try {
    const format = readWavFormat(body);
    const bytesPerSecond = format.sampleRate * format.channels * (format.bitsPerSample / 8);
    return bytesPerSecond > 0 ? format.dataBytes / bytesPerSecond : undefined;
  } catch {
    return undefined;
  }
};

/** Each image's pixels; undefined when any of them cannot be read (then nothing is measured). */
const eachPixels = (images: MediaFile[]): number[] | undefined => {
  const pixels = images.map((image) => imagePixels(image.body));
  return pixels.length > 0 && pixels.every((p) => p !== undefined) ? (pixels as number[]) : undefined;
};

/** The work a finished job of `context`'s step did, from `product` and its provider's `usage`. */
export const measuredJobWork = (
  context: StepContext,
  product: JobProduct,
  usage: JobUsage | undefined,
): ModelWork | undefined => {
  const type = context.spec.type;
  switch (type) {
    case 'ImageGen':
    case 'DiffusionWorker': {
      const pixels = eachPixels(product.images);
      if (!pixels) return undefined;
      // The sampling steps cannot be seen in an image: those the step asked for (its estimate's).
      const { steps } = modeSettings(context.mode, context.node.config, type === 'ImageGen');
      return { kind: 'sampling', images: pixels.length, pixels: Math.max(...pixels), steps };
    }
    case 'Upscaler':
    case 'BackgroundRemover':
    case 'DepthEstimator':
    case 'ControlNetFilter': {
      const pixels = eachPixels(product.images);
      return pixels && { kind: 'pixels', pixels: pixels.reduce((sum, p) => sum + p, 0) };
    }
    case 'PbrSynthesizer': {
      // Three maps of one size, priced as one image (as the synchronous step is).
      const pixels = eachPixels(product.images);
      return pixels && { kind: 'pixels', pixels: Math.max(...pixels) };
    }
    case 'LlmWorker':
    case 'VisionInterrogator': {
      const tokens = usage?.outputTokens ?? (product.text === undefined ? undefined : tokensOf(product.text));
      return tokens === undefined ? undefined : { kind: 'tokens', tokens: Math.max(1, tokens) };
    }
    case 'Embedder':
      return usage?.inputTokens === undefined ? undefined : { kind: 'tokens', tokens: Math.max(1, usage.inputTokens) };
    case 'AudioGen': {
      const [audio] = product.audio;
      const seconds = audio && audioSeconds(audio.body);
      return seconds === undefined ? undefined : { kind: 'seconds', seconds };
    }
    default:
      return undefined;
  }
};

/**
 * The built-in `sandbox` provider: offline and deterministic (the same request gives the same
 * bytes), producing real, valid files: PNG images, PCM16 WAV sound, GLB meshes, text and
 * normalised embeddings. Image "models" do real pixel work (bilinear upscaling, Sobel edges and
 * normals, border-colour matting). Latency is `latencyMs` per call (env `SANDBOX_LATENCY_MS`,
 * default 0), weighted by how heavy the capability is.
 */
import { createHash } from 'node:crypto';
import { glbToMesh, meshToGlb, type TriangleMesh } from '../media/glb.ts';
import {
  albedoMap,
  blend,
  depthMap,
  edgeMap,
  imageStats,
  normalMap,
  removeBackground,
  resizeNearest,
  roughnessMap,
  upscale,
} from '../media/image-ops.ts';
import { decodePng, encodePng, isPng, makeImage, type RgbaImage } from '../media/png.ts';
import { encodeWav } from '../media/wav.ts';
import {
  type AudioRequest,
  type EmbedRequest,
  type ImageEditRequest,
  type ImageRequest,
  type MediaFile,
  type MeshRequest,
  type Provider,
  ProviderError,
  type TextRequest,
} from './types.ts';

export interface SandboxOptions {
  /** Base latency of one call in ms; 0 answers at once. */
  latencyMs?: number;
}

/** Sandbox options from env: `SANDBOX_LATENCY_MS` (default 0). */
export const sandboxOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): SandboxOptions => {
  const latency = Number(env.SANDBOX_LATENCY_MS ?? 0);
  return { latencyMs: Number.isFinite(latency) && latency > 0 ? latency : 0 };
};

/** SHA-256 of a JSON description of the request (files by their digest), as a seed source. */
const digest = (value: unknown): Buffer =>
  createHash('sha256')
    .update(
      JSON.stringify(value, (key, v) => {
        if (key === 'signal') return undefined;
        if (v instanceof Uint8Array) return createHash('sha256').update(v).digest('hex');
        return v;
      }),
    )
    .digest();

/** mulberry32: a small deterministic PRNG. */
export const prng = (seed: number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (ms <= 0) return resolve();
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

const png = (image: RgbaImage): MediaFile => ({ body: encodePng(image), contentType: 'image/png' });

const decodeInput = (file: MediaFile): RgbaImage => {
  if (!isPng(file.body)) throw new ProviderError('The sandbox reads PNG images only');
  try {
    return decodePng(file.body);
  } catch (error) {
    throw new ProviderError(`The input image is not a readable PNG: ${(error as Error).message}`);
  }
};

const words = (
  'light form colour texture shape depth motion pattern surface contrast balance rhythm detail edge scale ' +
  'space layer tone shadow grain signal frame story element structure harmony focus mood angle curve line'
).split(' ');

const colourName = ([r, g, b]: readonly number[]): string => {
  const names: [string, number, number, number][] = [
    ['red', 200, 40, 40],
    ['green', 40, 160, 60],
    ['blue', 40, 70, 200],
    ['yellow', 220, 210, 60],
    ['purple', 130, 60, 160],
    ['orange', 230, 130, 40],
    ['teal', 40, 150, 150],
    ['grey', 128, 128, 128],
    ['white', 240, 240, 240],
    ['black', 15, 15, 15],
  ];
  return names.reduce(
    (best, [name, nr, ng, nb]) => {
      const d = Math.hypot((r ?? 0) - nr, (g ?? 0) - ng, (b ?? 0) - nb);
      return d < best.d ? { name, d } : best;
    },
    { name: 'grey', d: Infinity },
  ).name;
};

/** A gradient with soft circles, colours from the seed; `levels` bands it (fewer sampling steps, coarser). */
const synthesise = (seed: Buffer, width: number, height: number, levels: number): RgbaImage => {
  const random = prng(seed.readUInt32BE(0));
  const from = [seed[4] ?? 0, seed[5] ?? 0, seed[6] ?? 0];
  const to = [seed[7] ?? 255, seed[8] ?? 255, seed[9] ?? 255];
  const angle = random() * Math.PI * 2;
  const [dx, dy] = [Math.cos(angle), Math.sin(angle)];
  const circles = Array.from({ length: 3 + Math.floor(random() * 4) }, () => ({
    x: random() * width,
    y: random() * height,
    r: (0.1 + random() * 0.3) * Math.min(width, height),
    tint: [random() * 255, random() * 255, random() * 255],
  }));
  const band = (v: number) => Math.round(Math.round((v / 255) * (levels - 1)) * (255 / (levels - 1)));
  return makeImage(width, height, (x, y) => {
    const t = Math.min(1, Math.max(0, ((x / width - 0.5) * dx + (y / height - 0.5) * dy) * 0.9 + 0.5));
    const rgb = from.map((f, i) => f * (1 - t) + (to[i] as number) * t);
    for (const c of circles) {
      const k = Math.max(0, 1 - Math.hypot(x - c.x, y - c.y) / c.r);
      for (let i = 0; i < 3; i++) rgb[i] = (rgb[i] as number) * (1 - k * 0.6) + (c.tint[i] as number) * k * 0.6;
    }
    return [band(rgb[0] as number), band(rgb[1] as number), band(rgb[2] as number), 255];
  });
};

/** A height-field grid mesh (n × n vertices) with heights from `height(u, v)` in 0..1. */
const heightField = (n: number, height: (u: number, v: number) => number): TriangleMesh => {
  const positions = new Float32Array(n * n * 3);
  for (let j = 0; j < n; j++) {
    for (let i = 0; i < n; i++) {
      const u = i / (n - 1);
      const v = j / (n - 1);
      positions.set([u - 0.5, height(u, v) * 0.5, v - 0.5], (j * n + i) * 3);
    }
  }
  const indices = new Uint32Array((n - 1) * (n - 1) * 6);
  let k = 0;
  for (let j = 0; j < n - 1; j++) {
    for (let i = 0; i < n - 1; i++) {
      const a = j * n + i;
      indices.set([a, a + n, a + 1, a + 1, a + n, a + n + 1], k);
      k += 6;
    }
  }
  return { positions, indices };
};

const humanoid = ['hips', 'spine', 'chest', 'neck', 'head', 'arm.L', 'arm.R', 'leg.L', 'leg.R'];
const quadruped = ['hips', 'spine', 'neck', 'head', 'tail', 'leg.FL', 'leg.FR', 'leg.BL', 'leg.BR'];

/** The sandbox provider. */
export const createSandboxProvider = (options: SandboxOptions = {}): Provider => {
  const latency = options.latencyMs ?? 0;
  const wait = (weight: number, signal: AbortSignal) => sleep(latency * weight, signal);

  return {
    key: 'sandbox',

    async generateText(request: TextRequest): Promise<string> {
      await wait(1, request.signal);
      const seed = digest(request);
      const random = prng(seed.readUInt32BE(0));
      const budget = Math.max(1, request.maxTokens ?? 120);
      const parts: string[] = [];
      const topic = request.prompt.trim().replace(/\s+/g, ' ').slice(0, 80);
      parts.push(`(${request.model}) On "${topic}":`);
      for (const image of request.images ?? []) {
        if (!isPng(image.body)) continue;
        const stats = imageStats(decodePng(image.body));
        parts.push(`the image is ${stats.width}×${stats.height} pixels, mostly ${colourName(stats.mean)}.`);
      }
      if (request.context?.length) parts.push(`Drawing on ${request.context.length} piece(s) of context.`);
      let count = parts.join(' ').split(' ').length;
      let sentence: string[] = [];
      while (count + sentence.length < budget) {
        sentence.push(words[Math.floor(random() * words.length)] as string);
        if (sentence.length >= 6 + Math.floor(random() * 6)) {
          const text = sentence.join(' ');
          parts.push(`${text.charAt(0).toUpperCase()}${text.slice(1)}.`);
          count += sentence.length;
          sentence = [];
        }
      }
      if (sentence.length) parts.push(`${sentence.join(' ')}.`);
      return parts.join(' ').split(' ').slice(0, budget).join(' ');
    },

    async generateImage(request: ImageRequest): Promise<MediaFile[]> {
      await wait(4, request.signal);
      const levels = Math.max(2, Math.min(256, request.steps * 4));
      const reference = request.reference ? decodeInput(request.reference) : undefined;
      return Array.from({ length: request.variations }, (_, variation) => {
        const seed = digest({ ...request, reference: request.reference?.body, variation });
        let image = synthesise(seed, request.width, request.height, levels);
        if (reference) {
          const base = resizeNearest(reference, request.width, request.height);
          image = blend(base, image, request.strength ?? 0.5);
        }
        return png(image);
      });
    },

    async editImage(request: ImageEditRequest): Promise<MediaFile> {
      await wait(2, request.signal);
      const image = decodeInput(request.image);
      switch (request.operation) {
        case 'upscale':
          return png(upscale(image, request.scale ?? 2));
        case 'remove_background':
          return png(removeBackground(image));
        case 'depth':
          return png(depthMap(image));
        case 'control': {
          const map = request.controlMode === 'depth' ? depthMap(image) : edgeMap(image);
          if (!request.prompt) return png(map);
          const styled = synthesise(digest(request.prompt), image.width, image.height, 64);
          return png(blend(map, styled, Math.min(1, (request.strength ?? 1) / 2)));
        }
        case 'albedo':
          return png(albedoMap(image));
        case 'normal':
          return png(normalMap(image));
        case 'roughness':
          return png(roughnessMap(image));
      }
    },

    async generateAudio(request: AudioRequest): Promise<MediaFile> {
      await wait(3, request.signal);
      const seed = digest(request);
      const random = prng(seed.readUInt32BE(0));
      const sampleRate = request.mode === 'draft' ? 8_000 : 22_050;
      const count = Math.round(sampleRate * request.durationSeconds);
      const notes = Array.from({ length: 4 }, () => 220 * 2 ** (Math.floor(random() * 24) / 12));
      const samples = new Int16Array(count);
      for (let i = 0; i < count; i++) {
        const t = i / sampleRate;
        const note = notes[Math.floor((t / request.durationSeconds) * notes.length)] ?? 440;
        const local = (t * notes.length) % request.durationSeconds;
        const envelope = Math.min(1, local * 20) * Math.exp(-local * 1.5);
        const wave = Math.sin(2 * Math.PI * note * t) * 0.7 + Math.sin(4 * Math.PI * note * t) * 0.2;
        samples[i] = Math.round(wave * envelope * 0.6 * 32767);
      }
      return { body: encodeWav(samples, sampleRate), contentType: 'audio/wav' };
    },

    async generateMesh(request: MeshRequest): Promise<MediaFile> {
      await wait(8, request.signal);
      if (request.operation === 'rig') {
        if (!request.mesh) throw new ProviderError('Rigging needs a mesh');
        let mesh: TriangleMesh;
        try {
          mesh = glbToMesh(request.mesh.body);
        } catch (error) {
          throw new ProviderError(`The sandbox rigs GLB meshes only: ${(error as Error).message}`);
        }
        const bones = request.skeleton === 'quadruped' ? quadruped : humanoid;
        return {
          body: meshToGlb(mesh, { skeleton: request.skeleton ?? 'humanoid', bones }),
          contentType: 'model/gltf-binary',
        };
      }
      const n = request.mode === 'draft' ? 9 : 17;
      const image = request.image ? decodeInput(request.image) : undefined;
      const random = prng(digest({ ...request, image: request.image?.body }).readUInt32BE(0));
      const bumps = Array.from({ length: 4 }, () => ({
        x: random(),
        y: random(),
        h: random(),
        r: 0.15 + random() * 0.3,
      }));
      const mesh = heightField(n, (u, v) => {
        if (image) {
          const [r, g, b] = [0, 1, 2].map(
            (c) =>
              image.data[
                (Math.min(image.height - 1, Math.floor(v * image.height)) * image.width +
                  Math.min(image.width - 1, Math.floor(u * image.width))) *
                  4 +
                  c
              ] ?? 0,
          );
          return (0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0)) / 255;
        }
        return bumps.reduce((h, bump) => h + bump.h * Math.max(0, 1 - Math.hypot(u - bump.x, v - bump.y) / bump.r), 0);
      });
      return { body: meshToGlb(mesh), contentType: 'model/gltf-binary' };
    },

    async embed(request: EmbedRequest): Promise<number[]> {
      await wait(0.2, request.signal);
      // Feature hashing of words and character trigrams: similar texts get similar vectors.
      const dimensions = request.dimensions ?? 256;
      const vector = new Float64Array(dimensions);
      const text = request.text.toLowerCase();
      const features = [...(text.match(/[\p{L}\p{N}]+/gu) ?? [])];
      for (let i = 0; i + 3 <= text.length; i++) features.push(`#${text.slice(i, i + 3)}`);
      for (const feature of features) {
        const h = createHash('sha256').update(feature).digest();
        const index = h.readUInt32BE(0) % dimensions;
        vector[index] = (vector[index] as number) + ((h[4] as number & 1) ? 1 : -1);
      }
      let norm = Math.hypot(...vector);
      if (norm === 0) {
        vector[0] = 1;
        norm = 1;
      }
      return Array.from(vector, (v) => v / norm);
    },
  };
};

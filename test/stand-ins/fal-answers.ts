/**
 * What each of the catalogue's default fal models answers, in the shape its page documents (sources
 * in docs/models.md), and the files those answers point at, as fal's CDN would hold them: real PNG,
 * WAV and GLB bytes (the FBX only needs its magic). Serve `falFiles` on a file host
 * (`startFileServer`, http.ts) and answer with `falAnswers(<its url>)`. Shared by the tests of every
 * model node and the deploy rehearsal, which both end fal's jobs with these answers.
 */
import { meshToGlb } from '../../functions/nodes/media/glb.ts';
import { encodePng, makeImage } from '../../functions/nodes/media/png.ts';
import { encodeWav } from '../../functions/nodes/media/wav.ts';

const png = (rgb: readonly [number, number, number]) => encodePng(makeImage(8, 8, () => [...rgb, 255]));

/** The solid colour of each image file. */
export const falColours = {
  texture: [200, 200, 200],
  basecolor: [180, 60, 40],
  normal: [128, 128, 255],
  roughness: [90, 90, 90],
  depth: [30, 30, 30],
} as const satisfies Record<string, readonly [number, number, number]>;

const triangle = { positions: new Float32Array([0, 0, 0, 1, 0, 0, 0, 1, 0]), indices: new Uint32Array([0, 1, 2]) };

export const falFiles = {
  '/texture.png': { body: png(falColours.texture), contentType: 'image/png' },
  '/basecolor.png': { body: png(falColours.basecolor), contentType: 'image/png' },
  '/normal.png': { body: png(falColours.normal), contentType: 'image/png' },
  '/roughness.png': { body: png(falColours.roughness), contentType: 'image/png' },
  '/depth.png': { body: png(falColours.depth), contentType: 'image/png' },
  '/audio.wav': {
    body: encodeWav(
      new Int16Array(800).map((_, i) => (i % 40) * 400),
      8000,
    ),
    contentType: 'audio/wav',
  },
  '/trellis.glb': { body: meshToGlb(triangle, { source: 'trellis' }), contentType: 'model/gltf-binary' },
  '/rigged.glb': { body: meshToGlb(triangle, { source: 'rigged' }), contentType: 'model/gltf-binary' },
  '/walking.glb': { body: meshToGlb(triangle, { source: 'walking' }), contentType: 'model/gltf-binary' },
  '/rigged.fbx': {
    body: new TextEncoder().encode('Kaydara FBX Binary  \0\x1a\0\xe8\x1c\0\0'),
    contentType: 'application/octet-stream',
  },
} satisfies Record<string, { body: Uint8Array; contentType: string }>;

/** Each default fal model's answer, its files on the host at `filesUrl`; throws for an app it does not know. */
export const falAnswers =
  (filesUrl: string) =>
  (appId: string): unknown => {
    /** A fal File object, as its answers carry them. */
    const file = (path: keyof typeof falFiles) => ({
      url: `${filesUrl}${path}`,
      content_type: falFiles[path].contentType,
      file_name: path.slice(1),
      file_size: falFiles[path].body.byteLength,
    });
    switch (appId) {
      case 'fal-ai/image-preprocessors/depth-anything/v2':
        return { image: file('/depth.png') };
      case 'fal-ai/patina/material/extract':
        // The extracted texture (no map_type) and one entry per predicted map.
        return {
          images: [
            file('/texture.png'),
            { ...file('/basecolor.png'), map_type: 'basecolor' },
            { ...file('/normal.png'), map_type: 'normal' },
            { ...file('/roughness.png'), map_type: 'roughness' },
          ],
          prompt: 'the surface material',
          seed: 42,
          timings: { inference: 1.2 },
        };
      case 'fal-ai/trellis':
        return { model_mesh: file('/trellis.glb'), timings: { prepare: 0.1, generation: 9.5, export: 1.1 } };
      case 'fal-ai/meshy/rigging':
        return {
          rigged_character_glb: file('/rigged.glb'),
          rigged_character_fbx: file('/rigged.fbx'),
          basic_animations: { walking_glb: file('/walking.glb') },
        };
      case 'fal-ai/stable-audio':
        return { audio_file: file('/audio.wav') };
      default:
        throw new Error(`no answer for fal app ${appId}`);
    }
  };

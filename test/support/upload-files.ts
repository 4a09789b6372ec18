/**
 * Small files of every accepted upload type, built from their formats' headers, for the sniffing
 * rule's tests (test/file-sniff.test.ts) and the uploads' (test/files.int.test.ts).
 */
import { meshToGlb } from '../../functions/nodes/media/glb.ts';
import { encodePng, makeImage, writePngChunks } from '../../functions/nodes/media/png.ts';
import { encodeWav } from '../../functions/nodes/media/wav.ts';
import type { UploadContentType } from '../../schemas/upload-types.ts';

const u16le = (n: number) => Uint8Array.of(n & 0xff, n >> 8);
const u32be = (n: number) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
const u32le = (n: number) => Uint8Array.of(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24);
const text = (s: string) => new TextEncoder().encode(s);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

/** A real PNG of `width` × `height` pixels. */
export const png = (width = 4, height = 3) => encodePng(makeImage(width, height, (x, y) => [x * 40, y * 40, 90, 255]));

/**
 * A PNG bomb: a few dozen bytes whose IHDR claims `width` × `height` pixels; with `bytes`, padded
 * by a tEXt chunk to exactly that size (to pass as another PNG of the same declared size).
 */
export const pngBomb = (width = 100_000, height = 100_000, bytes?: number) => {
  const ihdr = { type: 'IHDR', data: concat(u32be(width), u32be(height), Uint8Array.of(8, 6, 0, 0, 0)) };
  const iend = { type: 'IEND', data: new Uint8Array(0) };
  // Signature, IHDR (12 + 13), IEND (12), and the tEXt chunk's own 12.
  const padding = bytes === undefined ? undefined : bytes - 8 - 25 - 12 - 12;
  if (padding === undefined) return writePngChunks([ihdr, iend]);
  if (padding < 8) throw new Error(`a padded PNG bomb needs at least ${8 + 57} bytes`);
  return writePngChunks([ihdr, { type: 'tEXt', data: concat(text('Comment\0'), text('x'.repeat(padding - 8))) }, iend]);
};

/** A JPEG's head: SOI, an APP0 segment of `app0Bytes`, then a baseline frame header. */
export const jpeg = (width = 640, height = 480, app0Bytes = 16) =>
  concat(
    Uint8Array.of(0xff, 0xd8, 0xff, 0xe0, app0Bytes >> 8, app0Bytes & 0xff),
    new Uint8Array(app0Bytes - 2),
    Uint8Array.of(0xff, 0xc0, 0, 17, 8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3),
    new Uint8Array(9),
    Uint8Array.of(0xff, 0xd9),
  );

export const gif = (width = 10, height = 20) =>
  concat(text('GIF89a'), u16le(width), u16le(height), Uint8Array.of(0, 0, 0), Uint8Array.of(0x3b));

const riff = (form: string, chunk: string, data: Uint8Array) =>
  concat(text('RIFF'), u32le(4 + 8 + data.length), text(form), text(chunk), u32le(data.length), data);

/** A lossy WebP's head (`VP8 `): frame tag, start code, 14-bit dimensions. */
export const webpLossy = (width = 300, height = 200) =>
  riff(
    'WEBP',
    'VP8 ',
    concat(Uint8Array.of(0, 0, 0, 0x9d, 0x01, 0x2a), u16le(width), u16le(height), new Uint8Array(4)),
  );

/** A lossless WebP's head (`VP8L`): signature, then width − 1 and height − 1 in 14 bits each. */
export const webpLossless = (width = 300, height = 200) =>
  riff('WEBP', 'VP8L', concat(Uint8Array.of(0x2f), u32le((width - 1) | ((height - 1) << 14)), new Uint8Array(4)));

/** An extended WebP's head (`VP8X`): the canvas, width − 1 and height − 1 in 24 bits each. */
export const webpExtended = (width = 300, height = 200) =>
  riff('WEBP', 'VP8X', concat(new Uint8Array(4), u32le(width - 1).subarray(0, 3), u32le(height - 1).subarray(0, 3)));

export const wav = () =>
  encodeWav(
    Int16Array.from({ length: 64 }, (_, i) => i * 100),
    8000,
  );
export const mp3 = () => concat(text('ID3'), Uint8Array.of(4, 0, 0, 0, 0, 0, 0), new Uint8Array(32));
export const mp3FrameSync = () => concat(Uint8Array.of(0xff, 0xfb, 0x90, 0x64), new Uint8Array(32));
export const flac = () => concat(text('fLaC'), new Uint8Array(38));
export const ogg = () => concat(text('OggS'), new Uint8Array(23));
export const glb = () =>
  meshToGlb({ positions: Float32Array.of(0, 0, 0, 1, 0, 0, 0, 1, 0), indices: Uint32Array.of(0, 1, 2) });
export const gltf = () => text(JSON.stringify({ asset: { version: '2.0' }, scenes: [] }));
export const obj = () => text('# a triangle\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n');
export const fbxBinary = () => concat(text('Kaydara FBX Binary  '), Uint8Array.of(0, 0x1a, 0), new Uint8Array(16));
export const fbxAscii = () => text('; FBX 7.4.0 project file\nFBXHeaderExtension:  {\n}\n');
export const json = () => text('  {"a": [1, 2, "three"]}\n');
export const plainText = () => text('Hello, otters.\nÜmlauts are fine.\n');

/** One file of each accepted type (the same bytes may be two types: WAV's two names, JSON text). */
export const oneOfEachType = (): Record<UploadContentType, Uint8Array> => ({
  'image/png': png(),
  'image/jpeg': jpeg(),
  'image/webp': webpLossy(),
  'image/gif': gif(),
  'audio/wav': wav(),
  'audio/x-wav': wav(),
  'audio/mpeg': mp3(),
  'audio/flac': flac(),
  'audio/ogg': ogg(),
  'model/gltf-binary': glb(),
  'model/gltf+json': gltf(),
  'model/obj': obj(),
  'model/fbx': fbxBinary(),
  'application/json': json(),
  'text/plain': plainText(),
});

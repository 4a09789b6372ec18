import * as zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  crc32,
  cropImage,
  decodePng,
  digitalSourceType,
  encodePng,
  encodeWav,
  glbToMesh,
  InvalidPngError,
  makeImage,
  markGlb,
  markJpeg,
  markMedia,
  markPng,
  markWav,
  meshToGlb,
  readGlb,
  readGlbMark,
  readJpegMark,
  readMediaMark,
  readPngChunks,
  readPngMark,
  readWavChunks,
  readWavFormat,
  readWavMark,
  sniffContentType,
  writePngChunks,
} from '../functions/nodes/media/index.ts';

const gradient = (w: number, h: number) =>
  makeImage(w, h, (x, y) => [(x * 255) / Math.max(1, w - 1), (y * 255) / Math.max(1, h - 1), 128, 255]);

describe('PNG codec', () => {
  it('computes the same CRC-32 as zlib', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => crc32(bytes) === zlib.crc32(bytes)));
  });

  it('round-trips RGBA pixels (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), fc.integer(), (w, h, seed) => {
        const image = makeImage(w, h, (x, y) => {
          const v = (seed ^ (x * 73856093) ^ (y * 19349663)) >>> 0;
          return [v & 255, (v >> 8) & 255, (v >> 16) & 255, (v >> 24) & 255];
        });
        const back = decodePng(encodePng(image));
        return back.width === w && back.height === h && Buffer.from(back.data).equals(Buffer.from(image.data));
      }),
    );
  });

  it('decodes every filter type and the RGB, grey and palette colour types', () => {
    // A 3×2 RGB image whose rows use Sub and Paeth, then Average and Up on a second file.
    const ihdr = (colorType: number, w: number, h: number) => {
      const data = new Uint8Array(13);
      const view = new DataView(data.buffer);
      view.setUint32(0, w);
      view.setUint32(4, h);
      data.set([8, colorType, 0, 0, 0], 8);
      return { type: 'IHDR', data };
    };
    const file = (
      colorType: number,
      w: number,
      h: number,
      raw: number[],
      extra: { type: string; data: Uint8Array }[] = [],
    ) =>
      writePngChunks([
        ihdr(colorType, w, h),
        ...extra,
        { type: 'IDAT', data: zlib.deflateSync(Uint8Array.from(raw)) },
        { type: 'IEND', data: new Uint8Array(0) },
      ]);
    // Row 0 filter Sub: pixel deltas; row 1 filter Paeth.
    const rgb = decodePng(file(2, 2, 2, [1, 10, 20, 30, 5, 5, 5, 4, 1, 1, 1, 2, 2, 2]));
    expect([...rgb.data.subarray(0, 8)]).toEqual([10, 20, 30, 255, 15, 25, 35, 255]);
    // Paeth for row 1: first pixel predictor = up (10,20,30) → 11,21,31; second: predictor among left/up/upleft.
    expect([...rgb.data.subarray(8, 12)]).toEqual([11, 21, 31, 255]);
    const grey = decodePng(file(0, 2, 2, [0, 100, 50, 3, 10, 20]));
    // Row 1 Average: (left + up) >> 1 → 10 + (0 + 100) / 2 = 60; 20 + (60 + 50) / 2 = 75.
    expect([...grey.data]).toEqual([100, 100, 100, 255, 50, 50, 50, 255, 60, 60, 60, 255, 75, 75, 75, 255]);
    const palette = decodePng(
      file(
        3,
        2,
        1,
        [0, 0, 1],
        [
          { type: 'PLTE', data: Uint8Array.of(255, 0, 0, 0, 0, 255) },
          { type: 'tRNS', data: Uint8Array.of(128) },
        ],
      ),
    );
    expect([...palette.data]).toEqual([255, 0, 0, 128, 0, 0, 255, 255]);
  });

  it('refuses a broken CRC, a bad signature and an oversized claim', () => {
    const png = encodePng(gradient(4, 4));
    const broken = png.slice();
    broken[20] = (broken[20] as number) ^ 1;
    expect(() => decodePng(broken)).toThrow(/CRC/);
    expect(() => decodePng(Uint8Array.of(1, 2, 3))).toThrow(InvalidPngError);
    const huge = readPngChunks(png).map((c) => ({ ...c, data: c.data.slice() }));
    const header = new DataView((huge[0] as { data: Uint8Array }).data.buffer);
    header.setUint32(0, 100_000);
    header.setUint32(4, 100_000);
    expect(() => decodePng(writePngChunks(huge))).toThrow(/size/);
  });

  it('crops and clips to the image', () => {
    const image = gradient(10, 8);
    const crop = cropImage(image, 2, 3, 4, 100);
    expect([crop.width, crop.height]).toEqual([4, 5]);
    expect([...crop.data.subarray(0, 4)]).toEqual([...image.data.subarray((3 * 10 + 2) * 4, (3 * 10 + 2) * 4 + 4)]);
    expect(() => cropImage(image, 10, 0, 1, 1)).toThrow(/outside/);
  });
});

describe('marks', () => {
  it('marks a PNG before IEND, keeps it valid and reads the mark back', () => {
    const png = encodePng(gradient(16, 16));
    expect(readPngMark(png)).toBeNull();
    const marked = markPng(png);
    const chunks = readPngChunks(marked); // verifies every CRC
    expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'tEXt', 'iTXt', 'IEND']);
    expect(readPngMark(marked)).toEqual({ digitalSourceType, carriers: ['tEXt', 'xmp'] });
    expect(Buffer.from(decodePng(marked).data).equals(Buffer.from(decodePng(png).data))).toBe(true);
    expect(markPng(marked)).toBe(marked);
    expect(Buffer.from(marked).toString('latin1')).toContain('Iptc4xmpExt:DigitalSourceType');
  });

  it('marks a WAV with a LIST/INFO chunk and fixes the RIFF size', () => {
    const wav = encodeWav(
      Int16Array.from({ length: 101 }, (_, i) => i * 100),
      8000,
    );
    expect(readWavMark(wav)).toBeNull();
    const marked = markWav(wav);
    const view = new DataView(marked.buffer, marked.byteOffset, marked.byteLength);
    expect(view.getUint32(4, true)).toBe(marked.length - 8);
    expect(readWavChunks(marked).map((c) => c.id)).toEqual(['fmt ', 'data', 'LIST']);
    expect(readWavMark(marked)).toEqual({ digitalSourceType, carriers: ['INFO/ICMT'] });
    expect(readWavFormat(marked)).toMatchObject({ audioFormat: 1, channels: 1, sampleRate: 8000, dataBytes: 202 });
    expect(Buffer.from(marked).toString('latin1')).toContain('AI-generated: trainedAlgorithmicMedia');
    expect(markWav(marked)).toBe(marked);
  });

  it('marks a GLB in asset.extras and keeps the mesh', () => {
    const mesh = { positions: Float32Array.of(0, 0, 0, 1, 0, 0, 0, 1, 0), indices: Uint32Array.of(0, 1, 2) };
    const glb = meshToGlb(mesh);
    const marked = markGlb(glb);
    expect(readGlbMark(marked)?.digitalSourceType).toBe(digitalSourceType);
    expect(new DataView(marked.buffer).getUint32(8, true)).toBe(marked.length);
    expect(marked.length % 4).toBe(0);
    expect(glbToMesh(marked)).toEqual(mesh);
    expect(readGlb(marked).json.asset).toMatchObject({ version: '2.0' });
  });

  it('marks a JPEG with an XMP APP1 segment', () => {
    const jpeg = Uint8Array.of(0xff, 0xd8, 0xff, 0xdb, 0x00, 0x03, 0x00, 0xff, 0xd9);
    const marked = markJpeg(jpeg);
    expect(readJpegMark(marked)?.digitalSourceType).toBe(digitalSourceType);
    expect([...marked.subarray(-7)]).toEqual([...jpeg.subarray(2)]);
  });

  it('markMedia picks the format from the bytes', () => {
    const png = encodePng(gradient(2, 2));
    expect(sniffContentType(png)).toBe('image/png');
    const { body, marked } = markMedia(png);
    expect(marked).toBe(true);
    expect(readMediaMark(body)?.digitalSourceType).toBe(digitalSourceType);
    const text = new TextEncoder().encode('plain text');
    expect(markMedia(text)).toEqual({ body: text, marked: false, aiMark: 'service' });
  });
});

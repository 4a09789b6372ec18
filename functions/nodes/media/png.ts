/**
 * A small PNG codec for what the service makes and edits: decodes 8-bit greyscale, RGB, palette
 * and their alpha forms (not interlaced) to RGBA, encodes RGBA, and reads and writes chunks with
 * their CRCs (PNG specification, ISO/IEC 15948).
 */
import { deflateSync, inflateSync } from 'node:zlib';

/** An image as 8-bit RGBA pixels, row by row. */
export interface RgbaImage {
  width: number;
  height: number;
  /** `width * height * 4` bytes. */
  data: Uint8Array;
}

export interface PngChunk {
  type: string;
  data: Uint8Array;
}

/** The largest image the codec will decode or make (pixels), so a small file cannot claim gigabytes. */
export const maxPixels = 4096 * 4096;

const pngSignature = Uint8Array.of(137, 80, 78, 71, 13, 10, 26, 10);

const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (ISO 3309) of `parts` taken as one byte string. */
export const crc32 = (...parts: Uint8Array[]): number => {
  let c = 0xffffffff;
  for (const part of parts) for (const byte of part) c = (crcTable[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};

export class InvalidPngError extends Error {
  override readonly name = 'InvalidPngError';
}

export const isPng = (bytes: Uint8Array): boolean => bytes.length >= 8 && pngSignature.every((b, i) => bytes[i] === b);

const ascii = (text: string) => new TextEncoder().encode(text);

/** Splits a PNG into its chunks, checking the signature, every length and every CRC. */
export const readPngChunks = (bytes: Uint8Array): PngChunk[] => {
  if (!isPng(bytes)) throw new InvalidPngError('Not a PNG file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: PngChunk[] = [];
  let offset = 8;
  while (offset < bytes.length) {
    if (offset + 12 > bytes.length) throw new InvalidPngError('Truncated chunk');
    const length = view.getUint32(offset);
    const typeBytes = bytes.subarray(offset + 4, offset + 8);
    const end = offset + 12 + length;
    if (end > bytes.length) throw new InvalidPngError('Truncated chunk');
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (crc32(typeBytes, data) !== view.getUint32(offset + 8 + length)) {
      throw new InvalidPngError('Chunk CRC mismatch');
    }
    const type = String.fromCharCode(...typeBytes);
    chunks.push({ type, data });
    offset = end;
    if (type === 'IEND') break;
  }
  if (chunks[0]?.type !== 'IHDR' || chunks.at(-1)?.type !== 'IEND') throw new InvalidPngError('Missing IHDR or IEND');
  return chunks;
};

/** Joins chunks into a PNG file, computing lengths and CRCs. */
export const writePngChunks = (chunks: readonly PngChunk[]): Uint8Array => {
  const size = 8 + chunks.reduce((sum, c) => sum + 12 + c.data.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(pngSignature, 0);
  let offset = 8;
  for (const chunk of chunks) {
    const type = ascii(chunk.type);
    view.setUint32(offset, chunk.data.length);
    out.set(type, offset + 4);
    out.set(chunk.data, offset + 8);
    view.setUint32(offset + 8 + chunk.data.length, crc32(type, chunk.data));
    offset += 12 + chunk.data.length;
  }
  return out;
};

const channelsOf: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

const paeth = (a: number, b: number, c: number): number => {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
};

/**
 * The pixels (width × height) a PNG's header declares, without decoding it; undefined for bytes
 * that are not a PNG with a header. A step's charge for an image is priced from it.
 */
export const pngPixels = (bytes: Uint8Array): number | undefined => {
  // Signature (8), IHDR length (4) and type (4), then width and height (4 each).
  if (!isPng(bytes) || bytes.length < 24 || new TextDecoder().decode(bytes.subarray(12, 16)) !== 'IHDR')
    return undefined;
  const header = new DataView(bytes.buffer, bytes.byteOffset + 16, 8);
  return header.getUint32(0) * header.getUint32(4);
};

/** Decodes a PNG to RGBA. Supports bit depth 8, no interlacing. */
export const decodePng = (bytes: Uint8Array): RgbaImage => {
  const chunks = readPngChunks(bytes);
  const ihdr = chunks[0]?.data as Uint8Array;
  const header = new DataView(ihdr.buffer, ihdr.byteOffset, ihdr.byteLength);
  const width = header.getUint32(0);
  const height = header.getUint32(4);
  const [bitDepth, colorType, , , interlace] = [ihdr[8], ihdr[9], ihdr[10], ihdr[11], ihdr[12]];
  const channels = channelsOf[colorType ?? -1];
  if (!channels) throw new InvalidPngError(`Unknown PNG colour type ${colorType}`);
  if (bitDepth !== 8 || interlace !== 0) throw new InvalidPngError('Only 8-bit, non-interlaced PNGs are supported');
  if (width === 0 || height === 0 || width * height > maxPixels) throw new InvalidPngError('Image size out of range');
  const palette = chunks.find((c) => c.type === 'PLTE')?.data;
  const transparency = chunks.find((c) => c.type === 'tRNS')?.data;
  if (colorType === 3 && !palette) throw new InvalidPngError('Palette image without PLTE');
  const idat = chunks.filter((c) => c.type === 'IDAT').map((c) => c.data);
  const stride = width * channels;
  let raw: Uint8Array;
  try {
    raw = inflateSync(Buffer.concat(idat), { maxOutputLength: (stride + 1) * height });
  } catch {
    throw new InvalidPngError('Corrupt image data');
  }
  if (raw.length < (stride + 1) * height) throw new InvalidPngError('Image data too short');

  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const row = y * stride;
    const input = y * (stride + 1) + 1;
    for (let x = 0; x < stride; x++) {
      const value = raw[input + x] as number;
      const left = x >= channels ? (pixels[row + x - channels] as number) : 0;
      const up = y > 0 ? (pixels[row - stride + x] as number) : 0;
      const upLeft = y > 0 && x >= channels ? (pixels[row - stride + x - channels] as number) : 0;
      let predictor: number;
      if (filter === 0) predictor = 0;
      else if (filter === 1) predictor = left;
      else if (filter === 2) predictor = up;
      else if (filter === 3) predictor = (left + up) >> 1;
      else if (filter === 4) predictor = paeth(left, up, upLeft);
      else throw new InvalidPngError(`Unknown filter type ${filter}`);
      pixels[row + x] = (value + predictor) & 0xff;
    }
  }

  const data = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const p = i * channels;
    const o = i * 4;
    const a = pixels[p] as number;
    if (colorType === 0) data.set([a, a, a, 255], o);
    else if (colorType === 4) data.set([a, a, a, pixels[p + 1] as number], o);
    else if (colorType === 2) data.set([a, pixels[p + 1] as number, pixels[p + 2] as number, 255], o);
    else if (colorType === 6) data.set(pixels.subarray(p, p + 4), o);
    else {
      const entry = (palette as Uint8Array).subarray(a * 3, a * 3 + 3);
      if (entry.length < 3) throw new InvalidPngError('Palette index out of range');
      data.set([entry[0] as number, entry[1] as number, entry[2] as number, transparency?.[a] ?? 255], o);
    }
  }
  return { width, height, data };
};

/** Encodes RGBA pixels as a PNG (colour type 6, filter Up on every row but the first). */
export const encodePng = (image: RgbaImage, extraChunks: readonly PngChunk[] = []): Uint8Array => {
  const { width, height, data } = image;
  if (data.length !== width * height * 4) throw new InvalidPngError('Pixel data does not match the size');
  const ihdr = new Uint8Array(13);
  const header = new DataView(ihdr.buffer);
  header.setUint32(0, width);
  header.setUint32(4, height);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const stride = width * 4;
  const raw = new Uint8Array((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    const out = y * (stride + 1);
    raw[out] = y === 0 ? 0 : 2;
    for (let x = 0; x < stride; x++) {
      const value = data[y * stride + x] as number;
      raw[out + 1 + x] = y === 0 ? value : (value - (data[(y - 1) * stride + x] as number)) & 0xff;
    }
  }
  return writePngChunks([
    { type: 'IHDR', data: ihdr },
    ...extraChunks,
    { type: 'IDAT', data: deflateSync(raw, { level: 6 }) },
    { type: 'IEND', data: new Uint8Array(0) },
  ]);
};

/** A new RGBA image filled by `pixel(x, y)`. */
export const makeImage = (
  width: number,
  height: number,
  pixel: (x: number, y: number) => readonly [number, number, number, number],
): RgbaImage => {
  if (width * height > maxPixels) throw new InvalidPngError('Image size out of range');
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(pixel(x, y), (y * width + x) * 4);
  return { width, height, data };
};

/** The RGBA of pixel (x, y), clamped to the edges. */
export const pixelAt = (image: RgbaImage, x: number, y: number): [number, number, number, number] => {
  const cx = Math.min(image.width - 1, Math.max(0, x));
  const cy = Math.min(image.height - 1, Math.max(0, y));
  const o = (cy * image.width + cx) * 4;
  const d = image.data;
  return [d[o] as number, d[o + 1] as number, d[o + 2] as number, d[o + 3] as number];
};

/** The rectangle (x, y, width, height) of `image`, clipped to it; throws when nothing is left. */
export const cropImage = (image: RgbaImage, x: number, y: number, width: number, height: number): RgbaImage => {
  const left = Math.min(x, image.width);
  const top = Math.min(y, image.height);
  const w = Math.min(width, image.width - left);
  const h = Math.min(height, image.height - top);
  if (w <= 0 || h <= 0) throw new InvalidPngError('The crop rectangle lies outside the image');
  const data = new Uint8Array(w * h * 4);
  for (let row = 0; row < h; row++) {
    const from = ((top + row) * image.width + left) * 4;
    data.set(image.data.subarray(from, from + w * 4), row * w * 4);
  }
  return { width: w, height: h, data };
};

/**
 * Whether a file carries a C2PA manifest store (Content Credentials), where the C2PA specification
 * embeds one in each format we mark or store (C2PA Technical Specification 2.1, Appendix A
 * "Embedding manifests"; docs/decisions/ai-mark.md "The AI mark and a provider's Content Credentials"):
 * - PNG: a `caBX` chunk;
 * - JPEG: APP11 segments carrying JUMBF (JPEG XT common identifier `JP`);
 * - RIFF (WAV, WebP): a `C2PA` chunk.
 * In every case the data is a JUMBF superbox (`jumb`) whose description box (`jumd`) carries the
 * C2PA manifest store's type UUID, so a chunk or text that merely names one is not taken for one.
 * A provider's signed manifest hashes the file's bytes (its hard binding): a file that has one is
 * stored exactly as the provider gave it.
 */
import { isPng, readPngChunks } from './png.ts';

/** The JUMBF type UUID of a C2PA manifest store ("c2pa" then 0011-0010-8000-00AA00389B71). */
const manifestStoreUuid = Uint8Array.of(
  0x63,
  0x32,
  0x70,
  0x61,
  0x00,
  0x11,
  0x00,
  0x10,
  0x80,
  0x00,
  0x00,
  0xaa,
  0x00,
  0x38,
  0x9b,
  0x71,
);

const fourCc = (bytes: Uint8Array, offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4));

/** Whether `jumbf` starts with a C2PA manifest store superbox: `jumb`, then `jumd` with the store's UUID. */
export const isC2paManifestStore = (jumbf: Uint8Array): boolean =>
  jumbf.length >= 32 &&
  fourCc(jumbf, 4) === 'jumb' &&
  fourCc(jumbf, 12) === 'jumd' &&
  manifestStoreUuid.every((b, i) => jumbf[16 + i] === b);

const pngHasManifest = (bytes: Uint8Array): boolean =>
  readPngChunks(bytes).some((chunk) => chunk.type === 'caBX' && isC2paManifestStore(chunk.data));

/**
 * A JPEG's APP11 segments before the image data: JPEG XT boxes (ISO/IEC 18477-3) start with the
 * common identifier `JP`, a box instance number (2 bytes) and a packet sequence number (4 bytes),
 * then the JUMBF box.
 */
const jpegHasManifest = (bytes: Uint8Array): boolean => {
  let offset = 2;
  while (offset + 4 <= bytes.length && bytes[offset] === 0xff) {
    const marker = bytes[offset + 1] as number;
    if (marker === 0xda || marker === 0xd9) break; // start of scan, end of image
    const length = ((bytes[offset + 2] as number) << 8) | (bytes[offset + 3] as number);
    const payload = bytes.subarray(offset + 4, offset + 2 + length);
    if (marker === 0xeb && payload[0] === 0x4a && payload[1] === 0x50 && isC2paManifestStore(payload.subarray(8)))
      return true;
    offset += 2 + length;
  }
  return false;
};

const isJpeg = (bytes: Uint8Array): boolean => bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
const isRiff = (bytes: Uint8Array): boolean => bytes.length >= 12 && fourCc(bytes, 0) === 'RIFF';

/** A RIFF file's (WAVE, WEBP) top-level chunks, up to the RIFF size or the file's end. */
const riffHasManifest = (bytes: Uint8Array): boolean => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = Math.min(bytes.length, 8 + view.getUint32(4, true));
  let offset = 12;
  while (offset + 8 <= end) {
    const size = view.getUint32(offset + 4, true);
    if (fourCc(bytes, offset) === 'C2PA' && isC2paManifestStore(bytes.subarray(offset + 8, offset + 8 + size)))
      return true;
    offset += 8 + size + (size % 2);
  }
  return false;
};

/**
 * Whether the bytes carry an embedded C2PA manifest store. False for other formats (GLB among them:
 * see docs/decisions.md) and for a PNG the codec cannot read.
 */
export const hasC2paManifest = (bytes: Uint8Array): boolean => {
  try {
    if (isPng(bytes)) return pngHasManifest(bytes);
    if (isJpeg(bytes)) return jpegHasManifest(bytes);
    if (isRiff(bytes)) return riffHasManifest(bytes);
  } catch {
    // A file the reader cannot parse carries no manifest we can vouch for.
  }
  return false;
};

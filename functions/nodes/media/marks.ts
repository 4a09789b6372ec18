/**
 * AI-generated marks inside files (spec 2.3 "Images and audio are also marked inside the file";
 * DESIGN section 5): the IPTC digital source type `trainedAlgorithmicMedia`, written where each
 * format keeps text metadata, and read back. Marking is idempotent: a marked file is returned as is.
 */
import type { AiMark } from '../../../schemas/runs.ts';
import { hasC2paManifest } from './c2pa.ts';
import { type Glb, isGlb, readGlb, writeGlb } from './glb.ts';
import { isPng, type PngChunk, readPngChunks, writePngChunks } from './png.ts';
import { isWav, readWavChunks, writeWavChunks } from './wav.ts';

export const digitalSourceType = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
/** The text of the WAV INFO comment (ICMT). */
const wavMarkComment = 'AI-generated: trainedAlgorithmicMedia';
const xmpKeyword = 'XML:com.adobe.xmp';
const textKeyword = 'DigitalSourceType';

export interface MediaMark {
  /** The IPTC digital source type found. */
  digitalSourceType: string;
  /** Where it was found: a PNG tEXt chunk, an XMP packet, a WAV INFO comment, the glTF asset extras. */
  carriers: string[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An XMP packet stating the IPTC digital source type. */
const xmpPacket = (): string =>
  [
    '<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>',
    '<x:xmpmeta xmlns:x="adobe:ns:meta/">',
    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">',
    '<rdf:Description rdf:about="" xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"',
    ` Iptc4xmpExt:DigitalSourceType="${digitalSourceType}"/>`,
    '</rdf:RDF>',
    '</x:xmpmeta>',
    '<?xpacket end="r"?>',
  ].join('\n');

const xmpSourceType = (xmp: string): string | undefined =>
  /DigitalSourceType(?:="([^"]+)"|>\s*([^<\s]+)\s*<)/.exec(xmp)?.slice(1).find(Boolean);

const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
};

const latin1 = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff);

// --- PNG ---------------------------------------------------------------------------------------

/** tEXt: keyword, NUL, Latin-1 text. */
const textChunk = (keyword: string, text: string): PngChunk => ({
  type: 'tEXt',
  data: concat(latin1(keyword), Uint8Array.of(0), latin1(text)),
});

/** iTXt, uncompressed: keyword, NUL, flag 0, method 0, empty language, NUL, empty translation, NUL, UTF-8 text. */
const itxtChunk = (keyword: string, text: string): PngChunk => ({
  type: 'iTXt',
  data: concat(latin1(keyword), Uint8Array.of(0, 0, 0, 0, 0), encoder.encode(text)),
});

const pngTexts = (chunks: readonly PngChunk[]): { keyword: string; text: string; type: string }[] =>
  chunks.flatMap((chunk) => {
    const nul = chunk.data.indexOf(0);
    if (nul < 0) return [];
    const keyword = String.fromCharCode(...chunk.data.subarray(0, nul));
    if (chunk.type === 'tEXt')
      return [{ keyword, text: String.fromCharCode(...chunk.data.subarray(nul + 1)), type: 'tEXt' }];
    if (chunk.type !== 'iTXt' || chunk.data[nul + 1] !== 0) return []; // compressed iTXt is not ours
    let at = nul + 3;
    at = chunk.data.indexOf(0, at) + 1; // language tag
    at = chunk.data.indexOf(0, at) + 1; // translated keyword
    if (at <= 0) return [];
    return [{ keyword, text: decoder.decode(chunk.data.subarray(at)), type: 'iTXt' }];
  });

/** The mark of a PNG, or null when it has none. Throws when the bytes are not a valid PNG. */
export const readPngMark = (bytes: Uint8Array): MediaMark | null => {
  const carriers: string[] = [];
  let found: string | undefined;
  for (const { keyword, text, type } of pngTexts(readPngChunks(bytes))) {
    if (keyword === textKeyword) {
      found ??= text;
      carriers.push(type);
    } else if (keyword === xmpKeyword) {
      const value = xmpSourceType(text);
      if (value) {
        found ??= value;
        carriers.push('xmp');
      }
    }
  }
  return found ? { digitalSourceType: found, carriers } : null;
};

/** The PNG with a tEXt `DigitalSourceType` chunk and an XMP packet (iTXt) inserted before IEND. */
export const markPng = (bytes: Uint8Array): Uint8Array => {
  const chunks = readPngChunks(bytes);
  if (pngTexts(chunks).some((t) => t.keyword === textKeyword)) return bytes;
  const end = chunks.length - 1;
  return writePngChunks([
    ...chunks.slice(0, end),
    textChunk(textKeyword, digitalSourceType),
    itxtChunk(xmpKeyword, xmpPacket()),
    ...chunks.slice(end),
  ]);
};

// --- WAV ---------------------------------------------------------------------------------------

const infoEntries = (list: Uint8Array): Map<string, string> => {
  const entries = new Map<string, string>();
  if (String.fromCharCode(...list.subarray(0, 4)) !== 'INFO') return entries;
  const view = new DataView(list.buffer, list.byteOffset, list.byteLength);
  let offset = 4;
  while (offset + 8 <= list.length) {
    const id = String.fromCharCode(...list.subarray(offset, offset + 4));
    const size = view.getUint32(offset + 4, true);
    const text = decoder.decode(list.subarray(offset + 8, Math.min(list.length, offset + 8 + size)));
    entries.set(id, text.replace(/\0+$/, ''));
    offset += 8 + size + (size % 2);
  }
  return entries;
};

const infoList = (entries: Record<string, string>): Uint8Array =>
  concat(
    encoder.encode('INFO'),
    ...Object.entries(entries).map(([id, text]) => {
      const value = encoder.encode(`${text}\0`);
      const header = new Uint8Array(8);
      header.set(encoder.encode(id), 0);
      new DataView(header.buffer).setUint32(4, value.length, true);
      return concat(header, value, new Uint8Array(value.length % 2));
    }),
  );

/** The mark of a WAV file (its LIST/INFO ICMT comment), or null. Throws when the bytes are not WAVE. */
export const readWavMark = (bytes: Uint8Array): MediaMark | null => {
  for (const chunk of readWavChunks(bytes)) {
    if (chunk.id !== 'LIST') continue;
    const comment = infoEntries(chunk.data).get('ICMT');
    if (comment?.includes('trainedAlgorithmicMedia')) return { digitalSourceType, carriers: ['INFO/ICMT'] };
  }
  return null;
};

/** The WAV with a LIST/INFO chunk (ICMT comment, ISFT software) appended and the RIFF size fixed. */
export const markWav = (bytes: Uint8Array): Uint8Array => {
  if (readWavMark(bytes)) return bytes;
  const chunks = readWavChunks(bytes);
  return writeWavChunks([
    ...chunks,
    { id: 'LIST', data: infoList({ ICMT: wavMarkComment, ISFT: 'workflow-run-api' }) },
  ]);
};

// --- GLB ---------------------------------------------------------------------------------------

const assetOf = (glb: Glb) => (glb.json.asset ?? {}) as { extras?: Record<string, unknown> };

export const readGlbMark = (bytes: Uint8Array): MediaMark | null => {
  const value = assetOf(readGlb(bytes)).extras?.digitalSourceType;
  return typeof value === 'string' ? { digitalSourceType: value, carriers: ['asset.extras'] } : null;
};

/** The GLB with `asset.extras.digitalSourceType` set. */
export const markGlb = (bytes: Uint8Array): Uint8Array => {
  const glb = readGlb(bytes);
  const asset = assetOf(glb);
  if (asset.extras?.digitalSourceType) return bytes;
  return writeGlb({
    ...glb,
    json: { ...glb.json, asset: { ...asset, extras: { ...asset.extras, digitalSourceType } } },
  });
};

// --- JPEG --------------------------------------------------------------------------------------

const xmpNamespace = 'http://ns.adobe.com/xap/1.0/\0';
const isJpeg = (bytes: Uint8Array): boolean => bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;

/** The XMP packets of a JPEG's APP1 segments (before the image data). */
const jpegXmp = (bytes: Uint8Array): string[] => {
  const packets: string[] = [];
  let offset = 2;
  while (offset + 4 <= bytes.length && bytes[offset] === 0xff) {
    const marker = bytes[offset + 1] as number;
    if (marker === 0xda || marker === 0xd9) break;
    const length = ((bytes[offset + 2] as number) << 8) | (bytes[offset + 3] as number);
    const payload = bytes.subarray(offset + 4, offset + 2 + length);
    if (marker === 0xe1 && decoder.decode(payload.subarray(0, xmpNamespace.length)) === xmpNamespace) {
      packets.push(decoder.decode(payload.subarray(xmpNamespace.length)));
    }
    offset += 2 + length;
  }
  return packets;
};

export const readJpegMark = (bytes: Uint8Array): MediaMark | null => {
  if (!isJpeg(bytes)) throw new Error('Not a JPEG file');
  for (const packet of jpegXmp(bytes)) {
    const value = xmpSourceType(packet);
    if (value) return { digitalSourceType: value, carriers: ['xmp'] };
  }
  return null;
};

/** The JPEG with an APP1 XMP segment right after SOI. */
export const markJpeg = (bytes: Uint8Array): Uint8Array => {
  if (readJpegMark(bytes)) return bytes;
  const payload = concat(encoder.encode(xmpNamespace), encoder.encode(xmpPacket()));
  const segment = concat(Uint8Array.of(0xff, 0xe1, (payload.length + 2) >> 8, (payload.length + 2) & 0xff), payload);
  return concat(bytes.subarray(0, 2), segment, bytes.subarray(2));
};

// --- any file ----------------------------------------------------------------------------------

/** The content type the bytes show (magic numbers), or undefined. */
export const sniffContentType = (bytes: Uint8Array): string | undefined => {
  if (isPng(bytes)) return 'image/png';
  if (isJpeg(bytes)) return 'image/jpeg';
  if (isWav(bytes)) return 'audio/wav';
  if (isGlb(bytes)) return 'model/gltf-binary';
  const head = String.fromCharCode(...bytes.subarray(0, 12));
  if (head.startsWith('GIF8')) return 'image/gif';
  if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'image/webp';
  if (head.startsWith('ID3') || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0)) return 'audio/mpeg';
  return undefined;
};

/**
 * Marks `body` inside the file when its format can carry the mark (PNG, JPEG, WAV, GLB), judged by
 * its bytes. `marked` is false for other formats: their mark is the object metadata only. A file
 * that carries a C2PA manifest is returned as is (the same bytes): inserting our mark would break
 * the manifest's hard binding, and the manifest already says how the file was made.
 */
export const markMedia = (body: Uint8Array): { body: Uint8Array; marked: boolean; aiMark: AiMark } => {
  if (hasC2paManifest(body)) return { body, marked: false, aiMark: 'provider_c2pa' };
  if (isPng(body)) return { body: markPng(body), marked: true, aiMark: 'service' };
  if (isJpeg(body)) return { body: markJpeg(body), marked: true, aiMark: 'service' };
  if (isWav(body)) return { body: markWav(body), marked: true, aiMark: 'service' };
  if (isGlb(body)) return { body: markGlb(body), marked: true, aiMark: 'service' };
  return { body, marked: false, aiMark: 'service' };
};

/** The mark inside a file of any supported format, or null. */
export const readMediaMark = (body: Uint8Array): MediaMark | null => {
  if (isPng(body)) return readPngMark(body);
  if (isJpeg(body)) return readJpegMark(body);
  if (isWav(body)) return readWavMark(body);
  if (isGlb(body)) return readGlbMark(body);
  return null;
};

/**
 * S3 object metadata that marks a stored file as AI-generated (keys without the `x-amz-meta-`
 * prefix). It travels beside the bytes, never in them, so it also marks a file kept as the provider
 * signed it; `ai-mark` says who marked the bytes.
 */
export const aiObjectMetadata = (aiMark: AiMark = 'service'): Record<string, string> => ({
  'ai-generated': 'true',
  'digital-source-type': digitalSourceType,
  'ai-mark': aiMark,
});

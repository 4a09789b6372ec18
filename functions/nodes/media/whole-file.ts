/**
 * Whether a file's bytes end where its format says it ends: nothing rides after the image, the
 * sound or the mesh (HTML after a PNG's IEND, say), so a stored file is only ever what its type
 * says. Each check walks the format's own structure over a `ByteSource`, which may be bytes in
 * memory or an object read in windows (an upload of 100 MiB is never held whole):
 * - PNG (ISO/IEC 15948): chunk by chunk to IEND, which must be the last byte.
 * - JPEG (ITU T.81): segment by segment, through each scan's entropy-coded data, to EOI, which
 *   must be the last byte.
 * - GIF89a/87a: block by block (extensions, images and their sub-blocks) to the trailer, the last byte.
 * - RIFF (WAVE, WebP): chunk by chunk to the end (a WAVE `data` chunk whose size runs past the end,
 *   as streaming writers leave it, takes the rest).
 * - Ogg (RFC 3533): page by page, each beginning `OggS`, to the end.
 * - glTF binary (GLB): its header's length is the file's, its chunks fill it exactly.
 * - Text (JSON, glTF JSON, OBJ, plain text, ASCII FBX): valid UTF-8 throughout, with no NUL.
 * - MP3, FLAC and binary FBX have no cheap end to check (MPEG frames, FLAC frames and FBX records
 *   are not delimited by their headers alone): their head is checked (file-sniff.ts), nothing more.
 */
import type { UploadContentType } from '../../../schemas/upload-types.ts';

/** Random access to a file's bytes: `read` answers at most `length` bytes from `offset` (fewer at the end). */
export interface ByteSource {
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

export const memorySource = (bytes: Uint8Array): ByteSource => ({
  size: bytes.length,
  read: async (offset, length) => bytes.subarray(offset, offset + length),
});

const ascii = (b: Uint8Array, from: number, length: number) => String.fromCharCode(...b.subarray(from, from + length));
const u16be = (b: Uint8Array, at: number) => ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0);
const u32be = (b: Uint8Array, at: number) => ((u16be(b, at) << 16) >>> 0) + u16be(b, at + 2);
const u32le = (b: Uint8Array, at: number) =>
  (b[at] ?? 0) + (b[at + 1] ?? 0) * 0x100 + (b[at + 2] ?? 0) * 0x10000 + (b[at + 3] ?? 0) * 0x1000000;

/** A refusal's words, or undefined when the file ends where it should. */
type EndVerdict = string | undefined;

const trailing = (source: ByteSource, end: number, what: string): EndVerdict =>
  end === source.size ? undefined : `${source.size - end} bytes follow its ${what}`;

const png = async (source: ByteSource): Promise<EndVerdict> => {
  let at = 8;
  for (;;) {
    const header = await source.read(at, 8);
    if (header.length < 8) return 'it ends before its IEND chunk';
    const type = ascii(header, 4, 4);
    if (!/^[A-Za-z]{4}$/.test(type)) return `a chunk at byte ${at} has no valid type`;
    at += 12 + u32be(header, 0);
    if (at > source.size) return `its ${type} chunk runs past the end`;
    if (type === 'IEND') return trailing(source, at, 'IEND chunk');
  }
};

/** Where a scan's entropy-coded data ends: the first marker that is not a stuffed byte or a restart. */
const scanEnd = async (source: ByteSource, from: number): Promise<number | undefined> => {
  const window = 64 * 1024;
  let at = from;
  while (at < source.size) {
    const bytes = await source.read(at, window + 1);
    for (let i = bytes.indexOf(0xff); i >= 0 && i + 1 < bytes.length; i = bytes.indexOf(0xff, i + 1)) {
      const next = bytes[i + 1] ?? 0;
      if (next !== 0x00 && next !== 0xff && !(next >= 0xd0 && next <= 0xd7)) return at + i;
    }
    if (bytes.length <= window) return undefined;
    at += window;
  }
  return undefined;
};

const jpeg = async (source: ByteSource): Promise<EndVerdict> => {
  let at = 2;
  for (;;) {
    const head = await source.read(at, 4);
    if (head.length < 2) return 'it ends before its EOI marker';
    if (head[0] !== 0xff) return `no marker at byte ${at}`;
    const marker = head[1] ?? 0;
    if (marker === 0xff) {
      at += 1;
    } else if (marker === 0xd9) {
      return trailing(source, at + 2, 'EOI marker');
    } else if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
    } else {
      if (head.length < 4) return 'it ends inside a segment';
      at += 2 + u16be(head, 2);
      if (marker === 0xda) {
        const end = await scanEnd(source, at);
        if (end === undefined) return 'it ends before its EOI marker';
        at = end;
      }
    }
  }
};

/** Past a run of GIF sub-blocks (each a size byte, then that many bytes; a zero size ends them). */
const subBlocks = async (source: ByteSource, from: number): Promise<number | undefined> => {
  let at = from;
  for (;;) {
    const [size] = await source.read(at, 1);
    if (size === undefined) return undefined;
    at += 1 + size;
    if (size === 0) return at;
  }
};

const gif = async (source: ByteSource): Promise<EndVerdict> => {
  const screen = await source.read(0, 13);
  const flags = screen[10] ?? 0;
  let at = 13 + (flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0);
  for (;;) {
    const [introducer] = await source.read(at, 1);
    if (introducer === 0x3b) return trailing(source, at + 1, 'trailer');
    let next: number | undefined;
    if (introducer === 0x21) next = await subBlocks(source, at + 2);
    else if (introducer === 0x2c) {
      const descriptor = await source.read(at, 10);
      const local = descriptor[9] ?? 0;
      next = await subBlocks(source, at + 10 + (local & 0x80 ? 3 * 2 ** ((local & 7) + 1) : 0) + 1);
    } else return introducer === undefined ? 'it ends before its trailer' : `no block at byte ${at}`;
    if (next === undefined) return 'it ends before its trailer';
    at = next;
  }
};

const riff = async (source: ByteSource, form: 'WAVE' | 'WEBP'): Promise<EndVerdict> => {
  let at = 12;
  while (at < source.size) {
    const header = await source.read(at, 8);
    if (header.length < 8) return `${source.size - at} bytes follow its last chunk`;
    const id = ascii(header, 0, 4);
    if (!/^[\x20-\x7e]{4}$/.test(id)) return `a chunk at byte ${at} has no valid id`;
    const size = u32le(header, 4);
    const end = at + 8 + size;
    // A streamed WAVE leaves its data size unknown (0xFFFFFFFF, or too large): its samples run to the end.
    if (end > source.size) return form === 'WAVE' && id === 'data' ? undefined : `its ${id} chunk runs past the end`;
    at = end + (size % 2 === 1 && end < source.size ? 1 : 0);
  }
  return undefined;
};

const ogg = async (source: ByteSource): Promise<EndVerdict> => {
  let at = 0;
  while (at < source.size) {
    const header = await source.read(at, 27);
    if (header.length < 27 || ascii(header, 0, 4) !== 'OggS') return `no Ogg page at byte ${at}`;
    const segments = await source.read(at + 27, header[26] ?? 0);
    at += 27 + segments.length + segments.reduce((sum, lacing) => sum + lacing, 0);
    if (at > source.size) return 'its last page runs past the end';
  }
  return undefined;
};

const glb = async (source: ByteSource): Promise<EndVerdict> => {
  const header = await source.read(0, 12);
  const length = u32le(header, 8);
  if (length !== source.size) return `its header says ${length} bytes, not ${source.size}`;
  let at = 12;
  while (at < length) {
    const chunk = await source.read(at, 8);
    if (chunk.length < 8) return 'it ends inside a chunk header';
    at += 8 + u32le(chunk, 0);
  }
  return at === length ? undefined : 'its last chunk runs past the end';
};

const text = async (source: ByteSource): Promise<EndVerdict> => {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const window = 1024 * 1024;
  for (let at = 0; at < source.size; at += window) {
    const bytes = await source.read(at, window);
    if (bytes.includes(0)) return 'it holds a NUL byte';
    try {
      decoder.decode(bytes, { stream: at + window < source.size });
    } catch {
      return 'it is not UTF-8 text throughout';
    }
  }
  return undefined;
};

const fbx = async (source: ByteSource): Promise<EndVerdict> => {
  const head = await source.read(0, 5);
  return ascii(head, 0, 5) === '; FBX' ? text(source) : undefined;
};

const ends: Record<UploadContentType, (source: ByteSource) => Promise<EndVerdict>> = {
  'image/png': png,
  'image/jpeg': jpeg,
  'image/gif': gif,
  'image/webp': (source) => riff(source, 'WEBP'),
  'audio/wav': (source) => riff(source, 'WAVE'),
  'audio/x-wav': (source) => riff(source, 'WAVE'),
  'audio/mpeg': async () => undefined,
  'audio/flac': async () => undefined,
  'audio/ogg': ogg,
  'model/gltf-binary': glb,
  'model/gltf+json': text,
  'model/obj': text,
  'model/fbx': fbx,
  'application/json': text,
  'text/plain': text,
};

/**
 * Why the whole of `source` is not a file of `contentType` that ends where its format ends, or
 * undefined when it is. Its head is checked apart (file-sniff.ts): this walks the rest.
 */
export const wholeFileRefusal = async (contentType: UploadContentType, source: ByteSource): Promise<EndVerdict> => {
  const refusal = await ends[contentType](source);
  return refusal && `content is not a whole ${contentType}: ${refusal}`;
};

/**
 * Whether an uploaded file's first bytes are what its declared content type says, and, for an
 * image, whether its dimensions are within the pixel limit (a decompression bomb is a small file
 * whose header claims a huge image). Pure: it sees only the bytes it is given, the file's head
 * (`sniffHeadBytes`, or the whole file when smaller). The magic numbers are each format's own
 * specification's: PNG (ISO/IEC 15948), JPEG (ITU T.81), GIF89a, WebP (RFC 9649), RIFF WAVE, MPEG
 * audio (ID3v2 or a frame sync), FLAC, Ogg (RFC 3533), glTF 2.0 (GLB header, JSON `asset`), FBX.
 */
import type { UploadContentType } from '../../../schemas/upload-types.ts';
import { maxPixels } from './png.ts';
import { memorySource, wholeFileRefusal } from './whole-file.ts';

/**
 * How much of a file is read to check it: enough for a JPEG's metadata segments (EXIF, XMP, an
 * ICC profile, 64 KiB each at most) before the frame header that gives its dimensions.
 */
export const sniffHeadBytes = 256 * 1024;

/** The image limit: what the service's codec decodes (`maxPixels`, 4096 × 4096). */
export const maxUploadPixels = maxPixels;

export type SniffVerdict = { ok: true; width?: number; height?: number } | { ok: false; reason: string };

/** `head` is the file's first bytes; `complete` when it is the whole file. */
interface Head {
  bytes: Uint8Array;
  complete: boolean;
}

const ascii = (bytes: Uint8Array, from: number, length: number) =>
  String.fromCharCode(...bytes.subarray(from, from + length));
const u16be = (b: Uint8Array, at: number) => ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0);
const u16le = (b: Uint8Array, at: number) => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8);
const u24le = (b: Uint8Array, at: number) => u16le(b, at) | ((b[at + 2] ?? 0) << 16);
const u32be = (b: Uint8Array, at: number) => ((u16be(b, at) << 16) >>> 0) + u16be(b, at + 2);
const u32le = (b: Uint8Array, at: number) => u16le(b, at) + u16le(b, at + 2) * 0x10000;

type Dimensions = { width: number; height: number };

// --- images: each answers its dimensions, or undefined when the bytes are not that format --------

const pngDimensions = (b: Uint8Array): Dimensions | undefined => {
  const signature = [137, 80, 78, 71, 13, 10, 26, 10];
  if (b.length < 24 || signature.some((byte, i) => b[i] !== byte) || ascii(b, 12, 4) !== 'IHDR') return undefined;
  return { width: u32be(b, 16), height: u32be(b, 20) };
};

/** Start-of-frame markers (every coding process), which carry the image's dimensions. */
const jpegFrameMarkers = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

const isJpeg = (b: Uint8Array) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;

/** The first frame header's dimensions, walking the segments; null when the head ends before one. */
const jpegDimensions = (b: Uint8Array): Dimensions | null | undefined => {
  if (!isJpeg(b)) return undefined;
  let at = 2;
  while (at + 9 < b.length) {
    if (b[at] !== 0xff) return null;
    const marker = b[at + 1] ?? 0;
    // Fill bytes, and the markers that stand alone (TEM, RSTn).
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    if (jpegFrameMarkers.has(marker)) return { height: u16be(b, at + 5), width: u16be(b, at + 7) };
    if (marker === 0xd9 || marker === 0xda) return null;
    at += 2 + u16be(b, at + 2);
  }
  return null;
};

const gifDimensions = (b: Uint8Array): Dimensions | undefined => {
  const magic = ascii(b, 0, 6);
  if (b.length < 10 || (magic !== 'GIF87a' && magic !== 'GIF89a')) return undefined;
  return { width: u16le(b, 6), height: u16le(b, 8) };
};

const isRiff = (b: Uint8Array, form: string) => ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === form;

/** The canvas of a simple lossy (`VP8 `), lossless (`VP8L`) or extended (`VP8X`) WebP; null when unreadable. */
const webpDimensions = (b: Uint8Array): Dimensions | null | undefined => {
  if (!isRiff(b, 'WEBP')) return undefined;
  const chunk = ascii(b, 12, 4);
  if (chunk === 'VP8 ' && b.length >= 30 && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
    return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
  }
  if (chunk === 'VP8L' && b.length >= 25 && b[20] === 0x2f) {
    const bits = u32le(b, 21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X' && b.length >= 30) return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
  return null;
};

// --- text ----------------------------------------------------------------------------------------

/** The head as text: valid UTF-8 (a character cut by the head's end is fine), or undefined. */
const utf8 = (head: Head): string | undefined => {
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(head.bytes, {
      stream: !head.complete,
    });
    return text.startsWith('\ufeff') ? text.slice(1) : text;
  } catch {
    return undefined;
  }
};

/** Text a person wrote: no NUL and no control character but tab, line feed, form feed and carriage return. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for.
const printable = (text: string) => !/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text);

const isJsonText = (text: string, complete: boolean, first: '{' | '[' | '{['): unknown => {
  const trimmed = text.trimStart();
  if (!first.includes(trimmed[0] ?? '')) return false;
  if (!complete) return true;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return false;
  }
};

// --- every accepted type -------------------------------------------------------------------------

/** An image check's answer: undefined (not this format) is false; null (its header is beyond the head) stays. */
const notThis = (dimensions: Dimensions | null | undefined) => (dimensions === undefined ? false : dimensions);

/** Whether the head is of each type (an image answers its dimensions, or null when its header is beyond the head). */
const checks: Record<UploadContentType, (head: Head) => boolean | Dimensions | null> = {
  'image/png': (h) => pngDimensions(h.bytes) ?? false,
  'image/jpeg': (h) => notThis(jpegDimensions(h.bytes)),
  'image/webp': (h) => notThis(webpDimensions(h.bytes)),
  'image/gif': (h) => gifDimensions(h.bytes) ?? false,
  'audio/wav': (h) => isRiff(h.bytes, 'WAVE'),
  'audio/x-wav': (h) => isRiff(h.bytes, 'WAVE'),
  'audio/mpeg': (h) => ascii(h.bytes, 0, 3) === 'ID3' || (h.bytes[0] === 0xff && ((h.bytes[1] ?? 0) & 0xe0) === 0xe0),
  'audio/flac': (h) => ascii(h.bytes, 0, 4) === 'fLaC',
  'audio/ogg': (h) => ascii(h.bytes, 0, 4) === 'OggS',
  'model/gltf-binary': (h) => ascii(h.bytes, 0, 4) === 'glTF' && u32le(h.bytes, 4) === 2,
  'model/gltf+json': (h) => {
    const text = utf8(h);
    if (text === undefined || !printable(text)) return false;
    const parsed = isJsonText(text, h.complete, '{');
    // A whole file must be a glTF document; of a longer one, the head can only show that it begins as one.
    return parsed === true || (typeof parsed === 'object' && parsed !== null && 'asset' in parsed);
  },
  'model/obj': (h) => {
    const text = utf8(h);
    return text !== undefined && printable(text) && text.trim() !== '';
  },
  'model/fbx': (h) => ascii(h.bytes, 0, 18) === 'Kaydara FBX Binary' || ascii(h.bytes, 0, 5) === '; FBX',
  'application/json': (h) => {
    const text = utf8(h);
    return text !== undefined && !text.includes('\u0000') && isJsonText(text, h.complete, '{[') !== false;
  },
  'text/plain': (h) => {
    const text = utf8(h);
    return text !== undefined && !text.includes('\u0000');
  },
};

/** The formats a head is recognisably, by magic bytes, for a reason that says what it looks like. */
const recognisable: readonly UploadContentType[] = [
  'image/png',
  'image/jpeg',
  'image/webp',
  'image/gif',
  'audio/wav',
  'audio/flac',
  'audio/ogg',
  'model/gltf-binary',
  'model/fbx',
];

const looksLike = (head: Head): UploadContentType | undefined =>
  recognisable.find((type) => {
    const result = checks[type](head);
    return result !== false;
  });

/**
 * Whether `head` (the file's first `sniffHeadBytes`, `complete` when that is all of it) is of the
 * declared `contentType`, and, for an image, within `maxUploadPixels`. A refusal's reason is for the
 * caller: what was declared, and what the bytes look like when they look like something.
 */
export const sniffUpload = (contentType: UploadContentType, head: Uint8Array, complete: boolean): SniffVerdict => {
  const file = { bytes: head, complete };
  const result = checks[contentType](file);
  if (result === false) {
    const other = looksLike(file);
    return {
      ok: false,
      reason: other
        ? `content is ${other}, not the declared ${contentType}`
        : `content is not ${contentType} (its first bytes do not match)`,
    };
  }
  if (result === null)
    return { ok: false, reason: `${contentType} header not found in the first ${head.length} bytes` };
  if (result === true) return { ok: true };
  const { width, height } = result;
  if (width === 0 || height === 0) return { ok: false, reason: `image of ${width} × ${height} pixels is empty` };
  if (width * height > maxUploadPixels) {
    return {
      ok: false,
      reason: `image of ${width} × ${height} pixels is above the limit of ${maxUploadPixels} pixels (4096 × 4096)`,
    };
  }
  return { ok: true, width, height };
};

export type FetchedVerdict = { ok: true; contentType: UploadContentType } | { ok: false; reason: string };

/**
 * What a fetched file is among the types a step reads (`accepted`): a URL input declares nothing
 * but its server's header. The header's type when the bytes are that, else the first accepted
 * type the bytes recognisably are (servers say `application/octet-stream`), else the only one
 * accepted; each judged as an upload of it is (magic bytes, an image's pixel limit, the whole file).
 */
export const sniffFetched = async (
  accepted: readonly UploadContentType[],
  declared: string | undefined,
  body: Uint8Array,
): Promise<FetchedVerdict> => {
  const header = declared?.split(';')[0]?.trim().toLowerCase();
  const candidates = [
    ...accepted.filter((type) => type === header),
    ...accepted.filter((type) => recognisable.includes(type)),
    ...(accepted.length === 1 ? accepted : []),
  ];
  const head = body.subarray(0, sniffHeadBytes);
  let refusal: string | undefined;
  for (const type of new Set(candidates)) {
    const verdict = sniffUpload(type, head, body.length <= sniffHeadBytes);
    const whole = verdict.ok ? await wholeFileRefusal(type, memorySource(body)) : undefined;
    if (verdict.ok && whole === undefined) return { ok: true, contentType: type };
    if (whole) return { ok: false, reason: whole };
    // The declared type's refusal says most (an image over the pixel limit, say).
    if (!verdict.ok) refusal ??= verdict.reason;
  }
  const other = looksLike({ bytes: head, complete: body.length <= sniffHeadBytes });
  return {
    ok: false,
    reason:
      refusal && header && accepted.some((type) => type === header)
        ? refusal
        : `content is ${other ?? header ?? 'unrecognised'}, not one of ${accepted.join(', ')}`,
  };
};

/**
 * The types a stored file may be, by the kind of value it fills: never SVG, HTML or anything else
 * a browser runs. `any` is a file handle of no kind (a connected repository's or bucket's file):
 * text that is not JSON is stored as `text/plain`.
 */
export const storedFileTypes = {
  image: ['image/png', 'image/jpeg', 'image/webp', 'image/gif'],
  audio: ['audio/wav', 'audio/mpeg', 'audio/flac', 'audio/ogg'],
  mesh: ['model/gltf-binary', 'model/fbx', 'model/gltf+json', 'model/obj'],
  // Tried in this order: what a head shows by its magic bytes, then the formats that need more.
  any: [...recognisable, 'audio/mpeg', 'application/json', 'text/plain', 'model/gltf+json', 'model/obj'],
} as const satisfies Record<string, readonly UploadContentType[]>;

export type StoredFileKind = keyof typeof storedFileTypes;

/**
 * What a whole file is among the types of `kind`, from its bytes (a provider's data URI type, a
 * server's header or our own code's `declared` type is tried first only when it is one of the
 * kind's, and must pass like any other): the first type whose head check passes
 * and whose bytes end where the format ends (whole-file.ts). No pixel limit: a model's output may
 * be larger than the service decodes; it is stored, not decoded.
 */
export const storedTypeOf = async (
  kind: StoredFileKind,
  body: Uint8Array,
  declared?: string,
): Promise<FetchedVerdict> => {
  const file = { bytes: body, complete: true };
  const types: readonly UploadContentType[] = storedFileTypes[kind];
  // A declared type is only an order of trial among the kind's own (an OBJ is text/plain too).
  const first = types.filter((type) => type === declared?.split(';')[0]?.trim().toLowerCase());
  let refusal: string | undefined;
  for (const type of new Set([...first, ...types])) {
    const result = checks[type](file);
    if (result === false || result === null) continue;
    const whole = await wholeFileRefusal(type, memorySource(body));
    if (whole === undefined) return { ok: true, contentType: type };
    refusal ??= whole;
  }
  return { ok: false, reason: refusal ?? `content is not one of ${storedFileTypes[kind].join(', ')}` };
};

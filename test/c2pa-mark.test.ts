/**
 * The AI mark never breaks a provider's Content Credentials: a file that carries a C2PA manifest
 * store is detected in each format the C2PA specification embeds one (PNG `caBX`, JPEG APP11
 * JUMBF, RIFF `C2PA` for WAV and WebP) and kept byte for byte; a file without one is marked as
 * before; a chunk or text that merely names C2PA is not taken for a manifest. Files signed by a
 * real C2PA library (test/support/c2pa.ts) validate before and after.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { hasC2paManifest } from '../functions/nodes/media/c2pa.ts';
import { markJpeg, markMedia, markPng, readMediaMark } from '../functions/nodes/media/marks.ts';
import { crc32, encodePng, makeImage, readPngChunks, writePngChunks } from '../functions/nodes/media/png.ts';
import { encodeWav, readWavChunks, writeWavChunks } from '../functions/nodes/media/wav.ts';
import {
  greyJpeg,
  makeTestCredentials,
  signAsset,
  type TestCredentials,
  validateWithC2paTs,
  validateWithReferenceSdk,
} from './support/c2pa.ts';

const ascii = (text: string) => new TextEncoder().encode(text);
const concat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const u32be = (n: number) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);

/** The C2PA manifest store's JUMBF type UUID. */
const c2paUuid = Uint8Array.of(0x63, 0x32, 0x70, 0x61, 0, 0x11, 0, 0x10, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71);

/** A minimal JUMBF superbox labelled as a C2PA manifest store (`uuid` for another kind). */
const jumbf = (uuid = c2paUuid): Uint8Array => {
  const label = concat(ascii('c2pa'), Uint8Array.of(0));
  const description = concat(u32be(8 + 16 + 1 + label.length), ascii('jumd'), uuid, Uint8Array.of(0x03), label);
  return concat(u32be(8 + description.length), ascii('jumb'), description);
};

const png = () => encodePng(makeImage(4, 4, () => [10, 20, 30, 255]));
const pngWith = (type: string, data: Uint8Array) => {
  const chunks = readPngChunks(png());
  return writePngChunks([chunks[0] as never, { type, data }, ...chunks.slice(1)]);
};

/** A JPEG with an APP11 JPEG XT segment right after SOI: `JP`, instance 1, sequence 1, then the box. */
const jpegWithApp11 = (box: Uint8Array, identifier = 'JP') => {
  const payload = concat(ascii(identifier), Uint8Array.of(0, 1), u32be(1), box);
  const segment = concat(Uint8Array.of(0xff, 0xeb, (payload.length + 2) >> 8, (payload.length + 2) & 0xff), payload);
  const jpeg = greyJpeg();
  return concat(jpeg.subarray(0, 2), segment, jpeg.subarray(2));
};

const wav = () =>
  encodeWav(
    new Int16Array(64).map((_, i) => i * 100),
    8000,
  );
const wavWith = (id: string, data: Uint8Array) => writeWavChunks([...readWavChunks(wav()), { id, data }]);

/** A WebP (RIFF `WEBP`) with a VP8L chunk and `extra` chunks after it. */
const webp = (...extra: { id: string; data: Uint8Array }[]) => {
  const chunks = [{ id: 'VP8L', data: Uint8Array.of(0x2f, 0, 0, 0, 0) }, ...extra];
  const body = concat(
    ...chunks.map((c) => {
      const size = Uint8Array.of(c.data.length & 0xff, (c.data.length >> 8) & 0xff, 0, 0);
      return concat(ascii(c.id), size, c.data, new Uint8Array(c.data.length % 2));
    }),
  );
  const riffSize = 4 + body.length;
  return concat(ascii('RIFF'), Uint8Array.of(riffSize & 0xff, (riffSize >> 8) & 0xff, 0, 0), ascii('WEBP'), body);
};

describe('detecting an embedded C2PA manifest store', () => {
  it('finds a PNG caBX chunk holding a C2PA JUMBF store, and keeps the PNG byte for byte', () => {
    const file = pngWith('caBX', jumbf());
    expect(hasC2paManifest(file)).toBe(true);
    const result = markMedia(file);
    expect(result).toEqual({ body: file, marked: false, aiMark: 'provider_c2pa' });
    expect(result.body).toBe(file);
  });

  it('finds JPEG APP11 JPEG XT segments holding a C2PA JUMBF store, and keeps the JPEG byte for byte', () => {
    const file = jpegWithApp11(jumbf());
    expect(hasC2paManifest(file)).toBe(true);
    expect(markMedia(file).body).toBe(file);
    expect(markMedia(file).aiMark).toBe('provider_c2pa');
  });

  it('finds a RIFF C2PA chunk in a WAV and in a WebP, and keeps them byte for byte', () => {
    const audio = wavWith('C2PA', jumbf());
    expect(hasC2paManifest(audio)).toBe(true);
    expect(markMedia(audio)).toEqual({ body: audio, marked: false, aiMark: 'provider_c2pa' });
    const image = webp({ id: 'C2PA', data: jumbf() });
    expect(hasC2paManifest(image)).toBe(true);
    expect(markMedia(image)).toEqual({ body: image, marked: false, aiMark: 'provider_c2pa' });
  });

  it('marks files without one as before: PNG, JPEG and WAV get the service mark inside', () => {
    for (const file of [png(), greyJpeg(), wav()]) {
      expect(hasC2paManifest(file)).toBe(false);
      const result = markMedia(file);
      expect(result.marked).toBe(true);
      expect(result.aiMark).toBe('service');
      expect(readMediaMark(result.body)).not.toBeNull();
    }
    const image = webp();
    expect(markMedia(image)).toEqual({ body: image, marked: false, aiMark: 'service' });
  });

  it('takes no text or look-alike for a manifest', () => {
    const lookAlikes = [
      // A tEXt chunk whose keyword and text name caBX, C2PA and jumb.
      pngWith('tEXt', concat(ascii('caBX'), Uint8Array.of(0), ascii('caBX c2pa jumb jumd'), jumbf())),
      // A caBX chunk whose box is JUMBF of another kind (not the C2PA store's UUID).
      pngWith('caBX', jumbf(new Uint8Array(16).fill(7))),
      // An APP11 segment that is not JPEG XT, and an APP1 carrying the C2PA JUMBF.
      jpegWithApp11(jumbf(), 'XX'),
      (() => {
        const box = jumbf();
        const segment = concat(Uint8Array.of(0xff, 0xe1, (box.length + 2) >> 8, (box.length + 2) & 0xff), box);
        const jpeg = greyJpeg();
        return concat(jpeg.subarray(0, 2), segment, jpeg.subarray(2));
      })(),
      // A WAV LIST chunk and a WebP EXIF chunk whose data is a C2PA store.
      wavWith('LIST', jumbf()),
      webp({ id: 'EXIF', data: jumbf() }),
    ];
    for (const file of lookAlikes) {
      expect(hasC2paManifest(file)).toBe(false);
      expect(markMedia(file).aiMark).toBe('service');
    }
    // The marked PNG holds a valid tEXt chunk (CRC checked on read), so the test file is well-formed.
    expect(readPngChunks(lookAlikes[0] as Uint8Array).map((c) => c.type)).toContain('tEXt');
    expect(crc32(ascii('IEND'))).toBe(0xae426082);
  });

  it('reads a damaged file as carrying no manifest (the marker then stores it as it is)', () => {
    const file = pngWith('caBX', jumbf());
    const damaged = Uint8Array.from(file);
    damaged[file.length - 5] = (damaged[file.length - 5] as number) ^ 0xff; // IEND's CRC
    expect(hasC2paManifest(damaged)).toBe(false);
    expect(hasC2paManifest(Uint8Array.of(0xff, 0xd8, 0xff))).toBe(false);
    expect(hasC2paManifest(concat(ascii('RIFF'), u32be(0xffffffff), ascii('WAVE')))).toBe(false);
  });
});

describe('files signed by a real C2PA library', { timeout: 60_000 }, () => {
  let credentials: TestCredentials;
  beforeAll(async () => {
    credentials = await makeTestCredentials();
  });

  it.each([
    ['image/png', png],
    ['image/jpeg', greyJpeg],
  ] as const)('a signed %s is detected, kept byte for byte, and still validates', async (format, make) => {
    const signed = await signAsset(make(), format, credentials);
    const before = await validateWithReferenceSdk(signed, format, credentials);
    expect(before.state).toBe('Trusted');
    expect(before.failures).toEqual([]);
    expect(before.successes).toContain('assertion.dataHash.match');
    expect(await validateWithC2paTs(signed, format)).toMatchObject({ isValid: true });

    expect(hasC2paManifest(signed)).toBe(true);
    const { body, aiMark } = markMedia(signed);
    expect(aiMark).toBe('provider_c2pa');
    expect(Buffer.from(body).equals(Buffer.from(signed))).toBe(true);
    expect(await validateWithReferenceSdk(body, format, credentials)).toEqual(before);
  });

  it.each([
    ['image/png', png, markPng],
    ['image/jpeg', greyJpeg, markJpeg],
  ] as const)(
    'the old mark inserted into a signed %s breaks its hard binding (what the rule prevents)',
    async (format, make, mark) => {
      const signed = await signAsset(make(), format, credentials);
      const tampered = mark(signed);
      expect(tampered.length).toBeGreaterThan(signed.length);
      const after = await validateWithReferenceSdk(tampered, format, credentials);
      expect(after.state).toBe('Invalid');
      expect(after.failures).toContain('assertion.dataHash.mismatch');
      expect((await validateWithC2paTs(tampered, format)).isValid).toBe(false);
    },
  );
});

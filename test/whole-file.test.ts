/**
 * The whole-file rule (functions/nodes/media/whole-file.ts) and the stored-type rule built on it
 * (`storedTypeOf`, functions/nodes/media/file-sniff.ts): every format the service stores ends where its
 * structure ends, so HTML after the image is refused, and a stored type comes from the bytes,
 * among the kind's allowed types, never SVG or HTML.
 */
import { describe, expect, it } from 'vitest';
import { storedTypeOf } from '../functions/nodes/media/file-sniff.ts';
import { memorySource, wholeFileRefusal } from '../functions/nodes/media/whole-file.ts';
import type { UploadContentType } from '../schemas/upload-types.ts';
import * as files from './support/upload-files.ts';

const html = new TextEncoder().encode('<html><script>alert(1)</script></html>');
const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
const withTail = (bytes: Uint8Array) => new Uint8Array([...bytes, ...html]);
const refusal = (type: UploadContentType, bytes: Uint8Array) => wholeFileRefusal(type, memorySource(bytes));

/** Formats with no cheap end to check: their head is all that is checked. */
const headOnly: readonly UploadContentType[] = ['audio/mpeg', 'audio/flac', 'model/fbx'];
/** Text formats: HTML after them is more text, refused only by what it holds (a NUL, bad UTF-8). */
const textTypes: readonly UploadContentType[] = ['model/gltf+json', 'model/obj', 'application/json', 'text/plain'];

describe('a whole file ends where its format ends', () => {
  const each = Object.entries(files.oneOfEachType()) as [UploadContentType, Uint8Array][];

  it.each(each)('%s as built passes', async (type, bytes) => {
    expect(await refusal(type, bytes)).toBeUndefined();
  });

  it.each(each.filter(([type]) => !headOnly.includes(type) && !textTypes.includes(type)))(
    '%s with HTML after its end is refused',
    async (type, bytes) => {
      expect(await refusal(type, withTail(bytes))).toMatch(new RegExp(`^content is not a whole ${type}: `));
    },
  );

  it('a PNG cut inside a chunk, and one with bytes after IEND, say which', async () => {
    const png = files.png();
    expect(await refusal('image/png', png.subarray(0, png.length - 2))).toBe(
      'content is not a whole image/png: its IEND chunk runs past the end',
    );
    expect(await refusal('image/png', withTail(png))).toBe(
      `content is not a whole image/png: ${html.length} bytes follow its IEND chunk`,
    );
  });

  it("a JPEG's scan data is walked to its EOI: stuffed bytes and restarts are data, bytes after EOI are not", async () => {
    const sos = Uint8Array.of(0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0);
    const scan = Uint8Array.of(0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56);
    const head = files.jpeg().subarray(0, -2);
    const jpeg = new Uint8Array([...head, ...sos, ...scan, 0xff, 0xd9]);
    expect(await refusal('image/jpeg', jpeg)).toBeUndefined();
    expect(await refusal('image/jpeg', withTail(jpeg))).toMatch(/bytes follow its EOI marker$/);
    expect(await refusal('image/jpeg', jpeg.subarray(0, -2))).toMatch(/ends before its EOI marker$/);
  });

  it('text holding a NUL or bad UTF-8 anywhere is refused', async () => {
    const long = new Uint8Array(3 * 1024 * 1024).fill(0x61);
    long[long.length - 1] = 0;
    expect(await refusal('text/plain', long)).toBe('content is not a whole text/plain: it holds a NUL byte');
    expect(await refusal('application/json', Uint8Array.of(0x7b, 0xc3, 0x7d))).toMatch(/not UTF-8/);
  });
});

describe('a stored file is typed by its bytes, among its kind', () => {
  it('SVG and HTML are never an image; a file of no kind holding them is plain text', async () => {
    expect(await storedTypeOf('image', svg, 'image/svg+xml')).toMatchObject({ ok: false });
    expect(await storedTypeOf('image', html, 'text/html')).toMatchObject({ ok: false });
    expect(await storedTypeOf('any', svg, 'image/svg+xml')).toEqual({ ok: true, contentType: 'text/plain' });
    expect(await storedTypeOf('any', html, 'text/html')).toEqual({ ok: true, contentType: 'text/plain' });
  });

  it('the bytes win over a claimed type; a claim among the kind orders the trial (an OBJ is text too)', async () => {
    expect(await storedTypeOf('image', files.png(), 'image/jpeg')).toEqual({ ok: true, contentType: 'image/png' });
    expect(await storedTypeOf('mesh', files.obj(), 'model/obj')).toEqual({ ok: true, contentType: 'model/obj' });
    expect(await storedTypeOf('any', files.obj(), 'model/obj')).toEqual({ ok: true, contentType: 'model/obj' });
    expect(await storedTypeOf('any', files.obj())).toEqual({ ok: true, contentType: 'text/plain' });
  });

  it('a PNG with HTML after IEND is refused, with why', async () => {
    expect(await storedTypeOf('image', withTail(files.png()))).toEqual({
      ok: false,
      reason: `content is not a whole image/png: ${html.length} bytes follow its IEND chunk`,
    });
  });

  it('an image larger than the decode limit is stored: it is not decoded', async () => {
    expect(await storedTypeOf('image', files.pngBomb(8192, 8192))).toEqual({ ok: true, contentType: 'image/png' });
  });
});

/** The upload sniffing rule (functions/nodes/media/file-sniff.ts): magic bytes per declared type, and image dimensions. */
import { describe, expect, it } from 'vitest';
import { maxUploadPixels, sniffHeadBytes, sniffUpload } from '../functions/nodes/media/file-sniff.ts';
import type { UploadContentType } from '../schemas/upload-types.ts';
import { uploadContentTypes } from '../schemas/upload-types.ts';
import * as files from './support/upload-files.ts';

const whole = (type: UploadContentType, bytes: Uint8Array) => sniffUpload(type, bytes, true);

const samples = files.oneOfEachType();

describe('sniffUpload', () => {
  it('accepts a file of each accepted type as that type', () => {
    for (const type of uploadContentTypes) expect(whole(type, samples[type]), type).toMatchObject({ ok: true });
  });

  it('reads the dimensions of PNG, JPEG, GIF and the three WebP forms', () => {
    expect(whole('image/png', files.png(7, 5))).toEqual({ ok: true, width: 7, height: 5 });
    expect(whole('image/jpeg', files.jpeg(1920, 1080))).toEqual({ ok: true, width: 1920, height: 1080 });
    expect(whole('image/gif', files.gif(33, 44))).toEqual({ ok: true, width: 33, height: 44 });
    expect(whole('image/webp', files.webpLossy(300, 200))).toEqual({ ok: true, width: 300, height: 200 });
    expect(whole('image/webp', files.webpLossless(1000, 16))).toEqual({ ok: true, width: 1000, height: 16 });
    expect(whole('image/webp', files.webpExtended(4000, 3000))).toEqual({ ok: true, width: 4000, height: 3000 });
  });

  it('finds a JPEG frame header behind large metadata segments, and says when the head ends first', () => {
    expect(whole('image/jpeg', files.jpeg(800, 600, 60_000))).toEqual({ ok: true, width: 800, height: 600 });
    const head = files.jpeg(800, 600, 60_000).subarray(0, 1000);
    expect(sniffUpload('image/jpeg', head, false)).toEqual({
      ok: false,
      reason: 'image/jpeg header not found in the first 1000 bytes',
    });
  });

  it('refuses a PNG bomb (a tiny file whose header claims 100000 × 100000) and says why', () => {
    const bomb = files.pngBomb();
    expect(bomb.length).toBeLessThan(100);
    expect(whole('image/png', bomb)).toEqual({
      ok: false,
      reason: `image of 100000 × 100000 pixels is above the limit of ${maxUploadPixels} pixels (4096 × 4096)`,
    });
    expect(whole('image/png', files.pngBomb(4096, 4096))).toMatchObject({ ok: true });
    expect(whole('image/png', files.pngBomb(4097, 4096))).toMatchObject({ ok: false });
    expect(whole('image/gif', files.gif(65535, 65535))).toMatchObject({ ok: false });
    expect(whole('image/webp', files.webpExtended(16_000, 16_000))).toMatchObject({ ok: false });
    expect(whole('image/png', files.pngBomb(0, 10))).toEqual({ ok: false, reason: 'image of 0 × 10 pixels is empty' });
  });

  it('refuses a lying type, naming what the bytes are when they are recognisable', () => {
    expect(whole('audio/wav', files.png())).toEqual({
      ok: false,
      reason: 'content is image/png, not the declared audio/wav',
    });
    expect(whole('image/png', files.jpeg())).toEqual({
      ok: false,
      reason: 'content is image/jpeg, not the declared image/png',
    });
    expect(whole('model/gltf-binary', files.plainText())).toEqual({
      ok: false,
      reason: 'content is not model/gltf-binary (its first bytes do not match)',
    });
  });

  it('accepts both FBX forms, both MP3 openings and a JSON array', () => {
    expect(whole('model/fbx', files.fbxAscii())).toMatchObject({ ok: true });
    expect(whole('audio/mpeg', files.mp3FrameSync())).toMatchObject({ ok: true });
    expect(whole('application/json', new TextEncoder().encode('[1,2]'))).toMatchObject({ ok: true });
  });

  it('holds text to text: valid UTF-8 without NUL, and JSON to JSON', () => {
    expect(whole('text/plain', files.png())).toMatchObject({ ok: false });
    expect(whole('text/plain', Uint8Array.of(0x68, 0x69, 0xc3))).toMatchObject({ ok: false });
    expect(whole('text/plain', Uint8Array.of(0x68, 0, 0x69))).toMatchObject({ ok: false });
    expect(whole('application/json', new TextEncoder().encode('{"a": '))).toMatchObject({ ok: false });
    expect(whole('application/json', new TextEncoder().encode('"just a string"'))).toMatchObject({ ok: false });
    expect(whole('model/gltf+json', files.json())).toMatchObject({ ok: false });
    expect(whole('model/obj', Uint8Array.of(0x76, 0x20, 0x01))).toMatchObject({ ok: false });
  });

  it('judges the head of a longer file by what the head can show', () => {
    // A multi-byte character cut by the head's end is not invalid UTF-8.
    const cut = new TextEncoder().encode(`${'a'.repeat(10)}é`).subarray(0, 11);
    expect(sniffUpload('text/plain', cut, false)).toMatchObject({ ok: true });
    expect(sniffUpload('text/plain', cut, true)).toMatchObject({ ok: false });
    // A JSON document longer than the head cannot be parsed from it: its opening is what is checked.
    expect(sniffUpload('application/json', new TextEncoder().encode('{"a": [1, 2'), false)).toMatchObject({ ok: true });
    expect(sniffUpload('model/gltf+json', new TextEncoder().encode('{"scenes": ['), false)).toMatchObject({ ok: true });
    expect(sniffHeadBytes).toBe(256 * 1024);
  });
});

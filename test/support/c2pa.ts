/**
 * Content Credentials for the tests, with real C2PA libraries from npm and nothing fetched:
 * - signing: `@trustnxt/c2pa-ts` builds a manifest store with a data-hash hard binding and embeds it
 *   (PNG `caBX` chunk, JPEG APP11 segments). Its COSE signature is made here with node:crypto
 *   (ES256, r|s as COSE requires), by a signer certificate that a test CA issued (`@peculiar/x509`,
 *   both made at run time, so no key is committed);
 * - validating: `@contentauth/c2pa-wasm`, the C2PA reference SDK (c2pa-rs) built to WebAssembly,
 *   with the test CA as its only trust anchor, and `@trustnxt/c2pa-ts` besides.
 * c2pa-wasm is built for browsers: it reads a Blob through `FileReaderSync`, which Node lacks, so a
 * Blob that keeps its bytes and a FileReaderSync that returns them stand in for the browser's.
 */
import { createPrivateKey, sign as signBytes, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { initSync, WasmReader } from '@contentauth/c2pa-wasm';
import * as x509 from '@peculiar/x509';
import { JPEG, PNG } from '@trustnxt/c2pa-ts/asset';
import type { Signer } from '@trustnxt/c2pa-ts/cose';
import { SuperBox } from '@trustnxt/c2pa-ts/jumbf';
import { DataHashAssertion, ManifestStore } from '@trustnxt/c2pa-ts/manifest';

export type SignableFormat = 'image/png' | 'image/jpeg';

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const notBefore = new Date('2025-01-01T00:00:00Z');
const notAfter = new Date('2045-01-01T00:00:00Z');

export interface TestCredentials {
  signer: Signer;
  /** The CA's certificate, PEM: the validator's only trust anchor. */
  anchorPem: string;
}

/** A test CA and a claim signer it issued (C2PA's profile: digitalSignature, emailProtection EKU). */
export const makeTestCredentials = async (): Promise<TestCredentials> => {
  x509.cryptoProvider.set(webcrypto as never);
  const caKeys = (await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=Workflow Run API test CA, O=Tests',
    keys: caKeys,
    signingAlgorithm: ecdsa,
    notBefore,
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = (await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.create({
    subject: 'CN=Image model stand-in, O=Tests',
    issuer: ca.subject,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ecdsa,
    notBefore,
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.emailProtection]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  const privateKey = createPrivateKey({
    key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
    format: 'der',
    type: 'pkcs8',
  });
  return {
    signer: {
      algorithm: -7, // ES256
      certificate,
      chainCertificates: [],
      sign: async (payload) =>
        new Uint8Array(signBytes('sha256', payload, { key: privateKey, dsaEncoding: 'ieee-p1363' })),
    },
    anchorPem: ca.toString('pem'),
  };
};

const assetOf = (bytes: Uint8Array, format: SignableFormat) =>
  format === 'image/png' ? new PNG(new Uint8Array(bytes)) : new JPEG(new Uint8Array(bytes));

/** The file with a signed C2PA manifest embedded: a data hash of every byte outside the manifest. */
export const signAsset = async (
  bytes: Uint8Array,
  format: SignableFormat,
  credentials: TestCredentials,
): Promise<Uint8Array> => {
  const asset = assetOf(bytes, format);
  const store = new ManifestStore();
  const manifest = store.createManifest({
    assetFormat: format,
    instanceID: `xmp:iid:${webcrypto.randomUUID()}`,
    defaultHashAlgorithm: 'SHA-256',
    signer: credentials.signer,
  });
  const hash = DataHashAssertion.create('SHA-256');
  manifest.addAssertion(hash);
  await asset.ensureManifestSpace(store.measureSize());
  await hash.updateWithAsset(asset);
  await manifest.sign(credentials.signer);
  await asset.writeManifestJUMBF(store.getBytes());
  return new Uint8Array(await asset.getDataRange());
};

/** A Blob that keeps its bytes, so the FileReaderSync below can return them synchronously. */
class BytesBlob extends Blob {
  readonly held: Uint8Array;
  constructor(bytes: Uint8Array, type = '') {
    super([new Uint8Array(bytes)], { type });
    this.held = bytes;
  }
  override slice(start = 0, end = this.held.length): Blob {
    const at = (n: number) => (n < 0 ? Math.max(0, this.held.length + n) : Math.min(n, this.held.length));
    return new BytesBlob(this.held.subarray(at(start), at(end)));
  }
}

let wasmReady = false;
const loadReferenceSdk = () => {
  if (wasmReady) return;
  const globals = globalThis as { FileReaderSync?: unknown };
  globals.FileReaderSync ??= class {
    readAsArrayBuffer(blob: BytesBlob): ArrayBuffer {
      return new Uint8Array(blob.held).buffer;
    }
  };
  const wasm = createRequire(import.meta.url).resolve('@contentauth/c2pa-wasm/c2pa.wasm');
  initSync({ module: readFileSync(wasm) });
  wasmReady = true;
};

export interface ReferenceValidation {
  /** `Trusted` (valid, signed by the anchor), `Valid`, or `Invalid`. */
  state: string;
  /** The status codes the SDK reported as failures (e.g. `assertion.dataHash.mismatch`). */
  failures: string[];
  /** The status codes it reported as successes. */
  successes: string[];
}

/** The C2PA reference SDK's validation of the file's active manifest, trusting only the test CA. */
export const validateWithReferenceSdk = async (
  bytes: Uint8Array,
  format: SignableFormat,
  credentials: TestCredentials,
): Promise<ReferenceValidation> => {
  loadReferenceSdk();
  const settings = { verify: { verify_trust: true }, trust: { trust_anchors: credentials.anchorPem } };
  const reader = await WasmReader.fromBlob(format, new BytesBlob(bytes, format), JSON.stringify(settings));
  try {
    const store = reader.manifestStore() as {
      validation_state?: string;
      validation_results?: { activeManifest?: { success?: { code: string }[]; failure?: { code: string }[] } };
    };
    const active = store.validation_results?.activeManifest ?? {};
    return {
      state: store.validation_state ?? 'unknown',
      failures: (active.failure ?? []).map((s) => s.code),
      successes: (active.success ?? []).map((s) => s.code),
    };
  } finally {
    reader.free();
  }
};

/** `@trustnxt/c2pa-ts`'s validation of the file's manifest store: whether it holds, and its codes. */
export const validateWithC2paTs = async (
  bytes: Uint8Array,
  format: SignableFormat,
): Promise<{ isValid: boolean; codes: string[] }> => {
  const asset = assetOf(bytes, format);
  const jumbf = asset.getManifestJUMBF();
  if (!jumbf) return { isValid: false, codes: ['no manifest'] };
  const store = ManifestStore.read(SuperBox.fromBuffer(new Uint8Array(jumbf)));
  const result = await store.validate(asset);
  return { isValid: result.isValid, codes: result.statusEntries.map((e) => e.code) };
};

/**
 * A baseline JPEG of 8×8 mid-grey pixels, written by hand (no encoder needed): all-ones quantisation,
 * one DC and one AC Huffman code, and a single block whose DC difference is 0 and whose ACs end at once.
 */
export const greyJpeg = (): Uint8Array =>
  Uint8Array.of(
    ...[0xff, 0xd8], // SOI
    ...[0xff, 0xdb, 0x00, 0x43, 0x00, ...new Array<number>(64).fill(1)], // DQT, table 0
    ...[0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x08, 0x00, 0x08, 0x01, 0x01, 0x11, 0x00], // SOF0 8×8, 1 component
    ...[0xff, 0xc4, 0x00, 0x14, 0x00, 0x01, ...new Array<number>(15).fill(0), 0x00], // DHT DC 0: one code, category 0
    ...[0xff, 0xc4, 0x00, 0x14, 0x10, 0x01, ...new Array<number>(15).fill(0), 0x00], // DHT AC 0: one code, EOB
    ...[0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00], // SOS
    0x3f, // DC code 0, EOB code 0, padded with ones
    ...[0xff, 0xd9], // EOI
  );

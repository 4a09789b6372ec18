/**
 * The local CA of `npm start -- --private-callbacks`: a certificate authority made on this machine
 * the first time, kept under `.local/tls/`, and a certificate it issued for a receiver on loopback
 * (`localhost`, 127.0.0.1 and ::1 as subject alternative names). The local webhook sender trusts
 * the CA (`WEBHOOK_CA_FILE`); a receiver serves the certificate and its key, so a callbackUrl
 * `https://127.0.0.1:<port>/...` or `https://localhost:<port>/...` verifies with no other step.
 * No private key of it is committed or leaves the machine.
 */
import { webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

export interface LocalTls {
  /** The CA's certificate (PEM): what the webhook sender trusts. */
  caFile: string;
  /** The receiver's certificate (PEM), issued by the CA for localhost, 127.0.0.1 and ::1. */
  certFile: string;
  /** The receiver's private key (PEM, PKCS#8). */
  keyFile: string;
}

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** Long enough to never bother a developer, short of the lifetimes clients refuse (the leaf is local only). */
const validDays = 825;

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g)
      ?.join('\n') ?? ''
  }\n-----END ${label}-----\n`;

/** The files of the local CA under `dir` (`.local/tls/`), made on the first call and kept after. */
export const localTls = async (dir: string): Promise<LocalTls> => {
  const files: LocalTls = {
    caFile: join(dir, 'local-ca.pem'),
    certFile: join(dir, 'localhost-cert.pem'),
    keyFile: join(dir, 'localhost-key.pem'),
  };
  if (Object.values(files).every((file) => existsSync(file))) {
    const leaf = new x509.X509Certificate(readFileSync(files.certFile, 'utf8'));
    if (leaf.notAfter.getTime() > Date.now() + 24 * 3600 * 1000) return files;
  }
  x509.cryptoProvider.set(webcrypto as never);
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(notBefore.getTime() + validDays * 24 * 3600 * 1000);
  const caKeys = (await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8))).toString('hex'),
    name: 'CN=Workflow Run API local CA, O=Local development',
    keys: caKeys,
    signingAlgorithm: ecdsa,
    notBefore,
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = (await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8))).toString('hex'),
    subject: 'CN=localhost, O=Local development',
    issuer: ca.subject,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ecdsa,
    notBefore,
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'dns', value: 'localhost' },
        { type: 'ip', value: '127.0.0.1' },
        { type: 'ip', value: '::1' },
      ]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  mkdirSync(dir, { recursive: true });
  writeFileSync(files.caFile, ca.toString('pem'));
  writeFileSync(files.certFile, leaf.toString('pem'));
  writeFileSync(files.keyFile, pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)), {
    mode: 0o600,
  });
  // The CA's key is not kept: nothing else is ever issued by it, so nothing else can be trusted through it.
  return files;
};

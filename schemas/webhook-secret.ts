import * as v from 'valibot';
import { NameStringSchema } from './common.ts';

/**
 * A run's `callbackSecret` is either a Standard Webhooks secret (`whsec_` and the padded base64 of
 * its bytes, the form the `standardwebhooks` and `svix` libraries take as it is) or any other
 * non-empty string (the contract's secret, used as its UTF-8 bytes). `X-Service-Signature` is keyed
 * with the secret as given either way; only `webhook-signature` differs (functions/domain/webhook.ts).
 */
export const standardSecretPrefix = 'whsec_';

/** The bytes of a secret the service issues (`generateCallbackSecret`). */
export const generatedSecretBytes = 32;

export const callbackSecretMessages = {
  whsec: `a secret starting with ${standardSecretPrefix} is ${standardSecretPrefix} and padded base64 of its bytes`,
  both: 'give callbackSecret or generateCallbackSecret, not both',
  needsCallbackUrl: 'generateCallbackSecret needs a callbackUrl to sign for',
} as const;

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * True for a well-formed Standard Webhooks secret: `whsec_` and padded base64 of at least one byte.
 * The specification asks senders for 24 to 64 random bytes (what the service issues); a shorter
 * secret of a caller's is still taken, as the libraries take it.
 */
export const isStandardSecret = (secret: string): boolean => {
  if (!secret.startsWith(standardSecretPrefix)) return false;
  const encoded = secret.slice(standardSecretPrefix.length);
  return encoded.length > 0 && base64Pattern.test(encoded);
};

export const CallbackSecretSchema = v.pipe(
  NameStringSchema,
  v.check((s) => !s.startsWith(standardSecretPrefix) || isStandardSecret(s), callbackSecretMessages.whsec),
  v.description(
    'When set, each webhook is signed with it. A Standard Webhooks secret (`whsec_` and padded base64) ' +
      'keys `webhook-signature` with its decoded bytes, as the `standardwebhooks` and `svix` libraries read it; any ' +
      'other secret keys it with its UTF-8 bytes. `X-Service-Signature` is keyed with the secret as given.',
  ),
);

/**
 * What is wrong with a request's secret fields that their schemas cannot see (each reads one
 * field): the field to name and why. Undefined when nothing is.
 */
export const callbackSecretProblem = (request: {
  callbackSecret?: string | undefined;
  generateCallbackSecret?: boolean | undefined;
  callbackUrl?: string | undefined;
}): { field: string; message: string } | undefined => {
  if (!request.generateCallbackSecret) return undefined;
  if (request.callbackSecret !== undefined)
    return { field: 'generateCallbackSecret', message: callbackSecretMessages.both };
  if (request.callbackUrl === undefined)
    return { field: 'generateCallbackSecret', message: callbackSecretMessages.needsCallbackUrl };
  return undefined;
};

/**
 * Whether the service may connect to a URL on a user's behalf: its scheme, and every address its
 * host resolves to, judged by the address guard (functions/domain/address-guard.ts). `guardedFetch`
 * asks here before it connects; a run start asks here about a URL input without connecting (and
 * without loading node:https, which only the fetch needs).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { forbiddenReason, parseHostLiteral } from '../domain/address-guard.ts';

export type GuardedFetchErrorCode =
  | 'invalid_url'
  | 'forbidden_scheme'
  | 'address_refused'
  | 'timeout'
  | 'aborted'
  | 'too_large'
  | 'tls'
  | 'network';

/**
 * The one text of every refused address (`address_refused`), whatever the reason: a name that does
 * not resolve, one that resolves to a private, loopback or metadata address. Telling them apart
 * would let a tenant map how internal names resolve (an oracle); the reason goes to `detail`.
 */
export const addressRefusedMessage = 'The address was refused: it must resolve, and only to public addresses';

/** Why a guarded request did not get an answer. `message` never carries the response body. */
export class GuardedFetchError extends Error {
  override readonly name = 'GuardedFetchError';
  readonly code: GuardedFetchErrorCode;
  /** For the logs only, never for the caller: why an address was refused (the name, its address, the reason). */
  readonly detail: string | undefined;
  constructor(code: GuardedFetchErrorCode, message: string, detail?: string) {
    super(message);
    this.code = code;
    this.detail = detail;
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How addresses are judged. */
export interface AddressOptions {
  /** Allows loopback addresses and plain http to them (local development: `ALLOW_PRIVATE_CALLBACKS=1`). */
  allowLoopback: boolean;
  /** The local stack (`localStackFromEnv`): a refusal says how to allow loopback. */
  localStack?: boolean;
  /** Name resolution; defaults to the system resolver (all addresses). Tests inject one. */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
}

/** Whether env enables calls to loopback (local development only). */
export const allowLoopbackFromEnv = (env: NodeJS.ProcessEnv = process.env): boolean =>
  env.ALLOW_PRIVATE_CALLBACKS === '1';

const systemResolve = async (hostname: string): Promise<ResolvedAddress[]> => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * What the local stack's refusal adds: how to let loopback through. Only on the local stack
 * (`localStack`) with loopback off; the same words for every reason, as the message is.
 */
export const localRefusalHint =
  ' (on the local stack, `npm start -- --private-callbacks` lets webhooks and HTTP nodes reach 127.0.0.1 and localhost)';

/** Whether env is the local stack's (`npm start` sets `LOCAL_STACK=1`; no deployed function has it). */
export const localStackFromEnv = (env: NodeJS.ProcessEnv = process.env): boolean => env.LOCAL_STACK === '1';

const refusedMessage = (options: AddressOptions): string =>
  !options.allowLoopback && options.localStack ? `${addressRefusedMessage}${localRefusalHint}` : addressRefusedMessage;

const refused = (options: AddressOptions, detail: string) =>
  new GuardedFetchError('address_refused', refusedMessage(options), detail);

/** Resolves `hostname` and vets every address; the one to connect to is the first IPv4 one, else the first. */
const vet = async (
  hostname: string,
  options: AddressOptions,
): Promise<{ address: ResolvedAddress; loopback: boolean }> => {
  const literal = parseHostLiteral(hostname);
  let addresses: ResolvedAddress[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await (options.resolve ?? systemResolve)(hostname);
    } catch (error) {
      throw refused(options, `${hostname} did not resolve: ${(error as Error).message}`);
    }
    if (addresses.length === 0) throw refused(options, `${hostname} resolved to no address`);
  }
  let loopback = true;
  for (const { address } of addresses) {
    const reason = forbiddenReason(address);
    if (reason === 'loopback' && options.allowLoopback) continue;
    if (reason !== null) throw refused(options, `${hostname} resolves to ${address} (${reason})`);
    loopback = false;
  }
  // IPv4 first: it reaches every network this runs on (a Lambda outside a dual-stack VPC has no IPv6).
  return { address: addresses.find((a) => a.family === 4) ?? (addresses[0] as ResolvedAddress), loopback };
};

/** The URL to request, and its host without IPv6 brackets; refused when it is not http(s) or carries credentials. */
export const parseTarget = (url: string | URL): { target: URL; hostname: string } => {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new GuardedFetchError('invalid_url', 'Not a valid URL');
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    throw new GuardedFetchError('forbidden_scheme', `Only https URLs are allowed, not ${target.protocol}`);
  }
  if (target.username || target.password) {
    throw new GuardedFetchError('invalid_url', 'URLs with credentials are not allowed');
  }
  const hostname = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
  return { target, hostname };
};

/** The address to connect to, vetted; plain http only to loopback where loopback is allowed. */
export const vetTarget = async (target: URL, hostname: string, options: AddressOptions): Promise<ResolvedAddress> => {
  const { address, loopback } = await vet(hostname, options);
  if (target.protocol === 'http:' && !(options.allowLoopback && loopback)) {
    throw new GuardedFetchError('forbidden_scheme', 'Only https URLs are allowed');
  }
  return address;
};

/**
 * Whether `guardedFetch` would connect for `url` now (its scheme, its host's addresses), without
 * connecting: a run start checks a URL input so, and the step that fetches it checks again.
 * Throws the GuardedFetchError `guardedFetch` would.
 */
export const vetUrl = async (url: string, options: AddressOptions): Promise<void> => {
  const { target, hostname } = parseTarget(url);
  await vetTarget(target, hostname, options);
};

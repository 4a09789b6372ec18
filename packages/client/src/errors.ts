/**
 * Typed errors, one class per answer status, all extending `ApiError` (`status`, `body`, `headers`).
 * Catch the base class for "any API error", or a subclass for one case:
 *
 *   try { await client.runWorkflow(id) } catch (e) { if (e instanceof ConflictError) read(e.activeJobId) }
 */

/** An error body as the API sends it: `{ error: string, ...details }` for nearly every error. */
export type ApiErrorBody = { error?: string; [field: string]: unknown };

const asBody = (body: unknown): ApiErrorBody => {
  if (body && typeof body === 'object' && !Array.isArray(body)) return body as ApiErrorBody;
  if (typeof body === 'string' && body !== '') return { error: body };
  return {};
};

const describe = (status: number, body: ApiErrorBody): string => {
  if (typeof body.error === 'string') return `${status} ${body.error}`;
  if (typeof body.message === 'string') return `${status} ${body.message}`;
  if (body.success === false) return `${status} Run validation failed`;
  return `HTTP ${status}`;
};

/**
 * Seconds to wait from a `Retry-After` header: an integer number of seconds (what this API sends)
 * or an HTTP date. Undefined when absent or unreadable.
 */
export const parseRetryAfter = (value: string | null | undefined, now: number = Date.now()): number | undefined => {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
};

/** Any answer outside 2xx. */
export class ApiError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The parsed JSON error body (a non-JSON body is wrapped as `{ error: text }`). */
  readonly body: ApiErrorBody;
  /** The answer's headers. */
  readonly headers: Headers;

  constructor(status: number, body: unknown, headers: Headers = new Headers()) {
    const parsed = asBody(body);
    super(describe(status, parsed));
    this.name = new.target.name;
    this.status = status;
    this.body = parsed;
    this.headers = headers;
  }
}

/** 400: the body is not JSON, a field has the wrong type, or a required field is missing. */
export class BadRequestError extends ApiError {}

/** 401: the key is missing, malformed, unknown, revoked or expired. */
export class UnauthorizedError extends ApiError {}

/**
 * 402: not enough credits (`required`), the project hard cap (`hardCap`, `spent`, `estimate`), the
 * per-step limit (`nodeType`, `estimatedCharge`, `ceiling`) or the key's monthly cap; see `body`.
 */
export class PaymentRequiredError extends ApiError {}

/** 403: the key lacks the scope, or is limited to other workflows. */
export class ForbiddenError extends ApiError {}

/** 404: no such workflow, agent, project, run or deferred run in the key's team. */
export class NotFoundError extends ApiError {}

/**
 * 409: the workflow already has a run in progress (`activeJobId` names it), or the run or deferred
 * run to cancel has already ended.
 */
export class ConflictError extends ApiError {
  /** The run in progress, when the conflict is a run start. */
  readonly activeJobId: string | undefined;

  constructor(status: number, body: unknown, headers?: Headers) {
    super(status, body, headers);
    this.activeJobId = typeof this.body.activeJobId === 'string' ? this.body.activeJobId : undefined;
  }
}

/** 413: the body is above the operation's size limit. */
export class PayloadTooLargeError extends ApiError {}

/**
 * 422: an unknown node type or input key (`validKeys`), a graph failing validation (`errors`), a
 * non-https `callbackUrl`, a provider this run may not use, or an `Idempotency-Key` reused with
 * another body.
 */
export class ValidationError extends ApiError {}

/** 429 and 503: the answer says how long to wait (`retryAfterSeconds`). */
export class RetryableError extends ApiError {
  /** Seconds to wait before trying again, from `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, body: unknown, headers: Headers = new Headers()) {
    super(status, body, headers);
    this.retryAfterSeconds = parseRetryAfter(headers.get('retry-after'));
  }
}

/** 429: too many requests with this key; wait `retryAfterSeconds`. */
export class RateLimitError extends RetryableError {}

/** 503: the key's monthly cap could not be checked; try again after `retryAfterSeconds`. */
export class ServiceUnavailableError extends RetryableError {}

/** 500 and other 5xx: a server failure; `body.error` carries a request id to quote to operators. */
export class ServerError extends ApiError {}

/** The typed error for one answer. */
export const errorFromResponse = (status: number, body: unknown, headers?: Headers): ApiError => {
  switch (status) {
    case 400:
      return new BadRequestError(status, body, headers);
    case 401:
      return new UnauthorizedError(status, body, headers);
    case 402:
      return new PaymentRequiredError(status, body, headers);
    case 403:
      return new ForbiddenError(status, body, headers);
    case 404:
      return new NotFoundError(status, body, headers);
    case 409:
      return new ConflictError(status, body, headers);
    case 413:
      return new PayloadTooLargeError(status, body, headers);
    case 422:
      return new ValidationError(status, body, headers);
    case 429:
      return new RateLimitError(status, body, headers);
    case 503:
      return new ServiceUnavailableError(status, body, headers);
    default:
      return status >= 500 ? new ServerError(status, body, headers) : new ApiError(status, body, headers);
  }
};

/** `waitForRun` gave up: the run had not ended by `timeoutMs`. `lastRun` is the last read (if any). */
export class WaitTimeoutError<TRun = unknown> extends Error {
  readonly jobId: string;
  readonly lastRun: TRun | undefined;

  /** `what` names what was waited for: a run, or a bulk action (`waitForBulkAction`). */
  constructor(jobId: string, timeoutMs: number, lastRun: TRun | undefined, what = 'Run') {
    super(`${what} ${jobId} had not ended after ${timeoutMs} ms`);
    this.name = 'WaitTimeoutError';
    this.jobId = jobId;
    this.lastRun = lastRun;
  }
}

/**
 * `uploadFile` failed other than by an API answer (those throw `ApiError`): the content type could
 * not be told, storage refused the bytes, or the check rejected them. `fileId` names the declared
 * file once there is one.
 */
export class UploadError extends Error {
  readonly fileId: string | undefined;

  constructor(message: string, fileId?: string) {
    super(message);
    this.name = new.target.name;
    this.fileId = fileId;
  }
}

/** No `contentType` was given and the file's extension names none of the accepted types. Nothing was sent. */
export class UnknownContentTypeError extends UploadError {
  /** The extension looked at, with its dot (`.bmp`), or '' when the name has none. */
  readonly extension: string;

  constructor(path: string, extension: string, known: readonly string[]) {
    super(
      `cannot tell the content type of ${path} from its extension${extension ? ` (${extension})` : ' (it has none)'}: ` +
        `pass contentType, or name it with one of ${known.join(' ')}`,
    );
    this.extension = extension;
  }
}

/**
 * Storage refused the PUT of the bytes (an answer outside 2xx from the presigned URL, not from the
 * API): S3's `code` and `storageMessage` from its XML error body, e.g. `SignatureDoesNotMatch` when
 * a signed header differs, `AccessDenied` ("Request has expired") after the URL's 15 minutes.
 */
export class StorageRefusedError extends UploadError {
  readonly status: number;
  /** S3's error code, or undefined when the body was not S3's XML error. */
  readonly code: string | undefined;
  /** S3's error message, or undefined when the body was not S3's XML error. */
  readonly storageMessage: string | undefined;
  /** The answer's body as text. */
  readonly body: string;

  constructor(fileId: string, status: number, body: string) {
    const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(body)?.[1];
    const code = field('Code');
    const storageMessage = field('Message');
    super(
      `storage refused the upload of ${fileId}: ${status}${code ? ` ${code}` : ''}${storageMessage ? `: ${storageMessage}` : ''}`,
      fileId,
    );
    this.status = status;
    this.code = code;
    this.storageMessage = storageMessage;
    this.body = body;
  }
}

/** The bytes arrived and the check refused them (`state: 'rejected'`); `reason` says why. */
export class FileRejectedError<TFile = unknown> extends UploadError {
  readonly reason: string;
  /** The File as `GET /files/{fileId}` read it. */
  readonly file: TFile;

  constructor(fileId: string, reason: string, file: TFile) {
    super(`file ${fileId} was rejected: ${reason}`, fileId);
    this.reason = reason;
    this.file = file;
  }
}

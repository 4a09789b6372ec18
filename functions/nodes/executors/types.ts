import type { RunMode } from '../../../schemas/run-words.ts';
import type { AiMark } from '../../../schemas/runs.ts';
import type { CanvasNode } from '../catalogue/canvas.ts';
import type { NodeSpec } from '../catalogue/node-spec.ts';
import type { JobProvider, JobUsage, TeamConnection } from '../providers/types.ts';
import type { ModelWork } from './model-work.ts';

/**
 * The contract between the step executor (orchestration: reads, charges, successors) and the node
 * executors (what one step does). Node executors never touch DynamoDB or SQS.
 */

/** A file a step produced, stored in the team's library bucket by the orchestrator. */
export interface StoredFile {
  /** Marks a value as a file so readers can presign it. */
  kind: 'file';
  /** Object key in the library bucket. */
  key: string;
  contentType: string;
  bytes: number;
  /** `ready` once stored and marked; `unavailable` when it could not be. */
  availability: 'ready' | 'processing' | 'unavailable';
  /** The file name the step gave it (`image.png`), when known. */
  name?: string;
  /**
   * Who marks it as AI-generated (schemas/runs.ts `AiMark`); absent on a file no AI
   * made (the caller's own), and on files stored before the field existed.
   */
  aiMark?: AiMark;
}

/** Whether a value is a StoredFile. */
export const isStoredFile = (value: unknown): value is StoredFile =>
  typeof value === 'object' &&
  value !== null &&
  (value as { kind?: unknown }).kind === 'file' &&
  typeof (value as { key?: unknown }).key === 'string';

/** The model a step ran on, for lineage and licence (spec 2.3). */
export interface ModelUse {
  provider: string;
  model: string;
}

export interface StepContext {
  jobId: string;
  teamId: string;
  node: CanvasNode;
  spec: NodeSpec;
  mode: RunMode;
  /** Values arriving on each input handle, in edge order (a handle may take several). */
  inputs: Record<string, unknown[]>;
  /** The run request's value for this step's `config.apiInputKey`, when given. */
  runInput: string | undefined;
  /** The run's own copy of the upload that value named (a file step given a `fileId`). */
  runFile?: StoredFile;
  /**
   * Stores bytes in the library bucket (marked as AI-generated when `aiGenerated`, by `aiMark`:
   * `service` unless the bytes keep a provider's C2PA manifest).
   */
  storeFile(file: {
    name: string;
    contentType: string;
    body: Uint8Array;
    aiGenerated: boolean;
    aiMark?: AiMark;
  }): Promise<StoredFile>;
  /** Aborted when the step's time budget runs out. */
  signal: AbortSignal;
  /**
   * Reads the bytes of a file a previous step of this run stored (from the library bucket). Steps
   * that work on files (Upscaler, ImageCropper, …) fail without it.
   */
  readFile?(file: StoredFile): Promise<Uint8Array>;
  /**
   * The team's own key for a provider (connection named by the provider key) or an integration
   * (`chat`, `codehost-a`, …); undefined when the team has none. Steps that need one fail without it.
   */
  connection?(key: string): Promise<TeamConnection | undefined>;
  /** A short-lived URL of a stored file, for delivery steps that hand files to another service. */
  fileUrl?(file: StoredFile): Promise<string>;
  /** A file of the team's library by id (FileUploader), or undefined when there is none. */
  libraryFile?(fileId: string): Promise<StoredFile | undefined>;
}

/**
 * What a step produced: a value per output handle. A handle left out produced nothing, so the
 * steps fed only by it are skipped (a ConditionalSwitch's branch not taken).
 */
export interface StepOutcome {
  outputs: Record<string, unknown>;
  /** Set when an AI model made the outputs. */
  model?: ModelUse;
  /**
   * The work a model step did, when it can be less than it asked for (a shorter answer, a smaller
   * input image): the step is charged its price, never above its estimate. Unset: its estimate.
   */
  work?: ModelWork;
  /**
   * Set instead of outputs by a model step on an asynchronous provider: the job to submit. The
   * step executor submits it, records it on the step and ends the invocation; the step's outputs
   * come from the job's answer (`jobOutcome`) once it ends.
   */
  job?: JobRequest;
  /** What the node wrote as it ran (a PythonSandbox step's stdout and stderr), whole: the step path cuts them. */
  logs?: NodeLogs;
}

/** A node's own output streams, as it gave them. */
export interface NodeLogs {
  stdout?: string;
  stderr?: string;
}

/** A model step's job, before its submit: the provider, the model in its naming, the model's input. */
export interface JobRequest {
  provider: 'replicate' | 'fal';
  /** Whose key it runs on: the team's own (its connection named by the provider) or the stage's. */
  credentials: 'team' | 'stage';
  model: string;
  input: Record<string, unknown>;
}

/** A step that failed for a reason the caller should see (`error` on the RunStep). */
export class StepFailedError extends Error {
  override readonly name = 'StepFailedError';
  /** What the node wrote before it failed (a PythonSandbox traceback on stderr), kept with the step's end. */
  logs?: NodeLogs;
}

export type NodeExecutor = (context: StepContext) => Promise<StepOutcome>;

/**
 * What the step executor needs of asynchronous providers (Replicate, fal) beside the node
 * executors: a provider's adapter (on the team's key or the stage's), a finished job's outputs, and
 * our public base URL providers' webhooks reach (undefined: no webhook, the job is polled alone).
 */
export interface ProviderJobs {
  provider(key: string, connection: TeamConnection | undefined): Promise<JobProvider | undefined>;
  /** The finished job's outputs, and the work it did measured from them and from `usage`. */
  outcome(context: StepContext, output: unknown, usage?: JobUsage): Promise<Pick<StepOutcome, 'outputs' | 'work'>>;
  publicBaseUrl: string | undefined;
}

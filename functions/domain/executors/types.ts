import type { RunMode } from '../../../schemas/runs.ts';
import type { NodeSpec } from '../catalogue/node-spec.ts';
import type { CanvasNode } from '../workflow-graph.ts';

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
}

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
  /** Stores bytes in the library bucket (marked as AI-generated when `aiGenerated`). */
  storeFile(file: { name: string; contentType: string; body: Uint8Array; aiGenerated: boolean }): Promise<StoredFile>;
  /** Aborted when the step's time budget runs out. */
  signal: AbortSignal;
}

/**
 * What a step produced: a value per output handle. A handle left out produced nothing, so the
 * steps fed only by it are skipped (a ConditionalSwitch's branch not taken).
 */
export interface StepOutcome {
  outputs: Record<string, unknown>;
  /** Set when an AI model made the outputs. */
  model?: ModelUse;
}

/** A step that failed for a reason the caller should see (`error` on the RunStep). */
export class StepFailedError extends Error {
  override readonly name = 'StepFailedError';
}

export type NodeExecutor = (context: StepContext) => Promise<StepOutcome>;

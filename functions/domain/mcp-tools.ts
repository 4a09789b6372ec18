/**
 * The MCP server's tools, as data (functions/http/mcp.ts serves them): each workflow a key may run
 * is a tool named for its id, described with its price range and licence; `get_run` reads a run.
 * A run's answer as tool content: its text outputs as text, its files as resource links to their
 * file links, each with its licence. Pure: no I/O.
 */
import type { Run, RunFile, RunOutput } from '../../schemas/runs.ts';
import type { OutputLicence } from './licence.ts';
import { isEndStatus } from './run-lifecycle.ts';

/** The tool that reads a run (its argument: `jobId`). */
export const getRunToolName = 'get_run';

const workflowToolPrefix = 'run_';
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A workflow's tool name: stable (its id, not its name, which may change or repeat), 40 characters
 * of letters, digits, `_` and `-`, inside the MCP tool-name rules (1 to 128 of A-Z, a-z, 0-9, `_`,
 * `-`, `.`) and the stricter ones model APIs apply to tool names (64, no dot).
 */
export const workflowToolName = (workflowId: string): string => `${workflowToolPrefix}${workflowId}`;

/** The workflow a tool name names, or undefined for any other name. */
export const workflowOfToolName = (name: string): string | undefined => {
  const id = name.startsWith(workflowToolPrefix) ? name.slice(workflowToolPrefix.length) : '';
  return uuidPattern.test(id) ? id : undefined;
};

/** A price range in credits (hundredths as the API shows credits: two decimals). */
const credits = (hundredths: number): string => (hundredths / 100).toFixed(2);

/** What a workflow's tool says of itself beside its inputs. */
export interface WorkflowToolFacts {
  workflowId: string;
  name: string;
  description: string | null;
  /** The cheapest and dearest estimate over the run modes (hundredths of a credit). */
  price: { minHundredths: number; maxHundredths: number };
  /** The strictest-wins verdict of its model steps; undefined when it runs no model. */
  licence: OutputLicence | undefined;
}

/** The licence in a sentence: its commercial use and the models it comes from. */
const licenceLine = (licence: OutputLicence | undefined): string => {
  if (!licence) return 'Outputs licence: no AI model step, no model licence applies.';
  const models = licence.models.map((m) => `${m.provider_key}${m.model ? `/${m.model}` : ''}`).join(', ');
  return `Outputs licence: commercial use ${licence.commercial_use} (strictest of ${models}).`;
};

/**
 * The tool's description: the workflow's own words, then what a caller must know before it spends:
 * the price range, that a call starts a paid run, and the licence its outputs carry.
 */
export const workflowToolDescription = (facts: WorkflowToolFacts): string => {
  const { minHundredths, maxHundredths } = facts.price;
  const price =
    minHundredths === maxHundredths
      ? `${credits(minHundredths)} credits`
      : `${credits(minHundredths)} to ${credits(maxHundredths)} credits`;
  return [
    facts.description ?? `Runs the workflow "${facts.name}".`,
    `Starts a paid run of workflow ${facts.workflowId}: estimated ${price}, held when it starts and charged per step.`,
    licenceLine(facts.licence),
    `A run still going when the call returns answers its jobId: read it with ${getRunToolName}.`,
  ].join('\n');
};

/** The tool's annotations (hints to a client, not guarantees): a run spends credits and reaches providers. */
export const workflowToolAnnotations = (facts: WorkflowToolFacts) => ({
  title: facts.name,
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
});

/** `get_run`'s input: the run's id, as a run start's answer names it. */
export const getRunInputSchema = {
  type: 'object',
  properties: { jobId: { type: 'string', format: 'uuid', description: 'The run to read (a tool call answers it).' } },
  required: ['jobId'],
  additionalProperties: false,
} as const;

/** One block of a tool's answer (MCP `ContentBlock`: the two kinds this server answers). */
export type ToolContent =
  | { type: 'text'; text: string }
  | { type: 'resource_link'; uri: string; name: string; mimeType?: string; description?: string };

type ReadyFile = Extract<RunFile, { availability: 'ready' }>;

const isReadyFile = (value: unknown): value is ReadyFile =>
  typeof value === 'object' &&
  value !== null &&
  (value as { availability?: unknown }).availability === 'ready' &&
  typeof (value as { url?: unknown }).url === 'string';

/** Every ready file inside a result (a file, files, or an object of them by handle). */
const readyFilesIn = (value: unknown): ReadyFile[] => {
  if (isReadyFile(value)) return [value];
  if (Array.isArray(value)) return value.flatMap(readyFilesIn);
  if (value && typeof value === 'object') return Object.values(value).flatMap(readyFilesIn);
  return [];
};

const outputLicence = (output: RunOutput): string =>
  output.licence ? `licence: commercial use ${output.licence.commercial_use}` : 'licence: no AI model step';

/**
 * One output as content: a text result as text; each ready file as a resource link to its file link
 * (no key needed, two hours), named for its step, with its type and licence; anything else as JSON.
 */
const outputContent = (output: RunOutput): ToolContent[] => {
  if (typeof output.result === 'string') return [{ type: 'text', text: output.result }];
  const files = readyFilesIn(output.result);
  if (files.length === 0) return [{ type: 'text', text: JSON.stringify(output.result) }];
  return files.map((file, index) => ({
    type: 'resource_link',
    uri: file.url,
    name: files.length === 1 ? output.node_id : `${output.node_id}-${index + 1}`,
    mimeType: file.contentType,
    description: `Output of step ${output.node_id} (${output.step_type}), ${file.bytes} bytes; link expires ${file.expiresAt}; ${outputLicence(output)}.`,
  }));
};

/** What a run's answer says first: which run, where it stands, and how to read it again. */
const runSummary = (run: Run): Record<string, unknown> => ({
  ...(isEndStatus(run.status) ? {} : { next: `still going: call ${getRunToolName} with this jobId to read it` }),
  jobId: run.jobId,
  status: run.status,
  progress: run.progress,
  ...(run.endReason ? { endReason: run.endReason } : {}),
  ...(run.queuePosition !== undefined ? { queuePosition: run.queuePosition } : {}),
  ...(run.output_next ? { output_next: run.output_next } : {}),
  outputs: run.output.map((o) => ({ node_id: o.node_id, step_type: o.step_type, licence: o.licence ?? null })),
});

/**
 * A run as a tool's answer: a first text block of JSON (the run, its status and progress, its
 * outputs' licences; `get_run` reads it again by its `jobId`), then each output's content. The whole
 * Run rides as `structuredContent`.
 */
export const runToolResult = (run: Run) => ({
  content: [
    { type: 'text', text: JSON.stringify(runSummary(run)) } satisfies ToolContent,
    ...run.output.flatMap(outputContent),
  ],
  structuredContent: run as unknown as Record<string, unknown>,
});

/** A run start's answer as it is (to a key that may not read runs): its `jobId`, status and estimate. */
export const startedToolResult = (started: Record<string, unknown>) => ({
  content: [{ type: 'text', text: JSON.stringify(started) } satisfies ToolContent],
  structuredContent: started,
});

/**
 * A refusal as a tool error (`isError: true`, which the model sees and may correct, unlike a
 * protocol error): the HTTP status the API would answer and the contract's body, as JSON.
 */
export const refusalToolResult = (status: number, body: unknown) => ({
  isError: true,
  content: [{ type: 'text', text: JSON.stringify({ status, ...(body as object) }) } satisfies ToolContent],
  structuredContent: { status, ...(body as object) },
});

#!/usr/bin/env node
import { createWriteStream } from 'node:fs';
/**
 * `workflow-run`: the command-line tool for API consumers. Run `workflow-run --help`.
 *
 * Exit codes: 0 success; 1 API, network or upload error (the error body is printed to stderr); 2 usage
 * error; 3 the watched run ended failed, cancelled or stopped. With `--json`, stdout carries only
 * JSON (the API's answer; for `--watch` and `watch`, the final run).
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import {
  type BatchRunItem,
  type CreateWebhookEndpointRequest,
  type CreateWorkflowRequest,
  createClient,
  type DeferredRun,
  type EndpointDelivery,
  isDeferred,
  isEnded,
  type ListDeferredRunsParams,
  type ListRunsParams,
  type OnConflict,
  outputFiles,
  type RedeliverRequest,
  type Run,
  type RunEvent,
  type RunRequest,
  type RunStep,
  type RunSummary,
  type UploadContentType,
  type UploadedFile,
  type UploadProgress,
  type UsageParams,
  type WorkflowRunClient,
  type WorkflowVersionSummary,
} from './client.ts';
import { ApiError, FileRejectedError, StorageRefusedError, UnknownContentTypeError, UploadError } from './errors.ts';
import { formatResult, formatSummary, runSmoke } from './smoke/index.ts';
import { contentTypeOf, uploadChunkBytes } from './upload.ts';

export const defaultBaseUrl = 'http://127.0.0.1:3000/api/v1';

export const usage = `Usage: workflow-run [--base-url URL] [--key KEY] [--json] <command> [options]

Commands:
  workflows list                         List the workflows the key can run
  workflows show <workflowId>            Describe a workflow: its inputs (required, type), final steps, a run's
                                         price range and its outputs' licence (--json: the JSON Schema too)
  workflows create --file F.json|F.yaml (--agent ID | --project ID) [--name N] [--agent-name N]
                                         Create a workflow from a file holding { name, steps } (or just steps)
  workflows update <workflowId> --file F.json|F.yaml (--agent ID | --project ID) [--name N]
                                         Make the workflow's next version from such a file (its own agent
                                         or project); earlier versions are kept
  workflows versions <workflowId> [--limit N] [--cursor C] [--all]
                                         The workflow's versions, newest first
  workflows status <workflowId> --status draft|active|archived
                                         Set its status; an archived workflow starts no run
  run <workflowId> [options]             Start a run of a workflow
  run --agent <agentId> [options]        Start a run of an agent's active workflow
      --input key=value                  Replace a step's value (its apiInputKey); repeatable
      --input key=@path                  Upload the file (its type from its extension), then pass its
                                         fileId; for text that starts with @, write @@
      --mode production|draft|preview    draft: a cheaper pass
      --version N                        Run version N of the workflow (workflows versions); default the latest
      --defer [--max-multiplier M]       Queue the run until the price multiplier reaches M (default 0.7)
      --start-by TIME                    With --defer or --queue: the latest time (ISO 8601) it may start,
                                         else it expires (deferred) or is cancelled (queued); at most 7 days
                                         ahead, default 24 hours
      --deadline SECONDS                 Cancel the run if still in progress this long after it starts
                                         (1 to 86400; endReason "deadline")
      --callback-url URL [--callback-secret S]   https URL for the run-finished webhook
      --idempotency-key K                Makes a retry safe: the same key and body start one run
      --meta key=value                   Your own metadata pair, echoed on the run; repeatable (16 at most)
      --tag T                            A tag to find the run by (runs list --tag); repeatable (5 at most)
      --event E                          A webhook event to send to --callback-url (run.started, step.completed,
                                         step.failed, run.completed, ...); repeatable; without it, the end only
      --queue                            When the workflow has a run in progress, wait behind it (queued)
                                         instead of being refused; prints its queuePosition
      --replace                          When the workflow has a run in progress, cancel it and start first
      --watch                            Follow the run until it ends
      --wait N                           Wait up to N seconds (1 to 25) in the start request itself; a run
                                         that ends by then is printed as watch ends (exit 3 unless completed)
  estimate <workflowId> [options]        What that run would cost and whether it would be refused, starting
  estimate --agent <agentId> [options]   nothing: each step's part, the refusal, the licence, the next 24
                                         hours' multipliers (options: --input key=value, --mode, --defer,
                                         --max-multiplier, as run takes them; a file input as its fileId)
  run token <jobId> [--expires-in S]     A run token for a browser: reads this run and follows it live with no
                                         key, from any origin (S seconds, 60 to 86400; default 3600); prints
                                         the token, its end and the two links it opens
  watch <jobId>                          Follow a run: progress and each step's status, until it ends
                                         (from its event stream; by polling when the stream is unavailable)
  download <jobId> [--dir D]             Download the run's output files (default dir: ./<jobId>)
  cancel <jobId>                         Cancel a run in progress
  resume <jobId> [options]               A new run of a failed or stopped run: its completed steps are kept,
                                         the rest run (options: --input, --callback-url, --callback-secret,
                                         --event, --deadline, --idempotency-key, --queue, --replace, --watch,
                                         --wait, as run takes them)
  runs show <jobId> [--wait N]           Show a run: its status, progress and outputs; with --wait, when it
                                         ends or N seconds (1 to 25) pass, whichever is first
  runs step <jobId> <nodeId>             One step's attempts (error, retry class, wait, provider, charge) and logs
  runs list [options]                    The team's runs, newest first (one page, or --all)
      --workflow-id ID                   Only runs of this workflow
      --status S                         Only runs with this status (queued, processing, completed, ...)
      --tag T                            Only runs started with this tag (runs list only)
      --batch-id ID                      Only runs started by this batch (runs list only)
      --limit N                          Page size, 1 to 100 (default 20)
      --cursor C                         The page after the one that printed this cursor
      --all                              Every page (--limit is then the page size)
  deliveries <jobId> [--redeliver]       The run-finished webhook's attempts and state (and each chosen event's);
                                         --redeliver sends it once more (same webhook-id); with
                                         --event E [--node-id N], that event's delivery instead
  batch start --file F.json [--idempotency-key K]
                                         Start 1 to 100 runs from a file holding { runs: [...] } (or just the
                                         list): each item a run start's body plus workflowId or agentId; prints
                                         each item's status and run, or its error; exit 1 when any was refused
  batch show <batchId>                   The runs a batch started, counted by status
  runs cancel [<jobId>...] [options]     Cancel many runs in the background: up to 100 by id, or every run
                                         (and waiting deferred run) the filters match; waits until done and
                                         prints the counts
      --workflow-id ID | --tag T | --status queued,processing | --batch-id ID
                                         The filters (one at least, when no ids are given)
      --no-wait                          Print the bulk action's id and return at once
  bulk show <bulkActionId>               A bulk cancel's status and counts
  deferred show <id>                     Show a deferred run
  deferred cancel <id>                   Cancel a deferred run still waiting
  deferred list [options]                The team's deferred runs, newest first (options as runs list)
  files upload <path> [--content-type T] [--name N]
                                         Upload a file (type from the extension unless given); prints the File
  files get <fileId>                     Show an uploaded file: its state (awaiting_upload, ready, rejected)
  hooks create --url U --event E [--workflow-id ID] [--tag T] [--description D]
                                         A team webhook endpoint hearing each --event (repeatable) of every run
                                         the filters pass; prints its secret, shown this once
  hooks list                             The team's webhook endpoints
  hooks show <endpointId>                One endpoint: its filters, whether it is disabled and why
  hooks disable <endpointId>             Stop its deliveries
  hooks enable <endpointId>              Resume them (and forget the failures that disabled it)
  hooks delete <endpointId>              Delete it
  hooks rotate <endpointId>              A new secret (shown once); the old one signs beside it for 24 hours
  hooks test <endpointId>                Queue a signed ping to it
  hooks deliveries <endpointId> [--all]  Its delivery log, newest first (one page, or --all)
  hooks redeliver <endpointId> <deliveryId>
                                         Send one delivery of the log once more (same webhook-id)
  usage [--from D] [--to D] [--group-by G] [--csv FILE]
                                         The team's charges from D to D (UTC dates, both included, at most
                                         366 days; default this month to today) by day, workflow, key, tag,
                                         model or project (default day); the rows sum to the team's charges;
                                         --csv writes them as CSV to FILE (- for stdout)
  smoke (--agent ID | --project ID) [options]
                                         Prove a deployed stage: each default model, a Python step, a chain
                                         of queued steps, an upload, a file link, the event stream, a webhook;
                                         one line per check with its credits; exit 1 naming each failure's cause
      --webhook-url URL --webhook-secret S   An https receiver for the signed webhook check (else skipped)
      --aws-region R [--bedrock-model ID]    Also read each Bedrock model's lifecycle (GetFoundationModel)
      --check NAME                       Only this check (upload, file link, events, python, hops, webhook,
                                         models, model <Type>); repeatable
      --timeout SECONDS                  Every check's deadline, instead of its own

Global options:
  --base-url URL   API base URL (env WORKFLOW_RUN_API_URL; default ${defaultBaseUrl})
  --key KEY        API key (env WORKFLOW_RUN_API_KEY)
  --json           Print machine-readable JSON only
  -h, --help       Show this help

Exit codes: 0 success, 1 API or upload error, 2 usage error, 3 the watched run failed, was cancelled or stopped.
`;

const optionSpec = {
  'base-url': { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  file: { type: 'string' },
  agent: { type: 'string' },
  project: { type: 'string' },
  name: { type: 'string' },
  'agent-name': { type: 'string' },
  input: { type: 'string', multiple: true },
  mode: { type: 'string' },
  defer: { type: 'boolean' },
  'max-multiplier': { type: 'string' },
  'start-by': { type: 'string' },
  deadline: { type: 'string' },
  'callback-url': { type: 'string' },
  'callback-secret': { type: 'string' },
  'idempotency-key': { type: 'string' },
  watch: { type: 'boolean' },
  queue: { type: 'boolean' },
  replace: { type: 'boolean' },
  dir: { type: 'string' },
  redeliver: { type: 'boolean' },
  'workflow-id': { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  all: { type: 'boolean' },
  'content-type': { type: 'string' },
  meta: { type: 'string', multiple: true },
  tag: { type: 'string', multiple: true },
  event: { type: 'string', multiple: true },
  'node-id': { type: 'string' },
  url: { type: 'string' },
  description: { type: 'string' },
  'webhook-url': { type: 'string' },
  'webhook-secret': { type: 'string' },
  'aws-region': { type: 'string' },
  'bedrock-model': { type: 'string', multiple: true },
  check: { type: 'string', multiple: true },
  timeout: { type: 'string' },
  wait: { type: 'string' },
  'expires-in': { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'group-by': { type: 'string' },
  csv: { type: 'string' },
  version: { type: 'string' },
  'batch-id': { type: 'string' },
  'no-wait': { type: 'boolean' },
} as const;

type OptionName = keyof typeof optionSpec;
type Values = ReturnType<typeof parseArgs<{ options: typeof optionSpec; allowPositionals: true }>>['values'];

const globalOptions: OptionName[] = ['base-url', 'key', 'json', 'help'];

/** Options each command accepts besides the global ones. */
const commandOptions: Record<string, OptionName[]> = {
  'workflows list': [],
  'workflows show': [],
  'workflows create': ['file', 'agent', 'project', 'name', 'agent-name'],
  'workflows update': ['file', 'agent', 'project', 'name'],
  'workflows versions': ['limit', 'cursor', 'all'],
  'workflows status': ['status'],
  run: [
    'agent',
    'input',
    'mode',
    'version',
    'defer',
    'max-multiplier',
    'start-by',
    'deadline',
    'callback-url',
    'callback-secret',
    'idempotency-key',
    'meta',
    'tag',
    'event',
    'queue',
    'replace',
    'watch',
    'wait',
  ],
  estimate: ['agent', 'input', 'mode', 'defer', 'max-multiplier', 'version'],
  watch: [],
  download: ['dir'],
  cancel: [],
  resume: [
    'input',
    'callback-url',
    'callback-secret',
    'event',
    'deadline',
    'idempotency-key',
    'queue',
    'replace',
    'watch',
    'wait',
  ],
  deliveries: ['redeliver', 'event', 'node-id'],
  'deferred show': [],
  'deferred cancel': [],
  'runs list': ['workflow-id', 'status', 'tag', 'batch-id', 'limit', 'cursor', 'all'],
  'runs show': ['wait'],
  'runs step': [],
  'runs cancel': ['workflow-id', 'tag', 'status', 'batch-id', 'no-wait'],
  'bulk show': [],
  'deferred list': ['workflow-id', 'status', 'limit', 'cursor', 'all'],
  'files upload': ['content-type', 'name'],
  'files get': [],
  'hooks create': ['url', 'event', 'workflow-id', 'tag', 'description'],
  'hooks list': [],
  'hooks show': [],
  'hooks disable': [],
  'hooks enable': [],
  'hooks delete': [],
  'hooks rotate': [],
  'hooks test': [],
  'hooks deliveries': ['all', 'cursor'],
  'hooks redeliver': [],
  smoke: ['agent', 'project', 'webhook-url', 'webhook-secret', 'aws-region', 'bedrock-model', 'check', 'timeout'],
  'run token': ['expires-in'],
  usage: ['from', 'to', 'group-by', 'csv'],
  'batch start': ['file', 'idempotency-key'],
  'batch show': [],
};

/** Where the CLI writes and what it reads; `main` takes them so it can be driven in-process too. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  fetch?: (request: Request) => Promise<Response>;
  signal?: AbortSignal;
}

class UsageError extends Error {}

/** The run ended other than completed (exit 3). */
class RunEndedBadly extends Error {}

const write = (stream: NodeJS.WritableStream, text: string) => stream.write(text.endsWith('\n') ? text : `${text}\n`);

const printJson = (io: CliIo, value: unknown) => write(io.stdout, JSON.stringify(value, null, 2));

/** `name: value` lines, as the operators' CLI prints. */
const printFields = (io: CliIo, fields: Record<string, unknown>) => {
  for (const [name, value] of Object.entries(fields))
    write(io.stdout, `${name}: ${value === null || value === undefined ? '-' : String(value)}`);
};

const positionalCommand = (positionals: string[]): { command: string; args: string[] } => {
  const [first, second, ...rest] = positionals;
  if (first === undefined) throw new UsageError('no command given');
  if (['workflows', 'deferred', 'runs', 'files', 'hooks', 'batch'].includes(first)) {
    if (second === undefined) throw new UsageError(`"${first}" needs a subcommand`);
    const command = `${first} ${second}`;
    if (!(command in commandOptions)) throw new UsageError(`unknown command "${command}"`);
    return { command, args: rest };
  }
  // A run's id is a uuid: `run token` is never a run of a workflow named `token`.
  if (first === 'run' && second === 'token') return { command: 'run token', args: rest };
  if (!(first in commandOptions)) throw new UsageError(`unknown command "${first}"`);
  return { command: first, args: positionals.slice(1) };
};

const oneArg = (command: string, args: string[], what: string): string => {
  if (args.length !== 1 || !args[0]) throw new UsageError(`${command} needs exactly one ${what}`);
  return args[0];
};

const noArgs = (command: string, args: string[]) => {
  if (args.length > 0) throw new UsageError(`${command} takes no arguments (got "${args.join(' ')}")`);
};

// ---------------------------------------------------------------------------------------------
// Commands

const listWorkflows = async (client: WorkflowRunClient, io: CliIo, json: boolean) => {
  const workflows = await client.listWorkflows({ signal: io.signal });
  if (json) return printJson(io, { workflows });
  if (workflows.length === 0) return write(io.stdout, 'No workflows.');
  const rows = workflows.map((w) => [w.id, w.status ?? '-', w.updated_at ?? '-', w.name]);
  const widths = [36, Math.max(6, ...rows.map((r) => r[1]?.length ?? 0)), 24];
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i < widths.length ? cell.padEnd(widths[i] ?? 0) : cell))
      .join('  ')
      .trimEnd();
  write(io.stdout, line(['ID', 'STATUS', 'UPDATED', 'NAME']));
  for (const row of rows) write(io.stdout, line(row as string[]));
};

/** `workflows show <id>`: the workflow described, one input and one final step a line. */
const showWorkflow = async (client: WorkflowRunClient, io: CliIo, workflowId: string, json: boolean) => {
  const workflow = await client.getWorkflow(workflowId, { signal: io.signal });
  if (json) return printJson(io, workflow);
  const { price } = workflow;
  printFields(io, {
    id: workflow.id,
    name: workflow.name,
    status: workflow.status,
    version: workflow.version,
    price: `${price.minCredits} to ${price.maxCredits} credits (${price.modes.map((m) => `${m.mode} ${m.estimatedCredits}`).join(', ')} now)`,
    licence: workflow.licence?.commercial_use,
  });
  const required = new Set(workflow.inputs.required);
  write(io.stdout, 'inputs:');
  for (const [key, input] of Object.entries(workflow.inputs.properties)) {
    const kind = input['x-contentTypes'] ? `file (${input['x-contentTypes'].join(', ')})` : 'text';
    write(io.stdout, `  ${key}${required.has(key) ? ' (required)' : ''}: ${kind}`);
  }
  write(io.stdout, 'outputs:');
  for (const output of workflow.outputs) {
    write(io.stdout, `  ${output.key} (${output.type}): ${output.handles.map((h) => h.kind).join(', ')}`);
  }
};

const readWorkflowFile = async (file: string): Promise<Record<string, unknown>> => {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = ['.yaml', '.yml'].includes(extname(file).toLowerCase()) ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file} is not valid ${extname(file).slice(1) || 'JSON'}: ${(error as Error).message}`);
  }
  if (Array.isArray(parsed)) return { steps: parsed };
  if (parsed && typeof parsed === 'object') return parsed as Record<string, unknown>;
  throw new UsageError(`${file} must hold an object { name, steps } or a list of steps`);
};

/** The body of `workflows create` and `workflows update`: the file, with the options over it. */
const workflowBody = async (command: string, values: Values): Promise<CreateWorkflowRequest> => {
  if (!values.file) throw new UsageError(`${command} needs --file`);
  const fromFile = await readWorkflowFile(values.file);
  const body = { ...fromFile } as Record<string, unknown>;
  if (values.name) body.name = values.name;
  if (values.agent) body.agentId = values.agent;
  if (values.project) body.projectId = values.project;
  if (values['agent-name']) body.agentName = values['agent-name'];
  if (values.agent && values.project) throw new UsageError('give one of --agent and --project, not both');
  if (values.agent) delete body.projectId;
  if (values.project) delete body.agentId;
  if (!body.agentId && !body.projectId) throw new UsageError(`${command} needs --agent or --project`);
  if (typeof body.name !== 'string' || body.name === '')
    body.name = basename(values.file, extname(values.file)) || 'Workflow';
  return body as CreateWorkflowRequest;
};

const createWorkflow = async (client: WorkflowRunClient, io: CliIo, values: Values, json: boolean) => {
  const body = await workflowBody('workflows create', values);
  const created = await client.createWorkflow(body, { signal: io.signal });
  if (json) return printJson(io, created);
  printFields(io, created);
};

const updateWorkflow = async (client: WorkflowRunClient, io: CliIo, values: Values, args: string[], json: boolean) => {
  const workflowId = oneArg('workflows update', args, 'workflow id');
  const body = await workflowBody('workflows update', values);
  const made = await client.updateWorkflow(workflowId, body, { signal: io.signal });
  if (json) return printJson(io, made);
  const { steps: _steps, ...fields } = made;
  printFields(io, fields);
};

const listWorkflowVersions = async (
  client: WorkflowRunClient,
  io: CliIo,
  values: Values,
  args: string[],
  json: boolean,
) => {
  const workflowId = oneArg('workflows versions', args, 'workflow id');
  const rowOf = (v: WorkflowVersionSummary) => [String(v.version), v.createdAt, String(v.stepsCount), v.name];
  const header = ['VERSION', 'CREATED', 'STEPS', 'NAME'];
  if (values.all) {
    const versions: WorkflowVersionSummary[] = [];
    for await (const version of client.workflowVersions(workflowId, { signal: io.signal })) versions.push(version);
    if (json) return printJson(io, { versions });
    return printTable(io, header, versions.map(rowOf));
  }
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  const page = await client.listWorkflowVersions(
    workflowId,
    { ...(limit !== undefined && { limit }), ...(values.cursor && { cursor: values.cursor }) },
    { signal: io.signal },
  );
  if (json) return printJson(io, page);
  printTable(io, header, page.versions.map(rowOf));
  if (page.nextCursor) write(io.stdout, `next page: --cursor ${page.nextCursor}`);
};

const workflowStatuses = ['draft', 'active', 'archived'] as const;

const setWorkflowStatus = async (
  client: WorkflowRunClient,
  io: CliIo,
  values: Values,
  args: string[],
  json: boolean,
) => {
  const workflowId = oneArg('workflows status', args, 'workflow id');
  const status = workflowStatuses.find((s) => s === values.status);
  if (!status) throw new UsageError(`workflows status needs --status ${workflowStatuses.join('|')}`);
  const workflow = await client.setWorkflowStatus(workflowId, status, { signal: io.signal });
  if (json) return printJson(io, workflow);
  printFields(io, workflow);
};

const runModes = ['production', 'draft', 'preview'] as const;

/** An `--input key=@path`: the file to upload before the run starts, its fileId then the key's value. */
interface FileInput {
  key: string;
  path: string;
  contentType: UploadContentType;
}

/** The run's body, its file inputs still to upload (their keys are absent from `body.inputs` until then). */
const runRequest = (values: Values): { body: RunRequest; fileInputs: FileInput[] } => {
  const body: RunRequest = {};
  const fileInputs: FileInput[] = [];
  if (values.input?.length) {
    const inputs: Record<string, string> = {};
    /** A key given twice takes its last value, text or file. */
    const files = new Map<string, string>();
    for (const pair of values.input) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new UsageError(`--input needs key=value or key=@path (got "${pair}")`);
      const key = pair.slice(0, at);
      const value = pair.slice(at + 1);
      files.delete(key);
      delete inputs[key];
      if (value.startsWith('@@')) inputs[key] = value.slice(1);
      else if (value.startsWith('@')) files.set(key, value.slice(1));
      else inputs[key] = value;
    }
    for (const [key, path] of files) {
      if (path === '') throw new UsageError(`--input ${key}=@ needs a path after the @`);
      try {
        fileInputs.push({ key, path, contentType: contentTypeOf(path) });
      } catch (error) {
        if (error instanceof UnknownContentTypeError) throw new UsageError(`--input ${key}: ${error.message}`);
        throw error;
      }
    }
    body.inputs = inputs;
  }
  if (values.mode !== undefined) {
    const mode = runModes.find((m) => m === values.mode);
    if (!mode) throw new UsageError(`--mode must be one of ${runModes.join(', ')}`);
    body.mode = mode;
  }
  if (values.version !== undefined) {
    const version = Number(values.version);
    if (!Number.isInteger(version) || version < 1) throw new UsageError('--version must be a whole number from 1');
    body.version = version;
  }
  if (values['max-multiplier'] !== undefined && !values.defer)
    throw new UsageError('--max-multiplier only applies with --defer');
  if (values.defer) {
    body.defer = true;
    if (values['max-multiplier'] !== undefined) {
      const multiplier = Number(values['max-multiplier']);
      if (!Number.isFinite(multiplier) || multiplier <= 0)
        throw new UsageError('--max-multiplier must be a positive number');
      body.maxMultiplier = multiplier;
    }
  }
  if (values['start-by'] !== undefined) {
    if (!values.defer && !values.queue) throw new UsageError('--start-by only applies with --defer or --queue');
    // Passed as given: the API says when a time is past or too far ahead, and the latest it may be.
    body.startBy = values['start-by'];
  }
  if (values.deadline !== undefined) {
    const seconds = Number(values.deadline);
    if (!Number.isInteger(seconds) || seconds <= 0)
      throw new UsageError('--deadline must be a whole number of seconds');
    body.deadlineSeconds = seconds;
  }
  if (values['callback-url']) body.callbackUrl = values['callback-url'];
  if (values['callback-secret']) {
    if (!values['callback-url']) throw new UsageError('--callback-secret only applies with --callback-url');
    body.callbackSecret = values['callback-secret'];
  }
  if (values.meta?.length) {
    const metadata: Record<string, string> = {};
    for (const pair of values.meta) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new UsageError(`--meta needs key=value (got "${pair}")`);
      metadata[pair.slice(0, at)] = pair.slice(at + 1);
    }
    body.metadata = metadata;
  }
  // Passed as given: the API names the limit a tag or a pair passes.
  if (values.tag?.length) body.tags = values.tag;
  // Passed as given too: the API names an unknown event, and refuses events without --callback-url.
  if (values.event?.length) body.webhookEvents = values.event as NonNullable<RunRequest['webhookEvents']>;
  return { body, fileInputs };
};

/** A file must be there and readable before anything is declared: a typo never leaves uploads behind. */
const checkReadable = async (path: string, what: string) => {
  try {
    if (!(await stat(path)).isFile()) throw new Error('not a file');
  } catch (error) {
    throw new UsageError(`${what}: cannot read ${path}: ${(error as Error).message}`);
  }
};

const formatMiB = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

/**
 * Progress on stderr for a file larger than one chunk (stdout keeps only the command's answer): on
 * a terminal one line redrawn in place, otherwise a line at each tenth of the way and at the end.
 */
const progressLine = (io: CliIo, label: string) => {
  let lastTenth = -1;
  return ({ sentBytes, totalBytes }: UploadProgress) => {
    if (totalBytes <= uploadChunkBytes) return;
    const percent = Math.floor((sentBytes / totalBytes) * 100);
    const text = `uploading ${label}: ${formatMiB(sentBytes)} of ${formatMiB(totalBytes)} (${percent}%)`;
    const done = sentBytes >= totalBytes;
    if (io.stderr.isTTY) io.stderr.write(`\r\x1b[2K${text}${done ? '\n' : ''}`);
    else if (done || Math.floor(percent / 10) > lastTenth) write(io.stderr, text);
    lastTenth = Math.floor(percent / 10);
  };
};

const upload = async (
  client: WorkflowRunClient,
  io: CliIo,
  path: string,
  label: string,
  options: { contentType?: UploadContentType; name?: string } = {},
): Promise<UploadedFile> =>
  client.uploadFile(path, { ...options, onProgress: progressLine(io, label), signal: io.signal });

const uploadFile = async (client: WorkflowRunClient, io: CliIo, values: Values, path: string, json: boolean) => {
  // The API names the accepted types when it refuses one; the extension is read only when none is given.
  let contentType = values['content-type'] as UploadContentType | undefined;
  if (contentType === undefined) {
    try {
      contentType = contentTypeOf(path);
    } catch (error) {
      if (error instanceof UnknownContentTypeError) throw new UsageError(`${error.message} (--content-type)`);
      throw error;
    }
  }
  await checkReadable(path, 'files upload');
  const file = await upload(client, io, path, path, { contentType, ...(values.name ? { name: values.name } : {}) });
  if (json) return printJson(io, file);
  printFields(io, file);
};

/** `--wait N`: the seconds to wait in the request itself (`Prefer: wait=N`), 1 to 25. */
const waitSeconds = (values: Values): { wait?: number } => {
  if (values.wait === undefined) return {};
  const wait = Number(values.wait);
  if (!/^\d+$/.test(values.wait) || wait < 1 || wait > 25)
    throw new UsageError('--wait must be a whole number of seconds from 1 to 25');
  if (values.watch) throw new UsageError('--wait and --watch: give one');
  return { wait };
};

/**
 * A start (or resume) whose run ended within its `--wait`: its fields, then the run's end as
 * `watch` prints it (with `--json`, the answer, `run` in it); exit 3 unless it completed.
 */
const printWaited = (io: CliIo, started: { jobId: string; estimatedCredits: number }, run: Run, json: boolean) => {
  if (json) printJson(io, started);
  else {
    printFields(io, { jobId: started.jobId, estimatedCredits: started.estimatedCredits });
    printRunEnd(io, run);
  }
  if (run.status !== 'completed') throw new RunEndedBadly(`run ${run.jobId} ${run.status}`);
};

/** `--queue` or `--replace`: the start's `onConflict` (none: the default, refused with 409). */
const conflictOption = (values: Values): { onConflict?: OnConflict } => {
  if (values.queue && values.replace) throw new UsageError('--queue and --replace cannot be given together');
  return values.queue ? { onConflict: 'queue' } : values.replace ? { onConflict: 'replace' } : {};
};

const startRun = async (client: WorkflowRunClient, io: CliIo, values: Values, args: string[], json: boolean) => {
  if (values.agent && args.length > 0) throw new UsageError('run takes a workflow id or --agent, not both');
  const agentId = values.agent;
  const workflowId = agentId ? undefined : oneArg('run', args, 'workflow id');
  if (values.watch && values.defer) throw new UsageError('--watch cannot follow a deferred run; use --defer alone');
  const { body, fileInputs } = runRequest(values);
  for (const input of fileInputs) await checkReadable(input.path, `--input ${input.key}`);
  // One after another: each fileId is the run's input for its key once its file reads ready.
  for (const input of fileInputs) {
    const file = await upload(client, io, input.path, input.path, { contentType: input.contentType });
    body.inputs = { ...body.inputs, [input.key]: file.fileId };
    if (!json) write(io.stderr, `uploaded ${input.path} as ${file.fileId} (${file.contentType}, ${file.size} bytes)`);
  }
  const wait = waitSeconds(values);
  const options = { signal: io.signal, idempotencyKey: values['idempotency-key'], ...wait, ...conflictOption(values) };
  const started = workflowId
    ? await client.runWorkflow(workflowId, body, options)
    : await client.runAgent(agentId ?? '', body, options);
  if (isDeferred(started)) {
    if (json) return printJson(io, started);
    return printFields(io, { ...started, next: `workflow-run deferred show ${started.deferredJobId}` });
  }
  if (started.run) return printWaited(io, started, started.run, json);
  if (!values.watch) {
    if (json) return printJson(io, started);
    return printFields(io, { ...started, next: `workflow-run watch ${started.jobId}` });
  }
  if (!json)
    printFields(io, {
      jobId: started.jobId,
      workflowId: started.workflowId,
      estimatedCredits: started.estimatedCredits,
    });
  await watchRun(client, io, started.jobId, json);
};

/** `estimate <workflowId>` or `estimate --agent <agentId>`: the run start's body, estimated; nothing uploaded or started. */
const estimateRun = async (client: WorkflowRunClient, io: CliIo, values: Values, args: string[], json: boolean) => {
  if (values.agent && args.length > 0) throw new UsageError('estimate takes a workflow id or --agent, not both');
  const agentId = values.agent;
  const workflowId = agentId ? undefined : oneArg('estimate', args, 'workflow id');
  const { body, fileInputs } = runRequest(values);
  if (fileInputs.length > 0)
    throw new UsageError('estimate uploads nothing: pass a file input as its fileId (files upload <path> first)');
  const options = { signal: io.signal };
  const estimate = workflowId
    ? await client.estimate(workflowId, body, options)
    : await client.estimateAgent(agentId ?? '', body, options);
  if (json) return printJson(io, estimate);
  const cheapest = estimate.multipliers.hours.reduce((a, b) => (b.estimatedCredits < a.estimatedCredits ? b : a));
  printFields(io, {
    workflowId: estimate.workflowId,
    estimatedCredits: estimate.estimatedCredits,
    refusal: estimate.refusal && `${estimate.refusal.status} ${JSON.stringify(estimate.refusal.body)}`,
    licence: estimate.licence?.commercial_use,
    multiplier: `${estimate.multipliers.inForce.multiplier} now`,
    cheapestHour: `${cheapest.startsAt} at ${cheapest.multiplier}: ${cheapest.estimatedCredits} credits deferred`,
    ...(estimate.deferredStart !== undefined && {
      deferredStart:
        estimate.deferredStart && `${estimate.deferredStart.startsAt} at ${estimate.deferredStart.multiplier}`,
    }),
  });
  for (const step of estimate.steps) write(io.stdout, `  ${step.nodeId} (${step.type}): ${step.estimatedCredits}`);
};

/** `resume <jobId>`: the run start's inputs (files uploaded first) and webhook, for the steps that run again. */
const resumeRun = async (client: WorkflowRunClient, io: CliIo, values: Values, args: string[], json: boolean) => {
  const jobId = oneArg('resume', args, 'job id');
  const { body, fileInputs } = runRequest(values);
  for (const input of fileInputs) await checkReadable(input.path, `--input ${input.key}`);
  for (const input of fileInputs) {
    const file = await upload(client, io, input.path, input.path, { contentType: input.contentType });
    body.inputs = { ...body.inputs, [input.key]: file.fileId };
    if (!json) write(io.stderr, `uploaded ${input.path} as ${file.fileId} (${file.contentType}, ${file.size} bytes)`);
  }
  const { inputs, callbackUrl, callbackSecret, webhookEvents, deadlineSeconds } = body;
  const resumed = await client.resumeRun(
    jobId,
    {
      ...(inputs && { inputs }),
      ...(callbackUrl && { callbackUrl }),
      ...(callbackSecret && { callbackSecret }),
      ...(webhookEvents && { webhookEvents }),
      ...(deadlineSeconds !== undefined && { deadlineSeconds }),
    },
    { signal: io.signal, idempotencyKey: values['idempotency-key'], ...waitSeconds(values), ...conflictOption(values) },
  );
  if (resumed.run) return printWaited(io, resumed, resumed.run, json);
  if (!values.watch) {
    if (json) return printJson(io, resumed);
    return printFields(io, {
      ...resumed,
      carriedSteps: resumed.carriedSteps.join(', '),
      next: `workflow-run watch ${resumed.jobId}`,
    });
  }
  if (!json)
    printFields(io, {
      jobId: resumed.jobId,
      resumedFrom: resumed.resumedFrom,
      estimatedCredits: resumed.estimatedCredits,
    });
  await watchRun(client, io, resumed.jobId, json);
};

// --- watch -----------------------------------------------------------------------------------

const stepMarks: Record<RunStep['status'], string> = {
  queued: '·',
  processing: '▸',
  completed: '✓',
  failed: '✗',
  skipped: '-',
  unknown: '?',
};

const bar = (progress: number, width = 30) => {
  const filled = Math.round((Math.max(0, Math.min(100, progress)) / 100) * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
};

/**
 * The share of the run's steps that have ended (completed, failed, skipped or unknown), what the bar
 * shows: the API's `progress` counts completed steps only, so a run with a branch not taken would
 * end short of full while every step shows done.
 */
const endedShare = (run: Run) => {
  if (run.steps.length === 0) return isEnded(run) ? 100 : 0;
  const ended = run.steps.filter((step) => step.status !== 'queued' && step.status !== 'processing').length;
  return Math.floor((ended * 100) / run.steps.length);
};

const stepLine = (step: RunStep) =>
  `  ${stepMarks[step.status] ?? '?'} ${step.node_id} (${step.step_type}): ${step.status}${step.error ? ` — ${step.error}` : ''}`;

/** Redraws a block of lines in place on a terminal. */
const liveBlock = (stream: CliIo['stdout']) => {
  let drawn = 0;
  return (lines: string[]) => {
    const columns = stream.columns ?? 120;
    const fitted = lines.map((l) => (l.length > columns - 1 ? `${l.slice(0, Math.max(0, columns - 2))}…` : l));
    let out = drawn > 0 ? `\x1b[${drawn}F` : '';
    out += fitted.map((l) => `\x1b[2K${l}`).join('\n');
    out += '\x1b[0J\n';
    stream.write(out);
    drawn = fitted.length;
  };
};

/** Plain lines for logs and pipes: one per change of the run or of a step. */
const plainLog = (io: CliIo) => {
  let lastHead = '';
  const lastSteps = new Map<string, string>();
  return (run: Run) => {
    const head = `${run.status} ${run.progress}%`;
    if (head !== lastHead) write(io.stdout, `run ${run.jobId} ${run.status} ${run.progress}%`);
    lastHead = head;
    for (const step of run.steps) {
      const line = stepLine(step).trim();
      if (lastSteps.get(step.node_id) !== line) write(io.stdout, `step ${line}`);
      lastSteps.set(step.node_id, line);
    }
  };
};

const summariseResult = (result: unknown): string => {
  if (typeof result === 'string') return result.length > 200 ? `${result.slice(0, 200)}…` : result;
  const text = JSON.stringify(result) ?? 'null';
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
};

const elapsed = (ms: number) => {
  const seconds = Math.floor(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
};

/** The run after one event of its stream. */
const applyEvent = (run: Run, event: RunEvent): Run => {
  switch (event.event) {
    case 'step':
      return { ...run, steps: run.steps.map((step) => (step.node_id === event.data.node_id ? event.data : step)) };
    case 'status':
      return { ...run, ...event.data };
    case 'output':
      return { ...run, output: [...run.output.filter((o) => o.node_id !== event.data.node_id), event.data] };
    case 'done':
      return event.data;
  }
};

/**
 * Follows a run to its end: from its event stream, each event shown as it comes; when
 * the stream cannot be had (an older deployment, a proxy that refuses it, a broken connection), by
 * polling GET /runs/{jobId} as before. The run's own errors (404) come from the first read.
 */
const followRun = async (
  client: WorkflowRunClient,
  jobId: string,
  signal: AbortSignal | undefined,
  onProgress: (run: Run) => void,
): Promise<Run> => {
  let latest = await client.getRun(jobId, signal ? { signal } : {});
  onProgress(latest);
  try {
    // A deployment without the stream gives no link: poll it.
    const url = latest.links?.events;
    const events = url ? client.runEvents(jobId, { url, ...(signal ? { signal } : {}) }) : [];
    for await (const event of events) {
      latest = applyEvent(latest, event);
      if (event.event === 'done') return latest;
      onProgress(latest);
    }
  } catch (error) {
    if (signal?.aborted) throw error;
  }
  return client.waitForRun(jobId, {
    intervalMs: 500,
    maxIntervalMs: 5_000,
    timeoutMs: 24 * 3600_000,
    onProgress,
    ...(signal ? { signal } : {}),
  });
};

const watchRun = async (client: WorkflowRunClient, io: CliIo, jobId: string, json: boolean) => {
  const tty = !json && io.stdout.isTTY === true;
  const draw = tty ? liveBlock(io.stdout) : undefined;
  const log = !json && !tty ? plainLog(io) : undefined;
  const startedAt = Date.now();
  let latest: Run | undefined;
  const redraw = () => {
    if (!draw || !latest) return;
    const share = endedShare(latest);
    draw([
      `Run ${latest.jobId}  ${bar(share)} ${String(share).padStart(3)}%  ${latest.status}  ${elapsed(Date.now() - startedAt)}`,
      ...latest.steps.map(stepLine),
    ]);
  };
  // On a terminal the block is redrawn every second (elapsed time) as well as on every change.
  const ticker = draw ? setInterval(redraw, 1000) : undefined;
  ticker?.unref();
  let run: Run;
  try {
    run = await followRun(client, jobId, io.signal, (next) => {
      latest = next;
      redraw();
      log?.(next);
    });
  } finally {
    clearInterval(ticker);
  }
  // The last frame is the final run's (the stream's `done` carries it).
  latest = run;
  redraw();
  log?.(run);
  if (json) printJson(io, run);
  else printRunEnd(io, run);
  if (run.status !== 'completed') throw new RunEndedBadly(`run ${run.jobId} ${run.status}`);
};

/** A run as `watch` ends on it: its status, each output that is no file, and how to download the files. */
const printRunEnd = (io: CliIo, run: Run) => {
  write(io.stdout, `Run ${run.jobId} ${run.status}.`);
  printOutputs(io, run);
};

/** Each output that is no file, and how to download the files. */
const printOutputs = (io: CliIo, run: Run) => {
  const files = outputFiles(run);
  for (const output of run.output)
    if (!outputFiles({ output: [output] }).length)
      write(io.stdout, `  ${output.node_id} (${output.step_type}): ${summariseResult(output.result)}`);
  if (files.length) write(io.stdout, `${files.length} file(s): workflow-run download ${run.jobId}`);
};

/** `runs show <jobId> [--wait N]`: the run now, or once it ends within N seconds. */
const showRun = async (client: WorkflowRunClient, io: CliIo, values: Values, jobId: string, json: boolean) => {
  const run = await client.getRun(jobId, { signal: io.signal, ...waitSeconds(values) });
  if (json) return printJson(io, run);
  printFields(io, { jobId: run.jobId, status: run.status, progress: `${run.progress}%` });
  for (const step of run.steps) write(io.stdout, stepLine(step));
  printOutputs(io, run);
};

/** `runs step <jobId> <nodeId>`: the step, a line per attempt, then its logs. */
const showStep = async (client: WorkflowRunClient, io: CliIo, jobId: string, nodeId: string, json: boolean) => {
  const step = await client.runStep(jobId, nodeId, { signal: io.signal });
  if (json) return printJson(io, step);
  const { attempts, logs, ...fields } = step;
  printFields(io, fields);
  attempts.forEach((a, i) => {
    const where = [a.provider, a.model, a.providerJobId].filter((x) => x !== undefined).join(' ');
    const wait = a.next ? ` next in ${a.next.afterSeconds ?? '?'} s (${a.next.why})` : '';
    const why = a.outcome === 'failed' ? ` ${a.reason ?? ''}/${a.retryClass ?? ''}: ${a.error ?? ''}` : '';
    write(
      io.stdout,
      `attempt ${i + 1}: ${a.outcome}${why} charged ${a.chargedHundredths / 100}${where ? ` on ${where}` : ''}${wait}`,
    );
  });
  for (const [name, log] of Object.entries(logs)) {
    if (!log) continue;
    write(
      io.stdout,
      `--- ${name}${log.truncated ? ` (last ${Buffer.byteLength(log.text)} of ${log.bytes} bytes)` : ''}`,
    );
    write(io.stdout, log.text.replace(/\n$/, ''));
  }
};

// --- download --------------------------------------------------------------------------------

const safeSegment = (segment: string, fallback: string) => {
  const cleaned = segment.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+$/, '_');
  return cleaned === '' ? fallback : cleaned.slice(0, 120);
};

const fileNameOf = (url: string, index: number): string => {
  try {
    const path = new URL(url).pathname;
    // A file link names its file by the stored key in base64url (`/file-links/{object}`): the key's last part is its name.
    const object = /\/file-links\/([A-Za-z0-9_-]+)$/.exec(path)?.[1];
    const last = object
      ? (Buffer.from(object, 'base64url').toString('utf8').split('/').at(-1) ?? '')
      : decodeURIComponent(path.split('/').at(-1) ?? '');
    return safeSegment(last, `file-${index + 1}`);
  } catch {
    return `file-${index + 1}`;
  }
};

const download = async (client: WorkflowRunClient, io: CliIo, values: Values, jobId: string, json: boolean) => {
  const run = await client.getRun(jobId, { signal: io.signal });
  const dir = resolve(values.dir ?? jobId);
  const saved: { node_id: string; path: string; file: string; bytes: number; contentType: string }[] = [];
  const skipped: { node_id: string; path: string; availability: string }[] = [];
  const used = new Set<string>();
  const files = outputFiles(run);
  for (const [index, found] of files.entries()) {
    if (found.file.availability !== 'ready') {
      skipped.push({ node_id: found.node_id, path: found.path, availability: found.file.availability });
      if (!json) write(io.stderr, `skipped ${found.node_id} ${found.path}: ${found.file.availability}`);
      continue;
    }
    const folder = join(dir, safeSegment(found.node_id, 'step'));
    let target = join(folder, fileNameOf(found.file.url, index));
    for (let n = 2; used.has(target); n++) {
      const ext = extname(target);
      target = `${target.slice(0, target.length - ext.length).replace(/-\d+$/, '')}-${n}${ext}`;
    }
    used.add(target);
    // File links carry their own authorisation (and redirect to the file store): no API key goes with them.
    const response = await (io.fetch ?? fetch)(new Request(found.file.url, { signal: io.signal }));
    if (!response.ok || !response.body) throw new Error(`download of ${found.path} failed: HTTP ${response.status}`);
    await mkdir(folder, { recursive: true });
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>), createWriteStream(target));
    saved.push({
      node_id: found.node_id,
      path: found.path,
      file: target,
      bytes: found.file.bytes,
      contentType: found.file.contentType,
    });
    if (!json) write(io.stdout, `saved ${target} (${found.file.contentType}, ${found.file.bytes} bytes)`);
  }
  if (json) return printJson(io, { jobId, status: run.status, dir, files: saved, skipped });
  if (files.length === 0) write(io.stdout, `Run ${jobId} (${run.status}) has no output files.`);
  else if (!isEnded(run)) write(io.stderr, `note: run ${jobId} is still ${run.status}; more files may follow`);
};

// --- deliveries ------------------------------------------------------------------------------

const deliveries = async (client: WorkflowRunClient, io: CliIo, values: Values, jobId: string, json: boolean) => {
  if (!values.redeliver && (values.event || values['node-id']))
    throw new UsageError('--event and --node-id only apply with --redeliver');
  if (values['node-id'] && !values.event?.length) throw new UsageError('--node-id needs the --event of its step');
  if ((values.event?.length ?? 0) > 1) throw new UsageError('--redeliver takes one --event');
  if (values.redeliver) {
    const [event] = values.event ?? [];
    const delivery = event
      ? ({ event, ...(values['node-id'] && { nodeId: values['node-id'] }) } as RedeliverRequest)
      : undefined;
    const queued = await client.redeliverWebhook(jobId, { signal: io.signal, ...(delivery && { delivery }) });
    if (json) return printJson(io, queued);
    return printFields(io, { ...queued, next: `workflow-run deliveries ${jobId}` });
  }
  const log = await client.listDeliveries(jobId, { signal: io.signal });
  if (json) return printJson(io, log);
  const { deliveries: attempts, events, ...summary } = log;
  printFields(io, summary);
  // Each chosen event's delivery, one line each.
  for (const e of events ?? []) {
    write(
      io.stdout,
      `${e.event}${e.nodeId ? ` ${e.nodeId}` : ''}: ${e.state}, ${e.attempts} attempt(s), ${e.webhookId}`,
    );
  }
  if (attempts.length === 0) return write(io.stdout, 'No attempt yet.');
  const rows = attempts.map((a) => [
    String(a.attempt),
    a.at,
    a.statusCode !== undefined ? String(a.statusCode) : (a.error ?? '-'),
    `${a.durationMs}ms`,
    a.nextAttemptAt ?? '-',
    a.url,
  ]);
  const widths = [7, 24, 10, 8, 24];
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i < widths.length ? cell.padEnd(widths[i] ?? 0) : cell))
      .join('  ')
      .trimEnd();
  write(io.stdout, line(['ATTEMPT', 'AT', 'RESULT', 'TOOK', 'NEXT', 'URL']));
  for (const row of rows) write(io.stdout, line(row));
};

// --- hooks (the team's webhook endpoints) --------------------------------------------------------

const hooks = async (
  client: WorkflowRunClient,
  io: CliIo,
  values: Values,
  command: string,
  args: string[],
  json: boolean,
) => {
  const signal = { signal: io.signal };
  const show = (value: object) => (json ? printJson(io, value) : printFields(io, value as Record<string, unknown>));
  switch (command) {
    case 'hooks create': {
      if (!values.url) throw new UsageError('hooks create needs --url');
      if (!values.event?.length) throw new UsageError('hooks create needs at least one --event');
      noArgs(command, args);
      const created = await client.createWebhookEndpoint(
        {
          url: values.url,
          events: values.event as CreateWebhookEndpointRequest['events'],
          ...(values['workflow-id'] && { workflowIds: [values['workflow-id']] }),
          ...(values.tag?.length && { tags: values.tag }),
          ...(values.description && { description: values.description }),
        },
        signal,
      );
      show(created);
      if (!json) write(io.stderr, 'note: the secret is shown this once; keep it where your receiver reads it');
      return;
    }
    case 'hooks list': {
      noArgs(command, args);
      const endpoints = await client.listWebhookEndpoints(signal);
      if (json) return printJson(io, endpoints);
      if (endpoints.length === 0) return write(io.stdout, 'No webhook endpoint.');
      for (const e of endpoints)
        write(
          io.stdout,
          `${e.endpointId}  ${e.disabled ? `disabled (${e.disabledReason})` : 'enabled'}  ${e.events.join(',')}  ${e.url}`,
        );
      return;
    }
    case 'hooks show':
      return show(await client.getWebhookEndpoint(oneArg(command, args, 'endpoint id'), signal));
    case 'hooks disable':
    case 'hooks enable': {
      const disabled = command === 'hooks disable';
      return show(await client.updateWebhookEndpoint(oneArg(command, args, 'endpoint id'), { disabled }, signal));
    }
    case 'hooks delete':
      return show(await client.deleteWebhookEndpoint(oneArg(command, args, 'endpoint id'), signal));
    case 'hooks rotate':
      return show(await client.rotateWebhookEndpointSecret(oneArg(command, args, 'endpoint id'), signal));
    case 'hooks test':
      return show(await client.testWebhookEndpoint(oneArg(command, args, 'endpoint id'), signal));
    case 'hooks redeliver': {
      const [endpointId, deliveryId] = args;
      if (args.length !== 2 || !endpointId || !deliveryId)
        throw new UsageError('hooks redeliver needs an endpoint id and a delivery id');
      return show(await client.redeliverWebhookEndpointDelivery(endpointId, deliveryId, signal));
    }
    case 'hooks deliveries': {
      const endpointId = oneArg(command, args, 'endpoint id');
      const all: EndpointDelivery[] = [];
      if (values.all) for await (const d of client.webhookEndpointDeliveries(endpointId, signal)) all.push(d);
      const page = values.all
        ? { deliveries: all, nextCursor: null }
        : await client.listWebhookEndpointDeliveries(
            endpointId,
            values.cursor ? { cursor: values.cursor } : {},
            signal,
          );
      if (json) return printJson(io, page);
      if (page.deliveries.length === 0) return write(io.stdout, 'No delivery yet.');
      for (const d of page.deliveries)
        write(io.stdout, `${d.deliveryId}  ${d.event}  ${d.jobId ?? '-'}  ${d.state}, ${d.attempts} attempt(s)`);
      if (page.nextCursor) write(io.stdout, `next page: --cursor ${page.nextCursor}`);
      return;
    }
  }
};

// --- usage ------------------------------------------------------------------------------------

const usageGroupings = ['day', 'workflow', 'key', 'tag', 'model', 'project'] as const;

/** The period and grouping: this UTC month to today unless given. */
const usageParams = (values: Values): UsageParams => {
  const today = new Date().toISOString().slice(0, 10);
  const groupBy = values['group-by'] ?? 'day';
  if (!(usageGroupings as readonly string[]).includes(groupBy))
    throw new UsageError(`--group-by takes ${usageGroupings.join(', ')}`);
  return {
    from: values.from ?? `${today.slice(0, 7)}-01`,
    to: values.to ?? today,
    groupBy: groupBy as UsageParams['groupBy'],
  };
};

const showUsage = async (client: WorkflowRunClient, io: CliIo, values: Values, json: boolean) => {
  const params = usageParams(values);
  if (values.csv !== undefined) {
    const csv = await client.getUsageCsv(params, { signal: io.signal });
    if (values.csv === '-') return void io.stdout.write(csv);
    await writeFile(values.csv, csv);
    if (!json) write(io.stderr, `wrote ${values.csv}`);
    return;
  }
  const answer = await client.getUsage(params, { signal: io.signal });
  if (json) return printJson(io, answer);
  write(io.stdout, `${answer.from} to ${answer.to} by ${answer.groupBy}`);
  if (answer.rows.length === 0) return write(io.stdout, 'No run settled in the period.');
  const width = Math.max(5, ...answer.rows.map((row) => (row.group ?? '-').length));
  const line = (cells: string[]) =>
    `${(cells[0] ?? '').padEnd(width)}  ${cells
      .slice(1)
      .map((c) => c.padStart(10))
      .join('  ')}`;
  const credits = (n: number) => n.toFixed(2);
  write(io.stdout, line(['group', 'runs', 'steps', 'charged', 'refunded']));
  for (const row of answer.rows)
    write(
      io.stdout,
      line([
        row.group ?? '-',
        String(row.runs),
        String(row.steps),
        credits(row.chargedCredits),
        credits(row.refundedCredits),
      ]),
    );
  write(io.stdout, line(['total', '', '', credits(answer.chargedCredits), credits(answer.refundedCredits)]));
};

// --- runs list, deferred list ------------------------------------------------------------------

/**
 * The list options as the API's query: the filters and the page size. A status is passed as given:
 * the API answers an unknown one with the statuses it takes.
 */
const listQuery = (
  values: Values,
): { workflowId?: string; status?: string; tag?: string; batchId?: string; limit?: number } => {
  if (values.all && values.cursor) throw new UsageError('--cursor reads one page; --all reads them all: not both');
  if ((values.tag?.length ?? 0) > 1) throw new UsageError('--tag filters by one tag');
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100)) {
    throw new UsageError('--limit must be a whole number from 1 to 100');
  }
  return {
    ...(values['workflow-id'] ? { workflowId: values['workflow-id'] } : {}),
    ...(values.status ? { status: values.status } : {}),
    ...(values.tag?.[0] ? { tag: values.tag[0] } : {}),
    ...(values['batch-id'] ? { batchId: values['batch-id'] } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
};

/** Aligned columns, the last one left unpadded. */
const printTable = (io: CliIo, header: string[], rows: string[][]) => {
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((row) => (row[i] ?? '').length)));
  for (const row of [header, ...rows]) {
    write(
      io.stdout,
      row
        .map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell))
        .join('  ')
        .trimEnd(),
    );
  }
};

/** After one page: how to read the next, when there is one. */
const printNext = (io: CliIo, command: string, values: Values, nextCursor: string | null) => {
  if (nextCursor === null) return;
  const filters = [
    values['workflow-id'] ? `--workflow-id ${values['workflow-id']}` : '',
    values.status ? `--status ${values.status}` : '',
    values.tag?.[0] ? `--tag ${values.tag[0]}` : '',
    values['batch-id'] ? `--batch-id ${values['batch-id']}` : '',
    values.limit ? `--limit ${values.limit}` : '',
  ].filter(Boolean);
  write(io.stdout, `More: workflow-run ${command} ${[...filters, `--cursor ${nextCursor}`].join(' ')}`);
};

/** `runs cancel`: the ids given, or the filters; then, unless --no-wait, the action until done. */
const cancelRuns = async (client: WorkflowRunClient, io: CliIo, values: Values, args: string[], json: boolean) => {
  if ((values.tag?.length ?? 0) > 1) throw new UsageError('--tag filters by one tag');
  const statuses = values.status?.split(',').map((status) => status.trim());
  const filter = {
    ...(values['workflow-id'] !== undefined && { workflowId: values['workflow-id'] }),
    ...(values.tag?.[0] !== undefined && { tag: values.tag[0] }),
    ...(statuses !== undefined && { status: statuses as ('queued' | 'processing')[] }),
    ...(values['batch-id'] !== undefined && { batchId: values['batch-id'] }),
  };
  const byFilter = Object.keys(filter).length > 0;
  if (args.length > 0 && byFilter) throw new UsageError('runs cancel takes job ids or filters, not both');
  if (args.length === 0 && !byFilter) throw new UsageError('runs cancel needs job ids or a filter');
  const body = args.length > 0 ? { jobIds: args } : { filter };
  const { bulkActionId } = await client.cancelRuns(body, { signal: io.signal });
  if (values['no-wait']) {
    if (json) printJson(io, { bulkActionId });
    else printFields(io, { bulkActionId });
    return;
  }
  const done = await client.waitForBulkAction(bulkActionId, { signal: io.signal });
  if (json) printJson(io, done);
  else printFields(io, done);
};

const listRuns = async (client: WorkflowRunClient, io: CliIo, values: Values, json: boolean) => {
  const query = listQuery(values) as ListRunsParams;
  const signal = { signal: io.signal };
  let runs: RunSummary[];
  let nextCursor: string | null = null;
  if (values.all) {
    runs = [];
    for await (const run of client.runs(query, signal)) runs.push(run);
    if (json) return printJson(io, runs);
  } else {
    const page = await client.listRuns({ ...query, ...(values.cursor ? { cursor: values.cursor } : {}) }, signal);
    if (json) return printJson(io, page);
    ({ runs, nextCursor } = page);
  }
  if (runs.length === 0) write(io.stdout, 'No runs on this page.');
  else
    printTable(
      io,
      ['JOB ID', 'STATUS', 'WORKFLOW ID', 'CREATED', 'CREDITS', 'TAGS'],
      runs.map((r) => [
        r.jobId,
        r.status,
        r.workflowId,
        r.createdAt,
        r.chargedCredits === null ? `${r.estimatedCredits} held` : `${r.chargedCredits}`,
        r.tags?.join(',') ?? '',
      ]),
    );
  printNext(io, 'runs list', values, nextCursor);
};

const listDeferred = async (client: WorkflowRunClient, io: CliIo, values: Values, json: boolean) => {
  const query = listQuery(values) as ListDeferredRunsParams;
  const signal = { signal: io.signal };
  let deferred: DeferredRun[];
  let nextCursor: string | null = null;
  if (values.all) {
    deferred = [];
    for await (const entry of client.deferredRuns(query, signal)) deferred.push(entry);
    if (json) return printJson(io, deferred);
  } else {
    const page = await client.listDeferredRuns(
      { ...query, ...(values.cursor ? { cursor: values.cursor } : {}) },
      signal,
    );
    if (json) return printJson(io, page);
    ({ deferredRuns: deferred, nextCursor } = page);
  }
  if (deferred.length === 0) write(io.stdout, 'No deferred runs on this page.');
  else
    printTable(
      io,
      ['DEFERRED ID', 'STATUS', 'WORKFLOW ID', 'CREATED', 'MAX', 'JOB ID'],
      deferred.map((d) => [
        d.deferredJobId,
        d.status,
        d.workflowId,
        d.createdAt,
        String(d.maxMultiplier),
        d.jobId ?? '-',
      ]),
    );
  printNext(io, 'deferred list', values, nextCursor);
};

const smoke = async (io: CliIo, values: Values, api: { baseUrl: string; apiKey: string }, json: boolean) => {
  if (Boolean(values.agent) === Boolean(values.project))
    throw new UsageError('smoke needs one of --agent and --project');
  if (Boolean(values['webhook-url']) !== Boolean(values['webhook-secret']))
    throw new UsageError('--webhook-url and --webhook-secret go together');
  const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0))
    throw new UsageError(`--timeout must be a whole number of seconds (got "${values.timeout}")`);
  if (values['bedrock-model']?.length && !values['aws-region'])
    throw new UsageError('--bedrock-model needs --aws-region');
  const report = await runSmoke({
    ...api,
    home: values.agent ? { agentId: values.agent } : { projectId: values.project as string },
    ...(values['webhook-url'] && {
      webhook: { url: values['webhook-url'], secret: values['webhook-secret'] as string },
    }),
    ...(values['aws-region'] && { awsRegion: values['aws-region'] }),
    ...(values['bedrock-model'] && { bedrockModels: values['bedrock-model'] }),
    ...(values.check && { only: values.check }),
    ...(timeout !== undefined && { timeoutSeconds: timeout }),
    ...(io.fetch && { fetch: io.fetch }),
    ...(io.signal && { signal: io.signal }),
    onResult: (result) => {
      if (!json) write(io.stdout, formatResult(result));
    },
  });
  if (json) printJson(io, report);
  else write(io.stdout, formatSummary(report));
  return report.ok ? 0 : 1;
};

// --- main ------------------------------------------------------------------------------------

const describeError = (error: unknown): string => {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const detail = cause?.code ?? cause?.message;
  return `${(error as Error).message ?? String(error)}${detail ? ` (${detail})` : ''}`;
};

/** `run token <jobId>`: a run token for a browser, and the two links it opens. */
const runToken = async (client: WorkflowRunClient, io: CliIo, values: Values, jobId: string, json: boolean) => {
  const given = values['expires-in'];
  const expiresInSeconds = given === undefined ? undefined : Number(given);
  if (
    expiresInSeconds !== undefined &&
    (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 60 || expiresInSeconds > 86_400)
  )
    throw new UsageError(`--expires-in must be a whole number of seconds from 60 to 86400 (got ${given})`);
  const made = await client.runToken(jobId, {
    signal: io.signal,
    ...(expiresInSeconds !== undefined && { expiresInSeconds }),
  });
  if (json) printJson(io, made);
  else
    printFields(io, { token: made.token, expiresAt: made.expiresAt, run: made.links.run, events: made.links.events });
};

/**
 * `batch start --file F.json`: the file's items started in one request; one line per item (its
 * status and run, or its error). Exit 1 when any item was refused: the others still started.
 */
const startBatch = async (client: WorkflowRunClient, io: CliIo, values: Values, json: boolean): Promise<number> => {
  if (!values.file) throw new UsageError('batch start needs --file');
  const fromFile = await readWorkflowFile(values.file);
  const runs = fromFile.steps ?? fromFile.runs;
  if (!Array.isArray(runs)) throw new UsageError(`${values.file} must hold { runs: [...] } or a list of run starts`);
  const answer = await client.startRunBatch(runs as BatchRunItem[], {
    signal: io.signal,
    ...(values['idempotency-key'] && { idempotencyKey: values['idempotency-key'] }),
  });
  const refused = answer.results.filter((result) => result.status >= 400);
  if (json) printJson(io, answer);
  else {
    write(io.stdout, `batchId: ${answer.batchId}`);
    printTable(
      io,
      ['#', 'STATUS', 'ANSWER'],
      answer.results.map((result) => {
        const body = result.body as Record<string, unknown>;
        const answered = body.jobId ?? body.deferredJobId ?? body.error;
        return [String(result.index), String(result.status), String(answered ?? JSON.stringify(body))];
      }),
    );
    write(io.stdout, `Next: workflow-run batch show ${answer.batchId}`);
  }
  return refused.length > 0 ? 1 : 0;
};

/** Runs the CLI with `argv` (without `node` and the script) and returns the exit code. */
export const main = async (
  argv: string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr, env: process.env },
): Promise<number> => {
  let json = argv.includes('--json');
  try {
    let parsed: { values: Values; positionals: string[] };
    try {
      parsed = parseArgs({ args: argv, options: optionSpec, allowPositionals: true, strict: true });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const { values, positionals } = parsed;
    json = values.json === true;
    if (values.help || positionals[0] === 'help') {
      io.stdout.write(usage);
      return 0;
    }
    const { command, args } = positionalCommand(positionals);
    const allowed = new Set<string>([...globalOptions, ...(commandOptions[command] ?? [])]);
    for (const name of Object.keys(values))
      if (!allowed.has(name)) throw new UsageError(`${command} does not take --${name}`);

    const baseUrl = values['base-url'] ?? io.env.WORKFLOW_RUN_API_URL ?? defaultBaseUrl;
    const apiKey = values.key ?? io.env.WORKFLOW_RUN_API_KEY;
    if (!apiKey) throw new UsageError('no API key: pass --key or set WORKFLOW_RUN_API_KEY');
    try {
      new URL(baseUrl);
    } catch {
      throw new UsageError(`--base-url is not a URL: ${baseUrl}`);
    }
    const client = createClient({
      baseUrl,
      apiKey,
      headers: { 'user-agent': 'workflow-run-cli/1.0' },
      ...(io.fetch ? { fetch: io.fetch } : {}),
    });

    switch (command) {
      case 'workflows list':
        noArgs(command, args);
        await listWorkflows(client, io, json);
        break;
      case 'workflows show':
        await showWorkflow(client, io, oneArg(command, args, 'workflow id'), json);
        break;
      case 'workflows create':
        noArgs(command, args);
        await createWorkflow(client, io, values, json);
        break;
      case 'workflows update':
        await updateWorkflow(client, io, values, args, json);
        break;
      case 'workflows versions':
        await listWorkflowVersions(client, io, values, args, json);
        break;
      case 'workflows status':
        await setWorkflowStatus(client, io, values, args, json);
        break;
      case 'run':
        await startRun(client, io, values, args, json);
        break;
      case 'estimate':
        await estimateRun(client, io, values, args, json);
        break;
      case 'watch':
        await watchRun(client, io, oneArg(command, args, 'job id'), json);
        break;
      case 'download':
        await download(client, io, values, oneArg(command, args, 'job id'), json);
        break;
      case 'resume':
        await resumeRun(client, io, values, args, json);
        break;
      case 'cancel': {
        const run = await client.cancelRun(oneArg(command, args, 'job id'), { signal: io.signal });
        if (json) printJson(io, run);
        else printFields(io, { jobId: run.jobId, status: run.status, progress: `${run.progress}%` });
        break;
      }
      case 'deliveries':
        await deliveries(client, io, values, oneArg(command, args, 'job id'), json);
        break;
      case 'run token':
        await runToken(client, io, values, oneArg(command, args, 'job id'), json);
        break;
      case 'runs list':
        noArgs(command, args);
        await listRuns(client, io, values, json);
        break;
      case 'runs show':
        await showRun(client, io, values, oneArg(command, args, 'job id'), json);
        break;
      case 'runs step': {
        if (args.length !== 2 || !args[0] || !args[1]) throw new UsageError('runs step needs a job id and a node id');
        await showStep(client, io, args[0], args[1], json);
        break;
      }
      case 'runs cancel':
        await cancelRuns(client, io, values, args, json);
        break;
      case 'bulk show': {
        const action = await client.getBulkAction(oneArg(command, args, 'bulk action id'), { signal: io.signal });
        if (json) printJson(io, action);
        else printFields(io, action);
        break;
      }
      case 'deferred list':
        noArgs(command, args);
        await listDeferred(client, io, values, json);
        break;
      case 'files upload':
        await uploadFile(client, io, values, oneArg(command, args, 'path'), json);
        break;
      case 'files get': {
        const file = await client.getFile(oneArg(command, args, 'file id'), { signal: io.signal });
        if (json) printJson(io, file);
        else printFields(io, file);
        break;
      }
      case 'hooks create':
      case 'hooks list':
      case 'hooks show':
      case 'hooks disable':
      case 'hooks enable':
      case 'hooks delete':
      case 'hooks rotate':
      case 'hooks test':
      case 'hooks deliveries':
      case 'hooks redeliver':
        await hooks(client, io, values, command, args, json);
        break;
      case 'usage':
        noArgs(command, args);
        await showUsage(client, io, values, json);
        break;
      case 'smoke':
        noArgs(command, args);
        return await smoke(io, values, { baseUrl, apiKey }, json);
      case 'batch start':
        noArgs(command, args);
        return await startBatch(client, io, values, json);
      case 'batch show': {
        const batch = await client.getBatch(oneArg(command, args, 'batch id'), { signal: io.signal });
        if (json) printJson(io, batch);
        else printFields(io, { batchId: batch.batchId, runs: batch.jobIds.length, ...batch.counts });
        break;
      }
      case 'deferred show':
      case 'deferred cancel': {
        const id = oneArg(command, args, 'deferred run id');
        const deferred =
          command === 'deferred show'
            ? await client.getDeferredRun(id, { signal: io.signal })
            : await client.cancelDeferredRun(id, { signal: io.signal });
        if (json) printJson(io, deferred);
        else printFields(io, deferred);
        break;
      }
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      write(io.stderr, `workflow-run: ${error.message}\n\n${usage}`);
      return 2;
    }
    if (error instanceof RunEndedBadly) return 3;
    if (error instanceof ApiError) {
      if (json) write(io.stderr, JSON.stringify({ status: error.status, body: error.body }));
      else write(io.stderr, `workflow-run: ${error.message}\n${JSON.stringify(error.body, null, 2)}`);
      return 1;
    }
    if (io.signal?.aborted) return 130;
    if (error instanceof UploadError) {
      // What the upload's refusal said, by name: the check's reason, or storage's code.
      const details = {
        error: error.message,
        ...(error.fileId ? { fileId: error.fileId } : {}),
        ...(error instanceof FileRejectedError ? { reason: error.reason } : {}),
        ...(error instanceof StorageRefusedError ? { status: error.status, code: error.code } : {}),
      };
      write(io.stderr, json ? JSON.stringify(details) : `workflow-run: ${error.message}`);
      return 1;
    }
    const message = describeError(error);
    if (json) write(io.stderr, JSON.stringify({ error: message }));
    else write(io.stderr, `workflow-run: ${message}`);
    return 1;
  }
};

/** `main` over the process's streams and environment; Ctrl-C stops a watch or a download (exit 130). */
export const runCli = (argv: string[]): Promise<number> => {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  // A reader that stopped reading (`| head`) is no error: stop quietly, as other command-line tools do.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      controller.abort();
      process.exit(0);
    });
  return main(argv, {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    signal: controller.signal,
  });
};

if (import.meta.main) process.exitCode = await runCli(process.argv.slice(2));

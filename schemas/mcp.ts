/**
 * POST /mcp (our design): the MCP server, one JSON-RPC 2.0 message a request on the Streamable HTTP
 * transport (stateless, answered as JSON). The message and answer as the document shows them (the
 * MCP SDK checks each method's own params), and the operation.
 */
import * as v from 'valibot';
import { notArray } from './common.ts';
import { jsonResponse, type OperationSpec } from './openapi-parts.ts';

const JsonRpcIdSchema = v.union([v.pipe(v.string(), v.minLength(1)), v.number()]);

/** A JSON-RPC 2.0 request (`id`) or notification (no `id`) of MCP: `initialize`, `tools/list`, `tools/call`, ... */
export const McpMessageSchema = notArray(
  v.looseObject({
    jsonrpc: v.literal('2.0'),
    id: v.optional(JsonRpcIdSchema),
    method: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('`initialize`, `notifications/initialized`, `tools/list`, `tools/call`, `ping`.'),
    ),
    params: v.optional(notArray(v.record(v.string(), v.unknown()))),
  }),
);

/** The answer to a request: its `result`, or a JSON-RPC `error` (a tool's refusal is a result with `isError`). */
export const McpAnswerSchema = v.looseObject({
  jsonrpc: v.literal('2.0'),
  id: v.nullable(JsonRpcIdSchema),
  result: v.optional(v.record(v.string(), v.unknown())),
  error: v.optional(v.looseObject({ code: v.number(), message: v.string(), data: v.optional(v.unknown()) })),
});

/** The named schemas of the document this module holds. */
export const mcpComponents = { McpMessage: McpMessageSchema, McpAnswer: McpAnswerSchema };

/** The operation of POST /mcp, for the document (schemas/openapi.ts). */
export const mcpOperations: OperationSpec[] = [
  {
    operationId: 'Mcp',
    tag: 'MCP',
    summary: 'The MCP server: your workflows as tools for an AI agent',
    description: [
      'The Model Context Protocol (revision 2025-11-25) on its Streamable HTTP transport, stateless: every message ' +
        'is its own POST with the key as bearer token, answered as one JSON object whatever its `Accept` (no ' +
        'session id, no event stream; a GET is not served). An MCP client ' +
        '(the official SDKs, agent hosts) speaks it as it is: point it at this address with the key.',
      '`tools/list` lists each workflow the key may run (its workflow limits) as a tool named `run_<workflow id>`, ' +
        'titled with its name, its `inputSchema` the run inputs GET /workflows/{id} describes, its description ' +
        'stating the price range and the licence of its outputs; and `get_run`, which reads a run.',
      '`tools/call` of a workflow starts a run as POST /workflows/{id}/runs does, with `onConflict: "queue"` (the ' +
        "key's scope `runs:create`, its limits, the 402 family, the workflow's lock), and waits for it up to 25 s. " +
        'An ended run answers its outputs: text as text, each file as a `resource_link` to its file link (no key ' +
        'needed, two hours), with its licence; a run still going answers its `jobId`, status and progress. The Run ' +
        'itself is the `structuredContent`. A refusal is a tool error (`isError: true`) whose content is the ' +
        "API's status and body for it.",
      'Connecting needs the scope `workflows:read`; starting needs `runs:create`, reading a run `runs:read`.',
    ].join('\n\n'),
    requestBody: {
      required: true,
      description: 'One JSON-RPC 2.0 message of MCP.',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/McpMessage' } } },
    },
    responses: {
      200: jsonResponse('The JSON-RPC answer to a request: its `result`, or an `error`.', 'McpAnswer'),
      202: { description: 'A notification (a message without `id`) was received; no body.' },
    },
    errorWords: {
      400: 'The body is not JSON, or not one JSON-RPC 2.0 message; or its `MCP-Protocol-Version` is one the server does not speak.',
      413: 'The body is over 128 KB.',
      403: 'The key lacks `workflows:read` (each tool checks its own scope and answers a tool error).',
    },
  },
];

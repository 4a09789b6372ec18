import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import * as v from 'valibot';
import { maxWaitSeconds } from '../../platform/run-wait.ts';
import { UuidSchema } from '../../schemas/common.ts';
import { McpMessageSchema } from '../../schemas/mcp.ts';
import { callWorkflowTool, listWorkflowTools, readRunTool } from '../app/mcp-tools.ts';
import type { Deps } from '../deps.ts';
import {
  getRunInputSchema,
  getRunToolName,
  refusalToolResult,
  runToolResult,
  startedToolResult,
  workflowOfToolName,
  workflowToolAnnotations,
  workflowToolDescription,
} from '../domain/mcp-tools.ts';
import { InvalidBodyError } from '../errors/table.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { parseWith, readJsonBody } from './body.ts';
import { answerOfError } from './error-map.ts';
import { waitOf } from './prefer-wait.ts';
import type { HttpResult } from './response.ts';
import { parseRunBody } from './run-body.ts';

/** The largest JSON-RPC message read: a tool call's arguments are a run start's inputs (64 KiB), with room for the envelope. */
export const maxMcpBodyBytes = 128 * 1024;

const serverInfo = { name: 'workflow-run-api', version: '1.0.0' };

const instructions =
  'Each tool named run_<workflow id> starts a paid run of one workflow with the inputs given and waits for it ' +
  `up to ${maxWaitSeconds} s; its description says the price range and the licence of its outputs. A run still ` +
  `going answers its jobId: read it with ${getRunToolName}. A refusal is a tool error carrying the API's status and body.`;

const nilUuid = '00000000-0000-0000-0000-000000000000';

/**
 * One request's MCP server over the key (stateless: a new server per request, no session): its
 * tools are the key's workflows and `get_run`. A refusal the error table knows becomes a tool error
 * carrying its status and body; anything else is kept in `failure` and thrown after the answer, so
 * it is the 500 any route answers (logged, counted), never a JSON-RPC error with a raw message.
 */
const mcpServer = (deps: Deps, key: ApiKeyItem, context: Pick<Context, 'getRemainingTimeInMillis'>) => {
  const failure: { error?: unknown } = {};
  const server = new Server(serverInfo, { capabilities: { tools: {} }, instructions });
  const refusing = async (call: () => Promise<object>) => {
    try {
      return await call();
    } catch (error) {
      const refusal = answerOfError(error);
      if (!refusal) {
        failure.error = error;
        throw new Error('server error');
      }
      return refusalToolResult(refusal.status, refusal.body);
    }
  };
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await listWorkflowTools(deps, key);
    return {
      tools: [
        ...tools.map((tool) => ({
          name: tool.name,
          title: tool.facts.name,
          description: workflowToolDescription(tool.facts),
          inputSchema: tool.inputSchema as { type: 'object' },
          annotations: workflowToolAnnotations(tool.facts),
        })),
        {
          name: getRunToolName,
          title: 'Read a run',
          description: 'Reads a run started by a tool call: its status, progress and, once it ends, its outputs.',
          inputSchema: getRunInputSchema as unknown as { type: 'object' },
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
      ],
    };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args = {} } = request.params;
    if (name === getRunToolName) {
      return refusing(async () => {
        const jobId = typeof args.jobId === 'string' && v.is(UuidSchema, args.jobId) ? args.jobId : nilUuid;
        return runToolResult(await readRunTool(deps, key, jobId));
      });
    }
    const workflowId = workflowOfToolName(name);
    // A name no tool has is the protocol's error, not a tool's (MCP tools: "Unknown tools").
    if (!workflowId) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    return refusing(async () => {
      const start = parseRunBody({ inputs: args, onConflict: 'queue' });
      const answer = await callWorkflowTool(deps, key, workflowId, start, waitOf(deps, context, maxWaitSeconds));
      return answer.kind === 'run' ? runToolResult(answer.run) : startedToolResult(answer.started);
    });
  });
  return { server, failure };
};

/**
 * The Web `Request` the SDK's transport reads, made from the API Gateway event, its body already
 * read as every route reads one. It is told the request accepts JSON and the event stream and sends
 * JSON: the answer is JSON whatever the client accepts, and the body was JSON, whatever its headers
 * said (so the transport's own 406 and 415, whose bodies are no error of this API, never happen).
 */
const webRequest = (event: APIGatewayProxyEventV2): Request => {
  const headers = new Headers(
    Object.entries(event.headers).flatMap(([name, value]) => (value === undefined ? [] : [[name, value]])),
  );
  headers.set('accept', 'application/json, text/event-stream');
  headers.set('content-type', 'application/json');
  return new Request(`https://${event.requestContext.domainName || 'localhost'}${event.rawPath}`, {
    method: event.requestContext.http.method,
    headers,
  });
};

/** What the transport refused (a message or a header it does not take), as this API's 400. */
const transportRefusal = async (response: Response) => {
  const answer = (await response.json().catch(() => ({}))) as { error?: { message?: unknown } };
  const message = typeof answer.error?.message === 'string' ? answer.error.message : 'not a message MCP takes';
  return new InvalidBodyError(message);
};

/**
 * POST /mcp: one JSON-RPC message (or batch) through the SDK's Streamable HTTP transport, stateless
 * and answered as JSON (no SSE: the HTTP API buffers an answer whole). The body is read as every
 * route reads one (its 400 and 413); what the transport answers (a JSON-RPC result or error, 202 for
 * a notification) is passed on as it is, and what it refuses (an unsupported `MCP-Protocol-Version`)
 * is this API's 400.
 */
export const answerMcp = async (
  deps: Deps,
  key: ApiKeyItem,
  event: APIGatewayProxyEventV2,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<HttpResult> => {
  const body = readJsonBody(event, { maxBytes: maxMcpBodyBytes });
  if (body === undefined) throw new InvalidBodyError('a JSON-RPC 2.0 message is required');
  // One message, as the document says: refused here with the API's own 400, as any body is.
  const parsedBody = parseWith(McpMessageSchema, body, {});
  const { server, failure } = mcpServer(deps, key, context);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(webRequest(event), { parsedBody });
    if (failure.error) throw failure.error;
    if (!response.ok) throw await transportRefusal(response);
    return { statusCode: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
  } finally {
    await server.close();
  }
};

/**
 * The OpenAPI 3.1.0 document served at GET /openapi.json: the contract's words and schemas
 * (schemas/openapi.ts) with each operation's error responses taken from the error table's rows
 * (functions/errors/table.ts: each row's status) and their entries (functions/docs/error-docs.ts:
 * each one's body schemas and routes), and each node type's step
 * from the catalogue's settings of that type. Built here because it needs both, and schemas/ knows
 * nothing of functions/.
 */
import type { OpenAPIObject, SchemaObject } from 'openapi3-ts/oas31';
import { describeApi, type NodeConfigSchemas, stepComponentName } from '../../schemas/openapi.ts';
import { nodeTypes } from '../../schemas/workflow-words.ts';
import { catalogue } from '../nodes/catalogue/index.ts';
import { documentedErrors } from './error-docs.ts';
import { describeSteps } from './node-types.ts';

/** Each node type's settings, as the catalogue validates them. */
export const nodeConfigSchemas: NodeConfigSchemas = Object.fromEntries(
  nodeTypes.map((type) => [type, catalogue[type].configSchema]),
) as NodeConfigSchemas;

let document: OpenAPIObject | undefined;

/** The API description, built once per process. Treat it as read-only. */
export function buildOpenApiDocument(): OpenAPIObject {
  if (!document) {
    document = describeApi(documentedErrors, nodeConfigSchemas);
    // Each step's words, price and default model, and its settings' words and defaults: the node-type reference's.
    describeSteps((document.components?.schemas ?? {}) as Record<string, SchemaObject>, stepComponentName);
  }
  return document;
}

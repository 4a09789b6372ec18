import { App, CrossStackReferences, ReferenceStrength, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ApiStack } from './api-stack.ts';
import { StatefulStack } from './stateful-stack.ts';

/** Context key for the stack-name prefix (`cdk deploy -c stackPrefix=...`). */
export const stackPrefixContextKey = 'stackPrefix';
export const defaultStackPrefix = 'WorkflowRunApi';

/**
 * Builds the whole app: the stateful stack, the API stack that uses it, and the cdk-nag AWS
 * Solutions checks, which fail synthesis on any finding not acknowledged with a reason.
 * Stacks are environment-agnostic, so synthesis needs no credentials. Tests pass
 * `{ 'aws:cdk:bundling-stacks': [] }` to skip bundling.
 */
export function buildApp(context: Record<string, unknown> = {}) {
  const app = new App({ context });
  // Exports/imports: CloudFormation refuses to delete or replace the table or bucket while the API
  // stack still uses them, which is what a data stack wants.
  CrossStackReferences.of(app).consume(ReferenceStrength.STRONG);
  const prefix = String(app.node.tryGetContext(stackPrefixContextKey) ?? defaultStackPrefix);

  const stateful = new StatefulStack(app, `${prefix}Stateful`, {
    description: 'Workflow Run API: table and library bucket (retained on delete)',
  });
  const api = new ApiStack(app, `${prefix}Api`, {
    description: 'Workflow Run API: HTTP API, functions, queues and schedule',
    table: stateful.table,
    bucket: stateful.bucket,
  });

  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stateful, api };
}

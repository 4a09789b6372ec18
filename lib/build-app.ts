import { Annotations, App, CrossStackReferences, ReferenceStrength, Tags, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ApiStack } from './api-stack.ts';
import { StageBudget } from './budget.ts';
import { EdgeStack, edgeRegion } from './edge-stack.ts';
import { originSecretName } from './origin-secret.ts';
import { serviceName, stackNames, stageConfig } from './stages.ts';
import { StatefulStack } from './stateful-stack.ts';

/**
 * Builds one stage of the app (`-c stage=dev|prod`, see `lib/stages.ts`): the stateful stack, the
 * API stack that uses it, the service and stage tags on every resource, and the cdk-nag AWS
 * Solutions checks, which fail synthesis on any finding not acknowledged with a reason. A stage's
 * account and region are pinned in cdk.json (required on prod, lib/stage-pins.ts); a stage that pins
 * neither is environment-agnostic offline. Synthesis needs no credentials either way. Tests pass
 * `{ 'aws:cdk:bundling-stacks': [] }` to skip bundling, and `environment` as the CLI's would be.
 */
export function buildApp(context: Record<string, unknown> = {}, environment: NodeJS.ProcessEnv = process.env) {
  const app = new App({ context });
  const config = stageConfig((key) => app.node.tryGetContext(key), environment);
  // Exports/imports: CloudFormation refuses to delete or replace the table or bucket while the API
  // stack still uses them, which is what a data stack wants.
  CrossStackReferences.of(app).consume(ReferenceStrength.STRONG);
  const names = stackNames(config);
  const env = config.env.account || config.env.region ? config.env : undefined;

  const stateful = new StatefulStack(app, names.stateful, {
    description: `Workflow Run API (${config.stage}): table and library bucket`,
    env,
    terminationProtection: config.protectData,
    config,
  });
  const api = new ApiStack(app, names.api, {
    description: `Workflow Run API (${config.stage}): HTTP API, functions, queues, schedule and alarms`,
    env,
    terminationProtection: config.protectData,
    config,
    table: stateful.table,
    bucket: stateful.bucket,
  });

  // CloudFront and its web ACL in us-east-1, in front of the API's custom domain (lib/edge-stack.ts).
  const { edge } = config;
  const edgeStack =
    edge.cloudFront && edge.domain
      ? new EdgeStack(app, names.edge, {
          description: `Workflow Run API (${config.stage}): CloudFront, AWS WAF and ${edge.domain.name}`,
          env: { account: config.env.account, region: edgeRegion },
          terminationProtection: config.protectData,
          edge: { ...edge, domain: edge.domain },
          originSecretName: originSecretName(names.api),
        })
      : undefined;
  // Its origin, the API's custom domain, must exist first.
  edgeStack?.addStackDependency(api);
  for (const warning of edge.warnings) Annotations.of(api).addWarning(warning);
  // A default model near its end of life, Legacy, or without recorded facts (lib/stages.ts).
  for (const warning of config.modelWarnings) Annotations.of(api).addWarning(warning);

  // The stage's monthly budget and its alerts (lib/budget.ts).
  new StageBudget(api, 'Budget', { config });

  // Cost allocation and ownership: every taggable resource of both stacks, and the stacks.
  Tags.of(app).add('service', serviceName);
  Tags.of(app).add('stage', config.stage);

  // prod cannot get here without providers: it must pin them (lib/stage-pins.ts).
  if (config.providers.length === 0 && config.bedrockModels.length === 0 && !config.sandboxProviders) {
    Annotations.of(api).addWarning(
      `Stage ${config.stage} has no provider (-c providers=…) and is not a sandbox stage: runs with model steps will be refused.`,
    );
  }

  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, config, stateful, api, edge: edgeStack };
}

import { CfnOutput, Duration, Fn, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, type HttpRoute, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { FilterCriteria, type IFunction, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { dispatcherSchedule, envNames, type QueueDefinition, queues, streamMappings } from '../platform/definitions.ts';
import { modelDefaultsText } from '../platform/model-defaults.ts';
import { paidModelsText } from '../platform/paid-models.ts';
import { accessLogFields, basePath, httpApiRoutes, type Route, streamRoutes } from '../platform/routes.ts';
import { waitingFunctionTimeoutSeconds } from '../platform/run-wait.ts';
import { ApiDomain } from './api-domain.ts';
import { filesBaseUrl } from './edge-config.ts';
import { edgeRegion, FilesDistribution } from './edge-stack.ts';
import { Grants } from './grants.ts';
import { IsolatedNetwork } from './isolated-network.ts';
import { LogQueries } from './log-queries.ts';
import { Observability } from './observability.ts';
import { OriginSecret } from './origin-secret.ts';
import { applyRouteThrottles } from './route-throttles.ts';
import { RunStream } from './run-stream.ts';
import { SafeDeploys } from './safe-deploys.ts';
import { ServiceFunction } from './service-function.ts';
import type { StageConfig } from './stages.ts';
import { pythonRunner, workers } from './workers.ts';

/** A scheduled tick older than this is dropped rather than run late (the next one is due anyway). */
export const tickMaxEventAge = Duration.seconds(60);

export interface ApiStackProps extends StackProps {
  /** The stage: throttles, consumer concurrency, retention, providers, alarms. */
  config: StageConfig;
  /** The application table, from the stateful stack. */
  table: ITable;
  /** The library bucket, from the stateful stack. */
  bucket: IBucket;
}

/** HTTP API context variables written per request; no headers, so bearer keys never reach the log. */
const accessLogFormat = AccessLogFormat.custom(JSON.stringify(accessLogFields));

/**
 * Everything stateless: the queues, the HTTP API with one function per route, and the workers that
 * consume the queues or run on the dispatcher schedule. Each function gets exactly the grants its
 * route or worker entry lists. Spend is bounded: the API stage is throttled, each queue's event
 * source starts at most the stage's `consumerMaxConcurrency`, and the dispatcher runs one tick at a
 * time, never retried.
 */
export class ApiStack extends Stack {
  readonly api: HttpApi;
  /** The API's base address, ending in `/api/v1`. */
  readonly apiUrl: string;
  /** The work queues, by definition id. */
  readonly queues: ReadonlyMap<QueueDefinition['id'], Queue>;
  /** Every route and worker function, by route or worker id. */
  readonly functions: ReadonlyMap<string, IFunction>;
  /** The operators' event bus: run lifecycle events (docs/operations.md, Operator events). */
  readonly eventBus: EventBus;

  /**
   * The region's first two zones, resolved at deploy time (`Fn::GetAZs`) as in an environment-agnostic
   * stack, also when the stage pins its account and region: the default would look the zones up with
   * the account's credentials, and synthesis must need none (lib/stage-pins.ts).
   */
  override get availabilityZones(): string[] {
    return [Fn.select(0, Fn.getAzs()), Fn.select(1, Fn.getAzs())];
  }

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const { table, bucket, config } = props;

    const queueById = new Map<QueueDefinition['id'], Queue>();
    for (const definition of queues) {
      const deadLetterQueue = new Queue(this, `${definition.id}DeadLetterQueue`, {
        retentionPeriod: Duration.days(definition.dlqRetentionDays),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      const queue = new Queue(this, `${definition.id}Queue`, {
        visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: definition.maxReceiveCount },
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      queueById.set(definition.id, queue);
      new CfnOutput(this, `${definition.id}QueueUrl`, { value: queue.queueUrl });
      new CfnOutput(this, `${definition.id}DeadLetterQueueUrl`, { value: deadLetterQueue.queueUrl });
    }
    this.queues = queueById;
    const stepsQueue = queueById.get('Steps')!;
    const webhooksQueue = queueById.get('Webhooks')!;

    // The operators' channel (callers get only the webhook). No archive: it would bill storage for
    // every event; an operator who wants replay adds one (docs/operations.md).
    this.eventBus = new EventBus(this, 'OperatorEventBus', { eventBusName: `${this.stackName}-operator-events` });
    new CfnOutput(this, 'OperatorEventBusName', { value: this.eventBus.eventBusName });
    // Where a stream batch that failed every retry is recorded (its shard and sequence numbers): one
    // queue per mapping of the stream, so an alarm says whose batch it was.
    const streamDeadLetterQueues = new Map(
      streamMappings.map((mapping) => {
        const dlq = new Queue(this, `${mapping.id}DeadLetterQueue`, {
          retentionPeriod: Duration.days(mapping.dlqRetentionDays),
          encryption: QueueEncryption.SQS_MANAGED,
          enforceSSL: true,
        });
        Validations.of(dlq).acknowledge({
          id: 'AwsSolutions-SQS3',
          reason:
            `This queue is itself a dead-letter queue: the ${mapping.id} stream mapping sends it the position ` +
            'of a batch that failed every retry.',
        });
        new CfnOutput(this, `${mapping.id}DeadLetterQueueUrl`, { value: dlq.queueUrl });
        return [mapping.id, dlq] as const;
      }),
    );

    // PythonSandbox steps' code runs here: no grant, no environment of the stage's, no network
    // route out (lib/workers.ts).
    const python = new ServiceFunction(this, pythonRunner.id, {
      network: new IsolatedNetwork(this, `${pythonRunner.id}Network`, { availabilityZones: config.pythonRunnerAzs }),
      entry: pythonRunner.entry,
      timeoutSeconds: pythonRunner.timeoutSeconds,
      memoryMb: pythonRunner.memoryMb,
      // Tenants' code never takes the account's pool from the routes and the step executor.
      reservedConcurrentExecutions: config.pythonRunnerReservedConcurrency,
      environment: {
        // Lambda lets no process make a network namespace: the isolated VPC above is the runs' network wall.
        [envNames.pythonNetworkNamespace]: 'optional',
        ...(config.pythonSnapshots ? { [envNames.pythonSnapshots]: 'true' } : {}),
      },
      description: "runs PythonSandbox steps' code (invoked by the step executor)",
      logRetentionDays: config.logRetentionDays,
      keepLogs: config.protectData,
      tracing: false,
    });

    this.api = new HttpApi(this, 'HttpApi', {
      // Named after the stack so several deployments (stackPrefix) are told apart in the console.
      apiName: this.stackName,
      description: 'Workflow Run API',
      // Callers are servers holding API keys, not browsers: no CORS.
      createDefaultStage: false,
      // With a custom domain, callers (and CloudFront) reach the API only through it.
      disableExecuteApiEndpoint: config.edge.domain !== undefined,
    });
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      retention: config.logRetentionDays,
      // prod keeps its logs past a teardown, for as long as their retention (but not those of a
      // creation that rolled back); dev deletes them.
      removalPolicy: config.protectData ? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE : RemovalPolicy.DESTROY,
    });
    const stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: accessLogFormat },
      // Across every caller; each key's own 60 a minute is enforced by the functions (lib/stages.ts).
      throttle: config.api,
    });
    this.apiUrl = config.edge.domain
      ? `https://${config.edge.domain.name}${basePath}`
      : `${stage.url}${basePath.slice(1)}`;
    if (config.edge.domain) new ApiDomain(this, 'ApiDomain', { domain: config.edge.domain, api: this.api, stage });

    // Every stage serves downloads through a distribution that adds X-Content-Type-Options: nosniff
    // (S3 cannot send it): the edge's on files.<name> when it serves them, else this stack's own.
    const filesBase =
      filesBaseUrl(config.edge) ??
      `https://${new FilesDistribution(this, 'Files', { bucketHost: bucket.bucketRegionalDomainName }).host}`;
    const environment = {
      [envNames.table]: table.tableName,
      [envNames.stepsQueueUrl]: stepsQueue.queueUrl,
      [envNames.webhooksQueueUrl]: webhooksQueue.queueUrl,
      [envNames.bucket]: bucket.bucketName,
      [envNames.stage]: config.stage,
      [envNames.retentionDays]: String(config.retentionDays),
      // Read by the step executor alone (functions/app/team-slots.ts).
      [envNames.teamStepsInFlight]: String(config.teamStepsInFlight),
      // Names, not values: only the step executor may read the secrets (lib/workers.ts).
      [envNames.providerSecrets]: JSON.stringify(
        Object.fromEntries(config.providers.map((p) => [p.provider, p.secretName])),
      ),
      [envNames.sandboxProviders]: String(config.sandboxProviders),
      ...(Object.keys(config.providerLevels).length > 0
        ? { [envNames.providerLevels]: JSON.stringify(config.providerLevels) }
        : {}),
      // The stage's own default models: the run start routes on them, the step executor runs them.
      ...(Object.keys(config.modelDefaults).length > 0
        ? { [envNames.modelDefaults]: modelDefaultsText(config.modelDefaults) }
        : {}),
      // The models the stage pays for and their prices: the run start prices and routes on them, the
      // step executor charges them. Left out, the functions read the list as open (dev's default).
      ...(config.paidModels.open && Object.keys(config.paidModels.prices).length === 0
        ? {}
        : { [envNames.paidModels]: paidModelsText(config.paidModels) }),
      // The Bedrock models the step executor may invoke (its role allows exactly these).
      ...(config.bedrockModels.length > 0 ? { [envNames.bedrockModels]: config.bedrockModels.join(',') } : {}),
      [envNames.connectionSecretPrefix]: config.connectionSecretPrefix,
      [envNames.operatorEventBus]: this.eventBus.eventBusName,
      [envNames.pythonRunner]: python.fn.functionName,
      // Where the stage is reached: providers' webhooks (functions/app/provider-job.ts) and the file
      // links of runs (functions/app/file-links.ts) point there.
      [envNames.publicBaseUrl]: config.publicBaseUrl ?? stage.url,
      // Where presigned GETs are given: a files distribution, which adds nosniff (lib/edge-stack.ts).
      [envNames.filesBaseUrl]: filesBase,
    };
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Every route except GET /openapi.json, GET /docs and GET /docs/assets/{name} (public by design) authenticates in its own function: a bearer API key is hashed ' +
        '(SHA-256) and looked up in DynamoDB on each request, then checked for revocation, expiry and scope. ' +
        'The OpenAPI document is public by contract. GET /file-links/{object} and the provider webhooks take no key: ' +
        "each request carries an HMAC its function checks (a file link's, made by this service; a provider's signature).",
    });

    const grants = new Grants(this, {
      table,
      bucket,
      stepsQueue,
      webhooksQueue,
      eventBus: this.eventBus,
      pythonRunner: python.fn,
      providerSecrets: config.providers,
      bedrockModels: config.bedrockModels,
      connectionSecretPrefix: config.connectionSecretPrefix,
    });
    const functionById = new Map<string, IFunction>();
    const routed: { route: Route; created: HttpRoute[] }[] = [];
    // The run-start routes and the step executor are invoked through their `live` alias (lib/safe-deploys.ts).
    const safeDeploys = new SafeDeploys(this, 'SafeDeploys', {
      strategy: config.deploys.strategy,
      stage: config.stage,
    });

    // With the edge in front, the functions it fronts answer only what it sent them (lib/origin-secret.ts).
    const originSecret =
      config.edge.cloudFront && config.edge.domain ? new OriginSecret(this, 'OriginSecret', { edgeRegion }) : undefined;

    // The streaming routes first: GetRun's environment names the stream's address (lib/run-stream.ts).
    // The construct, its edge behaviour and that address are the run stream's own: a second streaming
    // route needs its own, so the synth stops rather than leave one undeployed.
    if (streamRoutes.length !== 1)
      throw new Error(`one streaming route is deployed (lib/run-stream.ts); the table has ${streamRoutes.length}`);
    const stream = new RunStream(this, {
      config,
      environment,
      grants,
      route: streamRoutes[0]!,
    });
    functionById.set(stream.route.id, stream.fn);
    // Only when the edge serves the stream: else its function URL is where callers reach it.
    if (stream.behindEdge) originSecret?.admit(stream.fn);

    for (const route of httpApiRoutes) {
      const service = new ServiceFunction(this, route.id, {
        entry: route.entry,
        timeoutSeconds: route.waits ? waitingFunctionTimeoutSeconds : 10,
        environment,
        description: `${route.method} ${basePath}${route.path}`,
        logRetentionDays: config.logRetentionDays,
        keepLogs: config.protectData,
        tracing: config.tracing,
      });
      const { fn } = service;
      grants.apply(service, route.grants);
      originSecret?.admit(fn);
      // The Run's `links.events` (functions/app/run-stream.ts): GetRun's, the Run a start that waited
      // answers, and a run token's.
      if (route.waits || route.id === 'CreateRunToken') fn.addEnvironment(envNames.runEventsBaseUrl, stream.baseUrl);
      const created = this.api.addRoutes({
        path: `${basePath}${route.path}`,
        // A route that accepts a run token answers its own CORS preflight (functions/http/keyed-handler.ts):
        // the API has no CORS configuration, which would answer every route's preflight and override
        // the functions' headers (docs/decisions/security.md, "Run tokens").
        methods: [HttpMethod[route.method], ...(route.runToken ? [HttpMethod.OPTIONS] : [])],
        integration: new HttpLambdaIntegration(`${route.id}Integration`, safeDeploys.target(route.id, fn)),
      });
      routed.push({ route, created });
      functionById.set(route.id, fn);
    }
    // The keyless routes' own, lower, throttles (lib/edge-config.ts).
    applyRouteThrottles(stage, routed, config.edge.routeThrottles);

    for (const worker of workers) {
      const { trigger } = worker;
      const queueDefinition = trigger.kind === 'queue' ? queues.find((q) => q.id === trigger.queue) : undefined;
      const mapping = trigger.kind === 'stream' ? streamMappings.find((m) => m.id === trigger.mapping) : undefined;
      const timeoutSeconds =
        queueDefinition?.consumerTimeoutSeconds ?? mapping?.consumerTimeoutSeconds ?? worker.timeoutSeconds;
      if (timeoutSeconds === undefined) throw new Error(`worker ${worker.id} needs timeoutSeconds`);
      const service = new ServiceFunction(this, worker.id, {
        entry: worker.entry,
        timeoutSeconds,
        environment,
        description:
          trigger.kind === 'queue'
            ? `consumes the ${trigger.queue} queue`
            : trigger.kind === 'stream'
              ? `reads the table's stream (${trigger.mapping})`
              : 'runs on the dispatcher schedule',
        logRetentionDays: config.logRetentionDays,
        keepLogs: config.protectData,
        reservedConcurrentExecutions: worker.reservedConcurrency,
        tracing: config.tracing && (worker.tracing ?? true),
        memoryMb: worker.id === 'StepExecutor' ? config.stepExecutorMemoryMb : undefined,
        feedsItsOwnQueue: worker.feedsItsOwnQueue ?? false,
      });
      const { fn } = service;
      grants.apply(service, worker.grants);
      if (queueDefinition) {
        if (queueDefinition.visibilityTimeoutSeconds < 6 * timeoutSeconds) {
          throw new Error(
            `the ${queueDefinition.id} queue's visibility must be at least 6 times its consumer's timeout`,
          );
        }
        safeDeploys.target(worker.id, fn).addEventSource(
          new SqsEventSource(queueById.get(queueDefinition.id)!, {
            batchSize: queueDefinition.batchSize,
            maxBatchingWindow: Duration.seconds(0),
            reportBatchItemFailures: true,
            maxConcurrency: config.consumerMaxConcurrency[queueDefinition.id],
          }),
        );
      } else if (mapping) {
        fn.addEventSource(
          new DynamoEventSource(table, {
            startingPosition: StartingPosition.TRIM_HORIZON,
            batchSize: mapping.batchSize,
            maxBatchingWindow: Duration.seconds(mapping.maxBatchingWindowSeconds),
            reportBatchItemFailures: true,
            bisectBatchOnError: true,
            retryAttempts: mapping.retryAttempts,
            maxRecordAge: Duration.seconds(mapping.maxRecordAgeSeconds),
            onFailure: new SqsDlq(streamDeadLetterQueues.get(mapping.id)!),
            filters: mapping.filters.map((pattern) => FilterCriteria.filter(pattern)),
          }),
        );
        Validations.of(service).acknowledge({
          id: 'AwsSolutions-IAM5[Resource::*]',
          reason:
            "Lambda's DynamoDB stream event source needs dynamodb:ListStreams, which supports no resource-level " +
            "permissions; reading the records is granted on this table's stream alone.",
        });
      } else {
        // A failed or late tick is not worth replaying: the next one comes within a minute, and two
        // ticks must not run at once. No retries, neither by EventBridge nor by Lambda's async queue.
        fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: tickMaxEventAge });
        new Rule(this, `${worker.id}Schedule`, {
          schedule: Schedule.rate(Duration.minutes(dispatcherSchedule.rateMinutes)),
          targets: [new LambdaFunction(fn, { retryAttempts: 0, maxEventAge: tickMaxEventAge })],
        });
      }
      functionById.set(worker.id, fn);
    }
    // Graphed, and alarmed with the route functions under perFunctionAlarms: a Python error fails its
    // step (the step executor reads the answer), so by default the run's failure is the signal.
    functionById.set(pythonRunner.id, python.fn);
    this.functions = functionById;

    // Alarms (and, with `-c alarmEmail=…`, an SNS topic mailing them; with `-c dashboard=true`, a dashboard).
    new Observability(this, 'Observability', {
      config,
      api: this.api,
      functions: functionById,
      queues: queueById,
      streamDeadLetterQueues,
      table,
      accessLogs,
      otherAlarms: [...safeDeploys.deploys.values()].flatMap((deploy) => deploy.alarms),
    });

    // Saved Logs Insights queries: a run's trail, and failed runs by reason (docs/operations.md, "Runbooks").
    new LogQueries(this, 'LogQueries', { functions: functionById });

    new CfnOutput(this, 'ApiUrl', { value: this.apiUrl });
  }
}

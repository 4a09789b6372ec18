import { CfnOutput, Fn } from 'aws-cdk-lib';
import { FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { envNames } from '../platform/definitions.ts';
import { basePath, type Route } from '../platform/routes.ts';
import { streamFunctionMemoryMb, streamFunctionTimeoutSeconds } from '../platform/run-stream.ts';
import type { Grants } from './grants.ts';
import { ServiceFunction } from './service-function.ts';
import type { StageConfig } from './stages.ts';

export interface RunStreamProps {
  config: StageConfig;
  environment: Record<string, string>;
  grants: Grants;
  /** The route (`transport: 'stream'`, platform/routes.ts): GET /runs/{jobId}/events. */
  route: Route;
}

/**
 * The run stream (docs/decisions/stream.md): the route's function
 * on a Lambda function URL in RESPONSE_STREAM mode, since API Gateway's HTTP API cannot stream. Its
 * AuthType is NONE: the function checks the API key, its rate limit and scope itself, as every
 * keyed route's does, so the URL works with the edge and without it (dev). Its timeout is the
 * stream's cap and a little more. `baseUrl` (ending in `/api/v1`) is where callers reach it: the
 * edge's domain when the edge serves the stream (lib/edge-stack.ts), else the function URL.
 */
export class RunStream {
  readonly route: Route;
  readonly fn: NodejsFunction;
  readonly functionUrl: string;
  readonly baseUrl: string;
  /** The edge serves the stream (`eventsOrigin`): callers reach it through CloudFront only. */
  readonly behindEdge: boolean;

  constructor(scope: Construct, props: RunStreamProps) {
    const { config, route } = props;
    this.route = route;
    const edgeBase =
      config.edge.cloudFront && config.edge.domain && config.edge.eventsOrigin
        ? `https://${config.edge.domain.name}${basePath}`
        : undefined;
    this.behindEdge = edgeBase !== undefined;
    const service = new ServiceFunction(scope, route.id, {
      entry: route.entry,
      timeoutSeconds: streamFunctionTimeoutSeconds,
      memoryMb: streamFunctionMemoryMb,
      // Its own address cannot be in its own environment (a cycle): without the edge, the function
      // reads it from the request (functions/api/get-run-events.ts).
      environment: { ...props.environment, ...(edgeBase && { [envNames.runEventsBaseUrl]: edgeBase }) },
      // As every route's function is described: tests and operators find it by its route.
      description: `${route.method} ${basePath}${route.path}`,
      logRetentionDays: config.logRetentionDays,
      keepLogs: config.protectData,
      tracing: config.tracing,
      // Its URL is public: its streams may hold this many functions at most, never the account's
      // concurrency the step executor and the routes share (its throttles are alarmed).
      reservedConcurrentExecutions: config.runEventsConcurrency,
    });
    props.grants.apply(service, route.grants);
    this.fn = service.fn;
    const url = service.fn.addFunctionUrl({
      authType: FunctionUrlAuthType.NONE,
      invokeMode: InvokeMode.RESPONSE_STREAM,
    });
    this.functionUrl = url.url;
    // The URL ends in `/`: the base path follows it.
    this.baseUrl = edgeBase ?? Fn.join('', [url.url, basePath.slice(1)]);
    new CfnOutput(scope, 'RunEventsBaseUrl', {
      value: this.baseUrl,
      description: 'GET {this}/runs/{jobId}/events: the run event stream (the Run carries it as links.events)',
    });
    new CfnOutput(scope, 'RunEventsOriginHost', {
      value: Fn.select(2, Fn.split('/', url.url)),
      description: 'The stream function URL host: the edge reaches the stream there (-c eventsOrigin=<this>)',
    });
  }
}

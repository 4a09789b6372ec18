import path from 'node:path';
import { Duration, Validations } from 'aws-cdk-lib';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { bundlingOptions } from './bundling.ts';
import { functionMemoryMb } from './definitions.ts';

/** The repository root: every `entry` in the route and worker tables is relative to it. */
export const repoRoot = path.resolve(import.meta.dirname, '..');

export interface ServiceFunctionProps {
  /** Handler module relative to the repository root; it exports `handler`. */
  entry: string;
  /** Seconds the function may run. */
  timeoutSeconds: number;
  /** Resource names and URLs the handler reads at cold start. */
  environment: Record<string, string>;
  /** Shown in the Lambda console, e.g. the route key. */
  description: string;
}

/**
 * One Lambda function of the service, built the same way for every route and worker: Node 24 on
 * ARM, a minified ESM bundle built with `bundlingOptions` (the AWS SDK v3 comes from the runtime),
 * source maps, X-Ray tracing and its own log group kept for one month.
 */
export class ServiceFunction extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);

    const logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH });

    this.fn = new NodejsFunction(this, 'Function', {
      entry: path.join(repoRoot, props.entry),
      handler: 'handler',
      projectRoot: repoRoot,
      depsLockFilePath: path.join(repoRoot, 'package-lock.json'),
      description: props.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: functionMemoryMb,
      timeout: Duration.seconds(props.timeoutSeconds),
      tracing: Tracing.ACTIVE,
      logGroup,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      // NodejsFunction always bundles for platform node, the only platform `bundlingOptions` allows.
      bundling: {
        format: OutputFormat.ESM,
        minify: bundlingOptions.minify,
        sourceMap: bundlingOptions.sourceMap,
        target: bundlingOptions.target,
        mainFields: [...bundlingOptions.mainFields],
        banner: bundlingOptions.banner,
        externalModules: [...bundlingOptions.externalModules],
      },
    });

    Validations.of(this.fn).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason:
        'AWSLambdaBasicExecutionRole only allows creating log streams and putting log events; ' +
        'the function writes to its own log group with one-month retention.',
    });
    Validations.of(this.fn).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, ' +
        'which support no resource-level permissions.',
    });
  }
}
